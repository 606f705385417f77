// Command river is the peer comparison of `wfstore bench`: it drains a
// backlog of no-op jobs with River (github.com/riverqueue/river, pgx v5
// driver) on a PostgreSQL database and prints the drain rate and the
// machine's CPU time per job.
//
// It is a Go module of its own so that wfstore never depends on River:
// `go test ./...` and `go vet ./...` at the repository root do not enter
// this directory. Run it from here:
//
//	go run . -dsn postgres://postgres@127.0.0.1:5432/test?sslmode=disable -n 10000
//
// It creates a fresh schema (riverbench_<pid>_<random>), runs River's
// migrations into it, inserts n jobs in bulk (InsertManyFast, before the
// client starts), then starts a client and measures the time from Start to
// the n-th completed job. The schema is dropped on every exit path,
// interrupts included.
//
// The last line of its output is machine-readable, the prefix ResultPrefix
// followed by one JSON object (see result).
//
// What River does per job is not what wfstore does per admission: River is
// an at-least-once job queue. A job is one row inserted, then fetched
// (locked and marked running) and completed by its worker; there is no
// intent committed before the work is called, no recorded handoff, and no
// receipt proving the work was accepted exactly once.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// ResultPrefix starts the machine-readable result line.
const ResultPrefix = "RIVER_RESULT "

// riverVersion is the River release go.mod requires (reported as is).
const riverVersion = "v0.51.2"

// result is the machine-readable outcome of one drain.
type result struct {
	River        string  `json:"river"`
	Jobs         int     `json:"jobs"`
	MaxWorkers   int     `json:"max_workers"`
	InsertSecond float64 `json:"insert_seconds"`
	Seconds      float64 `json:"seconds"`
	JobsPerSec   float64 `json:"jobs_per_sec"`
	// MachineCPUPerJobUS is the busy CPU time of every process on the
	// machine (the PostgreSQL server's included) per job while the drain
	// ran, from /proc/stat; MachineBusyPct is its share of all CPUs. Both
	// 0 where /proc/stat cannot be read.
	MachineCPUPerJobUS float64 `json:"machine_cpu_us_per_job,omitempty"`
	MachineBusyPct     float64 `json:"machine_busy_pct,omitempty"`
}

type noopArgs struct{}

func (noopArgs) Kind() string { return "wfstore_bench_noop" }

type noopWorker struct {
	river.WorkerDefaults[noopArgs]
}

func (noopWorker) Work(context.Context, *river.Job[noopArgs]) error { return nil }

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "river bench:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("river", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dsn := fs.String("dsn", os.Getenv("WFSTORE_POSTGRES_DSN"), "PostgreSQL DSN (default $WFSTORE_POSTGRES_DSN)")
	n := fs.Int("n", 10000, "jobs in the backlog")
	maxWorkers := fs.Int("max-workers", 1000, "MaxWorkers of the default queue")
	timeout := fs.Duration("timeout", 5*time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dsn == "" {
		return errors.New("no DSN (-dsn or WFSTORE_POSTGRES_DSN)")
	}
	if *n < 1 || *maxWorkers < 1 {
		return errors.New("-n and -max-workers must be positive")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()

	res, err := drain(ctx, *dsn, *n, *maxWorkers, stderr)
	if err != nil {
		return err
	}
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "river %s drained %d jobs in %.2f s: %.0f jobs/s, machine CPU %.0f µs/job (%.0f%% busy)\n",
		res.River, res.Jobs, res.Seconds, res.JobsPerSec, res.MachineCPUPerJobUS, res.MachineBusyPct)
	fmt.Fprintf(stdout, "%s%s\n", ResultPrefix, b)
	return nil
}

