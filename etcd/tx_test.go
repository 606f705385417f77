package etcd_test

import (
	"context"
	"encoding/binary"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/etcd"
)

func admissible(run, act string) backend.Activation {
	return backend.Activation{Key: backend.ActivationKey{RunID: run, NodeID: "n", ActivationID: act},
		Status: backend.ActivationPending, Admissible: true, Input: []byte(`{}`), CreatedMS: 1}
}

func insertActs(acts ...backend.Activation) backend.Changes {
	return backend.Changes{Insert: backend.Inserts{Activations: acts}}
}

// TestPhantomInsertIntoAScannedRangeFailsTheCommit: a transaction scans a
// run's admissible range and finds it empty; another commits an insert
// into that range before it commits: its commit must fail and fn run
// again (seeing the new activation). An insert outside the range (another
// run) must not conflict.
func TestPhantomInsertIntoAScannedRangeFailsTheCommit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		otherRun string
		wantRuns int64
	}{
		{"insert_into_the_range", "r1", 2},
		{"insert_outside_the_range", "r2", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, p := openFresh(t)
			other, err := openLocator(ctxT(t), locator(p))
			require.NoError(t, err)
			defer other.Close()
			ctx := context.Background()
			var runs atomic.Int64
			var seen []int
			require.NoError(t, b.Update(ctxT(t), func(tx backend.Tx) error {
				n := runs.Add(1)
				got, err := tx.AdmissibleActivations(ctx, backend.AdmissibleQuery{RunID: "r1", Limit: 10})
				if err != nil {
					return err
				}
				seen = append(seen, len(got))
				if n == 1 {
					require.NoError(t, other.Update(ctx, func(tx backend.Tx) error {
						return tx.Apply(ctx, insertActs(admissible(tc.otherRun, "phantom")))
					}))
				}
				return tx.Apply(ctx, backend.Changes{Insert: backend.Inserts{Events: []backend.Event{{RunID: "r1", Seq: n, Type: "t", CreatedMS: 1}}}})
			}))
			assert.Equal(t, tc.wantRuns, runs.Load())
			assert.Equal(t, tc.wantRuns-1, b.Stats().Conflicts)
			if tc.wantRuns == 2 {
				assert.Equal(t, []int{0, 1}, seen, "the re-run sees the phantom")
			}
		})
	}
}

// TestDeleteFromAScannedRangeFailsTheCommit: a record scan's range compare
// cannot see a delete; its per-key compares must.
func TestDeleteFromAScannedRangeFailsTheCommit(t *testing.T) {
	t.Parallel()
	b, p := openFresh(t)
	ctx := context.Background()
	require.NoError(t, b.Update(ctxT(t), func(tx backend.Tx) error {
		return tx.Apply(ctx, backend.Changes{Insert: backend.Inserts{
			Runs:   []backend.Run{{ID: "r"}},
			Events: []backend.Event{{RunID: "r", Seq: 1, Type: "t", CreatedMS: 1}, {RunID: "r", Seq: 2, Type: "t", CreatedMS: 1}},
		}})
	}))
	other, err := openLocator(ctxT(t), locator(p))
	require.NoError(t, err)
	defer other.Close()
	var runs atomic.Int64
	require.NoError(t, b.Update(ctxT(t), func(tx backend.Tx) error {
		n := runs.Add(1)
		evs, err := tx.Events(ctx, backend.EventQuery{RunID: "r", Limit: 10})
		if err != nil {
			return err
		}
		if n == 1 {
			require.Len(t, evs, 2)
			require.NoError(t, other.Update(ctx, func(tx backend.Tx) error {
				return tx.Apply(ctx, backend.Changes{Delete: backend.Deletes{Events: []backend.EventKey{{RunID: "r", Seq: 1}}}})
			}))
		}
		return tx.Apply(ctx, backend.Changes{Insert: backend.Inserts{Events: []backend.Event{{RunID: "r", Seq: 10 + int64(len(evs)), Type: "t", CreatedMS: 1}}}})
	}))
	assert.Equal(t, int64(2), runs.Load(), "the delete failed the first commit")
	assert.Equal(t, []int64{2, 11}, events(t, b))
}

// TestViewReadsOneRevision: a commit between two reads of one View is
// invisible to the second.
func TestViewReadsOneRevision(t *testing.T) {
	t.Parallel()
	b, _ := openFresh(t)
	ctx := context.Background()
	setup(t, b)
	require.NoError(t, b.View(ctxT(t), func(r backend.ReadTx) error {
		first, err := r.Runs(ctx, backend.RunQuery{Limit: 10})
		require.NoError(t, err)
		require.NoError(t, b.Update(ctx, func(tx backend.Tx) error {
			return tx.Apply(ctx, backend.Changes{Insert: backend.Inserts{Runs: []backend.Run{{ID: "s"}}}})
		}))
		second, err := r.Runs(ctx, backend.RunQuery{Limit: 10})
		require.NoError(t, err)
		assert.Equal(t, first, second)
		return nil
	}))
}

