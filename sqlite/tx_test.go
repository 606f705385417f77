package sqlite

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/wfstore/wfstore/backend"
)

func runExists(t *testing.T, b *Backend, id string) bool {
	t.Helper()
	var ok bool
	view(t, b, func(r backend.ReadTx) {
		f, err := r.Load(context.Background(), backend.Lookup{Runs: []string{id}})
		require.NoError(t, err)
		_, ok = f.Runs[id]
	})
	return ok
}

func TestUpdateErrorRollsBackAndIsReturnedAsIs(t *testing.T) {
	t.Parallel()
	b := newStore(t)
	ctx := context.Background()
	myErr := errors.New("mine")
	err := b.Update(ctx, func(tx backend.Tx) error {
		require.NoError(t, tx.Apply(ctx, insertRuns(backend.Run{ID: "r"})))
		f, err := tx.Load(ctx, backend.Lookup{Runs: []string{"r"}})
		require.NoError(t, err)
		require.Contains(t, f.Runs, "r") // own writes visible inside
		return myErr
	})
	require.Same(t, myErr, err)
	require.False(t, runExists(t, b, "r"))
	// The writer is usable afterwards.
	update(t, b, insertRuns(backend.Run{ID: "r"}))
	require.True(t, runExists(t, b, "r"))
}

func TestPanicInUpdateRollsBackAndRepanics(t *testing.T) {
	t.Parallel()
	b := newStore(t)
	ctx := context.Background()
	require.PanicsWithValue(t, "boom", func() {
		_ = b.Update(ctx, func(tx backend.Tx) error {
			require.NoError(t, tx.Apply(ctx, insertRuns(backend.Run{ID: "r"})))
			panic("boom")
		})
	})
	require.False(t, runExists(t, b, "r"))
	require.PanicsWithValue(t, "view boom", func() {
		_ = b.View(ctx, func(backend.ReadTx) error { panic("view boom") })
	})
	update(t, b, insertRuns(backend.Run{ID: "r"}))
	require.True(t, runExists(t, b, "r"))
}

func TestViewErrorReturnedAsIs(t *testing.T) {
	t.Parallel()
	b := newStore(t)
	myErr := errors.New("mine")
	require.Same(t, myErr, b.View(context.Background(), func(backend.ReadTx) error { return myErr }))
}

func TestClosedStoreFailsWithErrClosed(t *testing.T) {
	t.Parallel()
	path := newPath(t)
	b, err := Open(context.Background(), path, WithRelaxedDurability())
	require.NoError(t, err)
	update(t, b, insertRuns(backend.Run{ID: "r"}))
	var kept backend.Tx
	require.NoError(t, b.Update(context.Background(), func(tx backend.Tx) error { kept = tx; return nil }))
	require.NoError(t, b.Close())
	ctx := context.Background()
	require.ErrorIs(t, b.Update(ctx, func(backend.Tx) error { return nil }), backend.ErrClosed)
	require.ErrorIs(t, b.View(ctx, func(backend.ReadTx) error { return nil }), backend.ErrClosed)
	require.ErrorIs(t, b.Close(), backend.ErrClosed)
	_, err = kept.Load(ctx, backend.Lookup{Runs: []string{"r"}})
	require.Error(t, err, "a retained Tx is dead")
	require.Equal(t, "sqlite", b.Info().Name)

	// Reopening sees the committed data.
	b2 := openAt(t, path)
	require.True(t, runExists(t, b2, "r"))
}

func TestCloseFailsUpdatesWaitingForTheWriter(t *testing.T) {
	t.Parallel()
	b, err := Open(context.Background(), newPath(t), WithRelaxedDurability())
	require.NoError(t, err)
	ctx := context.Background()
	inside, release := make(chan struct{}), make(chan struct{})
	go func() {
		_ = b.Update(ctx, func(backend.Tx) error { close(inside); <-release; return nil })
	}()
	<-inside
	waiter := make(chan error, 1)
	go func() { waiter <- b.Update(ctx, func(backend.Tx) error { return nil }) }()
	time.Sleep(20 * time.Millisecond) // let it queue
	closed := make(chan error, 1)
	go func() { closed <- b.Close() }()
	require.ErrorIs(t, <-waiter, backend.ErrClosed)
	close(release)
	require.NoError(t, <-closed)
}

func TestCancelledContext(t *testing.T) {
	t.Parallel()
	b := newStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	called := false
	err := b.Update(ctx, func(backend.Tx) error { called = true; return nil })
	require.ErrorIs(t, err, context.Canceled)
	err = b.View(ctx, func(backend.ReadTx) error { called = true; return nil })
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, called)

	// A context cancelled inside fn fails the statements that use it, and the
	// transaction does not commit even if fn ignores the error.
	bg := context.Background()
	err = b.Update(bg, func(tx backend.Tx) error {
		require.NoError(t, tx.Apply(bg, insertRuns(backend.Run{ID: "a"})))
		require.ErrorIs(t, tx.Apply(ctx, insertRuns(backend.Run{ID: "b"})), context.Canceled)
		return nil
	})
	require.Error(t, err)
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, runExists(t, b, "a"))
	require.NoError(t, b.View(bg, func(r backend.ReadTx) error {
		_, err := r.AdmissibleActivations(ctx, backend.AdmissibleQuery{Limit: 1})
		require.ErrorIs(t, err, context.Canceled)
		return nil
	}))
	update(t, b, insertRuns(backend.Run{ID: "a"}))
}

func TestViewReadsOneSnapshot(t *testing.T) {
	t.Parallel()
	b := newStore(t)
	ctx := context.Background()
	update(t, b, insertRuns(backend.Run{ID: "x", Depth: 1}, backend.Run{ID: "y", Depth: 1}))
	require.NoError(t, b.View(ctx, func(r backend.ReadTx) error {
		x, err := backend.GetRun(ctx, r, "x")
		require.NoError(t, err)
		// A concurrent Update commits while the View is open.
		update(t, b, backend.Changes{
			Replace: backend.Replaces{Runs: []backend.Run{{ID: "x", Depth: 2}, {ID: "y", Depth: 2}}},
			Insert:  backend.Inserts{Runs: []backend.Run{{ID: "z"}}},
		})
		y, err := backend.GetRun(ctx, r, "y")
		require.NoError(t, err)
		require.Equal(t, int64(1), x.Depth)
		require.Equal(t, int64(1), y.Depth)
		_, err = backend.GetRun(ctx, r, "z")
		require.ErrorIs(t, err, backend.ErrNotFound)
		return nil
	}))
	view(t, b, func(r backend.ReadTx) {
		y, err := backend.GetRun(ctx, r, "y")
		require.NoError(t, err)
		require.Equal(t, int64(2), y.Depth)
	})
}

func TestConcurrentUpdatesOneBackendNoLostUpdate(t *testing.T) {
	t.Parallel()
	b := newStore(t)
	incrementers(t, []*Backend{b}, 8, 25)
}
