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
	"github.com/wfstore/wfstore/internal/pgtest"
	"github.com/wfstore/wfstore/postgres"
)

func TestRollbackOnError(t *testing.T) {
	t.Parallel()
	b, _, _ := openFresh(t)
	boom := errors.New("boom")
	err := b.Update(ctxT(t), func(tx backend.Tx) error {
		require.NoError(t, tx.Apply(context.Background(), backend.Ins(backend.Run{ID: "r"})))
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
			require.NoError(t, tx.Apply(context.Background(), backend.Ins(backend.Run{ID: "r"})))
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
		apply(t, b, backend.Ins(backend.Run{ID: fmt.Sprint("ok", i)}))
	}
}

func TestClosed(t *testing.T) {
	t.Parallel()
	dsn, schema := pgtest.Schema(t)
	b, err := postgres.Open(ctxT(t), withMaxConns(dsn, 2), postgres.WithSchema(schema))
	require.NoError(t, err)
	apply(t, b, backend.Ins(backend.Run{ID: "r"}))

	// Close while an Update is in flight: it fails with ErrClosed and rolls back.
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- b.Update(context.Background(), func(tx backend.Tx) error {
			if err := tx.Apply(context.Background(), backend.Ins(backend.Run{ID: "inflight"})); err != nil {
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
	apply(t, b, backend.Ins(backend.Run{ID: "r"}))
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
	b, err := postgres.OpenPool(ctxT(t), pool, postgres.WithSchema(schema))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	run, link, act, group, att, lease, sched, ev := fullRecords(idUnicode)
	apply(t, b, backend.Ins(run), backend.Ins(link), backend.Ins(act), backend.Ins(group), backend.Ins(att), backend.Ins(lease), backend.Ins(sched), backend.Ins(ev))
	f := load(t, b, lookupAll(run, act, att, lease))
	require.Equal(t, act, f.Activations[act.Key])
	require.Equal(t, att, f.Identities[att.Identity])
	require.Equal(t, run, f.Runs[run.ID])
	// A deferred write is sent ahead of the next read, which sees it.
	require.NoError(t, b.Update(ctxT(t), func(tx backend.Tx) error {
		require.NoError(t, tx.Apply(context.Background(), backend.Ins(backend.Run{ID: "w"})))
		f, err := tx.Load(context.Background(), backend.Lookup{Runs: []string{"w"}})
		require.NoError(t, err)
		require.Contains(t, f.Runs, "w")
		return nil
	}))
	// A deferred conflict fails Update, and nothing of it commits.
	err = b.Update(ctxT(t), func(tx backend.Tx) error {
		return tx.Apply(context.Background(), backend.Ins(backend.Run{ID: "x"}), backend.Ins(run), backend.Ins(backend.Run{ID: "y"}))
	})
	require.ErrorIs(t, err, backend.ErrConflict)
	got := load(t, b, backend.Lookup{Runs: []string{"w", "x", "y"}}).Runs
	require.Contains(t, got, "w")
	require.NotContains(t, got, "x")
	require.NotContains(t, got, "y")
	// Expect compares every column with values pgx interpolates into the
	// SQL text (byte strings, text arrays, NULLs).
	apply(t, b, backend.Exp(run), backend.Exp(act), backend.Exp(att))
	other := act
	other.Claims = nil
	require.ErrorIs(t, b.Update(ctxT(t), func(tx backend.Tx) error {
		return tx.Apply(context.Background(), backend.Exp(other), backend.Ins(backend.Run{ID: "z"}))
	}), backend.ErrChanged)
	require.NotContains(t, load(t, b, backend.Lookup{Runs: []string{"z"}}).Runs, "z")
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
		if err := tx.Apply(ctx, backend.Ins(backend.Run{ID: "r"})); err != nil {
			return err
		}
		cancel()
		return tx.Apply(ctx, backend.Ins(backend.Run{ID: "r2"}))
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
	apply(t, b, backend.Ins(backend.Run{ID: "r", AttemptCount: 1}))
	view(t, b, func(r backend.ReadTx) error {
		run, err := backend.GetRun(context.Background(), r, "r")
		require.NoError(t, err)
		require.Equal(t, int64(1), run.AttemptCount)
		apply(t, b, backend.Rep(backend.Run{ID: "r", AttemptCount: 2}), backend.Ins(backend.Run{ID: "new"}))
		run, err = backend.GetRun(context.Background(), r, "r")
		require.NoError(t, err)
		require.Equal(t, int64(1), run.AttemptCount, "the snapshot does not move")
		_, err = backend.GetRun(context.Background(), r, "new")
		require.ErrorIs(t, err, backend.ErrNotFound)
		return nil
	})
	// Update sees its own writes.
	require.NoError(t, b.Update(ctxT(t), func(tx backend.Tx) error {
		require.NoError(t, tx.Apply(context.Background(), backend.Ins(backend.Run{ID: "own"})))
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
		return tx.Apply(context.Background(), backend.Ins(run), backend.Ins(link), backend.Ins(act), backend.Ins(group), backend.Ins(att), backend.Ins(lease), backend.Ins(sched), backend.Ins(ev))
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
			require.NoError(t, tx.Apply(context.Background(), backend.Rep(r2), backend.Rep(a2),
				backend.Ins(backend.Event{RunID: "r", Seq: int64(100 + i)}), backend.Rep(lease)))
			require.Equal(t, 1, postgres.RoundTrips(tx), "Apply defers its writes")
			return nil
		}), "read-decide-write: BEGIN+Load, then four writes+COMMIT")
	}
	require.Equal(t, int64(2), rts(func(tx backend.Tx) error {
		require.NoError(t, tx.Apply(context.Background(), backend.Ins(backend.Event{RunID: "r", Seq: 200})))
		f, err := tx.Load(context.Background(), backend.Lookup{Runs: []string{"r"}})
		require.NoError(t, err)
		require.Equal(t, 1, postgres.RoundTrips(tx), "the deferred write rides with the Load")
		r2 := f.Runs["r"]
		r2.LastEventSeq = 200
		return tx.Apply(context.Background(), backend.Rep(r2))
	}), "write, read, write: two round trips")
	require.Equal(t, int64(2), rts(func(tx backend.Tx) error {
		_, err := tx.Load(context.Background(), backend.Lookup{Runs: []string{"r"}})
		return err
	}), "a read-only Update still commits (SERIALIZABLE reads are only valid once COMMIT succeeds)")
	cur := load(t, b, backend.Lookup{Runs: []string{"r"}, Activations: []backend.ActivationKey{act.Key}, Attempts: []backend.AttemptKey{att.Key}})
	require.Equal(t, int64(1), rts(func(tx backend.Tx) error {
		r2 := cur.Runs["r"]
		r2.LastEventSeq = 300
		return tx.Apply(context.Background(), backend.Exp(cur.Runs["r"]), backend.Exp(cur.Activations[act.Key]),
			backend.Exp(cur.Attempts[att.Key]), backend.Ins(backend.Event{RunID: "r", Seq: 300}), backend.Rep(r2))
	}), "expect-decide-write: BEGIN, three Expects, two writes and COMMIT in one batch")
	require.Equal(t, int64(0), rts(func(tx backend.Tx) error {
		require.Equal(t, 0, postgres.RoundTrips(tx), "nothing is sent before fn's first statement")
		return nil
	}), "an Update that neither reads nor writes sends nothing")
	// fn's error after Apply only: the queued writes are dropped unsent.
	before := b.StatsForTest().RoundTrips
	boom := errors.New("boom")
	require.Same(t, boom, b.Update(ctxT(t), func(tx backend.Tx) error {
		require.NoError(t, tx.Apply(context.Background(), backend.Ins(backend.Run{ID: "dropped"})))
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
	apply(t, b1, backend.Ins(backend.Run{ID: "counter"}))
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
					return tx.Apply(context.Background(), backend.Rep(r))
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
	apply(t, b1, backend.Ins(backend.Run{ID: "x", ActiveCount: 1}), backend.Ins(backend.Run{ID: "y", ActiveCount: 1}))
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
			return tx.Apply(context.Background(), backend.Rep(r))
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
// wrapping the server's error, and nothing commits.
func TestRetriesExhaustedIsErrBusy(t *testing.T) {
	t.Parallel()
	b1, dsn, schema := openFresh(t, postgres.WithMaxRuns(3))
	b2 := openOn(t, dsn, schema)
	apply(t, b1, backend.Ins(backend.Run{ID: "c"}))
	var runs atomic.Int32
	err := b1.Update(ctxT(t), func(tx backend.Tx) error {
		runs.Add(1)
		r, err := backend.GetRun(context.Background(), tx, "c")
		if err != nil {
			return err
		}
		// Someone else commits a change to the row we read, every time.
		apply(t, b2, backend.Rep(backend.Run{ID: "c", AttemptCount: r.AttemptCount + 100}))
		r.AttemptCount++
		r.ID = "c"
		return tx.Apply(context.Background(), backend.Rep(r))
	})
	require.ErrorIs(t, err, backend.ErrBusy)
	var pe *pgconn.PgError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "40001", pe.Code)
	require.Equal(t, int32(3), runs.Load())
	require.Equal(t, int64(300), load(t, b1, backend.Lookup{Runs: []string{"c"}}).Runs["c"].AttemptCount)
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
}
