package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/workflow"
)

// Fixtures for the store tier: a clock, a recording owner and small
// factories. Every case works through workflow.Store over e.B.

// t0 is the suite's clock origin; ms(n) is t0 + n milliseconds.
var t0 = time.UnixMilli(1_700_000_000_000).UTC()

func ms(n int64) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }

func store(e *Env) *workflow.Store { return workflow.New(e.B) }

// mkRun creates a root run with the given limits, every zero field taking
// its default (RetryCap too: for an explicit retry cap of 0 call CreateRun
// with workflow.RetryCap(0)).
func mkRun(e *Env, s *workflow.Store, id string, l workflow.Limits, auth *workflow.Authority) {
	e.T.Helper()
	_, err := s.CreateRun(e.Ctx, workflow.NewRun{ID: id, Limits: defaulted(l), Authority: auth}, ms(0))
	require.NoError(e.T, err, "create run %q", id)
}

// defaulted requests l with every zero field unset (so taking its default).
func defaulted(l workflow.Limits) workflow.RunLimits {
	r := workflow.ExactLimits(l)
	if l.RetryCap == 0 {
		r.RetryCap = nil
	}
	return r
}

func key(run, node, act string) workflow.ActivationKey {
	return workflow.ActivationKey{RunID: run, NodeID: node, ActivationID: act}
}

// mkAct adds a pending activation with input {"n":"<act>"}.
func mkAct(e *Env, s *workflow.Store, k workflow.ActivationKey, mod ...func(*workflow.NewActivation)) {
	e.T.Helper()
	na := workflow.NewActivation{Key: k, Input: json.RawMessage(fmt.Sprintf(`{"n":%q}`, k.ActivationID))}
	for _, m := range mod {
		m(&na)
	}
	_, err := s.AddActivation(e.Ctx, na, ms(1))
	require.NoError(e.T, err, "add activation %v", k)
}

func authority(gen int64, tag string) *workflow.Authority {
	return &workflow.Authority{TargetArtifactID: "artifact", DaemonInstanceID: "daemon-" + tag, Generation: gen, FencingToken: "token-" + tag}
}

// owner is a recording test owner. It plans every activation (unless
// listed unsupported) with the configured effect and an intent naming the
// activation, and returns a receipt naming the identity.
type owner struct {
	mu          sync.Mutex
	effect      workflow.Effect
	unsupported map[string]bool                                              // by activation id
	calls       map[string]int                                               // dispatches by identity
	order       []string                                                     // identities in call order
	receipts    map[string]json.RawMessage                                   // what the owner holds
	onPlan      func(ctx context.Context, a workflow.Activation) error       // hook, may mutate the store
	onDispatch  func(ctx context.Context, p workflow.PreparedDispatch) error // hook before accepting; error = dispatch fails
	intent      func(a workflow.Activation) json.RawMessage                  // default {"do":act}
	receipt     func(p workflow.PreparedDispatch) json.RawMessage            // default {"accepted":identity}
	lookupErr   error
}

func newOwner() *owner {
	return &owner{effect: workflow.ReadOnly, unsupported: map[string]bool{}, calls: map[string]int{}, receipts: map[string]json.RawMessage{}}
}

func (o *owner) Plan(ctx context.Context, a workflow.Activation) (*workflow.Plan, error) {
	if o.onPlan != nil {
		if err := o.onPlan(ctx, a); err != nil {
			return nil, err
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.unsupported[a.Key.ActivationID] {
		return nil, nil
	}
	intent := json.RawMessage(fmt.Sprintf(`{"do":%q}`, a.Key.ActivationID))
	if o.intent != nil {
		intent = o.intent(a)
	}
	return &workflow.Plan{SideEffect: o.effect, Intent: intent}, nil
}

func (o *owner) Dispatch(ctx context.Context, p workflow.PreparedDispatch) (json.RawMessage, error) {
	o.mu.Lock()
	o.calls[p.Identity]++
	o.order = append(o.order, p.Identity)
	o.mu.Unlock()
	if o.onDispatch != nil {
		if err := o.onDispatch(ctx, p); err != nil {
			return nil, err
		}
	}
	r := json.RawMessage(fmt.Sprintf(`{"accepted":%q}`, p.Identity))
	if o.receipt != nil {
		r = o.receipt(p)
	}
	o.mu.Lock()
	o.receipts[p.Identity] = r
	o.mu.Unlock()
	return r, nil
}

func (o *owner) LookupReceipt(ctx context.Context, identity string) (json.RawMessage, bool, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.lookupErr != nil {
		return nil, false, o.lookupErr
	}
	r, ok := o.receipts[identity]
	return r, ok, nil
}

func (o *owner) callCount(identity string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.calls[identity]
}

func (o *owner) totalCalls() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.order)
}

// dispatch runs one Dispatch pass over everything (limit 1000).
func dispatch(e *Env, s *workflow.Store, o workflow.Owner, opts workflow.DispatchOptions, at time.Time) workflow.DispatchSummary {
	e.T.Helper()
	if opts.Limit == 0 {
		opts.Limit = workflow.MaxPageLimit
	}
	sum, err := s.Dispatch(e.Ctx, o, opts, at)
	require.NoError(e.T, err)
	return sum
}

