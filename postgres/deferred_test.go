package postgres_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/postgres"
)

// A deferred Insert that conflicts surfaces from the next Load, as
// ErrConflict, and nothing of the transaction commits; the same for a
// Replace onto another attempt's Identity (a unique violation) and for a
// Replace of a missing key (ErrNotFound).
func TestDeferredConflictSurfacesFromNextLoad(t *testing.T) {
	t.Parallel()
	b, _, _ := openFresh(t, postgres.WithManyRowsFrom(2))
	_, _, _, _, att, _, _, _ := fullRecords("r")
	other := att
	other.Key.Attempt, other.Identity = 7, "other-identity"
	apply(t, b, backend.Changes{Insert: backend.Inserts{Runs: runs("exists"), Attempts: []backend.Attempt{att, other}}})
	onto := other
	onto.Identity = att.Identity
	for _, c := range []struct {
		name string
		w    backend.Changes
		want error
	}{
		{"insert", insertRuns("exists"), backend.ErrConflict},
		{"insert-many", insertRuns("fresh", "exists"), backend.ErrConflict},
		{"identity", backend.Changes{Replace: backend.Replaces{Attempts: []backend.Attempt{onto}}}, backend.ErrConflict},
		{"identity-many", backend.Changes{Replace: backend.Replaces{Attempts: []backend.Attempt{att, onto}}}, backend.ErrConflict},
		{"missing", replaceRuns(backend.Run{ID: "absent"}), backend.ErrNotFound},
		{"missing-many", replaceRuns(backend.Run{ID: "exists"}, backend.Run{ID: "absent"}), backend.ErrNotFound},
	} {
		runs := 0
		var loadErr error
		err := b.Update(ctxT(t), func(tx backend.Tx) error {
			runs++
			require.NoError(t, tx.Apply(context.Background(), insertRuns("new")))
			require.NoError(t, tx.Apply(context.Background(), c.w), "%s: Apply sends nothing", c.name)
			_, loadErr = tx.Load(context.Background(), backend.Lookup{Runs: []string{"exists", "new"}})
			return loadErr
		})
		require.ErrorIs(t, loadErr, c.want, c.name)
		require.ErrorIs(t, err, c.want, c.name)
		require.Equal(t, 1, runs, "%s: not re-run", c.name)
		require.Empty(t, load(t, b, backend.Lookup{Runs: []string{"new"}}).Runs, c.name)
	}
	f := load(t, b, backend.Lookup{Attempts: []backend.AttemptKey{other.Key}})
	require.Equal(t, "other-identity", f.Attempts[other.Key].Identity)
}

// Writes still queued when fn returns nil go in the batch carrying COMMIT.
// One that conflicts makes Update return ErrConflict (or ErrNotFound) with
// nothing committed, the writes before it and after it included, and fn is
// not run again.
func TestDeferredConflictAtCommit(t *testing.T) {
	t.Parallel()
	b, _, _ := openFresh(t, postgres.WithManyRowsFrom(2))
	apply(t, b, insertRuns("exists"))
	for _, c := range []struct {
		name string
		w    backend.Changes
		want error
	}{
		{"conflict", insertRuns("b", "exists", "c"), backend.ErrConflict},
		{"conflict-one", backend.Changes{Insert: backend.Inserts{Runs: runs("exists"), Links: []backend.RunLink{{ChildRunID: "b"}}}}, backend.ErrConflict},
		{"notfound", backend.Changes{Insert: backend.Inserts{Runs: runs("b", "c")},
			Delete: backend.Deletes{Schedules: []backend.ActivationKey{{RunID: "x"}}}}, backend.ErrNotFound},
		{"notfound-many", backend.Changes{Insert: backend.Inserts{Runs: runs("b", "c")},
			Delete: backend.Deletes{Events: []backend.EventKey{{RunID: "x", Seq: 1}, {RunID: "x", Seq: 2}}}}, backend.ErrNotFound},
	} {
		for _, read := range []bool{false, true} { // BEGIN in the commit batch, or sent before
			runs := 0
			err := b.Update(ctxT(t), func(tx backend.Tx) error {
				runs++
				if read {
					if _, err := tx.Load(context.Background(), backend.Lookup{Runs: []string{"exists"}}); err != nil {
						return err
					}
				}
				if err := tx.Apply(context.Background(), insertRuns("a")); err != nil {
					return err
				}
				return tx.Apply(context.Background(), c.w)
			})
			require.ErrorIs(t, err, c.want, c.name)
			require.Equal(t, 1, runs, "%s: not re-run", c.name)
			require.Empty(t, load(t, b, backend.Lookup{Runs: []string{"a", "b", "c"}}).Runs, "%s: nothing committed", c.name)
		}
	}
	require.Zero(t, b.StatsForTest().Serialization)
	apply(t, b, insertRuns("a")) // the Backend is healthy
}

// A serialization failure raised in the batch carrying COMMIT (here: the
// deferred Replace of a row another transaction changed since fn read it)
// re-runs fn, which then commits.
func TestSerializationFailureInCommitBatchReruns(t *testing.T) {
	t.Parallel()
	b1, dsn, schema := openFresh(t)
	b2 := openOn(t, dsn, schema)
	apply(t, b1, insertRuns("c"))
	var runs atomic.Int32
	require.NoError(t, b1.Update(ctxT(t), func(tx backend.Tx) error {
		n := runs.Add(1)
		r, err := backend.GetRun(context.Background(), tx, "c")
		if err != nil {
			return err
		}
		if n == 1 { // someone else commits a change to the row we read
			apply(t, b2, replaceRuns(backend.Run{ID: "c", AttemptCount: r.AttemptCount + 100}))
		}
		r.AttemptCount++
		// The write travels with COMMIT: the failure can only come from
		// that batch.
		return tx.Apply(context.Background(), replaceRuns(r))
	}))
	require.Equal(t, int32(2), runs.Load())
	require.Equal(t, int64(101), load(t, b1, backend.Lookup{Runs: []string{"c"}}).Runs["c"].AttemptCount)
	require.Equal(t, int64(1), b1.StatsForTest().Serialization)
	require.Equal(t, backend.Reruns{Conflict: 1}, b1.Reruns(), "the re-run counter tells the same")

	// When every run fails so, the caller gets ErrBusy with the 40001.
	b3 := openOn(t, dsn, schema)
	b4 := openOn(t, dsn, schema, postgres.WithBusyTimeout(20*time.Millisecond))
	err := b4.Update(ctxT(t), func(tx backend.Tx) error {
		r, err := backend.GetRun(context.Background(), tx, "c")
		if err != nil {
			return err
		}
		apply(t, b3, replaceRuns(backend.Run{ID: "c", AttemptCount: r.AttemptCount + 1}))
		return tx.Apply(context.Background(), replaceRuns(r))
	})
	require.ErrorIs(t, err, backend.ErrBusy)
	var pe *pgconn.PgError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "40001", pe.Code)
}
