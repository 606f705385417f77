package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/internal/testkit/pgtest"
	"github.com/wfstore/wfstore/postgres"
)

func TestRollbackOnError(t *testing.T) {
	t.Parallel()
	b, _, _ := openFresh(t)
	boom := errors.New("boom")
	err := b.Update(ctxT(t), func(tx backend.Tx) error {
		require.NoError(t, tx.Apply(context.Background(), insertRuns("r")))
		return boom
	})
	require.Same(t, boom, err, "fn's error is returned as is")
	require.Empty(t, load(t, b, backend.Lookup{Runs: []string{"r"}}).Runs)
}

func TestPanicRollsBackAndRepanics(t *testing.T) {
	t.Parallel()
	b, _, _ := openFresh(t)
	func() {
		defer func() { require.Equal(t, "kaboom", recover()) }()
		_ = b.Update(ctxT(t), func(tx backend.Tx) error {
			require.NoError(t, tx.Apply(context.Background(), insertRuns("r")))
			panic("kaboom")
		})
		t.Fatal("not reached")
	}()
	require.Empty(t, load(t, b, backend.Lookup{Runs: []string{"r"}}).Runs)
	func() {
		defer func() { require.Equal(t, "view", recover()) }()
		_ = b.View(ctxT(t), func(r backend.ReadTx) error {
			_, _ = r.Load(context.Background(), backend.Lookup{Runs: []string{"r"}})
			panic("view")
		})
	}()
	// The pool is still healthy (connections were rolled back, not leaked).
	for i := 0; i < 5; i++ {
		apply(t, b, insertRuns(fmt.Sprint("ok", i)))
	}
}

func TestClosed(t *testing.T) {
	t.Parallel()
	dsn, schema := pgtest.Schema(t)
	b, err := postgres.Open(ctxT(t), withMaxConns(dsn, 2), postgres.WithSchema(schema))
	require.NoError(t, err)
	apply(t, b, insertRuns("r"))

	// Close while an Update is in flight: it fails with ErrClosed and rolls back.
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- b.Update(context.Background(), func(tx backend.Tx) error {
			if err := tx.Apply(context.Background(), insertRuns("inflight")); err != nil {
				return err
			}
			close(started)
			_, err := tx.Load(context.Background(), backend.Lookup{Runs: []string{"r"}}) // before Close
			if err != nil {
				return err
			}
			time.Sleep(200 * time.Millisecond)
			_, err = tx.Load(context.Background(), backend.Lookup{Runs: []string{"r"}}) // after Close
			return err
		})
	}()
	<-started
	require.NoError(t, b.Close())
	require.ErrorIs(t, <-done, backend.ErrClosed)
	require.NoError(t, b.Close(), "Close twice is harmless")

	require.ErrorIs(t, b.Update(ctxT(t), func(backend.Tx) error { return nil }), backend.ErrClosed)
	require.ErrorIs(t, b.View(ctxT(t), func(backend.ReadTx) error { return nil }), backend.ErrClosed)

	b2 := openOn(t, dsn, schema)
	f := load(t, b2, backend.Lookup{Runs: []string{"r", "inflight"}})
	require.Contains(t, f.Runs, "r")
	require.NotContains(t, f.Runs, "inflight")
}

func TestCallerPoolIsNotClosed(t *testing.T) {
	t.Parallel()
	dsn, schema := pgtest.Schema(t)
	pool := newPool(t, dsn, 2)
	b, err := postgres.OpenPool(ctxT(t), pool, postgres.WithSchema(schema))
	require.NoError(t, err)
	apply(t, b, insertRuns("r"))
	require.NoError(t, b.Close())
	require.NoError(t, pool.Ping(ctxT(t)), "our Close leaves the caller's pool open")
}

