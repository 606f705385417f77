package workflow_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/wfstore/wfstore/sqlite"
	"github.com/wfstore/wfstore/workflow"
)

// Example_retry shows an automatic retry end to end: a policy on an
// activation whose class makes repeating safe, a retryable failure that
// schedules attempt 2, consumption of the due schedule, and the next
// Dispatch admitting attempt 2 under a new identity.
func Example_retry() {
	dir, _ := os.MkdirTemp("", "wfstore-example")
	defer os.RemoveAll(dir)
	ctx, now := context.Background(), time.UnixMilli(1_700_000_000_000)

	b, err := sqlite.Open(ctx, filepath.Join(dir, "store.db"))
	if err != nil {
		panic(err)
	}
	defer b.Close()
	s := workflow.New(b)

	s.CreateRun(ctx, workflow.NewRun{ID: "run-1"}, now)
	s.AddActivation(ctx, workflow.NewActivation{
		Key:   workflow.ActivationKey{RunID: "run-1", NodeID: "fetch", ActivationID: "a1"},
		Input: json.RawMessage(`{"url":"https://example.com"}`),
		// The default class (ReadOnly, RepairRequired) refuses automatic
		// retry, and says so in ObservationResult.NotScheduled.
		Effect: workflow.ReadOnly, Reconciliation: workflow.IdempotentReplay,
		RetryPolicy: &workflow.RetryPolicy{Version: 1, MaxAttempts: 3,
			EligibleFailures: []workflow.FailureKind{workflow.FailureOwnerReportedRetryable},
			InitialBackoff:   time.Second, BackoffMultiplier: 2, MaximumBackoff: time.Minute},
	}, now)

	sum, _ := s.Dispatch(ctx, echoOwner{}, workflow.DispatchOptions{Limit: 10}, now)
	res, err := s.ApplyObservation(ctx, sum.Admitted[0].Identity, workflow.Observation{Kind: workflow.ObservedRetryableFailure}, now)
	fmt.Println(res.Status, res.Schedule.NextAttempt, res.Schedule.Backoff, res.NotScheduled == nil, err)

	rq, err := s.Engine().ConsumeNextDueRetry(ctx, "run-1", now.Add(time.Second))
	fmt.Println(rq.PreviousAttempt, "->", rq.NextAttempt, err)

	again, _ := s.Dispatch(ctx, echoOwner{}, workflow.DispatchOptions{Limit: 10}, now.Add(time.Second))
	fmt.Println(len(again.Admitted), again.Admitted[0].Key.Attempt, again.Admitted[0].Identity != sum.Admitted[0].Identity)
	// Output:
	// failed 2 1s true <nil>
	// 1 -> 2 <nil>
	// 1 2 true
}
