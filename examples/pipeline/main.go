// Pipeline ships orders: reserve, ship every item in parallel (a fan-out the
// store settles), then invoice (a join waiting for the shipments). Item C of
// order-1 fails once and is retried; order-2 is cancelled while it ships.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/wfstore/wfstore/runner"
	"github.com/wfstore/wfstore/sqlite"
	"github.com/wfstore/wfstore/workflow"
)

type owner struct {
	s   *workflow.Store
	mu  sync.Mutex // guards out
	out io.Writer
}

func key(order, node string) workflow.ActivationKey {
	return workflow.ActivationKey{RunID: order, NodeID: node, ActivationID: "1"}
}

func (o *owner) Plan(_ context.Context, a workflow.Activation) (*workflow.Plan, error) {
	return &workflow.Plan{SideEffect: workflow.ReadOnly, Intent: a.Input}, nil
}

func (o *owner) Dispatch(ctx context.Context, p workflow.PreparedDispatch) (json.RawMessage, error) {
	if k := p.Activation.Key; k.RunID == "order-2" && strings.HasPrefix(k.NodeID, "ship::") {
		_, err := o.s.RequestCancellation(ctx, "order-2", nil, time.Now()) // the customer cancels
		return json.RawMessage(`{}`), err
	}
	return json.RawMessage(`{}`), nil // the receipt: the work is durably queued under p.Identity
}

func (o *owner) Observe(_ context.Context, a workflow.Attempt) (workflow.Observation, error) {
	k, done := a.Key, workflow.Observation{Kind: workflow.ObservedSucceeded, Output: json.RawMessage(`{}`)}
	switch {
	case k.NodeID == "reserve": // add the shipments and the invoice waiting for them, atomically
		ship, retry := key(k.RunID, "ship"), &workflow.RetryPolicy{Version: 1, MaxAttempts: 2, BackoffMultiplier: 1,
			InitialBackoff: 10 * time.Millisecond, MaximumBackoff: 10 * time.Millisecond,
			EligibleFailures: []workflow.FailureKind{workflow.FailureOwnerReportedRetryable}}
		done.Successors = []workflow.NewActivation{{Key: ship, Input: []byte(`{}`)},
			{Key: key(k.RunID, "invoice"), Input: []byte(`{}`), WaitFor: []workflow.NodeRef{{NodeID: "ship", ActivationID: "1"}}}}
		done.FanOuts = []workflow.NewFanOut{{Controller: ship, MaxConcurrency: 5, FanIn: true, RetryPolicy: retry,
			Reconciliation: workflow.IdempotentReplay, // a shipment may be retried
			Members:        []json.RawMessage{[]byte(`"A"`), []byte(`"B"`), []byte(`"C"`), []byte(`"D"`), []byte(`"E"`)}}}
	case k.RunID == "order-1" && string(a.Intent) == `"C"` && k.Attempt == 1:
		return workflow.Observation{Kind: workflow.ObservedRetryableFailure}, nil // the carrier was busy
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	fmt.Fprintf(o.out, "%s: %s %s\n", k.RunID, strings.SplitN(k.NodeID, "::", 2)[0], a.Intent)
	return done, nil
}

// run creates both orders in an SQLite store at path and runs the runner
// until order-1 completed and order-2 was cancelled.
func run(ctx context.Context, path string, out io.Writer) error {
	b, err := sqlite.Open(ctx, path)
	if err != nil {
		return err
	}
	defer b.Close()
	s := workflow.New(b)
	for _, id := range []string{"order-1", "order-2"} {
		if _, err := s.CreateRun(ctx, workflow.NewRun{ID: id}, time.Now()); err != nil {
			return err
		}
		if _, err := s.AddActivation(ctx, workflow.NewActivation{Key: key(id, "reserve"), Input: []byte(`"order"`)}, time.Now()); err != nil {
			return err
		}
	}
	rctx, stop := context.WithCancel(ctx)
	go func() { // stop the runner once order-1 is invoiced and order-2 cancelled
		defer stop()
		for !finished(ctx, s) {
			time.Sleep(20 * time.Millisecond)
		}
	}()
	_, err = runner.Run(rctx, s, &owner{s: s, out: out})
	return err
}

func finished(ctx context.Context, s *workflow.Store) bool {
	r1, err1 := s.GetRun(ctx, "order-1")
	r2, err2 := s.GetRun(ctx, "order-2")
	return err1 != nil || err2 != nil || (r1.Status == workflow.RunCompleted && r2.Status == workflow.RunCancelled)
}

func main() {
	dir, err := os.MkdirTemp("", "wfstore-pipeline")
	if err == nil {
		err = run(context.Background(), filepath.Join(dir, "store.db"), os.Stdout)
		os.RemoveAll(dir)
	}
	if err != nil {
		log.Fatal(err)
	}
}