// A caller's pool is used as it is, even in another query mode: the
// adapter's batches, savepoints and bytea/array parameters work over the
// simple protocol too.
func TestCallerPoolInSimpleProtocolMode(t *testing.T) {
	t.Parallel()
	dsn, schema := pgtest.Schema(t)
	cfg, err := pgxpool.ParseConfig(dsn)
	require.NoError(t, err)
	cfg.MaxConns = 2
	cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	pool, err := pgxpool.NewWithConfig(ctxT(t), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	b, err := postgres.OpenPool(ctxT(t), pool, postgres.WithSchema(schema), postgres.WithManyRowsFrom(2))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	run, link, act, group, att, lease, sched, ev := fullRecords(idUnicode)
	apply(t, b, insertAll(run, link, act, group, att, lease, sched, ev))
	f := load(t, b, lookupAll(run, act, att, lease))
	require.Equal(t, act, f.Activations[act.Key])
	require.Equal(t, att, f.Identities[att.Identity])
	require.Equal(t, run, f.Runs[run.ID])
	// A deferred write is sent ahead of the next read, which sees it.
	require.NoError(t, b.Update(ctxT(t), func(tx backend.Tx) error {
		require.NoError(t, tx.Apply(context.Background(), insertRuns("w")))
		f, err := tx.Load(context.Background(), backend.Lookup{Runs: []string{"w"}})
		require.NoError(t, err)
		require.Contains(t, f.Runs, "w")
		return nil
	}))
	// A deferred conflict fails Update, and nothing of it commits.
	err = b.Update(ctxT(t), func(tx backend.Tx) error {
		return tx.Apply(context.Background(), backend.Changes{Insert: backend.Inserts{Runs: []backend.Run{{ID: "x"}, run, {ID: "y"}}}})
	})
	require.ErrorIs(t, err, backend.ErrConflict)
	got := load(t, b, backend.Lookup{Runs: []string{"w", "x", "y"}}).Runs
	require.Contains(t, got, "w")
	require.NotContains(t, got, "x")
	require.NotContains(t, got, "y")
	// Expect compares every column with values pgx interpolates into the
	// SQL text (byte strings, text arrays, NULLs).
	apply(t, b, backend.Changes{Expect: backend.Expected{Runs: []backend.Run{run}, Activations: []backend.Activation{act}, Attempts: []backend.Attempt{att}}})
	other := act
	other.Claims = nil
	require.ErrorIs(t, b.Update(ctxT(t), func(tx backend.Tx) error {
		return tx.Apply(context.Background(), backend.Changes{Expect: backend.Expected{Activations: []backend.Activation{other}}, Insert: backend.Inserts{Runs: runs("z")}})
	}), backend.ErrChanged)
	require.NotContains(t, load(t, b, backend.Lookup{Runs: []string{"z"}}).Runs, "z")
	// Many-row statements too: arrays of byte strings, NULL elements and
	// the flattened lists of activations.
	acts := []backend.Activation{act, {Key: backend.ActivationKey{RunID: "m", NodeID: "n", ActivationID: "nil"}},
		{Key: backend.ActivationKey{RunID: "m", NodeID: "n", ActivationID: "empty"}, Input: []byte{}, Claims: []backend.ResourceClaim{}, Predecessors: []backend.NodeRef{}}}
	apply(t, b, backend.Changes{Insert: backend.Inserts{Runs: []backend.Run{{ID: "m1"}, {ID: "m2", Metadata: []byte{}}}, Activations: acts[1:]}})
	apply(t, b, backend.Changes{Expect: backend.Expected{Activations: acts, Runs: []backend.Run{run, {ID: "m1"}, {ID: "m2", Metadata: []byte{}}}}})
	acts[1].Claims, acts[2].Claims = acts[2].Claims, acts[1].Claims
	require.ErrorIs(t, b.Update(ctxT(t), func(tx backend.Tx) error {
		return tx.Apply(context.Background(), backend.Changes{Expect: backend.Expected{Activations: acts}})
	}), backend.ErrChanged)
	apply(t, b, backend.Changes{Replace: backend.Replaces{Activations: acts}})
	f = load(t, b, backend.Lookup{Activations: []backend.ActivationKey{acts[0].Key, acts[1].Key, acts[2].Key}})
	for _, a := range acts {
		require.Equal(t, a, f.Activations[a.Key])
	}
}

func TestCancelledContext(t *testing.T) {
	t.Parallel()
	b, _, _ := openFresh(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ran := false
	err := b.Update(ctx, func(backend.Tx) error { ran = true; return nil })
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, ran)
	require.ErrorIs(t, b.View(ctx, func(backend.ReadTx) error { ran = true; return nil }), context.Canceled)
	require.False(t, ran)

	// Cancelled inside fn: the statement fails, nothing commits.
	ctx, cancel = context.WithCancel(context.Background())
	err = b.Update(ctx, func(tx backend.Tx) error {
		if err := tx.Apply(ctx, insertRuns("r")); err != nil {
			return err
		}
		cancel()
		return tx.Apply(ctx, insertRuns("r2"))
	})
	require.ErrorIs(t, err, context.Canceled)
	require.Empty(t, load(t, b, backend.Lookup{Runs: []string{"r", "r2"}}).Runs)

	// A deadline passing mid-query surfaces as DeadlineExceeded.
	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err = b.View(ctx, func(r backend.ReadTx) error {
		// Wait for the deadline itself, not for a sleep past it: on a
		// loaded machine the timer's cancel can run after a longer sleep.
		<-ctx.Done()
		_, err := r.Load(ctx, backend.Lookup{Runs: []string{"r"}})
		return err
	})
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestViewIsOneSnapshot(t *testing.T) {
	t.Parallel()
	b, _, _ := openFresh(t)
	apply(t, b, backend.Changes{Insert: backend.Inserts{Runs: []backend.Run{{ID: "r", AttemptCount: 1}}}})
	view(t, b, func(r backend.ReadTx) error {
		run, err := backend.GetRun(context.Background(), r, "r")
		require.NoError(t, err)
		require.Equal(t, int64(1), run.AttemptCount)
		apply(t, b, backend.Changes{Replace: backend.Replaces{Runs: []backend.Run{{ID: "r", AttemptCount: 2}}}, Insert: backend.Inserts{Runs: runs("new")}})
		run, err = backend.GetRun(context.Background(), r, "r")
		require.NoError(t, err)
		require.Equal(t, int64(1), run.AttemptCount, "the snapshot does not move")
		_, err = backend.GetRun(context.Background(), r, "new")
		require.ErrorIs(t, err, backend.ErrNotFound)
		return nil
	})
	// Update sees its own writes.
	require.NoError(t, b.Update(ctxT(t), func(tx backend.Tx) error {
		require.NoError(t, tx.Apply(context.Background(), insertRuns("own")))
		_, err := backend.GetRun(context.Background(), tx, "own")
		return err
	}))
}

// Load answers a whole Lookup in one round trip and BEGIN rides with it;
// Apply sends nothing, its writes ride with COMMIT: a read-decide-write
// Update is two round trips, a write-only one is one.
func TestRoundTrips(t *testing.T) {
	t.Parallel()
	b, _, _ := openFresh(t)
	run, link, act, group, att, lease, sched, ev := fullRecords("r")
	rts := func(fn func(tx backend.Tx) error) int64 {
		t.Helper()
		before := b.StatsForTest().RoundTrips
		require.NoError(t, b.Update(ctxT(t), fn))
		return b.StatsForTest().RoundTrips - before
	}
	require.Equal(t, int64(1), rts(func(tx backend.Tx) error {
		return tx.Apply(context.Background(), insertAll(run, link, act, group, att, lease, sched, ev))
	}), "a write-only Update: BEGIN, eight writes and COMMIT in one batch")
	for i := 0; i < 2; i++ { // the second pass runs on prepared statements
		require.Equal(t, int64(2), rts(func(tx backend.Tx) error {
			f, err := tx.Load(context.Background(), lookupAll(run, act, att, lease))
			require.NoError(t, err)
			require.Len(t, f.Runs, 1)
			require.Equal(t, 1, postgres.RoundTrips(tx), "BEGIN + a nine-part Lookup")
			r2 := run
			r2.AttemptCount++
			a2 := att
			a2.Status = backend.AttemptRunning
			require.NoError(t, tx.Apply(context.Background(), backend.Changes{
				Replace: backend.Replaces{Runs: []backend.Run{r2}, Attempts: []backend.Attempt{a2}, Leases: []backend.Lease{lease}},
				Insert:  backend.Inserts{Events: []backend.Event{{RunID: "r", Seq: int64(100 + i)}}},
			}))
			require.Equal(t, 1, postgres.RoundTrips(tx), "Apply defers its writes")
			return nil
		}), "read-decide-write: BEGIN+Load, then four writes+COMMIT")
	}
	require.Equal(t, int64(2), rts(func(tx backend.Tx) error {
		require.NoError(t, tx.Apply(context.Background(), backend.Changes{Insert: backend.Inserts{Events: []backend.Event{{RunID: "r", Seq: 200}}}}))
		f, err := tx.Load(context.Background(), backend.Lookup{Runs: []string{"r"}})
		require.NoError(t, err)
		require.Equal(t, 1, postgres.RoundTrips(tx), "the deferred write rides with the Load")
		r2 := f.Runs["r"]
		r2.LastEventSeq = 200
		return tx.Apply(context.Background(), replaceRuns(r2))
	}), "write, read, write: two round trips")
	require.Equal(t, int64(2), rts(func(tx backend.Tx) error {
		_, err := tx.Load(context.Background(), backend.Lookup{Runs: []string{"r"}})
		return err
	}), "a read-only Update still commits (SERIALIZABLE reads are only valid once COMMIT succeeds)")
	cur := load(t, b, backend.Lookup{Runs: []string{"r"}, Activations: []backend.ActivationKey{act.Key}, Attempts: []backend.AttemptKey{att.Key}})
	require.Equal(t, int64(1), rts(func(tx backend.Tx) error {
		r2 := cur.Runs["r"]
		r2.LastEventSeq = 300
		return tx.Apply(context.Background(), backend.Changes{
			Expect: backend.Expected{Runs: []backend.Run{cur.Runs["r"]}, Activations: []backend.Activation{cur.Activations[act.Key]},
				Attempts: []backend.Attempt{cur.Attempts[att.Key]}},
			Insert:  backend.Inserts{Events: []backend.Event{{RunID: "r", Seq: 300}}},
			Replace: backend.Replaces{Runs: []backend.Run{r2}},
		})
	}), "expect-decide-write: BEGIN, three Expects, two writes and COMMIT in one batch")
	require.Equal(t, int64(0), rts(func(tx backend.Tx) error {
		require.Equal(t, 0, postgres.RoundTrips(tx), "nothing is sent before fn's first statement")
		return nil
	}), "an Update that neither reads nor writes sends nothing")
	// fn's error after Apply only: the queued writes are dropped unsent.
	before := b.StatsForTest().RoundTrips
	boom := errors.New("boom")
	require.Same(t, boom, b.Update(ctxT(t), func(tx backend.Tx) error {
		require.NoError(t, tx.Apply(context.Background(), insertRuns("dropped")))
		return boom
	}))
	require.Equal(t, before, b.StatsForTest().RoundTrips)
	require.Empty(t, load(t, b, backend.Lookup{Runs: []string{"dropped"}}).Runs)
}

// Concurrent read-modify-write increments from several goroutines over two
// Backends lose no update: SERIALIZABLE aborts the losers with 40001 and
// Update re-runs them.
func TestSerializableIncrementsLoseNothing(t *testing.T) {
	t.Parallel()
	b1, dsn, schema := openFresh(t)
	b2 := openOn(t, dsn, schema)
	apply(t, b1, insertRuns("counter"))
	const workers, each = 6, 15
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, workers*each)
	for w := 0; w < workers; w++ {
		b := []*postgres.Backend{b1, b2}[w%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := 0; i < each; i++ {
				errs <- b.Update(context.Background(), func(tx backend.Tx) error {
					r, err := backend.GetRun(context.Background(), tx, "counter")
					if err != nil {
						return err
					}
					r.AttemptCount++
					return tx.Apply(context.Background(), replaceRuns(r))
				})
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	r := load(t, b1, backend.Lookup{Runs: []string{"counter"}}).Runs["counter"]
	require.Equal(t, int64(workers*each), r.AttemptCount)
	s1, s2 := b1.StatsForTest(), b2.StatsForTest()
	reruns := s1.Serialization + s2.Serialization + s1.Deadlock + s2.Deadlock
	t.Logf("40001 re-runs: %d, 40P01: %d", s1.Serialization+s2.Serialization, s1.Deadlock+s2.Deadlock)
	require.Positive(t, reruns, "the race must actually have happened")
}

// Write skew: two transactions each read both rows and write one; under
// SERIALIZABLE they cannot both commit on a stale view.
func TestNoWriteSkew(t *testing.T) {
	t.Parallel()
	b1, dsn, schema := openFresh(t)
	b2 := openOn(t, dsn, schema)
	apply(t, b1, backend.Changes{Insert: backend.Inserts{Runs: []backend.Run{{ID: "x", ActiveCount: 1}, {ID: "y", ActiveCount: 1}}}})
	// Invariant: x.ActiveCount + y.ActiveCount >= 1. Each tx zeroes one if
	// the sum is 2.
	var barrier sync.WaitGroup
	barrier.Add(2)
	var once [2]sync.Once
	run := func(b *postgres.Backend, i int, mine string) error {
		return b.Update(context.Background(), func(tx backend.Tx) error {
			f, err := tx.Load(context.Background(), backend.Lookup{Runs: []string{"x", "y"}})
			if err != nil {
				return err
			}
			once[i].Do(func() { barrier.Done(); barrier.Wait() }) // both have read
			if f.Runs["x"].ActiveCount+f.Runs["y"].ActiveCount < 2 {
				return nil
			}
			r := f.Runs[mine]
			r.ActiveCount = 0
			return tx.Apply(context.Background(), replaceRuns(r))
		})
	}
	var wg sync.WaitGroup
	var e1, e2 error
	wg.Add(2)
	go func() { defer wg.Done(); e1 = run(b1, 0, "x") }()
	go func() { defer wg.Done(); e2 = run(b2, 1, "y") }()
	wg.Wait()
	require.NoError(t, e1)
	require.NoError(t, e2)
	f := load(t, b1, backend.Lookup{Runs: []string{"x", "y"}})
	require.Equal(t, int64(1), f.Runs["x"].ActiveCount+f.Runs["y"].ActiveCount)
}

// When every run hits a serialization failure the caller gets ErrBusy
// wrapping the server's error once the busy timeout has passed, and
// nothing commits.
func TestRetriesExhaustedIsErrBusy(t *testing.T) {
	t.Parallel()
	const timeout = 150 * time.Millisecond
	b1, dsn, schema := openFresh(t, postgres.WithBusyTimeout(timeout))
	b2 := openOn(t, dsn, schema)
	apply(t, b1, insertRuns("c"))
	var n atomic.Int32
	start := time.Now()
	err := b1.Update(ctxT(t), func(tx backend.Tx) error {
		n.Add(1)
		r, err := backend.GetRun(context.Background(), tx, "c")
		if err != nil {
			return err
		}
		// Someone else commits a change to the row we read, every time.
		apply(t, b2, replaceRuns(backend.Run{ID: "c", AttemptCount: r.AttemptCount + 100}))
		r.AttemptCount++
		r.ID = "c"
		return tx.Apply(context.Background(), replaceRuns(r))
	})
	elapsed := time.Since(start)
	require.ErrorIs(t, err, backend.ErrBusy)
	var pe *pgconn.PgError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "40001", pe.Code)
	require.GreaterOrEqual(t, elapsed, timeout, "re-runs go on until the busy timeout")
	require.Greater(t, n.Load(), int32(1), "fn was re-run")
	require.Equal(t, int64(n.Load())*100, load(t, b1, backend.Lookup{Runs: []string{"c"}}).Runs["c"].AttemptCount,
		"only the other Backend's writes committed")
	require.Equal(t, int64(1), b1.StatsForTest().Exhausted)
	t.Logf("%d runs in %v", n.Load(), elapsed)

	// Zero: no bound but ctx.
	b3 := openOn(t, dsn, schema, postgres.WithBusyTimeout(0))
	ctx, cancel := context.WithTimeout(ctxT(t), 300*time.Millisecond)
	defer cancel()
	n.Store(0)
	err = b3.Update(ctx, func(tx backend.Tx) error {
		n.Add(1)
		r, err := backend.GetRun(context.Background(), tx, "c")
		if err != nil {
			return err
		}
		apply(t, b2, replaceRuns(backend.Run{ID: "c", AttemptCount: r.AttemptCount + 1}))
		return tx.Apply(context.Background(), replaceRuns(r))
	})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NotErrorIs(t, err, backend.ErrBusy)
	require.Greater(t, n.Load(), int32(1))
}

// The pause before a re-run grows from the failed run's duration, not
// from a fixed millisecond: a run that lost after holding its transaction
// open for runFor waits on average about runFor/2 before running again, so
// that the transactions it lost to (which ran alongside it) have time to
// end before it overlaps them again.
func TestRerunPauseScalesWithFailedRun(t *testing.T) {
	const (
		runFor = 60 * time.Millisecond
		rounds = 20
	)
	b1, dsn, schema := openFresh(t)
	b2 := openOn(t, dsn, schema)
	apply(t, b1, insertRuns("p"))
	var gaps time.Duration
	for i := 0; i < rounds; i++ {
		var failedAt time.Time
		runs := 0
		err := b1.Update(ctxT(t), func(tx backend.Tx) error {
			runs++
			if runs == 2 {
				gaps += time.Since(failedAt)
			}
			r, err := backend.GetRun(context.Background(), tx, "p")
			if err != nil {
				return err
			}
			if runs == 1 {
				// The first run stays open for runFor and then loses to
				// another Backend's committed change of the row it read.
				time.Sleep(runFor)
				apply(t, b2, replaceRuns(backend.Run{ID: "p", AttemptCount: r.AttemptCount + 100}))
			}
			r.AttemptCount++
			r.ID = "p"
			err = tx.Apply(context.Background(), replaceRuns(r))
			failedAt = time.Now() // the failure comes with COMMIT, just after fn returns
			return err
		})
		require.NoError(t, err)
		require.Equal(t, 2, runs, "the first run failed to serialize, the second committed")
	}
	mean := gaps / rounds
	t.Logf("mean time from the failed run to the re-run: %v (run held open %v)", mean, runFor)
	// Full jitter over [0, d] with d >= runFor: the mean pause is about
	// runFor/2; a pause grown from 1 ms leaves only the round trips.
	require.GreaterOrEqual(t, mean, runFor/5, "the re-run waited about as long as the failed run took")
}

func TestInfoAndCapabilities(t *testing.T) {
	t.Parallel()
	b, _, schema := openFresh(t)
	require.Equal(t, backend.Capabilities{MultiInstance: true, MultiProcess: true}, b.Capabilities())
	info := b.Info()
	require.Equal(t, "postgres", info.Name)
	require.NotEmpty(t, info.Version)
	require.Equal(t, "serializable", info.Settings["isolation"])
	require.Equal(t, "on", info.Settings["synchronous_commit"])
	require.Equal(t, schema, info.Settings["schema"])
	require.Equal(t, postgres.DefaultBusyTimeout.String(), info.Settings["busy_timeout"])
}
