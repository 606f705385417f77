package sqlite

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
)

// queueUpdates holds the writer lock, starts one Update per fn, each queued
// after the one before, then releases the lock so that one leader takes
// them all. It returns each Update's error, or the value its fn panicked
// with.
func queueUpdates(t *testing.T, b *Backend, fns ...func(tx backend.Tx) error) (errs []error, panics []any) {
	t.Helper()
	b.wsem <- struct{}{}
	errs, panics = make([]error, len(fns)), make([]any, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Go(func() {
			defer func() { panics[i] = recover() }()
			errs[i] = b.Update(context.Background(), fn)
		})
		require.Eventually(t, func() bool { return b.group.Len() == i+1 }, 5*time.Second, 100*time.Microsecond)
	}
	<-b.wsem
	wg.Wait()
	return errs, panics
}

func groupRun(id string, n int64) backend.Run {
	return backend.Run{ID: id, Status: backend.RunRunning, AttemptCount: n}
}

func applyFn(c backend.Changes) func(tx backend.Tx) error {
	return func(tx backend.Tx) error { return tx.Apply(context.Background(), c) }
}

func storedRunIDs(t *testing.T, b *Backend) []string {
	t.Helper()
	var ids []string
	view(t, b, func(r backend.ReadTx) {
		runs, err := r.Runs(context.Background(), backend.RunQuery{Limit: 1000})
		require.NoError(t, err)
		for _, r := range runs {
			ids = append(ids, r.ID)
		}
	})
	return ids
}

func TestGroupCommitSharesOneCommit(t *testing.T) {
	t.Parallel()
	b := newStore(t)
	var fns []func(tx backend.Tx) error
	for i := range 10 {
		fns = append(fns, applyFn(insertRuns(groupRun(fmt.Sprintf("r%02d", i), 1))))
	}
	errs, _ := queueUpdates(t, b, fns...)
	for _, err := range errs {
		require.NoError(t, err)
	}
	st := b.Stats()
	assert.Equal(t, int64(1), st.SharedCommits)
	assert.Equal(t, int64(10), st.SharedUpdates)
	assert.Len(t, storedRunIDs(t, b), 10)
}

func TestGroupCommitFailuresRollBackAlone(t *testing.T) {
	t.Parallel()
	b := newStore(t)
	ctx := context.Background()
	errA := errors.New("a failed after writing")
	errB := errors.New("b failed without writing")
	var sawR0, sawA bool
	errs, panics := queueUpdates(t, b,
		applyFn(insertRuns(groupRun("r0", 1))),
		func(tx backend.Tx) error {
			require.NoError(t, tx.Apply(ctx, insertRuns(groupRun("a", 1))))
			return errA
		},
		func(tx backend.Tx) error { return errB },
		func(tx backend.Tx) error {
			f, err := tx.Load(ctx, backend.Lookup{Runs: []string{"r0", "a"}})
			if err != nil {
				return err
			}
			_, sawR0 = f.Runs["r0"]
			_, sawA = f.Runs["a"]
			return tx.Apply(ctx, insertRuns(groupRun("r1", 1)))
		},
		func(tx backend.Tx) error {
			require.NoError(t, tx.Apply(ctx, insertRuns(groupRun("p", 1))))
			panic("p panics")
		},
		applyFn(insertRuns(groupRun("r2", 1))),
	)
	assert.NoError(t, errs[0])
	assert.ErrorIs(t, errs[1], errA)
	assert.ErrorIs(t, errs[2], errB)
	assert.NoError(t, errs[3])
	assert.Equal(t, "p panics", panics[4])
	assert.NoError(t, errs[5])
	assert.True(t, sawR0, "a fn sees the writes of the fns before it in its group")
	assert.False(t, sawA, "a fn never sees a rolled-back fn's writes")
	assert.Equal(t, []string{"r0", "r1", "r2"}, storedRunIDs(t, b))
	assert.Equal(t, int64(1), b.Stats().SharedCommits)
	integrityOK(t, b)
}

// A fn rolled back inside a group may have changed row images of the rows
// it undid: the fns after it, and the Update after the commit, must not
// trust them (a Replace equal to a wrong image would write nothing).
func TestGroupCommitImagesAfterARollback(t *testing.T) {
	t.Parallel()
	b := newStore(t)
	update(t, b, insertRuns(groupRun("r", 1)))
	fail := errors.New("rolled back")
	errs, _ := queueUpdates(t, b,
		applyFn(replaceRuns(groupRun("r", 2))),
		func(tx backend.Tx) error {
			require.NoError(t, tx.Apply(context.Background(), replaceRuns(groupRun("r", 3))))
			return fail
		},
		applyFn(replaceRuns(groupRun("r", 3))), // stored is 2: must write
	)
	require.NoError(t, errs[0])
	require.ErrorIs(t, errs[1], fail)
	require.NoError(t, errs[2])
	require.Equal(t, int64(3), loadRun(t, b, "r").AttemptCount)

	// Again, with the rolled-back fn last: the commit must not carry its
	// image of r to the next Update.
	errs, _ = queueUpdates(t, b,
		applyFn(replaceRuns(groupRun("r", 4))),
		func(tx backend.Tx) error {
			require.NoError(t, tx.Apply(context.Background(), replaceRuns(groupRun("r", 5))))
			return fail
		},
	)
	require.NoError(t, errs[0])
	require.ErrorIs(t, errs[1], fail)
	update(t, b, replaceRuns(groupRun("r", 5))) // stored is 4: must write
	require.Equal(t, int64(5), loadRun(t, b, "r").AttemptCount)
	err := b.Update(context.Background(), applyFn(expectRuns(groupRun("r", 5))))
	require.NoError(t, err)
	integrityOK(t, b)
}

// A fn whose statement fails with a storage error (here its own ctx,
// cancelled) poisons the transaction: the group is abandoned, the others
// run again and commit, and that fn gets its own error.
func TestGroupCommitPoisonedFnRunsAlone(t *testing.T) {
	t.Parallel()
	b := newStore(t)
	cctx, cancel := context.WithCancel(context.Background())
	errs, _ := queueUpdates(t, b,
		applyFn(insertRuns(groupRun("r0", 1))),
		func(tx backend.Tx) error {
			cancel()
			return tx.Apply(cctx, insertRuns(groupRun("x", 1)))
		},
		applyFn(insertRuns(groupRun("r1", 1))),
	)
	require.NoError(t, errs[0])
	require.ErrorIs(t, errs[1], context.Canceled)
	require.NoError(t, errs[2])
	assert.Equal(t, []string{"r0", "r1"}, storedRunIDs(t, b))
	integrityOK(t, b)
}

func TestGroupCommitCtxWhileQueued(t *testing.T) {
	t.Parallel()
	b := newStore(t)
	b.wsem <- struct{}{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Update(ctx, applyFn(insertRuns(groupRun("x", 1)))) }()
	require.Eventually(t, func() bool { return b.group.Len() == 1 }, 5*time.Second, time.Millisecond)
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	<-b.wsem
	assert.Empty(t, storedRunIDs(t, b))
}
