package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/wfstore/wfstore/event"
	"github.com/wfstore/wfstore/runner"
	"github.com/wfstore/wfstore/workflow"
)

// runnerClock is the runners' time in the demo: simulated, it moves only
// when every runner waits, and then jumps to the earliest wake-up. The
// runners never sleep, and a retry is consumed when its schedule says.
type runnerClock struct {
	mu      sync.Mutex
	now     time.Time
	parties int
	pending []*runnerTimer
	frozen  bool
}

type runnerTimer struct {
	c    *runnerClock
	at   time.Time
	ch   chan time.Time
	live bool
}

func (c *runnerClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *runnerClock) NewTimer(d time.Duration) runner.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &runnerTimer{c: c, at: c.now.Add(d), ch: make(chan time.Time, 1)}
	if d <= 0 {
		t.ch <- c.now
		return t
	}
	t.live = true
	c.pending = append(c.pending, t)
	c.advance()
	return t
}

func (t *runnerTimer) C() <-chan time.Time { return t.ch }

func (t *runnerTimer) Stop() bool {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	was := t.live
	t.live = false
	for i, p := range c.pending {
		if p == t {
			c.pending = append(c.pending[:i], c.pending[i+1:]...)
			break
		}
	}
	return was
}

// advance, once every runner waits, moves the clock to the earliest
// wake-up and fires the timers due by then. The caller holds c.mu.
func (c *runnerClock) advance() {
	if c.frozen || len(c.pending) < c.parties {
		return
	}
	next := c.pending[0].at
	for _, t := range c.pending[1:] {
		if t.at.Before(next) {
			next = t.at
		}
	}
	if next.After(c.now) {
		c.now = next
	}
	keep := c.pending[:0]
	for _, t := range c.pending {
		if t.at.After(c.now) {
			keep = append(keep, t)
			continue
		}
		t.live = false
		t.ch <- c.now
	}
	c.pending = keep
}

// freeze stops the clock (the runners are about to stop) and returns its
// time.
func (c *runnerClock) freeze() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.frozen = true
	return c.now
}

// runnerOwner is simOwner that also observes: the flaky activation's first
// attempt failed retryably, every other attempt succeeded.
type runnerOwner struct {
	simOwner
	flaky workflow.ActivationKey
}

func (o runnerOwner) Observe(_ context.Context, a workflow.Attempt) (workflow.Observation, error) {
	if a.Key.ActivationKey == o.flaky && a.Key.Attempt == 1 {
		return workflow.Observation{Kind: workflow.ObservedRetryableFailure, Detail: json.RawMessage(`{"error":"simulated failure"}`)}, nil
	}
	return workflow.Observation{Kind: workflow.ObservedSucceeded, Output: json.RawMessage(`{"ok":true}`)}, nil
}

// runnerWait bounds, in real time, how long the demo waits for its runners.
const runnerWait = 2 * time.Minute

// raceWithRunners: c.dispatchers runners, each over its own Store on the
// one backend, race for the run's activations on one simulated clock;
// the owner fails the flaky activation's first attempt retryably, and the
// runners retry it when due. Once the run has completed the runners stop
// and the story is read back from the store.
func raceWithRunners(ctx context.Context, s *workflow.Store, c demoConfig, runID string, flaky workflow.ActivationKey, clock *simClock, st *story) error {
	rc := &runnerClock{now: clock.t, parties: c.dispatchers}
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	type result struct {
		sum runner.Summary
		err error
	}
	results := make(chan result, c.dispatchers)
	for range c.dispatchers {
		r, err := runner.New(workflow.New(s.Engine().Backend()), runnerOwner{flaky: flaky}, runner.WithClock(rc), runner.WithRun(runID, nil),
			runner.WithLimit(16), runner.WithJitter(0), runner.WithPollInterval(time.Millisecond, 100*time.Millisecond))
		if err != nil {
			return err
		}
		go func() {
			sum, err := r.Run(rctx)
			results <- result{sum, err}
		}()
	}
	waitErr := waitCompleted(ctx, s, runID, func() bool { return len(results) > 0 })
	clock.t = rc.freeze()
	stop()
	var raced, passes int
	var runErr error
	for range c.dispatchers {
		r := <-results
		raced += r.sum.Raced
		passes += r.sum.Passes
		if r.err != nil {
			runErr = errors.Join(runErr, r.err)
		}
	}
	if runErr != nil {
		return runErr
	}
	if waitErr != nil {
		return waitErr
	}
	return tellRace(ctx, s, c, runID, flaky, raced, passes, st)
}

// waitCompleted polls, in real time, until the run has completed, ctx is
// done, or stopped reports that a runner returned early.
func waitCompleted(ctx context.Context, s *workflow.Store, runID string, stopped func() bool) error {
	return waitStatus(ctx, s, runID, workflow.RunCompleted, stopped)
}

