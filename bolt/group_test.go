package bolt

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
)

// queueUpdates holds the writer, starts one Update per fn, each queued
// after the one before, then releases the writer so that one leader takes them all.
// It returns each Update's error, or the value its fn panicked with.
func queueUpdates(t *testing.T, b *Backend, fns ...func(tx backend.Tx) error) (errs []error, panics []any) {
	t.Helper()
	b.writer <- struct{}{}
	errs, panics = make([]error, len(fns)), make([]any, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Go(func() {
			defer func() { panics[i] = recover() }()
			errs[i] = b.Update(context.Background(), fn)
		})
		// Queued in order.
		require.Eventually(t, func() bool { return b.group.Len() == i+1 }, 5*time.Second, 100*time.Microsecond)
	}
	<-b.writer
	wg.Wait()
	return errs, panics
}

func runRec(id string) backend.Run {
	return backend.Run{ID: id, Status: backend.RunStatus("running"), CreatedMS: 1_700_000_000_000, UpdatedMS: 1_700_000_000_000}
}

func insertRun(id string) func(tx backend.Tx) error {
	return func(tx backend.Tx) error {
		return tx.Apply(context.Background(), insertRuns(runRec(id)))
	}
}

func storedRuns(t *testing.T, b *Backend) []string {
	t.Helper()
	var ids []string
	view(t, b, func(ctx context.Context, r backend.ReadTx) {
		runs, err := r.Runs(ctx, backend.RunQuery{Limit: 1000})
		require.NoError(t, err)
		for _, r := range runs {
			ids = append(ids, r.ID)
		}
	})
	return ids
}

func TestGroupCommitSharesOneCommit(t *testing.T) {
	b := openTemp(t)
	var fns []func(tx backend.Tx) error
	for i := range 10 {
		fns = append(fns, insertRun(fmt.Sprintf("r%02d", i)))
	}
	c0 := b.commits.Load()
	errs, _ := queueUpdates(t, b, fns...)
	for _, err := range errs {
		require.NoError(t, err)
	}
	assert.Equal(t, int64(1), b.commits.Load()-c0, "commits")
	assert.Len(t, storedRuns(t, b), 10)
}

func TestGroupCommitFailuresStayWithTheirCaller(t *testing.T) {
	b := openTemp(t)
	errA := errors.New("a failed after writing")
	errB := errors.New("b failed without writing")
	var sawR0 []bool // what the fn after r0 saw, per run of it
	fns := []func(tx backend.Tx) error{
		insertRun("r0"),
		func(tx backend.Tx) error { // writes, then fails: forces a re-run
			if err := insertRun("a")(tx); err != nil {
				return err
			}
			return errA
		},
		func(tx backend.Tx) error { return errB },
		func(tx backend.Tx) error {
			f, err := tx.Load(context.Background(), backend.Lookup{Runs: []string{"r0", "a"}})
			if err != nil {
				return err
			}
			_, r0 := f.Runs["r0"]
			_, a := f.Runs["a"]
			if a {
				return errors.New("saw the writes of a failed fn")
			}
			sawR0 = append(sawR0, r0)
			return insertRun("r1")(tx)
		},
		func(tx backend.Tx) error {
			if err := insertRun("p")(tx); err != nil {
				return err
			}
			panic("p panics")
		},
		insertRun("r2"),
	}
	c0 := b.commits.Load()
	errs, panics := queueUpdates(t, b, fns...)
	assert.NoError(t, errs[0])
	assert.ErrorIs(t, errs[1], errA)
	assert.ErrorIs(t, errs[2], errB)
	assert.NoError(t, errs[3])
	assert.Equal(t, "p panics", panics[4])
	assert.NoError(t, errs[5])
	for i, p := range panics {
		if i != 4 {
			assert.Nil(t, p, "panic of fn %d", i)
		}
	}
	assert.Equal(t, []string{"r0", "r1", "r2"}, storedRuns(t, b))
	assert.NotEmpty(t, sawR0)
	assert.True(t, sawR0[len(sawR0)-1], "the fn after r0 in the committed group sees r0")
	// One commit for the group; a and p ran again alone and failed again.
	assert.Equal(t, int64(1), b.commits.Load()-c0, "commits")
	require.NoError(t, b.Verify(context.Background()))
}

func TestGroupCommitNoWritesNoCommit(t *testing.T) {
	b := openTemp(t)
	read := func(tx backend.Tx) error {
		_, err := tx.Runs(context.Background(), backend.RunQuery{Limit: 1})
		return err
	}
	c0 := b.commits.Load()
	errs, _ := queueUpdates(t, b, read, read, read)
	for _, err := range errs {
		require.NoError(t, err)
	}
	assert.Equal(t, int64(0), b.commits.Load()-c0)
}

func TestGroupCommitCtxWhileQueued(t *testing.T) {
	b := openTemp(t)
	b.writer <- struct{}{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Update(ctx, insertRun("x")) }()
	require.Eventually(t, func() bool { return b.group.Len() == 1 }, 5*time.Second, time.Millisecond)
	cancel()
	err := <-done
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 0, b.group.Len())
	<-b.writer
	assert.Empty(t, storedRuns(t, b))
}

// A fn that calls runtime.Goexit (t.FailNow) in a group must not leave the
// other callers waiting forever.
func TestGroupCommitGoexitReleasesOthers(t *testing.T) {
	b := openTemp(t)
	b.writer <- struct{}{}
	var wg sync.WaitGroup
	errs := make([]error, 3)
	exited := make(chan struct{})
	wg.Go(func() { errs[0] = b.Update(context.Background(), insertRun("g0")) })
	require.Eventually(t, func() bool { return b.group.Len() == 1 }, 5*time.Second, time.Millisecond)
	go func() {
		defer close(exited)
		_ = b.Update(context.Background(), func(tx backend.Tx) error {
			_ = insertRun("gx")(tx)
			panicOrExit()
			return nil
		})
		t.Error("Update returned after its fn called runtime.Goexit")
	}()
	require.Eventually(t, func() bool { return b.group.Len() == 2 }, 5*time.Second, time.Millisecond)
	wg.Go(func() { errs[2] = b.Update(context.Background(), insertRun("g2")) })
	require.Eventually(t, func() bool { return b.group.Len() == 3 }, 5*time.Second, time.Millisecond)
	<-b.writer
	wg.Wait()
	<-exited
	assert.NoError(t, errs[0])
	assert.NoError(t, errs[2])
	assert.Equal(t, []string{"g0", "g2"}, storedRuns(t, b))
	require.NoError(t, b.Verify(context.Background()))
}

func panicOrExit() { runtimeGoexit() }

var runtimeGoexit = runtime.Goexit
