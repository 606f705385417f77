package conformance

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/wfstore/wfstore/conformance/internal/model"
	"github.com/wfstore/wfstore/internal/faultseam"
	"github.com/wfstore/wfstore/workflow"
)

// The owners the model tier calls: one for dispatch, one for the
// receipt-backed pass.

// modelOwner is the owner the model tier dispatches to; it behaves as
// mode says and remembers what it was called with and holds.
type modelOwner struct {
	mu    sync.Mutex
	mode  model.OwnerMode
	calls map[string]int
	held  map[string]bool
}

func newModelOwner() *modelOwner {
	return &modelOwner{calls: map[string]int{}, held: map[string]bool{}}
}

func (o *modelOwner) state(identity string) (int, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.calls[identity], o.held[identity]
}

func (o *modelOwner) Plan(ctx context.Context, a workflow.Activation) (*workflow.Plan, error) {
	switch o.mode {
	case model.OwnerUnsupported:
		return nil, nil
	case model.OwnerPlanError:
		return nil, errInjected
	}
	return &workflow.Plan{SideEffect: a.Effect, Intent: json.RawMessage(`{"do":"` + a.Key.NodeID + `"}`)}, nil
}

func (o *modelOwner) Dispatch(ctx context.Context, p workflow.PreparedDispatch) (json.RawMessage, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls[p.Identity]++
	if o.mode == model.OwnerDispatchError {
		return nil, errInjected
	}
	o.held[p.Identity] = true
	return ownerReceipt(p.Identity), nil
}

func (o *modelOwner) LookupReceipt(ctx context.Context, identity string) (json.RawMessage, bool, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.held[identity] {
		return ownerReceipt(identity), true, nil
	}
	return nil, false, nil
}

func (o *modelOwner) fault(ctx context.Context, b faultseam.Boundary, p workflow.PreparedDispatch) error {
	switch {
	case o.mode == model.FaultIntent && b == faultseam.IntentCommitted,
		o.mode == model.FaultAccepted && b == faultseam.OwnerAccepted,
		o.mode == model.FaultReceipt && b == faultseam.ReceiptCommitted:
		return errInjected
	}
	return nil
}

// batchOwner presents the model owner as a BatchOwner: one call per
// batch, one result per attempt.
type batchOwner struct{ *modelOwner }

func (o batchOwner) DispatchBatch(ctx context.Context, ps []workflow.PreparedDispatch) ([]workflow.DispatchResult, error) {
	out := make([]workflow.DispatchResult, len(ps))
	for i, p := range ps {
		out[i].Receipt, out[i].Err = o.Dispatch(ctx, p)
	}
	return out, nil
}

func ownerReceipt(identity string) json.RawMessage {
	return json.RawMessage(`{"accepted":"` + identity + `"}`)
}

// passObserver answers every attempt of one receipt-backed pass the same
// way, or fails.
type passObserver struct {
	kind string
	fail bool
}

func (p *passObserver) Observe(ctx context.Context, a workflow.Attempt) (workflow.Observation, error) {
	if p.fail {
		return workflow.Observation{}, errInjected
	}
	obs := workflow.Observation{Kind: workflow.ObservationKind(p.kind)}
	if p.kind == model.ObservedSucceeded {
		obs.Output = json.RawMessage(`{"out":1}`)
	}
	return obs, nil
}
