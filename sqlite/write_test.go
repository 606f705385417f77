package sqlite

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/wfstore/wfstore/backend"
	"modernc.org/sqlite"
)

// applyErr runs one Apply in an Update whose fn returns nil when Apply
// succeeds and the Apply error otherwise.
func applyErr(b *Backend, writes ...backend.Write) error {
	return b.Update(context.Background(), func(tx backend.Tx) error {
		return tx.Apply(context.Background(), writes...)
	})
}

func TestInsertExistingKeyConflicts(t *testing.T) {
	t.Parallel()
	b := newStore(t)
	run, link, act, group, att, lease, sched, ev := fullRecords("r", []byte(`{}`))
	recs := []backend.Record{run, link, act, group, att, lease, sched, ev}
	for _, r := range recs {
		update(t, b, backend.Ins(r))
	}
	for _, r := range recs {
		err := applyErr(b, backend.Ins(r))
		require.ErrorIs(t, err, backend.ErrConflict, r.Kind())
	}
}

func TestInsertAttemptWithExistingIdentityConflicts(t *testing.T) {
	t.Parallel()
	b := newStore(t)
	k := akey("r", "n", "a")
	update(t, b, backend.Ins(attempt(k, 1, "id-1", backend.AttemptPrepared, 1)))
	err := applyErr(b, backend.Ins(attempt(k, 2, "id-1", backend.AttemptPrepared, 2)))
	require.ErrorIs(t, err, backend.ErrConflict)

	// Replace onto another attempt's identity conflicts too, and the driver
	// error stays reachable.
	update(t, b, backend.Ins(attempt(k, 2, "id-2", backend.AttemptPrepared, 2)))
	err = applyErr(b, backend.Rep(attempt(k, 2, "id-1", backend.AttemptPrepared, 2)))
	require.ErrorIs(t, err, backend.ErrConflict)
	var se *sqlite.Error
	require.True(t, errors.As(err, &se), "driver error reachable: %v", err)
}

func TestReplaceAndDeleteMissingKeyNotFound(t *testing.T) {
	t.Parallel()
	b := newStore(t)
	run, _, act, group, att, lease, sched, _ := fullRecords("r", []byte(`{}`))
	for _, r := range []backend.Record{run, act, group, att, lease, sched} {
		require.ErrorIs(t, applyErr(b, backend.Rep(r)), backend.ErrNotFound, r.Kind())
	}
	require.ErrorIs(t, applyErr(b, backend.Del(sched)), backend.ErrNotFound)
}

func TestReplaceOverwritesEveryFieldAndDeleteRemoves(t *testing.T) {
	t.Parallel()
	b := newStore(t)
	run, _, act, group, att, lease, sched, _ := fullRecords("r", []byte(`{"a":1}`))
	update(t, b, backend.Ins(run), backend.Ins(act), backend.Ins(group), backend.Ins(att), backend.Ins(lease), backend.Ins(sched))

	run2 := backend.Run{ID: run.ID, Status: backend.RunCompleted} // every other field zeroed
	act2 := backend.Activation{Key: act.Key, Status: backend.ActivationCompleted, Output: []byte(`1`)}
	group2 := backend.FanOutGroup{Controller: group.Controller, Size: 1}
	att2 := att
	att2.Identity, att2.Receipt, att2.Detail, att2.Status = "other-identity", nil, nil, backend.AttemptSucceeded
	lease2 := lease
	lease2.ReleasedMS = 77
	sched2 := backend.RetrySchedule{Key: sched.Key, DueMS: 5}
	update(t, b, backend.Rep(run2), backend.Rep(act2), backend.Rep(group2), backend.Rep(att2), backend.Rep(lease2), backend.Rep(sched2))
	view(t, b, func(r backend.ReadTx) {
		f, err := r.Load(context.Background(), backend.Lookup{
			Runs: []string{run.ID}, Activations: []backend.ActivationKey{act.Key}, Groups: []backend.ActivationKey{group.Controller},
			Attempts: []backend.AttemptKey{att.Key}, Identities: []string{att.Identity, att2.Identity},
			Leases: []backend.LeaseKey{lease.Key}, Schedules: []backend.ActivationKey{sched.Key}})
		require.NoError(t, err)
		require.Equal(t, run2, f.Runs[run.ID])
		require.Equal(t, act2, f.Activations[act.Key])
		require.Equal(t, group2, f.Groups[group.Controller])
		require.Equal(t, att2, f.Attempts[att.Key])
		require.NotContains(t, f.Identities, att.Identity)
		require.Equal(t, att2, f.Identities[att2.Identity])
		require.Equal(t, lease2, f.Leases[lease.Key])
		require.Equal(t, sched2, f.Schedules[sched.Key])
	})
	update(t, b, backend.Del(backend.RetrySchedule{Key: sched.Key}))
	view(t, b, func(r backend.ReadTx) {
		f, err := r.Load(context.Background(), backend.Lookup{Schedules: []backend.ActivationKey{sched.Key}})
		require.NoError(t, err)
		require.Empty(t, f.Schedules)
	})
}

func TestOperationsOutsideTheTableUnsupported(t *testing.T) {
	t.Parallel()
	b := newStore(t)
	run, link, act, group, _, _, _, ev := fullRecords("r", []byte(`{}`))
	bad := []backend.Write{
		backend.Rep(link), backend.Rep(ev),
		backend.Del(run), backend.Del(link), backend.Del(act), backend.Del(group),
		{Op: 0, Record: run}, {Op: 9, Record: run},
		{Op: backend.Insert, Record: nil},
		backend.Ins(&run), // pointers are not records of the table
	}
	for _, w := range bad {
		require.ErrorIs(t, applyErr(b, w), backend.ErrUnsupported, "%v %T", w.Op, w.Record)
	}
}

func TestApplyStopsAtFirstFailureAndLaterReadsSeeWrites(t *testing.T) {
	t.Parallel()
	b := newStore(t)
	update(t, b, backend.Ins(backend.Run{ID: "a"}))
	ctx := context.Background()
	require.NoError(t, b.Update(ctx, func(tx backend.Tx) error {
		err := tx.Apply(ctx, backend.Ins(backend.Run{ID: "b"}), backend.Ins(backend.Run{ID: "a"}), backend.Ins(backend.Run{ID: "c"}))
		require.ErrorIs(t, err, backend.ErrConflict)
		f, err := tx.Load(ctx, backend.Lookup{Runs: []string{"a", "b", "c"}})
		require.NoError(t, err)
		require.Contains(t, f.Runs, "b") // applied before the failure
		require.NotContains(t, f.Runs, "c")
		// A conflict detected by the adapter leaves the transaction usable.
		return tx.Apply(ctx, backend.Ins(backend.Run{ID: "d"}))
	}))
	view(t, b, func(r backend.ReadTx) {
		f, err := r.Load(ctx, backend.Lookup{Runs: []string{"b", "c", "d"}})
		require.NoError(t, err)
		require.Len(t, f.Runs, 2)
	})
}
