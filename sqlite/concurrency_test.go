package sqlite

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/wfstore/wfstore/backend"
)

// increment reads the counter run and writes it back plus one: a lost
// update shows as a final count below the number of increments.
func increment(ctx context.Context, b backend.Backend) error {
	return b.Update(ctx, func(tx backend.Tx) error {
		f, err := tx.Load(ctx, backend.Lookup{Runs: []string{"counter"}})
		if err != nil {
			return err
		}
		r, ok := f.Runs["counter"]
		if !ok {
			return tx.Apply(ctx, insertRuns(backend.Run{ID: "counter", AttemptCount: 1}))
		}
		r.AttemptCount++
		return tx.Apply(ctx, replaceRuns(r))
	})
}

func counter(t *testing.T, b *Backend) int64 {
	t.Helper()
	var n int64
	view(t, b, func(r backend.ReadTx) {
		run, err := backend.GetRun(context.Background(), r, "counter")
		require.NoError(t, err)
		n = run.AttemptCount
	})
	return n
}

// incrementers runs workers goroutines per Backend, each incrementing n
// times, all released at once, and checks that no increment was lost.
func incrementers(t *testing.T, bs []*Backend, workers, n int) {
	t.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, len(bs)*workers)
	for _, b := range bs {
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for i := 0; i < n; i++ {
					if err := increment(ctx, b); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, int64(len(bs)*workers*n), counter(t, bs[0]))
}

func TestMultiInstanceConcurrentIncrementsNoLostUpdate(t *testing.T) {
	t.Parallel()
	path := newPath(t)
	a, b := openAt(t, path), openAt(t, path)
	require.Equal(t, backend.Capabilities{MultiInstance: true, MultiProcess: true}, a.Capabilities())
	incrementers(t, []*Backend{a, b}, 4, 25)
	require.Equal(t, counter(t, a), counter(t, b))
	// The instances really did contend for the file's write lock.
	t.Logf("a: %+v", a.Stats())
	t.Logf("b: %+v", b.Stats())
}

func TestBeginImmediateContentionBetweenBackends(t *testing.T) {
	t.Parallel()
	path := newPath(t)
	a, b := openAt(t, path), openAt(t, path)
	ctx := context.Background()
	holding, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	t.Cleanup(unblock) // runs before the Backends' cleanups close them
	done := make(chan error, 1)
	go func() {
		done <- a.Update(ctx, func(tx backend.Tx) error {
			close(holding)
			<-release
			return tx.Apply(ctx, insertRuns(backend.Run{ID: "from-a"}))
		})
	}()
	<-holding

	// b cannot get the lock before its deadline: ErrBusy, ctx's error and
	// the driver's busy error, and fn never ran.
	short, cancel := context.WithTimeout(ctx, 60*time.Millisecond)
	defer cancel()
	ran := false
	began := time.Now()
	err := b.Update(short, func(backend.Tx) error { ran = true; return nil })
	require.ErrorIs(t, err, backend.ErrBusy)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.True(t, isBusy(err), "last driver error wrapped: %v", err)
	require.False(t, ran)
	require.Less(t, time.Since(began), 2*time.Second)

	// WithBusyTimeout bounds the wait even with an unbounded ctx.
	c := openAt(t, path, WithBusyTimeout(30*time.Millisecond))
	err = c.Update(ctx, func(backend.Tx) error { ran = true; return nil })
	require.ErrorIs(t, err, backend.ErrBusy)
	require.False(t, ran)

	// Reads never wait for the writer.
	view(t, b, func(backend.ReadTx) {})

	// A waiting Update succeeds once the lock is released, and the wait is
	// reported.
	got := make(chan error, 1)
	go func() {
		got <- b.Update(ctx, func(tx backend.Tx) error {
			return tx.Apply(ctx, insertRuns(backend.Run{ID: "from-b"}))
		})
	}()
	time.Sleep(40 * time.Millisecond)
	unblock()
	require.NoError(t, <-done)
	require.NoError(t, <-got)
	require.True(t, runExists(t, b, "from-a"))
	require.True(t, runExists(t, b, "from-b"))
	st := b.Stats()
	require.Greater(t, st.BusyRetries, int64(0))
	require.GreaterOrEqual(t, st.MaxLockWait, 20*time.Millisecond)
	require.Equal(t, int64(1), st.BusyFailures)
	require.Equal(t, backend.Reruns{Busy: st.Reruns, Exhausted: 1}, b.Reruns(), "the re-run counter tells the same")
	require.Equal(t, backend.Reruns{Exhausted: 1}, c.Reruns())
}

func TestConcurrentOpensOfAFreshFile(t *testing.T) {
	t.Parallel()
	path := newPath(t)
	const n = 6
	var wg sync.WaitGroup
	bs := make([]*Backend, n)
	errs := make([]error, n)
	for i := range bs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			bs[i], errs[i] = Open(context.Background(), path, WithRelaxedDurability())
		}()
	}
	wg.Wait()
	for i, b := range bs {
		require.NoError(t, errs[i])
		t.Cleanup(func() { _ = b.Close() })
	}
	incrementers(t, bs, 1, 5)
}

// TestMultiProcessIncrementsNoLostUpdate re-executes the test binary as
// child processes that increment the same counter.
func TestMultiProcessIncrementsNoLostUpdate(t *testing.T) {
	if path := os.Getenv("WFSTORE_SQLITE_CHILD_PATH"); path != "" {
		n, _ := strconv.Atoi(os.Getenv("WFSTORE_SQLITE_CHILD_N"))
		b, err := Open(context.Background(), path, WithRelaxedDurability())
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		for i := 0; i < n; i++ {
			if err := increment(context.Background(), b); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(3)
			}
		}
		_ = b.Close()
		return
	}
	t.Parallel()
	path := newPath(t)
	b := openAt(t, path)
	exe, err := os.Executable()
	require.NoError(t, err)
	const children, n = 3, 30
	var cmds []*exec.Cmd
	for i := 0; i < children; i++ {
		cmd := exec.Command(exe, "-test.run=^TestMultiProcessIncrementsNoLostUpdate$", "-test.count=1")
		cmd.Env = append(os.Environ(), "WFSTORE_SQLITE_CHILD_PATH="+path, "WFSTORE_SQLITE_CHILD_N="+strconv.Itoa(n))
		cmd.Stderr = os.Stderr
		require.NoError(t, cmd.Start())
		cmds = append(cmds, cmd)
	}
	for i := 0; i < n; i++ {
		require.NoError(t, increment(context.Background(), b))
	}
	for _, cmd := range cmds {
		require.NoError(t, cmd.Wait())
	}
	require.Equal(t, int64((children+1)*n), counter(t, b))
}
