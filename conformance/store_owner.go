package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/workflow"
)

// The recording owner and the helpers that drive the Store as a daemon
// would: dispatch passes, single-winner prepares and owner observations.

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
	intent := json.RawMessage(`{"do":` + jsonString(a.Key.ActivationID) + `}`)
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
func dispatch(e *env, s *workflow.Store, o workflow.Owner, opts workflow.DispatchOptions, at time.Time) workflow.DispatchSummary {
	e.T.Helper()
	return dispatchCtx(e.Ctx, e, s, o, opts, at)
}

// dispatchCtx is dispatch under ctx (one carrying a fault hook, say).
func dispatchCtx(ctx context.Context, e *env, s *workflow.Store, o workflow.Owner, opts workflow.DispatchOptions, at time.Time) workflow.DispatchSummary {
	e.T.Helper()
	if opts.Limit == 0 {
		opts.Limit = workflow.MaxPageLimit
	}
	sum, err := s.Dispatch(ctx, o, opts, at)
	require.NoError(e.T, err)
	return sum
}

// admitOnly dispatches everything and requires exactly the identities want
// admitted, in that order.
func admitOnly(e *env, s *workflow.Store, o *owner, at time.Time, want ...string) workflow.DispatchSummary {
	e.T.Helper()
	sum := dispatch(e, s, o, workflow.DispatchOptions{}, at)
	if want == nil {
		want = []string{}
	}
	got := refIdentities(sum.Admitted)
	require.Equal(e.T, want, got, "admitted identities")
	return sum
}

// refIdentities lists the dispatch identities of refs ([]string{} when none).
func refIdentities(refs []workflow.AttemptRef) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.Identity
	}
	return out
}

// prep prepares a pending activation through the single-winner gate with an
// intent naming it; it must produce an attempt.
func prep(e *env, s *workflow.Store, k workflow.ActivationKey, effect workflow.Effect, at time.Time) *workflow.PreparedDispatch {
	e.T.Helper()
	p, err := s.Engine().PreparePending(e.Ctx, k, workflow.Plan{SideEffect: effect, Intent: json.RawMessage(`{"do":` + jsonString(k.ActivationID) + `}`)}, at)
	require.NoError(e.T, err, "prepare %v", k)
	require.NotNil(e.T, p, "prepare %v found nothing pending", k)
	return p
}

// obs builds an observation of kind k (Succeeded gets output {"ok":true}).
func obs(k workflow.ObservationKind) workflow.Observation {
	o := workflow.Observation{Kind: k}
	if k == workflow.ObservedSucceeded {
		o.Output = json.RawMessage(`{"ok":true}`)
	}
	return o
}

// observe applies an observation that must succeed.
func observe(e *env, s *workflow.Store, identity string, o workflow.Observation, at time.Time) workflow.ObservationResult {
	e.T.Helper()
	res, err := s.ApplyObservation(e.Ctx, identity, o, at)
	require.NoError(e.T, err, "observation %s of %s", o.Kind, identity)
	return res
}
