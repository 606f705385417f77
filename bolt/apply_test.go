package bolt

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
)

// The operation table of backend's package doc, row by row.
func TestApplyOperationTable(t *testing.T) {
	t.Parallel()
	run, lnk, act, grp, att, ls, sch, ev := fullRecords("op-", []byte(`{}`))
	rows := []struct {
		rec              backend.Record
		replace, delete_ bool
	}{
		{run, true, false}, {lnk, false, false}, {act, true, false}, {grp, true, false},
		{att, true, true}, {ls, true, true}, {sch, true, true}, {ev, false, true},
	}
	for _, row := range rows {
		t.Run(row.rec.Kind(), func(t *testing.T) {
			t.Parallel()
			b := openTemp(t)
			// Replace and Delete of a missing record.
			err := applyErr(b, backend.Rep(row.rec))
			if row.replace {
				require.ErrorIs(t, err, backend.ErrNotFound)
			} else {
				require.ErrorIs(t, err, backend.ErrUnsupported)
			}
			err = applyErr(b, backend.Del(row.rec))
			if row.delete_ {
				require.ErrorIs(t, err, backend.ErrNotFound)
			} else {
				require.ErrorIs(t, err, backend.ErrUnsupported)
			}
			// Insert, then Insert again.
			apply(t, b, backend.Ins(row.rec))
			require.ErrorIs(t, applyErr(b, backend.Ins(row.rec)), backend.ErrConflict)
			if row.replace {
				apply(t, b, backend.Rep(row.rec))
			}
			if row.delete_ {
				apply(t, b, backend.Del(row.rec))
				require.ErrorIs(t, applyErr(b, backend.Del(row.rec)), backend.ErrNotFound)
			}
			require.NoError(t, b.Verify(context.Background()))
		})
	}
}

func TestApplyRejectsWhatIsNotARecordValue(t *testing.T) {
	t.Parallel()
	b := openTemp(t)
	run := backend.Run{ID: "r"}
	require.ErrorIs(t, applyErr(b, backend.Ins(&run)), backend.ErrUnsupported)
	require.ErrorIs(t, applyErr(b, backend.Write{Op: backend.Insert}), backend.ErrUnsupported)
	require.ErrorIs(t, applyErr(b, backend.Write{Op: 9, Record: run}), backend.ErrUnsupported)
	require.ErrorIs(t, applyErr(b, backend.Write{Op: 0, Record: run}), backend.ErrUnsupported)
}

func TestApplyIdentityIsUnique(t *testing.T) {
	t.Parallel()
	b := openTemp(t)
	a1 := attempt(attKey("r", "n", "a", 1), "same", backend.AttemptPrepared, 1)
	a2 := attempt(attKey("r", "n", "a", 2), "same", backend.AttemptPrepared, 2)
	a3 := attempt(attKey("r", "n", "a", 3), "other", backend.AttemptPrepared, 3)
	apply(t, b, backend.Ins(a1))
	require.ErrorIs(t, applyErr(b, backend.Ins(a2)), backend.ErrConflict)
	apply(t, b, backend.Ins(a3))
	// A Replace may not take another attempt's identity either.
	a3.Identity = "same"
	require.ErrorIs(t, applyErr(b, backend.Rep(a3)), backend.ErrConflict)
	// A Replace that keeps its own identity is fine.
	a1.Status = backend.AttemptAdmitted
	apply(t, b, backend.Rep(a1))
	require.NoError(t, b.Verify(context.Background()))
}

// Writes apply in order and later reads see them; the first failure stops
// Apply and fn's error rolls all back.
func TestApplyOrderAndFailureStops(t *testing.T) {
	t.Parallel()
	b := openTemp(t)
	ctx := context.Background()
	s := schedule(actKey("r", "n", "a"), 5)
	apply(t, b, backend.Ins(s), backend.Del(s), backend.Ins(s)) // in order, so it ends present
	err := b.Update(ctx, func(tx backend.Tx) error {
		err := tx.Apply(ctx, backend.Del(s), backend.Del(s), backend.Ins(backend.Run{ID: "never"}))
		require.ErrorIs(t, err, backend.ErrNotFound)
		f, lerr := tx.Load(ctx, backend.Lookup{Schedules: []backend.ActivationKey{s.Key}, Runs: []string{"never"}})
		require.NoError(t, lerr)
		require.Empty(t, f.Schedules, "the first Delete happened")
		require.Empty(t, f.Runs, "the write after the failure did not")
		return err
	})
	require.ErrorIs(t, err, backend.ErrNotFound)
	view(t, b, func(ctx context.Context, r backend.ReadTx) {
		got, err := r.DueSchedules(ctx, backend.ScheduleQuery{RunID: "r", DueBy: 10, Limit: 5})
		require.NoError(t, err)
		require.Equal(t, []backend.RetrySchedule{s}, got)
	})
	require.NoError(t, b.Verify(ctx))
}

// Index entries move with their records.
func TestApplyMaintainsIndexes(t *testing.T) {
	t.Parallel()
	b := openTemp(t)
	ctx := context.Background()
	k := actKey("r", "n", "a")
	a := activation(k, true)
	att := attempt(attKey("r", "n", "a", 1), "id-1", backend.AttemptPrepared, 10)
	l := lease(att.Key, "res", backend.LeaseWrite, 0)
	s := schedule(k, 50)
	apply(t, b, backend.Ins(a), backend.Ins(att), backend.Ins(l), backend.Ins(s))
	require.NoError(t, b.Verify(ctx))

	a.Admissible = false
	att.Status, att.PreparedMS = backend.AttemptAdmitted, 20
	l.ReleasedMS = 99
	s.DueMS = 7
	apply(t, b, backend.Rep(a), backend.Rep(att), backend.Rep(l), backend.Rep(s))
	require.NoError(t, b.Verify(ctx))
	view(t, b, func(ctx context.Context, r backend.ReadTx) {
		p, err := r.PendingActivations(ctx, backend.PendingQuery{Limit: 10})
		require.NoError(t, err)
		require.Empty(t, p)
		prepared, err := r.Attempts(ctx, backend.AttemptQuery{Status: backend.AttemptPrepared, Limit: 10})
		require.NoError(t, err)
		require.Empty(t, prepared)
		admitted, err := r.Attempts(ctx, backend.AttemptQuery{RunID: "r", Status: backend.AttemptAdmitted, Limit: 10})
		require.NoError(t, err)
		require.Equal(t, []backend.Attempt{att}, admitted)
		leases, err := r.ActiveLeases(ctx, backend.LeaseQuery{RunID: "r", Limit: 10})
		require.NoError(t, err)
		require.Empty(t, leases)
		f, err := r.Load(ctx, backend.Lookup{Resources: []backend.ResourceRef{{RunID: "r", Resource: "res"}}})
		require.NoError(t, err)
		require.Empty(t, f.Resources)
		due, err := r.DueSchedules(ctx, backend.ScheduleQuery{RunID: "r", DueBy: 7, Limit: 10})
		require.NoError(t, err)
		require.Equal(t, []backend.RetrySchedule{s}, due)
	})
	apply(t, b, backend.Del(s))
	require.NoError(t, b.Verify(ctx))
	n := 0
	view(t, b, func(ctx context.Context, r backend.ReadTx) {
		due, err := r.DueSchedules(ctx, backend.ScheduleQuery{RunID: "r", DueBy: 1 << 62, Limit: 10})
		require.NoError(t, err)
		n = len(due)
	})
	require.Zero(t, n)
}
