package kvlayout

import (
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/wfstore/wfstore/backend"
)

// grouped is a layout like bolt's: per-run spaces in "runs", the others in
// "ix", with the run status index.
func grouped() *Layout {
	return New(Config{Name: "grouped", RunGroup: []byte("runs"), FlatGroup: []byte("ix"), RunStatusIndex: true})
}

// Every entry a record has names that record: Primary of the entry is the
// record's primary key, for every index of every kind.
func entriesNameTheirRecord[K comparable, R any](t *testing.T, tb *Table[K, R]) {
	t.Run(tb.Name, func(t *testing.T) {
		t.Parallel()
		rapid.Check(t, func(t *rapid.T) {
			rec := rapid.Make[R]().Draw(t, "record")
			for _, ix := range tb.Indexed {
				e, ok := ix.Entry(rec)
				if !ok {
					continue
				}
				pk, err := ix.Primary(e)
				require.NoError(t, err, ix.Name)
				require.Equal(t, []byte(tb.PK(rec)), []byte(pk), ix.Name)
				_, err = ix.Schema.Decode(e)
				require.NoError(t, err, "%s entry %x decodes under its schema", ix.Name, e)
			}
		})
	})
}

func TestIndexEntriesNameTheirRecord(t *testing.T) {
	t.Parallel()
	l := grouped()
	entriesNameTheirRecord(t, l.Run)
	entriesNameTheirRecord(t, l.Link)
	entriesNameTheirRecord(t, l.Activation)
	entriesNameTheirRecord(t, l.Attempt)
	entriesNameTheirRecord(t, l.Lease)
	entriesNameTheirRecord(t, l.Schedule)
}

// The entries of one attempt, and the membership of activations and
// leases, as the layout documents them.
func TestIndexEntriesOfARecord(t *testing.T) {
	t.Parallel()
	l := grouped()
	ak := backend.ActivationKey{RunID: "r", NodeID: "n", ActivationID: "a"}
	att := backend.Attempt{Key: backend.AttemptKey{ActivationKey: ak, Attempt: 2}, Identity: "id", Status: backend.AttemptAdmitted, PreparedMS: 7}
	var got []string
	for _, ix := range l.Attempt.Indexed {
		e, ok := ix.Entry(att)
		require.True(t, ok)
		got = append(got, ix.Name+" "+ix.Schema.Format(e))
	}
	require.Equal(t, []string{
		`ix_attempt_identity (identity="id", run="r", node="n", activation="a", attempt=2)`,
		`ix_attempt_status (status="admitted", prepared_ms=7, identity="id", run="r", node="n", activation="a", attempt=2)`,
		`ix_attempt_run_status (run="r", status="admitted", prepared_ms=7, identity="id", node="n", activation="a", attempt=2)`,
		`ix_attempt_run_prepared (run="r", prepared_ms=7, identity="id", node="n", activation="a", attempt=2)`,
		`ix_attempt_prepared (prepared_ms=7, identity="id", run="r", node="n", activation="a", attempt=2)`,
	}, got)

	_, ok := l.Pending.Entry(backend.Activation{Key: ak, Admissible: false})
	require.False(t, ok, "only admissible activations are pending")
	_, ok = l.Pending.Entry(backend.Activation{Key: ak, Admissible: true})
	require.True(t, ok)
	released := backend.Lease{Key: backend.LeaseKey{AttemptKey: att.Key, Resource: "res", Mode: backend.LeaseWrite}, ReleasedMS: 9}
	for _, ix := range l.Lease.Indexed {
		_, ok := ix.Entry(released)
		require.False(t, ok, "%s holds only unreleased leases", ix.Name)
	}
	e, ok := l.LeaseResource.Entry(backend.Lease{Key: released.Key})
	require.True(t, ok)
	require.Equal(t, `(run="r", resource="res", node="n", activation="a", attempt=2, mode="write")`, l.LeaseResource.Schema.Format(e))
}

// Tags and ids are the format: fixed, whatever the Config. A Config only
// moves spaces between groups and adds the run status index.
func TestLayoutTagsAndPlacement(t *testing.T) {
	t.Parallel()
	flat, g := New(Config{Name: "flat"}), grouped()
	type place struct {
		name   string
		tag    byte
		group  string
		perRun bool
	}
	places := func(l *Layout) []place {
		var out []place
		for _, k := range l.Kinds {
			out = append(out, place{k.Name, k.Tag, string(k.Group), k.PerRun})
			for _, ix := range k.Indexes {
				out = append(out, place{ix.Name, ix.Tag, string(ix.Group), ix.PerRun})
			}
		}
		return out
	}
	require.Equal(t, []place{
		{"run", 0x40, "runs", true}, {"ix_run_status", 11, "ix", false},
		{"run_link", 0x41, "runs", true}, {"ix_link_root", 7, "runs", true},
		{"activation", 0x42, "runs", true}, {"ix_pending_activation", 1, "ix", false},
		{"fan_out_group", 0x43, "runs", true},
		{"attempt", 0x44, "runs", true}, {"ix_attempt_identity", 2, "ix", false}, {"ix_attempt_status", 3, "ix", false},
		{"ix_attempt_run_status", 4, "runs", true}, {"ix_attempt_run_prepared", 5, "runs", true}, {"ix_attempt_prepared", 6, "ix", false},
		{"lease", 0x45, "runs", true}, {"ix_lease_active", 9, "runs", true}, {"ix_lease_resource", 10, "runs", true},
		{"retry_schedule", 0x46, "runs", true}, {"ix_schedule_due", 8, "runs", true},
		{"event", 0x47, "runs", true},
	}, places(g))
	for _, p := range places(flat) {
		require.Equal(t, "", p.group, p.name)
		require.False(t, p.perRun, p.name)
	}
	require.Len(t, places(flat), len(places(g))-1, "no ix_run_status")
	require.Nil(t, flat.RunStatus)
}
