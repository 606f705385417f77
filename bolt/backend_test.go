package bolt

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"

	"github.com/wfstore/wfstore/backend"
)

func txID(t *testing.T, b *Backend) int {
	t.Helper()
	var id int
	require.NoError(t, b.db.View(func(tx *bbolt.Tx) error { id = tx.ID(); return nil }))
	return id
}

func runExists(t *testing.T, b *Backend, id string) bool {
	t.Helper()
	var ok bool
	view(t, b, func(ctx context.Context, r backend.ReadTx) {
		_, err := backend.GetRun(ctx, r, id)
		if !errors.Is(err, backend.ErrNotFound) {
			require.NoError(t, err)
			ok = true
		}
	})
	return ok
}

func TestUpdateErrorRollsBack(t *testing.T) {
	t.Parallel()
	b := openTemp(t)
	ctx := context.Background()
	boom := errors.New("boom")
	err := b.Update(ctx, func(tx backend.Tx) error {
		require.NoError(t, tx.Apply(ctx, backend.Changes{Insert: backend.Inserts{
			Runs: []backend.Run{{ID: "r"}}, Activations: []backend.Activation{activation(actKey("r", "n", "a"), true)}}}))
		return boom
	})
	require.Same(t, boom, err, "fn's error is returned as is")
	require.False(t, runExists(t, b, "r"))
	require.NoError(t, b.Verify(ctx))
}

func TestUpdatePanicRollsBackAndRepanics(t *testing.T) {
	t.Parallel()
	b := openTemp(t)
	ctx := context.Background()
	require.PanicsWithValue(t, "boom", func() {
		_ = b.Update(ctx, func(tx backend.Tx) error {
			require.NoError(t, tx.Apply(ctx, insertRuns(backend.Run{ID: "r"})))
			panic("boom")
		})
	})
	require.False(t, runExists(t, b, "r"))
	// The writer is free again.
	apply(t, b, insertRuns(backend.Run{ID: "after"}))
	require.True(t, runExists(t, b, "after"))
}

func TestViewSeesOneSnapshotAndUpdateSeesItsWrites(t *testing.T) {
	t.Parallel()
	b := openTemp(t)
	ctx := context.Background()
	apply(t, b, insertRuns(backend.Run{ID: "r", Depth: 1}))
	// A commit that grows the file must remap it, which waits for open
	// Views; grow it first so the commit below can run inside the View.
	grow := backend.Run{ID: "grow", Metadata: make([]byte, 4<<20)}
	apply(t, b, insertRuns(grow))
	grow.Metadata = nil
	apply(t, b, replaceRuns(grow))
	require.NoError(t, b.View(ctx, func(r backend.ReadTx) error {
		apply(t, b, replaceRuns(backend.Run{ID: "r", Depth: 2})) // commits while the View is open
		got, err := backend.GetRun(ctx, r, "r")
		require.NoError(t, err)
		require.EqualValues(t, 1, got.Depth)
		return nil
	}))
	require.NoError(t, b.Update(ctx, func(tx backend.Tx) error {
		require.NoError(t, tx.Apply(ctx, replaceRuns(backend.Run{ID: "r", Depth: 3})))
		got, err := backend.GetRun(ctx, tx, "r")
		require.NoError(t, err)
		require.EqualValues(t, 3, got.Depth)
		return nil
	}))
}

// An Update that writes nothing does not commit (no new bbolt transaction
// id, so no meta page, freelist or fsync); one that writes does.
func TestUpdateWithoutWritesDoesNotCommit(t *testing.T) {
	t.Parallel()
	b := openTemp(t)
	ctx := context.Background()
	run := backend.Run{ID: "r"}
	apply(t, b, insertRuns(run))
	before := txID(t, b)
	require.NoError(t, b.Update(ctx, func(tx backend.Tx) error {
		_, err := backend.GetRun(ctx, tx, "r")
		return err
	}))
	// A failed Insert, a Replace with identical fields and an Expect write
	// nothing either.
	require.NoError(t, b.Update(ctx, func(tx backend.Tx) error {
		require.ErrorIs(t, tx.Apply(ctx, insertRuns(run)), backend.ErrConflict)
		return tx.Apply(ctx, backend.Changes{Expect: backend.Expected{Runs: []backend.Run{run}}, Replace: backend.Replaces{Runs: []backend.Run{run}}})
	}))
	require.Equal(t, before, txID(t, b))
	apply(t, b, replaceRuns(backend.Run{ID: "r", Depth: 1}))
	require.Equal(t, before+1, txID(t, b))
}

func TestClosedBackend(t *testing.T) {
	t.Parallel()
	b := openTemp(t)
	ctx := context.Background()
	require.NoError(t, b.Close())
	require.ErrorIs(t, b.View(ctx, func(backend.ReadTx) error { return nil }), backend.ErrClosed)
	require.ErrorIs(t, b.Update(ctx, func(backend.Tx) error { return nil }), backend.ErrClosed)
	require.ErrorIs(t, b.Verify(ctx), backend.ErrClosed)
	require.ErrorIs(t, b.Close(), backend.ErrClosed)
}