func drain(ctx context.Context, dsn string, n, maxWorkers int, log io.Writer) (res result, err error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return res, fmt.Errorf("dsn: %w", err)
	}
	cfg.MaxConns = 20
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return res, err
	}
	defer pool.Close()
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	schema := fmt.Sprintf("riverbench_%d_%s", os.Getpid(), hex.EncodeToString(rnd[:]))
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		return res, fmt.Errorf("create schema: %w", err)
	}
	defer func() {
		// Dropped even when ctx was cancelled.
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, derr := pool.Exec(dctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); derr != nil {
			err = errors.Join(err, fmt.Errorf("drop schema %s: %w", schema, derr))
		}
	}()

	driver := riverpgxv5.New(pool)
	migrator, err := rivermigrate.New(driver, &rivermigrate.Config{Schema: schema})
	if err != nil {
		return res, err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return res, fmt.Errorf("migrate: %w", err)
	}

	workers := river.NewWorkers()
	river.AddWorker(workers, noopWorker{})
	client, err := river.NewClient(driver, &river.Config{
		Schema:  schema,
		Queues:  map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: maxWorkers}},
		Workers: workers,
	})
	if err != nil {
		return res, err
	}

	// The backlog, in bulk, before the client starts.
	t0 := time.Now()
	const chunk = 1000
	for done := 0; done < n; done += chunk {
		params := make([]river.InsertManyParams, min(chunk, n-done))
		for i := range params {
			params[i] = river.InsertManyParams{Args: noopArgs{}}
		}
		if _, err := client.InsertManyFast(ctx, params); err != nil {
			return res, fmt.Errorf("insert: %w", err)
		}
	}
	res.InsertSecond = time.Since(t0).Seconds()
	fmt.Fprintf(log, "river bench: %d jobs inserted in %.2f s; draining\n", n, res.InsertSecond)

	// A buffer for every event: a dropped one would never be counted.
	completed, cancelSub := client.SubscribeConfig(&river.SubscribeConfig{ChanSize: n + 100,
		Kinds: []river.EventKind{river.EventKindJobCompleted, river.EventKindJobFailed}})
	defer cancelSub()
	b0, tot0, ok0 := machineCPU()
	start := time.Now()
	if err := client.Start(ctx); err != nil {
		return res, fmt.Errorf("start: %w", err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if serr := client.Stop(sctx); serr != nil {
			err = errors.Join(err, fmt.Errorf("stop: %w", serr))
		}
	}()
	for got := 0; got < n; {
		select {
		case ev, ok := <-completed:
			if !ok {
				return res, errors.New("event subscription closed")
			}
			if ev.Kind != river.EventKindJobCompleted {
				return res, fmt.Errorf("job %d: %s", ev.Job.ID, ev.Kind)
			}
			got++
		case <-ctx.Done():
			return res, fmt.Errorf("draining: %w", context.Cause(ctx))
		}
	}
	elapsed := time.Since(start)
	b1, tot1, ok1 := machineCPU()

	res.River, res.Jobs, res.MaxWorkers = riverVersion, n, maxWorkers
	res.Seconds = elapsed.Seconds()
	res.JobsPerSec = float64(n) / elapsed.Seconds()
	if ok0 && ok1 && tot1 > tot0 {
		res.MachineBusyPct = 100 * float64(b1-b0) / float64(tot1-tot0)
		res.MachineCPUPerJobUS = float64(b1-b0) * 1e6 / userHZ / float64(n)
	}
	return res, nil
}

// userHZ is the unit of /proc/stat's CPU times (USER_HZ, 1/100 s).
const userHZ = 100

// machineCPU returns the machine's busy and total CPU clock ticks since
// boot, from the "cpu" line of /proc/stat (as wfstore's bench reads them),
// and false where it cannot be read.
func machineCPU() (busy, total uint64, ok bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 9 || f[0] != "cpu" {
			continue
		}
		var v [8]uint64
		for i := range v {
			x, err := strconv.ParseUint(f[i+1], 10, 64)
			if err != nil {
				return 0, 0, false
			}
			v[i] = x
		}
		busy = v[0] + v[1] + v[2] + v[5] + v[6]
		return busy, busy + v[3] + v[4] + v[7], true
	}
	return 0, 0, false
}