func identity(k workflow.ActivationKey, attempt uint32) string {
	return workflow.DispatchIdentity(k.RunID, k.NodeID, k.ActivationID, attempt)
}

func attemptKey(k workflow.ActivationKey, n uint32) workflow.AttemptKey {
	return workflow.AttemptKey{ActivationKey: k, Attempt: n}
}

func getAttempt(e *Env, s *workflow.Store, k workflow.ActivationKey, n uint32) workflow.Attempt {
	e.T.Helper()
	a, err := s.GetAttempt(e.Ctx, identity(k, n))
	require.NoError(e.T, err, "attempt %d of %v", n, k)
	return a
}

func getAct(e *Env, s *workflow.Store, k workflow.ActivationKey) workflow.Activation {
	e.T.Helper()
	a, err := s.GetActivation(e.Ctx, k)
	require.NoError(e.T, err)
	return a
}

func getRun(e *Env, s *workflow.Store, id string) workflow.Run {
	e.T.Helper()
	r, err := s.GetRun(e.Ctx, id)
	require.NoError(e.T, err)
	return r
}

// attemptsOf returns every attempt of a run (any status).
func attemptsOf(e *Env, s *workflow.Store, runID string) []workflow.Attempt {
	e.T.Helper()
	var out []workflow.Attempt
	p := workflow.AttemptPage{RunID: runID, Limit: workflow.MaxPageLimit}
	for {
		page, err := s.Attempts(e.Ctx, p)
		require.NoError(e.T, err)
		out = append(out, page...)
		if len(page) < p.Limit {
			return out
		}
		p.After = &page[len(page)-1]
	}
}

// eventTypes returns the run's event types in order.
func eventTypes(e *Env, s *workflow.Store, runID string) []string {
	e.T.Helper()
	evs, err := s.Events(e.Ctx, runID, 0, workflow.MaxPageLimit)
	require.NoError(e.T, err)
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = string(ev.Type)
	}
	return out
}

func countType(types []string, typ string) int {
	n := 0
	for _, t := range types {
		if t == typ {
			n++
		}
	}
	return n
}

// digest is a comparable rendering of every durable record of the named
// runs, read in one snapshot: "state unchanged" means equal digests.
func digest(e *Env, runIDs ...string) string {
	e.T.Helper()
	var out string
	err := e.B.View(e.Ctx, func(r backend.ReadTx) error {
		for _, id := range runIDs {
			f, err := r.Load(e.Ctx, backend.Lookup{Runs: []string{id}, Links: []string{id}})
			if err != nil {
				return err
			}
			out += fmt.Sprintf("run %q: %s link %s\n", id, render(f.Runs[id]), render(f.Links[id]))
			acts, err := r.Activations(e.Ctx, backend.ActivationQuery{RunID: id, Limit: 100000})
			if err != nil {
				return err
			}
			for _, a := range acts {
				out += fmt.Sprintf("  act %s\n", render(a))
				g, err := r.Load(e.Ctx, backend.Lookup{Groups: []backend.ActivationKey{a.Key}, Schedules: []backend.ActivationKey{a.Key}})
				if err != nil {
					return err
				}
				if v, ok := g.Groups[a.Key]; ok {
					out += fmt.Sprintf("  group %s\n", render(v))
				}
				if v, ok := g.Schedules[a.Key]; ok {
					out += fmt.Sprintf("  schedule %s\n", render(v))
				}
			}
			atts, err := r.Attempts(e.Ctx, backend.AttemptQuery{RunID: id, Limit: 100000})
			if err != nil {
				return err
			}
			for _, a := range atts {
				out += fmt.Sprintf("  attempt %s\n", render(a))
			}
			evs, err := r.Events(e.Ctx, backend.EventQuery{RunID: id, Limit: 100000})
			if err != nil {
				return err
			}
			for _, ev := range evs {
				out += fmt.Sprintf("  event %d %s %s\n", ev.Seq, ev.Type, ev.Payload)
			}
			ls, err := r.Leases(e.Ctx, backend.LeaseQuery{RunID: id, Limit: 100000})
			if err != nil {
				return err
			}
			for _, l := range ls {
				out += fmt.Sprintf("  lease %s\n", render(l))
			}
			ss, err := r.DueSchedules(e.Ctx, backend.ScheduleQuery{RunID: id, DueBy: math.MaxInt64, Limit: 100000})
			if err != nil {
				return err
			}
			for _, sc := range ss {
				out += fmt.Sprintf("  due %s\n", render(sc))
			}
		}
		return nil
	})
	require.NoError(e.T, err)
	return out
}

// requireIs fails unless err matches target with errors.Is.
func requireIs(t testing.TB, err, target error, msgAndArgs ...any) {
	t.Helper()
	require.Error(t, err, msgAndArgs...)
	require.Truef(t, errors.Is(err, target), "error %q does not match %q", err, target)
}

var errInjected = errors.New("conformance: injected failure")

// render shows a record with its pointers followed (JSON).
func render(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%+v", v)
	}
	return string(b)
}