// TestConflictsRunOutIntoErrBusy: an Update whose every commit conflicts
// ends with ErrBusy once the busy timeout has passed.
func TestConflictsRunOutIntoErrBusy(t *testing.T) {
	t.Parallel()
	b, p := openFresh(t, etcd.WithBusyTimeout(200*time.Millisecond))
	setup(t, b)
	other, err := openLocator(ctxT(t), locator(p))
	require.NoError(t, err)
	defer other.Close()
	ctx := context.Background()
	var n atomic.Int64
	err = b.Update(ctxT(t), func(tx backend.Tx) error {
		run, err := backend.GetRun(ctx, tx, "r")
		if err != nil {
			return err
		}
		// Someone else changes the run after every read.
		require.NoError(t, other.Update(ctx, func(tx backend.Tx) error {
			r, err := backend.GetRun(ctx, tx, "r")
			if err != nil {
				return err
			}
			r.UpdatedMS = n.Add(1)
			return tx.Apply(ctx, backend.Changes{Replace: backend.Replaces{Runs: []backend.Run{r}}})
		}))
		run.Depth++
		return tx.Apply(ctx, backend.Changes{Replace: backend.Replaces{Runs: []backend.Run{run}}})
	})
	require.ErrorIs(t, err, backend.ErrBusy)
	assert.ErrorContains(t, err, "last: a concurrent commit changed what fn read", "the error says why fn ran again")
	s := b.Stats()
	assert.Equal(t, int64(1), s.Busy)
	assert.GreaterOrEqual(t, s.Conflicts, int64(1))
	assert.Equal(t, int64(1), s.Commits, "only setup committed")
}

// TestOpenRefusesForeignAndNewerStoresWithoutWriting covers Open's checks.
func TestOpenRefusesForeignAndNewerStoresWithoutWriting(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	t.Run("foreign", func(t *testing.T) {
		p := newPrefix(t)
		put(t, p+"someone-elses", "x")
		_, err := openLocator(ctx, locator(p))
		require.ErrorIs(t, err, backend.ErrForeignStore)
		resp, err := newClient(t).Get(ctx, p, withPrefix()...)
		require.NoError(t, err)
		assert.Len(t, resp.Kvs, 1, "nothing written")
	})
	t.Run("newer_version", func(t *testing.T) {
		b, p := openFresh(t)
		require.NoError(t, b.Close())
		v := binary.BigEndian.AppendUint64(nil, etcd.SchemaVersion+1)
		put(t, p+"mversion", string(v))
		before, err := newClient(t).Get(ctx, p, withPrefix()...)
		require.NoError(t, err)
		_, err = openLocator(ctx, locator(p))
		var sv *backend.SchemaVersionError
		require.ErrorAs(t, err, &sv)
		assert.Equal(t, int64(etcd.SchemaVersion+1), sv.Found)
		assert.ErrorIs(t, err, backend.ErrSchemaVersion)
		after, err := newClient(t).Get(ctx, p, withPrefix()...)
		require.NoError(t, err)
		assert.Equal(t, before.Kvs, after.Kvs, "nothing written under the prefix")
	})
	t.Run("concurrent_opens_of_a_fresh_prefix", func(t *testing.T) {
		p := newPrefix(t)
		errs := make(chan error, 8)
		for range 8 {
			go func() {
				b, err := openLocator(ctx, locator(p))
				if err == nil {
					err = b.Close()
				}
				errs <- err
			}()
		}
		for range 8 {
			require.NoError(t, <-errs)
		}
	})
}

// TestClosedBackend: every call after Close fails with ErrClosed, and
// Close removes the Backend's commit markers.
func TestClosedBackend(t *testing.T) {
	t.Parallel()
	b, p := openFresh(t)
	setup(t, b)
	require.NoError(t, b.Close())
	ctx := ctxT(t)
	assert.ErrorIs(t, b.Update(ctx, func(backend.Tx) error { return nil }), backend.ErrClosed)
	assert.ErrorIs(t, b.View(ctx, func(backend.ReadTx) error { return nil }), backend.ErrClosed)
	assert.True(t, errors.Is(b.Close(), backend.ErrClosed))
	assert.Empty(t, keysWith(t, p, 'x'), "commit markers deleted")
}
