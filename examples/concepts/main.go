// Concepts is the program of docs/concepts.md: a two-node workflow, fetch
// then store, kept in an SQLite file and driven by the runner. fetch fails
// once and is retried automatically; its success adds store, in the same
// transaction; the run completes when store succeeds.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/wfstore/wfstore/runner"
	"github.com/wfstore/wfstore/sqlite"
	"github.com/wfstore/wfstore/workflow"
)

// owner does the work. Plan says what an attempt will do, Dispatch accepts
// it (a real owner durably queues it under p.Identity, its idempotency key,
// before returning a receipt), Observe reports how it went.
type owner struct {
	out  io.Writer
	done context.CancelFunc // stops the runner once the last node succeeded
}

func (o owner) Plan(_ context.Context, a workflow.Activation) (*workflow.Plan, error) {
	return &workflow.Plan{SideEffect: workflow.ReadOnly, Intent: a.Input}, nil
}

func (o owner) Dispatch(_ context.Context, p workflow.PreparedDispatch) (json.RawMessage, error) {
	fmt.Fprintf(o.out, "dispatched %s, attempt %d\n", p.Activation.Key.NodeID, p.Attempt)
	return json.RawMessage(`{"queued":true}`), nil // the receipt
}

func (o owner) Observe(_ context.Context, a workflow.Attempt) (workflow.Observation, error) {
	switch {
	case a.Key.NodeID == "fetch" && a.Key.Attempt == 1:
		return workflow.Observation{Kind: workflow.ObservedRetryableFailure}, nil
	case a.Key.NodeID == "fetch": // succeeded: add the next node atomically
		return workflow.Observation{Kind: workflow.ObservedSucceeded, Output: json.RawMessage(`{"rows":3}`),
			Successors: []workflow.NewActivation{node(a.Key.RunID, "store")}}, nil
	default:
		defer o.done()
		return workflow.Observation{Kind: workflow.ObservedSucceeded, Output: json.RawMessage(`{"stored":3}`)}, nil
	}
}

// node is a read-only activation that may be retried once after a
// retryable failure, 10ms later.
func node(runID, nodeID string) workflow.NewActivation {
	return workflow.NewActivation{
		Key:    workflow.ActivationKey{RunID: runID, NodeID: nodeID, ActivationID: nodeID},
		Input:  json.RawMessage(`{}`),
		Effect: workflow.ReadOnly, Reconciliation: workflow.IdempotentReplay,
		RetryPolicy: &workflow.RetryPolicy{Version: 1, MaxAttempts: 2,
			InitialBackoff: 10 * time.Millisecond, MaximumBackoff: 10 * time.Millisecond, BackoffMultiplier: 1,
			EligibleFailures: []workflow.FailureKind{workflow.FailureOwnerReportedRetryable}},
	}
}

// run creates the run and its first activation in a store at path, runs
// the runner until the last node succeeded, and returns the run's status.
func run(ctx context.Context, path string, out io.Writer) (workflow.RunStatus, error) {
	b, err := sqlite.Open(ctx, path)
	if err != nil {
		return "", err
	}
	defer b.Close()
	s := workflow.New(b)
	if _, err := s.CreateRun(ctx, workflow.NewRun{ID: "run-1"}, time.Now()); err != nil {
		return "", err
	}
	if _, err := s.AddActivation(ctx, node("run-1", "fetch"), time.Now()); err != nil {
		return "", err
	}
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	if _, err := runner.Run(rctx, s, owner{out: out, done: stop}); err != nil {
		return "", err
	}
	r, err := s.GetRun(ctx, "run-1")
	return r.Status, err
}

func main() {
	dir, err := os.MkdirTemp("", "wfstore-concepts")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	status, err := run(context.Background(), filepath.Join(dir, "store.db"), os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("run-1:", status)
}
