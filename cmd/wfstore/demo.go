package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/wfstore/wfstore/event"
	"github.com/wfstore/wfstore/sqlite"
	"github.com/wfstore/wfstore/workflow"
)

type demoConfig struct {
	path        string
	activations int
	members     int
	dispatchers int
	events      int
	seed        string
}

func demo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c demoConfig
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.path, "db", "wfstore-demo.db", "SQLite file to create or reuse (each demo adds new runs)")
	fs.IntVar(&c.activations, "activations", 12, "activations of the first run, raced by the dispatchers")
	fs.IntVar(&c.members, "members", 6, "members of the fail-fast fan-out group (at least 3; about half start at once)")
	fs.IntVar(&c.dispatchers, "dispatchers", 4, "runners racing for the first run's activations (each with its own Store)")
	fs.IntVar(&c.events, "events", 0, "also print the last N events of each run (0 = none)")
	fs.StringVar(&c.seed, "seed", "", "seed choosing which activation and which fan-out member fail (default: the run id)")
	fs.Usage = func() {
		fmt.Fprint(stderr, `wfstore demo: tell a short story of admissions on an embedded SQLite file.

Each demo adds four new runs to the file and says, in numbered sentences,
what the Store did with them:
  1. several runners race for one run's activations; each is admitted once;
  2. a retryable failure is retried automatically (a durable schedule the
     runners consume when due, attempt 2 succeeds), and one whose node cannot
     be retried safely is refused with the Store's reason;
  3. a fail-fast fan-out group: one member fails, its running siblings are
     stopped and the unstarted ones cancelled, and the run fails;
  4. a run cancelled while work is in flight;
  5. a summary of each run, read back from the file.
Time is simulated, so a demo takes well under a second.

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
	if c.activations < 1 || c.members < 3 || c.members > workflow.MaxPageLimit || c.dispatchers < 1 || c.dispatchers > 64 || c.events < 0 {
		fmt.Fprintf(stderr, "wfstore demo: need -activations ≥ 1, 3 ≤ -members ≤ %d, 1 ≤ -dispatchers ≤ 64, -events ≥ 0 (see \"wfstore demo -help\")\n", workflow.MaxPageLimit)
		return errUsage
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

// simOwner is the demo's owner: it accepts every dispatch; what it reports
// afterwards is decided by the story.
type simOwner struct{}

func (simOwner) Plan(_ context.Context, a workflow.Activation) (*workflow.Plan, error) {
	intent, _ := json.Marshal(map[string]any{"work": a.Key.NodeID, "activation": a.Key.ActivationID})
	return &workflow.Plan{SideEffect: a.Effect, Intent: intent}, nil
}

func (simOwner) Dispatch(_ context.Context, p workflow.PreparedDispatch) (json.RawMessage, error) {
	return json.RawMessage(fmt.Sprintf(`{"owner":"demo","accepted":%q}`, p.Identity)), nil
}

// story numbers the demo's sentences.
type story struct {
	w io.Writer
	n int
}

func (st *story) say(format string, args ...any) {
	st.n++
	fmt.Fprintf(st.w, "%2d. %s\n", st.n, wrap(fmt.Sprintf(format, args...), 76, "    "))
}

// wrap breaks s at spaces into lines of at most width runes, indenting the
// continuation lines.
func wrap(s string, width int, indent string) string {
	var b strings.Builder
	line := 0
	for i, word := range strings.Fields(s) {
		n := len([]rune(word))
		if i > 0 {
			if line+1+n > width {
				b.WriteString("\n" + indent)
				line = 0
			} else {
				b.WriteByte(' ')
				line++
			}
		}
		b.WriteString(word)
		line += n
	}
	return b.String()
}

// simClock is the demo's time: it moves only when the story says so.
type simClock struct{ t time.Time }

func (c *simClock) step() time.Time { c.t = c.t.Add(time.Millisecond); return c.t }

// pick chooses, from the seed, an index in [0, n).
func pick(seed, label string, n int) int {
	h := sha256.Sum256([]byte(seed + "\x00" + label))
	return int(binary.BigEndian.Uint64(h[:8]) % uint64(n))
}

func runDemo(ctx context.Context, s *workflow.Store, c demoConfig, w io.Writer) error {
	start := time.Now().UTC().Truncate(time.Millisecond)
	clock := &simClock{t: start}
	base, err := demoRunID(start)
	if err != nil {
		return err
	}
	seed := c.seed
	if seed == "" {
		seed = base
	}
	fmt.Fprintf(w, "wfstore demo — run %s in %s\n\n", base, c.path)
	st := &story{w: w}
	runs := []string{base, base + "-refusal", base + "-fanout", base + "-cancel"}
	if err := demoRace(ctx, s, c, seed, runs[0], clock, st); err != nil {
		return err
	}
	if err := demoRefusal(ctx, s, runs[1], clock, st); err != nil {
		return err
	}
	if err := demoFanOut(ctx, s, c, seed, runs[2], clock, st); err != nil {
		return err
	}
	if err := demoCancel(ctx, s, runs[3], clock, st); err != nil {
		return err
	}
	return demoSummaries(ctx, s, c, runs, st)
}

var demoPolicy = &workflow.RetryPolicy{Version: 1, MaxAttempts: 3, EligibleFailures: []workflow.FailureKind{workflow.FailureOwnerReportedRetryable},
	InitialBackoff: 20 * time.Millisecond, BackoffMultiplier: 2, MaximumBackoff: time.Second}

// race has n dispatchers call Dispatch on the run at the same instant and
// returns the identities admitted (sorted) and how often one was told raced.
func race(ctx context.Context, s *workflow.Store, runID string, n, limit int, now time.Time) ([]string, int, error) {
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		admitted []string
		raced    int
		firstErr error
	)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sum, err := s.Dispatch(ctx, simOwner{}, workflow.DispatchOptions{RunID: runID, Limit: limit}, now)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = err
			}
			for _, a := range sum.Admitted {
				admitted = append(admitted, a.Identity)
			}
			raced += len(sum.Raced)
		}()
	}
	wg.Wait()
	sort.Strings(admitted)
	return admitted, raced, firstErr
}

func observe(ctx context.Context, s *workflow.Store, id string, kind workflow.ObservationKind, now time.Time) (workflow.ObservationResult, error) {
	obs := workflow.Observation{Kind: kind}
	switch kind {
	case workflow.ObservedSucceeded:
		obs.Output = json.RawMessage(`{"ok":true}`)
	case workflow.ObservedRetryableFailure, workflow.ObservedFailed:
		obs.Detail = json.RawMessage(`{"error":"simulated failure"}`)
	}
	return s.ApplyObservation(ctx, id, obs, now)
}

// runAttempts pages through every attempt of the run.
func runAttempts(ctx context.Context, s *workflow.Store, runID string) ([]workflow.Attempt, error) {
	p := workflow.AttemptQuery{RunID: runID, Limit: workflow.MaxPageLimit}
	var out []workflow.Attempt
	for {
		page, err := s.Attempts(ctx, p)
		if err != nil {
			return nil, err
		}
		out = append(out, page.Items...)
		if page.Next == "" {
			return out, nil
		}
		p.After = page.Next
	}
}

// demoRace: dispatchers race for the run's activations; one first attempt
// fails retryably and is retried automatically.
func demoRace(ctx context.Context, s *workflow.Store, c demoConfig, seed, runID string, clock *simClock, st *story) error {
	if _, err := s.CreateRun(ctx, workflow.NewRun{ID: runID, Limits: workflow.RunLimits{NodeExecutionCap: int64(c.activations) + 5}}, clock.step()); err != nil {
		return err
	}
	key := func(i int) workflow.ActivationKey {
		return workflow.ActivationKey{RunID: runID, NodeID: fmt.Sprintf("step-%02d", i%6), ActivationID: fmt.Sprintf("a%03d", i)}
	}
	for i := range c.activations {
		if _, err := s.AddActivation(ctx, workflow.NewActivation{Key: key(i), Input: json.RawMessage(fmt.Sprintf(`{"item":%d}`, i)),
			Reconciliation: workflow.ReceiptStatus, RetryPolicy: demoPolicy}, clock.step()); err != nil {
			return err
		}
	}
	flaky := key(pick(seed, "flaky", c.activations))
	return raceWithRunners(ctx, s, c, runID, flaky, clock, st)
}

// count says n things: one when n is 1, else many with n in place of %d.
func count(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return fmt.Sprintf(many, n)
}

func refusalText(r *workflow.RetryRefusal) string {
	if r == nil {
		return "no reason given"
	}
	if r.Ineligible != "" {
		return fmt.Sprintf("%s: %s", r.Reason, r.Ineligible)
	}
	return string(r.Reason)
}

// demoRefusal: a retryable failure of a node that cannot be retried safely.
func demoRefusal(ctx context.Context, s *workflow.Store, runID string, clock *simClock, st *story) error {
	if _, err := s.CreateRun(ctx, workflow.NewRun{ID: runID}, clock.step()); err != nil {
		return err
	}
	k := workflow.ActivationKey{RunID: runID, NodeID: "charge-card", ActivationID: "order-1"}
	if _, err := s.AddActivation(ctx, workflow.NewActivation{Key: k, Input: json.RawMessage(`{"order":1}`),
		Effect: workflow.Mutating, Reconciliation: workflow.RepairRequired, RetryPolicy: demoPolicy}, clock.step()); err != nil {
		return err
	}
	ids, _, err := race(ctx, s, runID, 1, 1, clock.step())
	if err != nil {
		return err
	}
	if len(ids) != 1 {
		return fmt.Errorf("demo: %d attempts admitted in %s, want 1", len(ids), runID)
	}
	a, err := s.GetAttempt(ctx, ids[0])
	if err != nil {
		return err
	}
	res, err := observe(ctx, s, ids[0], workflow.ObservedRetryableFailure, clock.step())
	if err != nil {
		return err
	}
	act, err := s.GetActivation(ctx, k)
	if err != nil {
		return err
	}
	run, err := s.GetRun(ctx, runID)
	if err != nil {
		return err
	}
	if res.NotScheduled == nil {
		st.say("Run %s: attempt %d of %s failed retryably and the Store scheduled attempt %d.", runID, a.Key.Attempt, k.NodeID, res.Schedule.NextAttempt)
		return nil
	}
	st.say("Run %s: node %s is %s with reconciliation %s (an unknown outcome needs a person), though it declares the same retry policy. Its attempt %d also failed retryably, but the Store refused to schedule a retry, reason %q; the attempt is %s, the activation %s and the run %s.",
		runID, k.NodeID, act.Effect, act.Reconciliation, a.Key.Attempt, refusalText(res.NotScheduled), res.Status, act.Status, run.Status)
	return nil
}

// demoFanOut: a fail-fast fan-out group one of whose members fails.
func demoFanOut(ctx context.Context, s *workflow.Store, c demoConfig, seed, runID string, clock *simClock, st *story) error {
	if _, err := s.CreateRun(ctx, workflow.NewRun{ID: runID, Limits: workflow.RunLimits{ConcurrencyCap: int64(c.members) + 1}}, clock.step()); err != nil {
		return err
	}
	ctl := workflow.ActivationKey{RunID: runID, NodeID: "resize", ActivationID: "controller"}
	if _, err := s.AddActivation(ctx, workflow.NewActivation{Key: ctl, Input: json.RawMessage(`{}`)}, clock.step()); err != nil {
		return err
	}
	inputs := make([]json.RawMessage, c.members)
	for i := range inputs {
		inputs[i] = json.RawMessage(fmt.Sprintf(`{"image":%d}`, i))
	}
	width := int64((c.members + 1) / 2)
	if _, err := s.AddFanOut(ctx, workflow.NewFanOut{Controller: ctl, Members: inputs, MaxConcurrency: width, OnFailure: workflow.FailFast}, clock.step()); err != nil {
		return err
	}
	// Dispatch everything that can start; the owner reports each member running.
	started := map[string]workflow.Attempt{}
	var memberIDs []string
	for {
		now := clock.step()
		ids, _, err := race(ctx, s, runID, 1, workflow.MaxPageLimit, now)
		if err != nil {
			return err
		}
		if len(ids) == 0 {
			break
		}
		for _, id := range ids {
			a, err := s.GetAttempt(ctx, id)
			if err != nil {
				return err
			}
			kind := workflow.ObservedRunning
			if a.Key.ActivationKey == ctl {
				kind = workflow.ObservedSucceeded
			} else {
				started[id] = a
				memberIDs = append(memberIDs, id)
			}
			if _, err := observe(ctx, s, id, kind, clock.step()); err != nil {
				return err
			}
		}
	}
	if len(memberIDs) < 2 {
		return fmt.Errorf("demo: only %d fan-out members started", len(memberIDs))
	}
	sort.Slice(memberIDs, func(i, j int) bool {
		return started[memberIDs[i]].Key.NodeID < started[memberIDs[j]].Key.NodeID
	})
	failing := memberIDs[pick(seed, "member", len(memberIDs))]
	res, err := observe(ctx, s, failing, workflow.ObservedFailed, clock.step())
	if err != nil {
		return err
	}
	var stopped []string
	for _, id := range memberIDs {
		if id == failing {
			continue
		}
		a, err := s.GetAttempt(ctx, id)
		if err != nil {
			return err
		}
		if a.Status == workflow.AttemptSiblingCancelling {
			stopped = append(stopped, id)
		}
	}
	sum, err := s.RunSummary(ctx, runID)
	if err != nil {
		return err
	}
	st.say("Run %s: a fan-out group of %d members under %s/%s with policy %s and at most %d running at once. The owner had started %s when %s reported a terminal failure (its attempt is now %s). In that same transaction the Store moved %s to %s, cancelled %s that had not started, and failed the run (now %s).",
		runID, c.members, ctl.NodeID, ctl.ActivationID, workflow.FailFast, width, count(len(memberIDs), "1 member", "%d members"), started[failing].Key.NodeID, res.Status,
		count(len(stopped), "its running sibling", "its %d running siblings"), workflow.AttemptSiblingCancelling, count(sum.Activations[workflow.ActivationCancelled], "the member", "the %d members"), sum.Run.Status)
	cancelled := 0
	for _, id := range stopped {
		r, err := observe(ctx, s, id, workflow.ObservedCancelled, clock.step())
		if err != nil {
			return err
		}
		if r.Status == workflow.AttemptCancelled {
			cancelled++
		}
	}
	run, err := s.GetRun(ctx, runID)
	if err != nil {
		return err
	}
	st.say("The owner then stopped %s and reported back; the Store settled %d as cancelled. The run stays %s.", count(len(stopped), "that sibling", "those %d siblings"), cancelled, run.Status)
	return nil
}

// demoCancel: a run cancelled while work is in flight.
func demoCancel(ctx context.Context, s *workflow.Store, runID string, clock *simClock, st *story) error {
	if _, err := s.CreateRun(ctx, workflow.NewRun{ID: runID}, clock.step()); err != nil {
		return err
	}
	keys := make([]workflow.ActivationKey, 4)
	for i := range keys {
		keys[i] = workflow.ActivationKey{RunID: runID, NodeID: "export", ActivationID: fmt.Sprintf("part-%d", i+1)}
		if _, err := s.AddActivation(ctx, workflow.NewActivation{Key: keys[i], Input: json.RawMessage(fmt.Sprintf(`{"part":%d}`, i+1))}, clock.step()); err != nil {
			return err
		}
	}
	now := clock.step()
	ids, _, err := race(ctx, s, runID, 1, 2, now)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if _, err := observe(ctx, s, id, workflow.ObservedRunning, clock.step()); err != nil {
			return err
		}
	}
	// A dispatcher writes its intent for one more and stops before the
	// handoff: that attempt provably never reached its owner.
	plan, _ := simOwner{}.Plan(ctx, workflow.Activation{Key: keys[2], Effect: workflow.ReadOnly})
	if _, err := s.Engine().PreparePending(ctx, keys[2], *plan, clock.step()); err != nil {
		return err
	}
	before, err := s.RunSummary(ctx, runID)
	if err != nil {
		return err
	}
	status, err := s.RequestCancellation(ctx, runID, nil, clock.step())
	if err != nil {
		return err
	}
	run, err := s.GetRun(ctx, runID)
	if err != nil {
		return err
	}
	activePage, err := s.Engine().ActiveAttempts(ctx, workflow.ActiveAttemptQuery{RunID: runID})
	if err != nil {
		return err
	}
	active := activePage.Items
	sum, err := s.RunSummary(ctx, runID)
	if err != nil {
		return err
	}
	st.say("Run %s: cancellation was requested while %s running, %s prepared by a dispatcher that stopped before handing it off, and %s not started. The intent is durable first (recorded %d ms after the run was created): the run keeps status %s, cancellation requested, with %s still to settle, and %s already cancelled.",
		runID, count(before.Attempts[workflow.AttemptRunning], "1 attempt was", "%d attempts were"), count(before.Attempts[workflow.AttemptPrepared], "1 attempt was", "%d attempts were"),
		count(before.Activations[workflow.ActivationPending], "1 activation had", "%d activations had"), run.CancelRequestedAt.Sub(run.CreatedAt).Milliseconds(), status,
		count(len(active), "1 active attempt", "%d active attempts"), count(sum.Activations[workflow.ActivationCancelled], "the unstarted activation is", "%d unstarted activations are"))
	o := &cancelOwner{}
	if err := cancelWithRunner(ctx, s, runID, o, clock); err != nil {
		return err
	}
	evs, err := runEvents(ctx, s, runID)
	if err != nil {
		return err
	}
	neverDispatched, signalled, settled := 0, 0, 0
	for _, ev := range evs {
		p, err := ev.Decode()
		if err != nil {
			return err
		}
		switch p := p.(type) {
		case event.AttemptCancelledPayload:
			if p.Reason == "never_dispatched" {
				neverDispatched++
			} else {
				settled++
			}
		case event.AttemptCancellationSignalledPayload:
			signalled++
		}
	}
	run, err = s.GetRun(ctx, runID)
	if err != nil {
		return err
	}
	st.say("A runner then reached the work: it cancelled %s that provably never reached its owner (no one to ask), called the owner's Cancel for the %d in flight and only then recorded each signal (%s, the attempts %s until the owner reports).",
		count(neverDispatched, "the attempt", "the %d attempts"), o.toldCount(), count(signalled, "1 signal", "%d signals"), workflow.AttemptCancelling)
	st.say("The owner stopped the work and reported %s cancelled; with nothing active left the Store finalised the run as %s.", count(settled, "1 attempt", "%d attempts"), run.Status)
	return nil
}

func demoSummaries(ctx context.Context, s *workflow.Store, c demoConfig, runs []string, st *story) error {
	var lines []string
	for _, id := range runs {
		sum, err := s.RunSummary(ctx, id)
		if err != nil {
			return err
		}
		lines = append(lines, fmt.Sprintf("%s is %s — activations: %s; attempts: %s; %s of %d executions used",
			id, sum.Run.Status, statusLine(sum.Activations), statusLine(sum.Attempts), countOrUnknown(sum.Allowance.RunConsumed), sum.Allowance.RunCap))
	}
	st.say("Read back from %s (RunSummary):", c.path)
	for _, l := range lines {
		fmt.Fprintf(st.w, "      %s\n", wrap(l, 72, "        "))
	}
	if c.events > 0 {
		for _, id := range runs {
			evs, err := runEvents(ctx, s, id)
			if err != nil {
				return err
			}
			evs = evs[max(len(evs)-c.events, 0):]
			fmt.Fprintf(st.w, "\nlast %d events of %s:\n", len(evs), id)
			for _, ev := range evs {
				fmt.Fprintf(st.w, "  %4d  %-32s %s\n", ev.Seq, ev.Type, clipJSON(ev.Payload, 72))
			}
		}
	}
	return nil
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
