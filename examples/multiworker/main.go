// Command multiworker runs several worker processes, each a runner, on one
// PostgreSQL store, and checks that every activation was admitted exactly
// once between them.
//
//	WFSTORE_POSTGRES_DSN=postgres://postgres@127.0.0.1:5432/test?sslmode=disable go run ./examples/multiworker
//
// The coordinator creates the runs and activations in a fresh schema,
// starts the workers (this program again, with -worker), waits until every
// run has completed, stops the workers with SIGTERM (each drains and
// exits), and reads the owners' ledger. Without WFSTORE_POSTGRES_DSN, or
// when the server cannot be reached, it says so and exits 0.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/wfstore/wfstore/postgres"
	"github.com/wfstore/wfstore/runner"
	"github.com/wfstore/wfstore/workflow"
)

func main() {
	worker := flag.Int("worker", -1, "run as worker `n` (the coordinator starts the workers)")
	workers := flag.Int("workers", 3, "worker processes")
	runs := flag.Int("runs", 4, "runs")
	perRun := flag.Int("activations", 25, "activations per run")
	schema := flag.String("schema", "", "schema for the store and the ledger (default: a fresh one, dropped at the end)")
	flag.Parse()
	dsn := os.Getenv("WFSTORE_POSTGRES_DSN")
	if dsn == "" {
		fmt.Println("multiworker: skipped: set WFSTORE_POSTGRES_DSN to a PostgreSQL server, for example\n" +
			"  WFSTORE_POSTGRES_DSN='postgres://postgres@127.0.0.1:5432/test?sslmode=disable' go run ./examples/multiworker")
		return
	}
	var err error
	if *worker >= 0 {
		err = runWorker(*worker, dsn, *schema)
	} else {
		err = coordinate(dsn, *schema, *workers, *runs, *perRun)
	}
	if errors.Is(err, errNoServer) {
		fmt.Println("multiworker: skipped:", err)
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "multiworker:", err)
		os.Exit(1)
	}
}

var errNoServer = errors.New("cannot reach the PostgreSQL server of WFSTORE_POSTGRES_DSN")

// owner records each dispatch identity in a ledger table, once: a second
// dispatch of one identity (a redispatch after a crash, or by another
// worker during its start-up reconciliation) returns the first receipt.
type owner struct {
	pool   *pgxpool.Pool
	ledger string
	worker int
}

func (o *owner) Plan(_ context.Context, a workflow.Activation) (*workflow.Plan, error) {
	return &workflow.Plan{SideEffect: workflow.ReadOnly, Intent: a.Input}, nil
}

func (o *owner) Dispatch(ctx context.Context, p workflow.PreparedDispatch) (json.RawMessage, error) {
	k := p.Activation.Key
	if _, err := o.pool.Exec(ctx, "INSERT INTO "+o.ledger+" (identity, activation, worker) VALUES ($1, $2, $3) ON CONFLICT (identity) DO NOTHING",
		p.Identity, k.RunID+"/"+k.NodeID+"/"+k.ActivationID, o.worker); err != nil {
		return nil, err
	}
	rc, found, err := o.LookupReceipt(ctx, p.Identity)
	if err == nil && !found {
		err = fmt.Errorf("ledger lost %s", p.Identity)
	}
	return rc, err
}

// LookupReceipt lets the runner's start-up reconciliation ask the ledger.
func (o *owner) LookupReceipt(ctx context.Context, identity string) (json.RawMessage, bool, error) {
	var w int
	err := o.pool.QueryRow(ctx, "SELECT worker FROM "+o.ledger+" WHERE identity = $1", identity).Scan(&w)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return json.RawMessage(`{"worker":` + strconv.Itoa(w) + `}`), true, nil
}

// Observe reports the work done as soon as it is admitted.
func (o *owner) Observe(context.Context, workflow.Attempt) (workflow.Observation, error) {
	return workflow.Observation{Kind: workflow.ObservedSucceeded, Output: json.RawMessage(`{}`)}, nil
}

