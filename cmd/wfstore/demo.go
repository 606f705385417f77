package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/sqlite"
	"github.com/wfstore/wfstore/workflow"
)

type demoConfig struct {
	path        string
	activations int
	members     int
	dispatchers int
	failPercent int
	cap         int64
	events      int
	seed        string
}

func demo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c demoConfig
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.path, "db", "wfstore-demo.db", "SQLite file to create or reuse (each demo adds a new run)")
	fs.IntVar(&c.activations, "activations", 30, "plain activations in the run (some claim resources)")
	fs.IntVar(&c.members, "members", 6, "members of the run's one fan-out group (at most 2 at a time)")
	fs.IntVar(&c.dispatchers, "dispatchers", 4, "concurrent dispatchers racing for the same activations")
	fs.IntVar(&c.failPercent, "fail", 30, "percent of first attempts the simulated owner fails retryably")
	fs.Int64Var(&c.cap, "cap", 0, "the run's node_execution_cap (0 = activations+members+5, so retries can exhaust it)")
	fs.IntVar(&c.events, "events", 12, "how many of the run's last events to print")
	fs.StringVar(&c.seed, "seed", "", "seed for the owner's failures (default: the run id)")
	fs.Usage = func() {
		fmt.Fprint(stderr, `wfstore demo: start a run on an embedded SQLite file and admit it to a simulated owner.

The run has plain activations (some claiming a "db" write lease or a "cache"
read lease) and one fan-out group. Several dispatchers race for the same
activations; each is admitted exactly once. The owner fails some attempts
retryably; the activations' retry policy schedules durable retries that the
demo consumes when due. The run's execution allowance is small, so late
retries can be refused as exhausted.

Flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return errUsage
	}
	if err := noArgs("demo", fs.Args(), stderr); err != nil {
		return err
	}
	if c.activations < 1 || c.members < 0 || c.dispatchers < 1 || c.failPercent < 0 || c.failPercent > 100 {
		return errors.New("need -activations ≥ 1, -members ≥ 0, -dispatchers ≥ 1, 0 ≤ -fail ≤ 100")
	}
	b, err := sqlite.Open(ctx, c.path)
	if err != nil {
		return err
	}
	defer b.Close()
	err = runDemo(ctx, workflow.New(b), c, stdout)
	if err != nil && context.Cause(ctx) != nil {
		// The store's errors now only say that the signal cancelled them.
		return &interruptedError{left: fmt.Sprintf("the demo stopped part-way through its run; %s is consistent (every change is one transaction) and the next demo adds a new run", c.path)}
	}
	return err
}

// simOwner is the demo's owner: it accepts every dispatch and later reports
// an outcome; first attempts of some activations fail retryably.
type simOwner struct {
	seed        string
	failPercent int
}

func (o simOwner) Plan(_ context.Context, a workflow.Activation) (*workflow.Plan, error) {
	intent, _ := json.Marshal(map[string]any{"work": a.Key.NodeID, "activation": a.Key.ActivationID})
	return &workflow.Plan{SideEffect: workflow.ReadOnly, Intent: intent}, nil
}

func (o simOwner) Dispatch(_ context.Context, p workflow.PreparedDispatch) (json.RawMessage, error) {
	return json.RawMessage(fmt.Sprintf(`{"owner":"demo","accepted":%q}`, p.Identity)), nil
}

// fails reports whether the owner fails this attempt: a share of first
// attempts and a smaller share of second ones; third attempts succeed.
func (o simOwner) fails(k workflow.ActivationKey, attempt uint32) bool {
	h := sha256.Sum256([]byte(o.seed + "\x00" + k.ActivationID))
	roll := int(h[0]) * 100 / 256
	switch attempt {
	case 1:
		return roll < o.failPercent
	case 2:
		return roll < o.failPercent/3
	}
	return false
}

type demoTally struct {
	admitted, raced, unsupported, exhausted, rejected, retried, failed int
}

func runDemo(ctx context.Context, s *workflow.Store, c demoConfig, stdout io.Writer) error {
	start := time.Now().UTC()
	clock := start
	tick := func() time.Time { clock = clock.Add(5 * time.Millisecond); return clock }
	runID, err := demoRunID(start)
	if err != nil {
		return err
	}
	seed := c.seed
	if seed == "" {
		seed = runID
	}
	owner := simOwner{seed: seed, failPercent: c.failPercent}
	cap := c.cap
	if cap == 0 {
		cap = int64(c.activations+c.members) + 5
	}
	if _, err := s.CreateRun(ctx, workflow.NewRun{ID: runID, Limits: workflow.RunLimits{NodeExecutionCap: cap, ConcurrencyCap: 8}}, tick()); err != nil {
		return err
	}
	policy := &workflow.RetryPolicy{Version: 1, MaxAttempts: 3, EligibleFailures: []workflow.FailureKind{workflow.FailureOwnerReportedRetryable},
		InitialBackoffMS: 20, BackoffMultiplier: 2, MaximumBackoffMS: 1000}
	for i := range c.activations {
		na := workflow.NewActivation{
			Key:   workflow.ActivationKey{RunID: runID, NodeID: fmt.Sprintf("step-%02d", i%6), ActivationID: fmt.Sprintf("a%03d", i)},
			Input: json.RawMessage(fmt.Sprintf(`{"item":%d}`, i)), Reconciliation: workflow.ReceiptStatus, RetryPolicy: policy,
		}
		switch i % 5 {
		case 1:
			na.Claims = []workflow.ResourceClaim{{Resource: "db", Mode: backend.LeaseWrite}}
		case 2, 3:
			na.Claims = []workflow.ResourceClaim{{Resource: "cache", Mode: backend.LeaseRead}}
		}
		if _, err := s.AddActivation(ctx, na, tick()); err != nil {
			return err
		}
	}
	if c.members > 0 {
		ctl := workflow.ActivationKey{RunID: runID, NodeID: "fan", ActivationID: "controller"}
		if _, err := s.AddActivation(ctx, workflow.NewActivation{Key: ctl, Input: json.RawMessage(`{}`)}, tick()); err != nil {
			return err
		}
		inputs := make([]json.RawMessage, c.members)
		for i := range inputs {
			inputs[i] = json.RawMessage(fmt.Sprintf(`{"member":%d}`, i))
		}
		if _, err := s.AddFanOut(ctx, workflow.NewFanOut{Controller: ctl, Members: inputs, MaxConcurrency: 2,
			Reconciliation: workflow.ReceiptStatus, RetryPolicy: policy}, tick()); err != nil {
			return err
		}
	}

	var t demoTally
	for round := 0; round < 200; round++ {
		progress, err := demoRound(ctx, s, owner, runID, c.dispatchers, tick(), &t)
		if err != nil {
			return err
		}
		// Consume every due retry (time moves on past the backoff).
		for {
			clock = clock.Add(50 * time.Millisecond)
			rq, err := s.ConsumeNextDueRetry(ctx, runID, clock)
			if err != nil {
				return err
			}
			if rq == nil {
				break
			}
			t.retried++
			progress = true
		}
		if !progress {
			break
		}
	}
	return printDemo(ctx, s, runID, c, t, stdout)
}

// demoRunID names a new demo run: its start time, readable, and 64 random
// bits, so demos started in the same millisecond (on one file or not) never
// share a run.
func demoRunID(start time.Time) (string, error) {
	var suffix [8]byte
	if _, err := rand.Read(suffix[:]); err != nil {
		return "", fmt.Errorf("demo run id: %w", err)
	}
	return "demo-" + start.Format("20060102T150405.000Z") + "-" + hex.EncodeToString(suffix[:]), nil
}

// demoRound races dispatchers over the run, then reports each admitted
// attempt's outcome to the store as the owner would.
func demoRound(ctx context.Context, s *workflow.Store, o simOwner, runID string, n int, now time.Time, t *demoTally) (bool, error) {
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		admitted []string
		firstErr error
	)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sum, err := s.Dispatch(ctx, o, workflow.DispatchOptions{RunID: runID, Limit: 8}, now)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = err
			}
			admitted = append(admitted, sum.Admitted...)
			t.raced += len(sum.Raced)
			t.unsupported += len(sum.Unsupported)
			t.exhausted += len(sum.Exhausted)
			t.rejected += len(sum.Rejected)
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return false, firstErr
	}
	t.admitted += len(admitted)
	sort.Strings(admitted)
	for _, id := range admitted {
		a, err := s.GetAttempt(ctx, id)
		if err != nil {
			return false, err
		}
		obs := workflow.Observation{Kind: workflow.ObservedSucceeded, Output: json.RawMessage(`{"ok":true}`)}
		if o.fails(a.Key.ActivationKey, a.Key.Attempt) {
			obs = workflow.Observation{Kind: workflow.ObservedRetryableFailure, Detail: json.RawMessage(`{"error":"simulated transient failure"}`)}
			t.failed++
		}
		if _, err := s.ApplyObservation(ctx, id, obs, now.Add(time.Millisecond)); err != nil {
			return false, err
		}
	}
	return len(admitted) > 0, nil
}

func printDemo(ctx context.Context, s *workflow.Store, runID string, c demoConfig, t demoTally, w io.Writer) error {
	run, err := s.GetRun(ctx, runID)
	if err != nil {
		return err
	}
	attempts, err := s.Attempts(ctx, workflow.AttemptPage{RunID: runID, Limit: workflow.MaxPageLimit})
	if err != nil {
		return err
	}
	perStatus := map[workflow.AttemptStatus]int{}
	for _, a := range attempts {
		perStatus[a.Status]++
	}
	acts := map[workflow.ActivationStatus]int{}
	for i := range c.activations {
		a, err := s.GetActivation(ctx, workflow.ActivationKey{RunID: runID, NodeID: fmt.Sprintf("step-%02d", i%6), ActivationID: fmt.Sprintf("a%03d", i)})
		if err != nil {
			return err
		}
		acts[a.Status]++
	}
	for i := range c.members {
		a, err := s.GetActivation(ctx, workflow.MemberKey(workflow.ActivationKey{RunID: runID, NodeID: "fan", ActivationID: "controller"}, int64(i)))
		if err != nil {
			return err
		}
		acts[a.Status]++
	}
	allow, err := s.AllowanceObservation(ctx, runID)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "wfstore demo — run %s in %s\n\n", runID, c.path)
	fmt.Fprintf(w, "  admitted     %4d attempts (each activation at most once per attempt number)\n", t.admitted)
	fmt.Fprintf(w, "  raced        %4d (lost to another dispatcher, capacity or a resource lease)\n", t.raced)
	fmt.Fprintf(w, "  failed       %4d retryably; %d retries consumed and requeued\n", t.failed, t.retried)
	fmt.Fprintf(w, "  exhausted    %4d (refused by the run's execution allowance of %d)\n", t.exhausted, run.Limits.NodeExecutionCap)
	if t.rejected > 0 {
		fmt.Fprintf(w, "  rejected     %4d\n", t.rejected)
	}
	fmt.Fprintf(w, "\n  run status   %s; allowance consumed %s of %d\n", run.Status, countOrUnknown(allow.RunConsumed), allow.RunCap)
	fmt.Fprintf(w, "  activations  %s\n", statusLine(acts))
	fmt.Fprintf(w, "  attempts     %s\n", statusLine(perStatus))
	evs, err := s.Events(ctx, runID, max(run.LastEventSeq-int64(c.events), 0), max(c.events, 1))
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\nlast %d events:\n", len(evs))
	for _, ev := range evs {
		fmt.Fprintf(w, "  %4d  %-32s %s\n", ev.Seq, ev.Type, clipJSON(ev.Payload, 72))
	}
	return nil
}

func countOrUnknown(p *int64) string {
	if p == nil {
		return "unknown"
	}
	return fmt.Sprint(*p)
}

func statusLine[K ~string](m map[K]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, string(k))
	}
	sort.Strings(keys)
	out := ""
	for i, k := range keys {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprintf("%s %d", k, m[K(k)])
	}
	return out
}

func clipJSON(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n-1]) + "…"
}
