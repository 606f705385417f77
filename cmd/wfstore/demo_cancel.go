package main

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/wfstore/wfstore/runner"
	"github.com/wfstore/wfstore/workflow"
)

// cancelOwner is simOwner with a Canceller and an Observer: its work runs
// until it is told to cancel it, then it reports the work cancelled. It
// remembers every identity it was told about, so that a Dispatch of one
// would start nothing.
type cancelOwner struct {
	simOwner
	mu   sync.Mutex
	told []string
}

func (o *cancelOwner) Cancel(_ context.Context, identity string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !slices.Contains(o.told, identity) {
		o.told = append(o.told, identity)
	}
	return nil
}

func (o *cancelOwner) Observe(_ context.Context, a workflow.Attempt) (workflow.Observation, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if slices.Contains(o.told, a.Identity) {
		return workflow.Observation{Kind: workflow.ObservedCancelled, Detail: json.RawMessage(`{"stopped":true}`)}, nil
	}
	return workflow.Observation{Kind: workflow.ObservedRunning}, nil
}

func (o *cancelOwner) toldCount() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.told)
}

// cancelWithRunner runs one runner over the run, whose cancellation is
// requested, with o as its owner, on the simulated clock, until the run
// is cancelled: the runner cancels what never reached the owner, calls
// the owner's Cancel for the work in flight before it records each
// signal, and settles what the owner then reports.
func cancelWithRunner(ctx context.Context, s *workflow.Store, runID string, o *cancelOwner, clock *simClock) error {
	rc := &runnerClock{now: clock.t, parties: 1}
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	r, err := runner.New(workflow.New(s.Engine().Backend()), o, runner.WithClock(rc), runner.WithRun(runID, nil),
		runner.WithJitter(0), runner.WithPollInterval(time.Millisecond, 100*time.Millisecond))
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() {
		_, err := r.Run(rctx)
		done <- err
	}()
	waitErr := waitStatus(ctx, s, runID, workflow.RunCancelled, func() bool { return len(done) > 0 })
	clock.t = rc.freeze()
	stop()
	return errors.Join(<-done, waitErr)
}
