package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"time"

	"github.com/wfstore/wfstore/runner"
	"github.com/wfstore/wfstore/sqlite"
	"github.com/wfstore/wfstore/workflow"
)

type owner struct{ done context.CancelFunc } // you write the owner (it does the work); the runner is the engine

func (owner) Plan(_ context.Context, a workflow.Activation) (*workflow.Plan, error) {
	return &workflow.Plan{SideEffect: workflow.ReadOnly, Intent: a.Input}, nil
}
func (owner) Dispatch(_ context.Context, p workflow.PreparedDispatch) (json.RawMessage, error) {
	return json.RawMessage(`{"queued":true}`), nil // once p.Identity is durably queued
}
func (o owner) Observe(_ context.Context, a workflow.Attempt) (workflow.Observation, error) {
	if a.Key.Attempt == 1 { // attempt 1 fails; the runner retries it a second later
		return workflow.Observation{Kind: workflow.ObservedRetryableFailure}, nil
	}
	defer o.done() // attempt 2 succeeds: stop the runner (it drains, then returns)
	return workflow.Observation{Kind: workflow.ObservedSucceeded, Output: json.RawMessage(`{"ok":true}`)}, nil
}
func main() {
	ctx, stop := context.WithCancel(context.Background())
	dir, _ := os.MkdirTemp("", "wfstore-quickstart")
	b, err := sqlite.Open(ctx, dir+"/store.db")
	if err != nil {
		panic(err)
	}
	defer func() { b.Close(); os.RemoveAll(dir) }()
	s := workflow.New(b)
	s.CreateRun(ctx, workflow.NewRun{ID: "run-1"}, time.Now())
	s.AddActivation(ctx, workflow.NewActivation{Key: workflow.ActivationKey{RunID: "run-1", NodeID: "fetch", ActivationID: "a1"},
		Input: json.RawMessage(`{}`), Reconciliation: workflow.IdempotentReplay, RetryPolicy: &workflow.RetryPolicy{Version: 1,
			MaxAttempts: 2, InitialBackoff: time.Second, MaximumBackoff: time.Second, BackoffMultiplier: 1, EligibleFailures: []workflow.FailureKind{workflow.FailureOwnerReportedRetryable}}}, time.Now())
	runner.Run(ctx, s, owner{done: stop}, runner.WithLogger(slog.Default())) // logs every step
}