// waitStatus polls, in real time, until the run has status want, ctx is
// done, or stopped reports that a runner returned early.
func waitStatus(ctx context.Context, s *workflow.Store, runID string, want workflow.RunStatus, stopped func() bool) error {
	deadline := time.Now().Add(runnerWait)
	for {
		run, err := s.GetRun(ctx, runID)
		if err != nil {
			return err
		}
		if run.Status == want {
			return nil
		}
		if stopped() {
			return fmt.Errorf("demo: a runner stopped before run %s became %s (it is %s)", runID, want, run.Status)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("demo: run %s did not become %s within %v (it is %s)", runID, want, runnerWait, run.Status)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// runEvents pages through every event of the run.
func runEvents(ctx context.Context, s *workflow.Store, runID string) ([]event.Event, error) {
	var out []event.Event
	q := workflow.EventQuery{RunID: runID, Limit: workflow.MaxPageLimit}
	for {
		page, err := s.Events(ctx, q)
		if err != nil {
			return nil, err
		}
		out = append(out, page.Items...)
		if page.Next == "" {
			return out, nil
		}
		q.After = page.Next
	}
}

// tellRace says what the runners did, as the store records it.
func tellRace(ctx context.Context, s *workflow.Store, c demoConfig, runID string, flaky workflow.ActivationKey, raced, passes int, st *story) error {
	atts, err := runAttempts(ctx, s, runID)
	if err != nil {
		return err
	}
	per := map[workflow.ActivationKey][]workflow.Attempt{}
	for _, a := range atts {
		per[a.Key.ActivationKey] = append(per[a.Key.ActivationKey], a)
	}
	once := 0
	for k, as := range per {
		if len(as) == 1 && k != flaky {
			once++
		}
	}
	st.say("Run %s: %s raced for its %s on one simulated clock (%s between them). The Store admitted %s: %d of the %d activations have exactly one attempt, %s/%s has two (its first failed, see below), and any runner that lost was told \"raced\" %s (the activation was already taken, or the run had no concurrency room) instead of admitting anything twice.",
		runID, count(c.dispatchers, "1 runner", "%d runners"), count(c.activations, "1 activation", "%d activations"), count(passes, "1 pass", "%d passes"),
		count(len(atts), "1 attempt", "%d attempts"), once, c.activations, flaky.NodeID, flaky.ActivationID, count(raced, "once", "%d times"))

	tries := per[flaky]
	if len(tries) != 2 {
		return fmt.Errorf("demo: activation %v has %d attempts, want 2", flaky, len(tries))
	}
	first, second := tries[0], tries[1]
	if first.Key.Attempt > second.Key.Attempt {
		first, second = second, first
	}
	evs, err := runEvents(ctx, s, runID)
	if err != nil {
		return err
	}
	var sched *event.AutomaticRetryScheduledPayload
	var consumedAt time.Time
	for _, ev := range evs {
		p, err := ev.Decode()
		if err != nil {
			return err
		}
		switch p := p.(type) {
		case event.AutomaticRetryScheduledPayload:
			sched = &p
		case event.AutomaticRetryConsumedPayload:
			consumedAt = ev.CreatedAt
		}
	}
	if sched == nil || consumedAt.IsZero() {
		return fmt.Errorf("demo: the retry of %v was not scheduled and consumed", flaky)
	}
	act, err := s.GetActivation(ctx, flaky)
	if err != nil {
		return err
	}
	var pol workflow.RetryPolicy
	if err := json.Unmarshal(act.RetryPolicy, &pol); err != nil {
		return fmt.Errorf("demo: stored retry policy: %w", err)
	}
	st.say("The owner reported attempt %d of %s/%s as a retryable failure. Its node is %s with reconciliation %s and declares a retry policy (up to %d attempts, first backoff %d ms), so in the same transaction the Store marked the attempt %s and scheduled attempt %d after a backoff of %d ms.",
		first.Key.Attempt, flaky.NodeID, flaky.ActivationID, act.Effect, act.Reconciliation, pol.MaxAttempts, pol.InitialBackoff.Milliseconds(),
		first.Status, sched.NextAttempt, sched.Backoff.Duration().Milliseconds())

	due := sched.NextAttemptAt.Time()
	if consumedAt.Before(due) {
		return fmt.Errorf("demo: retry consumed %v before it was due", due.Sub(consumedAt))
	}
	run, err := s.GetRun(ctx, runID)
	if err != nil {
		return err
	}
	st.say("The runners slept until the schedule was due and consumed it %d ms after the failure, requeuing attempt %d after attempt %d; they raced once more: attempt %d was admitted after the scheduled retry (identity %.12s…), the owner reported it %s, and with nothing left open the run is %s.",
		consumedAt.Sub(sched.ScheduledAt.Time()).Milliseconds(), sched.NextAttempt, sched.FailedAttempt, second.Key.Attempt, second.Identity, second.Status, run.Status)
	return nil
}
