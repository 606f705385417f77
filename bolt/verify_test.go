package bolt

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/internal/kvlayout"
)

// seeded returns a store holding a few records of every indexed kind, and
// one of its attempts.
func seeded(t *testing.T) (*Backend, backend.Attempt) {
	t.Helper()
	b := openTemp(t)
	att := attempt(attKey("r", "n", "a", 1), "ident", backend.AttemptPrepared, 10)
	apply(t, b, backend.Changes{Insert: backend.Inserts{
		Links:       []backend.RunLink{link("child", "r", 5)},
		Activations: []backend.Activation{activation(actKey("r", "n", "a"), true), activation(actKey("r", "n", "b"), false)},
		Attempts:    []backend.Attempt{att, attempt(attKey("r", "n", "b", 1), "ident-2", backend.AttemptAdmitted, 11)},
		Leases:      []backend.Lease{lease(att.Key, "res", backend.LeaseWrite, 0)},
		Schedules:   []backend.RetrySchedule{schedule(actKey("r", "n", "a"), 50)},
	}})
	require.NoError(t, b.Verify(context.Background()))
	return b, att
}

// damage changes the store behind the adapter's back.
func damage(t *testing.T, b *Backend, fn func(tx *bbolt.Tx) error) {
	t.Helper()
	require.NoError(t, b.db.Update(fn))
}

// putAt and deleteAt write stored key sk of s behind the adapter's back.
func putAt(tx *bbolt.Tx, s *kvlayout.Space, sk, v []byte) error {
	bk, k, err := locate(tx, s, sk, true)
	if err != nil {
		return err
	}
	return bk.Put(k, v)
}

func deleteAt(tx *bbolt.Tx, s *kvlayout.Space, sk []byte) error {
	bk, k, err := locate(tx, s, sk, false)
	if err != nil {
		return err
	}
	return bk.Delete(k)
}

// problems runs Verify and returns what it found.
func problems(t *testing.T, b *Backend) []Discrepancy {
	t.Helper()
	err := b.Verify(context.Background())
	var ve *VerifyError
	require.True(t, errors.As(err, &ve), "Verify returned %v", err)
	for _, d := range ve.Discrepancies {
		t.Log(d)
	}
	return ve.Discrepancies
}

func TestVerifyReportsMissingIndexEntry(t *testing.T) {
	t.Parallel()
	b, att := seeded(t)
	entry, _ := layout.AttemptStatus.Entry(att)
	damage(t, b, func(tx *bbolt.Tx) error {
		return deleteAt(tx, &layout.AttemptStatus.Space, layout.AttemptStatus.Stored(entry))
	})
	ds := problems(t, b)
	require.Len(t, ds, 1)
	require.Equal(t, "attempt", ds[0].Bucket)
	require.Equal(t, []byte(layout.Attempt.Key(att.Key)), ds[0].Key)
	require.Equal(t, `(run="r", node="n", activation="a", attempt=1)`, ds[0].KeyText)
	require.Equal(t, `missing its ix_attempt_status entry (status="prepared", prepared_ms=10, identity="ident", run="r", node="n", activation="a", attempt=1)`, ds[0].Problem)
}

func TestVerifyReportsStrayIndexEntry(t *testing.T) {
	t.Parallel()
	b, _ := seeded(t)
	stray := layout.Activation.Key(actKey("r", "ghost", "a"))
	damage(t, b, func(tx *bbolt.Tx) error { return putAt(tx, &layout.Pending.Space, layout.Pending.Stored(stray), nil) })
	ds := problems(t, b)
	require.Len(t, ds, 1)
	require.Equal(t, Discrepancy{
		Bucket: "ix_pending_activation", Key: []byte(stray), KeyText: `(run="r", node="ghost", activation="a")`,
		Problem: `names activation (run="r", node="ghost", activation="a"), which does not exist`,
	}, ds[0])
}

// An indexed field changed without its index: the record misses its new
// entries and the old ones are stale, in each index that holds the field.
func TestVerifyReportsIndexedFieldChangedBehindIndex(t *testing.T) {
	t.Parallel()
	b, att := seeded(t)
	changed := att
	changed.Status = backend.AttemptRunning
	damage(t, b, func(tx *bbolt.Tx) error {
		return putAt(tx, &layout.Attempt.Space, layout.Attempt.Stored(layout.Attempt.Key(att.Key)), layout.Attempt.Encode(changed))
	})
	ds := problems(t, b)
	var got []string
	for _, d := range ds {
		got = append(got, d.String())
	}
	require.Equal(t, []string{
		`attempt (run="r", node="n", activation="a", attempt=1): missing its ix_attempt_status entry (status="running", prepared_ms=10, identity="ident", run="r", node="n", activation="a", attempt=1)`,
		`attempt (run="r", node="n", activation="a", attempt=1): missing its ix_attempt_run_status entry (run="r", status="running", prepared_ms=10, identity="ident", node="n", activation="a", attempt=1)`,
		`ix_attempt_status (status="prepared", prepared_ms=10, identity="ident", run="r", node="n", activation="a", attempt=1): stale: attempt (run="r", node="n", activation="a", attempt=1) has indexed fields (status="running", prepared_ms=10, identity="ident", run="r", node="n", activation="a", attempt=1)`,
		`ix_attempt_run_status (run="r", status="prepared", prepared_ms=10, identity="ident", node="n", activation="a", attempt=1): stale: attempt (run="r", node="n", activation="a", attempt=1) has indexed fields (run="r", status="running", prepared_ms=10, identity="ident", node="n", activation="a", attempt=1)`,
	}, got)
}