func runWorker(n int, dsn, schema string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	b, err := postgres.Open(ctx, dsn, postgres.WithSchema(schema))
	if err != nil {
		return err
	}
	defer b.Close()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return err
	}
	defer pool.Close()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})).With("worker", n)
	sum, err := runner.Run(ctx, workflow.New(b), &owner{pool: pool, ledger: ledgerOf(schema), worker: n},
		runner.WithLogger(log), runner.WithBatchSize(10), runner.WithPollInterval(20*time.Millisecond, 200*time.Millisecond))
	fmt.Printf("worker %d: %d passes, %d attempts admitted, %d left for the next start\n", n, sum.Passes, sum.Admitted, len(sum.Unresolved))
	return err
}

func ledgerOf(schema string) string { return pgx.Identifier{schema, "ledger"}.Sanitize() }

func coordinate(dsn, schema string, workers, runs, perRun int) error {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn)
	if err == nil {
		err = pool.Ping(ctx)
	}
	if err != nil {
		return fmt.Errorf("%w: %v", errNoServer, err)
	}
	defer pool.Close()
	if schema == "" {
		var r [6]byte
		_, _ = rand.Read(r[:])
		schema = "wfstore_multiworker_" + hex.EncodeToString(r[:])
		defer pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
	}
	b, err := postgres.Open(ctx, dsn, postgres.WithSchema(schema))
	if err != nil {
		return err
	}
	defer b.Close()
	if _, err := pool.Exec(ctx, "CREATE TABLE IF NOT EXISTS "+ledgerOf(schema)+
		" (identity text PRIMARY KEY, activation text NOT NULL, worker int NOT NULL)"); err != nil {
		return err
	}
	s := workflow.New(b)
	now := time.Now()
	for r := range runs {
		id := fmt.Sprintf("run-%d", r)
		if _, err := s.CreateRun(ctx, workflow.NewRun{ID: id}, now); err != nil {
			return err
		}
		for a := range perRun {
			if _, err := s.AddActivation(ctx, workflow.NewActivation{
				Key:   workflow.ActivationKey{RunID: id, NodeID: "step", ActivationID: fmt.Sprintf("a%03d", a)},
				Input: json.RawMessage(`{}`)}, now); err != nil {
				return err
			}
		}
	}
	fmt.Printf("multiworker: %d runs of %d activations in schema %s; starting %d workers\n", runs, perRun, schema, workers)

	procs := make([]*exec.Cmd, workers)
	for i := range procs {
		procs[i] = exec.Command(os.Args[0], "-worker", strconv.Itoa(i), "-schema", schema)
		procs[i].Stdout, procs[i].Stderr = os.Stdout, os.Stderr
		if err := procs[i].Start(); err != nil {
			return err
		}
	}
	waitErr := waitCompleted(ctx, s, runs, time.Minute)
	for _, p := range procs {
		_ = p.Process.Signal(syscall.SIGTERM)
	}
	for i, p := range procs {
		if err := p.Wait(); err != nil {
			waitErr = errors.Join(waitErr, fmt.Errorf("worker %d: %w", i, err))
		}
	}
	if waitErr != nil {
		return waitErr
	}

	var total, distinct int
	if err := pool.QueryRow(ctx, "SELECT count(*), count(DISTINCT activation) FROM "+ledgerOf(schema)).Scan(&total, &distinct); err != nil {
		return err
	}
	byWorker := map[int]int{}
	rows, err := pool.Query(ctx, "SELECT worker, count(*) FROM "+ledgerOf(schema)+" GROUP BY worker")
	if err != nil {
		return err
	}
	for rows.Next() {
		var w, n int
		if err := rows.Scan(&w, &n); err != nil {
			return err
		}
		byWorker[w] = n
	}
	if err := rows.Err(); err != nil {
		return err
	}
	fmt.Printf("multiworker: %d activations, %d admissions in the ledger (by worker: %v)\n", runs*perRun, total, byWorker)
	if total != runs*perRun || distinct != runs*perRun {
		return fmt.Errorf("want every activation admitted exactly once: %d activations, %d admissions of %d distinct ones", runs*perRun, total, distinct)
	}
	fmt.Println("multiworker: every activation admitted exactly once")
	return nil
}

// waitCompleted polls until every run has completed.
func waitCompleted(ctx context.Context, s *workflow.Store, runs int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		done := 0
		for r := range runs {
			run, err := s.GetRun(ctx, fmt.Sprintf("run-%d", r))
			if err != nil {
				return err
			}
			if run.Status == workflow.RunCompleted {
				done++
			}
		}
		if done == runs {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d runs completed after %v", done, runs, limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
