package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// Peer is one peer system's drain of a backlog, measured in the same run as
// the backends. Skipped, when set, says why it was not measured.
type Peer struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	// Jobs in the backlog, the drain's wall time and rate.
	Jobs       int     `json:"jobs,omitempty"`
	Seconds    float64 `json:"seconds,omitempty"`
	JobsPerSec float64 `json:"jobs_per_sec,omitempty"`
	// InsertSeconds is the time the backlog took to insert (not in the rate).
	InsertSeconds float64 `json:"insert_seconds,omitempty"`
	MaxWorkers    int     `json:"max_workers,omitempty"`
	// Machine CPU per job and busy share while the drain ran (see
	// Result.MachineCPUPerOpUS).
	MachineCPUPerJobUS float64 `json:"machine_cpu_us_per_job,omitempty"`
	MachineBusyPct     float64 `json:"machine_busy_pct,omitempty"`
	// RowsPerJob and WALBytesPerJob are what the drain wrote per job, counted
	// as Result.RowsPerOp and Result.WALBytesPerOp are (the rows of River's
	// own schema, from the client's Start to its Stop; the server's WAL
	// from Start to the last completion); nil where a read failed.
	RowsPerJob     *float64 `json:"rows_written_per_job,omitempty"`
	WALBytesPerJob *float64 `json:"wal_bytes_per_job,omitempty"`
	// Schema is the schema the drain ran in (dropped afterwards).
	Schema  string `json:"schema,omitempty"`
	Skipped string `json:"skipped,omitempty"`
}

// PeerSemantics says what a River job does that a wfstore admission does
// not, and the reverse; the report prints it next to the figures.
const PeerSemantics = "River is an at-least-once job queue: a job is one row inserted, then fetched and completed by its worker. " +
	"There is no intent committed before the work is called, no recorded handoff and no receipt: a crash between " +
	"the work and the completion runs the job again. A wfstore admission commits the intent, records the handoff, " +
	"calls the owner and commits its receipt, and never calls the owner twice for one attempt."

// riverMaxWorkers is MaxWorkers of the drain's queue.
const riverMaxWorkers = 1000

// riverModule is the module whose version the report names.
const riverModule = "github.com/riverqueue/river"

// riverRequired is the River release go.mod requires (a test keeps it so):
// the version reported where the binary carries no module information, as
// in a test binary.
const riverRequired = "v0.51.2"

// riverVersion is the River release compiled into this binary.
func riverVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == riverModule {
				if d.Replace != nil {
					return d.Replace.Version
				}
				return d.Version
			}
		}
	}
	return riverRequired
}

type riverNoop struct{}

func (riverNoop) Kind() string { return "wfstore_bench_noop" }

type riverNoopWorker struct {
	river.WorkerDefaults[riverNoop]
}

func (riverNoopWorker) Work(context.Context, *river.Job[riverNoop]) error { return nil }

// RunRiver drains a backlog of n no-op jobs with River
// (github.com/riverqueue/river and its pgx v5 driver, compiled into this
// binary: it runs wherever the binary is started, with no go command and
// no network) on the database at dsn. It creates a fresh schema
// (riverbench_<pid>_<random>), runs River's migrations into it, inserts
// the backlog in bulk (InsertManyFast, before the client starts), then
// starts a client and measures the time from Start to the n-th completed
// job, with the machine's CPU time, the rows River's tables wrote and the
// server's WAL meanwhile. The schema is dropped on every exit path, ctx's
// cancellation included. It never fails the run: a drain that cannot run
// comes back with Skipped saying exactly why, the error included. Its
// progress and River's warnings go to log (may be nil).
func RunRiver(ctx context.Context, dsn string, n int, log io.Writer) Peer {
	if log == nil {
		log = io.Discard
	}
	p, err := drainRiver(ctx, dsn, n, log)
	if err != nil {
		return Peer{Name: "river", Version: riverVersion(), Schema: p.Schema, Skipped: fmt.Sprintf("the River drain failed: %v", err)}
	}
	return p
}