func TestTxUsedAfterFnReturns(t *testing.T) {
	t.Parallel()
	b := openTemp(t)
	ctx := context.Background()
	var kept backend.Tx
	require.NoError(t, b.Update(ctx, func(tx backend.Tx) error { kept = tx; return nil }))
	require.ErrorIs(t, kept.Apply(ctx, insertRuns(backend.Run{ID: "r"})), backend.ErrClosed)
	_, err := kept.Load(ctx, backend.Lookup{Runs: []string{"r"}})
	require.ErrorIs(t, err, backend.ErrClosed)
}

func TestCancelledContext(t *testing.T) {
	t.Parallel()
	b := openTemp(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	called := false
	err := b.Update(ctx, func(backend.Tx) error { called = true; return nil })
	require.ErrorIs(t, err, context.Canceled)
	err = b.View(ctx, func(backend.ReadTx) error { called = true; return nil })
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, called)

	// Cancelled during fn: every operation refuses, so fn returns the error.
	ctx2, cancel2 := context.WithCancel(context.Background())
	err = b.Update(ctx2, func(tx backend.Tx) error {
		cancel2()
		if err := tx.Apply(ctx2, insertRuns(backend.Run{ID: "r"})); err != nil {
			return err
		}
		_, err := tx.AdmissibleActivations(ctx2, backend.AdmissibleQuery{Limit: 1})
		return err
	})
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, runExists(t, b, "r"))

	// Waiting for the writer honours ctx.
	hold, release := make(chan struct{}), make(chan struct{})
	go func() {
		_ = b.Update(context.Background(), func(backend.Tx) error { close(hold); <-release; return nil })
	}()
	<-hold
	ctx3, cancel3 := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel3()
	err = b.Update(ctx3, func(backend.Tx) error { return nil })
	require.ErrorIs(t, err, context.DeadlineExceeded)
	close(release)
}

// Many goroutines incrementing one counter lose no update.
func TestConcurrentUpdatesAreSerialized(t *testing.T) {
	t.Parallel()
	b := openTemp(t)
	ctx := context.Background()
	apply(t, b, insertRuns(backend.Run{ID: "counter"}))
	const workers, each = 8, 25
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				err := b.Update(ctx, func(tx backend.Tx) error {
					r, err := backend.GetRun(ctx, tx, "counter")
					if err != nil {
						return err
					}
					r.AttemptCount++
					return tx.Apply(ctx, replaceRuns(r))
				})
				if err != nil {
					t.Error(err)
				}
				_ = b.View(ctx, func(r backend.ReadTx) error { _, err := backend.GetRun(ctx, r, "counter"); return err })
			}
		})
	}
	wg.Wait()
	view(t, b, func(ctx context.Context, r backend.ReadTx) {
		got, err := backend.GetRun(ctx, r, "counter")
		require.NoError(t, err)
		require.EqualValues(t, workers*each, got.AttemptCount)
	})
}

func TestOpenDBWithCallersHandle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "caller.db")
	db, err := bbolt.Open(path, 0o600, nil)
	require.NoError(t, err)
	defer db.Close()
	b, err := OpenDB(ctx, db)
	require.NoError(t, err)
	apply(t, b, insertRuns(backend.Run{ID: "r"}))
	require.Equal(t, "on", b.Info().Settings["fsync"])
	require.False(t, b.Capabilities().MultiInstance)
	require.False(t, b.Capabilities().MultiProcess)
	require.NoError(t, b.Close())
	require.ErrorIs(t, b.Update(ctx, func(backend.Tx) error { return nil }), backend.ErrClosed)
	// The caller's handle is still open and holds the store.
	require.NoError(t, db.View(func(tx *bbolt.Tx) error {
		bk, k, err := locate(tx, &layout.Run.Space, layout.Run.Stored(layout.Run.Key("r")), false)
		require.NoError(t, err)
		require.NotNil(t, bk.Get(k))
		return nil
	}))
	b2, err := OpenDB(ctx, db)
	require.NoError(t, err)
	require.True(t, runExists(t, b2, "r"))
}

func TestOpenDBRefusesNoSync(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := bbolt.Open(filepath.Join(t.TempDir(), "nosync.db"), 0o600, &bbolt.Options{NoSync: true})
	require.NoError(t, err)
	defer db.Close()
	_, err = OpenDB(ctx, db)
	require.ErrorIs(t, err, ErrNoSync)

	b, err := OpenDB(ctx, db, WithNoSyncHandle())
	require.NoError(t, err)
	require.Contains(t, b.Info().Settings["fsync"], "off")
	apply(t, b, insertRuns(backend.Run{ID: "r"}))
	b3, err := OpenDB(ctx, db, WithRelaxedDurability())
	require.NoError(t, err, "relaxed durability accepts a NoSync handle too")
	apply(t, b3, insertRuns(backend.Run{ID: "r3"}))

	// A durable handle switched to NoSync later is refused at Update.
	db2, err := bbolt.Open(filepath.Join(t.TempDir(), "later.db"), 0o600, nil)
	require.NoError(t, err)
	defer db2.Close()
	b2, err := OpenDB(ctx, db2)
	require.NoError(t, err)
	db2.NoSync = true
	require.ErrorIs(t, b2.Update(ctx, func(backend.Tx) error { return nil }), ErrNoSync)
}