func TestVerifyReportsMembershipChangedBehindIndex(t *testing.T) {
	t.Parallel()
	b, _ := seeded(t)
	a := activation(actKey("r", "n", "a"), false) // was admissible
	damage(t, b, func(tx *bbolt.Tx) error {
		return putAt(tx, &layout.Activation.Space, layout.Activation.Stored(layout.Activation.Key(a.Key)), layout.Activation.Encode(a))
	})
	ds := problems(t, b)
	require.Len(t, ds, 1)
	require.Equal(t, "ix_pending_activation", ds[0].Bucket)
	require.Equal(t, `names activation (run="r", node="n", activation="a"), which is not in this index (members have Admissible is true)`, ds[0].Problem)
}

func TestVerifyReportsOtherDamage(t *testing.T) {
	t.Parallel()
	b, _ := seeded(t)
	dup := attempt(attKey("r", "n", "c", 1), "ident", backend.AttemptPrepared, 12) // same identity
	wrongKey := layout.Schedule.Key(actKey("r", "moved", "x"))
	damage(t, b, func(tx *bbolt.Tx) error {
		for _, ix := range layout.Attempt.Indexed {
			e, _ := ix.Entry(dup)
			if err := putAt(tx, &ix.Space, ix.Stored(e), nil); err != nil {
				return err
			}
		}
		if err := putAt(tx, &layout.Attempt.Space, layout.Attempt.Stored(layout.Attempt.Key(dup.Key)), layout.Attempt.Encode(dup)); err != nil {
			return err
		}
		e, _ := layout.LinkRoot.Entry(link("child", "r", 5))
		if err := putAt(tx, &layout.LinkRoot.Space, layout.LinkRoot.Stored(e), []byte("x")); err != nil {
			return err
		}
		if err := putAt(tx, &layout.FanOutGroup.Space, layout.FanOutGroup.Stored(kvlayout.Key(nil).Str("g")), []byte{0xee}); err != nil {
			return err
		}
		if err := putAt(tx, &layout.Schedule.Space, layout.Schedule.Stored(wrongKey), layout.Schedule.Encode(schedule(actKey("r", "n", "zzz"), 1))); err != nil {
			return err
		}
		if err := tx.Bucket(bucketIndex).Put([]byte{0xee, 1, 2}, nil); err != nil {
			return err
		}
		if err := tx.Bucket(bucketIndex).Put(layout.AttemptRun.Stored(kvlayout.Key(nil).Str("r")), nil); err != nil {
			return err // a per-run index's id in ix
		}
		if err := tx.Bucket(bucketRuns).Bucket(kvlayout.Key(nil).Str("r")).Put([]byte{0xee}, nil); err != nil {
			return err // an unknown tag
		}
		if err := tx.Bucket(bucketRuns).Put([]byte{0x61, 0x62}, nil); err != nil {
			return err // not a run's bucket
		}
		_, err := tx.CreateBucket([]byte("extra"))
		return err
	})
	ds := problems(t, b)
	var got []string
	for _, d := range ds {
		got = append(got, d.Bucket+": "+d.Problem)
	}
	require.ElementsMatch(t, []string{
		"extra: unknown bucket",
		"ix: key belongs to no index (unknown index id)",
		"ix: key belongs to no index (unknown index id)",
		"runs: key belongs to no record kind or index (unknown tag)",
		"runs: is not a run's bucket (a nested bucket named by an encoded run id)",
		`fan_out_group: value does not decode: bolt: malformed record value: kind tag is not 0x04`,
		`ix_attempt_identity: (identity="ident") is shared by attempt (run="r", node="n", activation="a", attempt=1) and attempt (run="r", node="n", activation="c", attempt=1)`,
		`ix_link_root: entry has a 1-byte value; index values are empty`,
		`retry_schedule: record's key fields give (run="r", node="n", activation="zzz"): stored under the wrong key`,
		`retry_schedule: missing its ix_schedule_due entry (run="r", due_ms=1, node="n", activation="zzz")`,
	}, got)
}

func TestVerifyErrorMessage(t *testing.T) {
	t.Parallel()
	e := &VerifyError{Discrepancies: make([]Discrepancy, 12)}
	require.Contains(t, e.Error(), "12 discrepancies")
	require.Contains(t, e.Error(), "and 2 more")
}

func TestVerifyHonoursContext(t *testing.T) {
	t.Parallel()
	b, _ := seeded(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, b.Verify(ctx), context.Canceled)
}