func drainRiver(ctx context.Context, dsn string, n int, log io.Writer) (p Peer, err error) {
	p = Peer{Name: "river", Version: riverVersion(), Jobs: n, MaxWorkers: riverMaxWorkers}
	if n < 1 {
		return p, errors.New("no jobs to drain")
	}
	pool, schema, err := scratchPool(ctx, dsn, "riverbench", 20)
	p.Schema = schema
	if err != nil {
		return p, err
	}
	defer pool.Close()
	quoted := pgx.Identifier{p.Schema}.Sanitize()
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+quoted); err != nil {
		return p, fmt.Errorf("create schema: %w", err)
	}
	defer func() {
		// Dropped even when ctx was cancelled.
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, derr := pool.Exec(dctx, "DROP SCHEMA IF EXISTS "+quoted+" CASCADE"); derr != nil {
			err = errors.Join(err, fmt.Errorf("drop schema %s: %w", p.Schema, derr))
		}
	}()

	driver := riverpgxv5.New(pool)
	migrator, err := rivermigrate.New(driver, &rivermigrate.Config{Schema: p.Schema, Logger: riverLogger(log)})
	if err != nil {
		return p, err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return p, fmt.Errorf("migrate: %w", err)
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, riverNoopWorker{})
	client, err := river.NewClient(driver, &river.Config{
		Schema:  p.Schema,
		Queues:  map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: riverMaxWorkers}},
		Workers: workers,
		Logger:  riverLogger(log),
	})
	if err != nil {
		return p, err
	}

	// The backlog, in bulk, before the client starts.
	t0 := time.Now()
	const chunk = 1000
	for done := 0; done < n; done += chunk {
		params := make([]river.InsertManyParams, min(chunk, n-done))
		for i := range params {
			params[i] = river.InsertManyParams{Args: riverNoop{}}
		}
		if _, err := client.InsertManyFast(ctx, params); err != nil {
			return p, fmt.Errorf("insert: %w", err)
		}
	}
	p.InsertSeconds = time.Since(t0).Seconds()
	fmt.Fprintf(log, "river: %d jobs inserted in %.2f s; draining\n", n, p.InsertSeconds)

	writes := &writeCounts{pg: &pgWrites{pool: pool, schema: p.Schema, appName: p.Schema}}
	writes.begin(ctx)
	// A buffer for every event: a dropped one would never be counted.
	completed, cancelSub := client.SubscribeConfig(&river.SubscribeConfig{ChanSize: n + 100,
		Kinds: []river.EventKind{river.EventKindJobCompleted, river.EventKindJobFailed}})
	defer cancelSub()
	b0, tot0, ok0 := machineCPU()
	wal0 := writes.walBefore(ctx)
	start := time.Now()
	if err := client.Start(ctx); err != nil {
		return p, fmt.Errorf("start: %w", err)
	}
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := client.Stop(sctx); err != nil {
			return fmt.Errorf("stop: %w", err)
		}
		return nil
	}
	defer func() { err = errors.Join(err, stop()) }()
	for got := 0; got < n; {
		select {
		case ev, ok := <-completed:
			if !ok {
				return p, errors.New("event subscription closed")
			}
			if ev.Kind != river.EventKindJobCompleted {
				return p, fmt.Errorf("job %d: %s", ev.Job.ID, ev.Kind)
			}
			got++
		case <-ctx.Done():
			return p, fmt.Errorf("draining: %w", context.Cause(ctx))
		}
	}
	elapsed := time.Since(start)
	b1, tot1, ok1 := machineCPU()
	writes.walAfter(ctx, wal0)
	if err := stop(); err != nil {
		return p, err
	}
	writes.end(ctx)

	p.Seconds = elapsed.Seconds()
	p.JobsPerSec = float64(n) / elapsed.Seconds()
	if ok0 && ok1 && tot1 > tot0 {
		p.MachineBusyPct = 100 * float64(b1-b0) / float64(tot1-tot0)
		p.MachineCPUPerJobUS = float64(b1-b0) * 1e6 / userHZ / float64(n)
	}
	var r Result
	r.Ops = n
	writes.fill(&r)
	p.RowsPerJob, p.WALBytesPerJob = r.RowsPerOp, r.WALBytesPerOp
	return p, nil
}

// riverLogger passes River's warnings and errors to log.
func riverLogger(log io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// scratchPool opens a pool of at most maxConns connections to dsn for a
// measurement that works in a schema of its own, and names that schema:
// prefix, this process's id and random hex digits. The pool's
// connections carry the schema's name as their application name.
func scratchPool(ctx context.Context, dsn, prefix string, maxConns int32) (*pgxpool.Pool, string, error) {
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	schema := fmt.Sprintf("%s_%d_%s", prefix, os.Getpid(), hex.EncodeToString(rnd[:]))
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, schema, fmt.Errorf("dsn: %w", err)
	}
	cfg.MaxConns = maxConns
	appNamed(cfg, schema)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	return pool, schema, err
}
