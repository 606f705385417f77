package workflow

import (
	"context"
	"encoding/json"
	"time"

	"github.com/wfstore/wfstore/internal/faultseam"
)

// Plan is an owner's plan for one activation: the side effect of the work
// and the intent the attempt commits before the owner is called.
type Plan struct {
	SideEffect Effect
	Intent     json.RawMessage
}

// Owner does the work. The Store calls it outside any transaction.
type Owner interface {
	// Plan returns the plan for a pending activation, or nil when this
	// owner does not handle it (the activation stays pending and is listed
	// as unsupported).
	Plan(ctx context.Context, a Activation) (*Plan, error)
	// Dispatch asks the owner to accept the prepared attempt. It must be
	// idempotent on p.Identity and return only after the owner durably
	// admitted the work, with a receipt (JSON) proving it.
	Dispatch(ctx context.Context, p PreparedDispatch) (json.RawMessage, error)
}

// BatchOwner is an Owner that accepts a whole batch of prepared attempts
// in one call, for example by enqueueing them into its own database in
// one write. A Dispatch in batch mode calls DispatchBatch instead of
// Dispatch, once per batch, with every attempt already handed off.
type BatchOwner interface {
	Owner
	// DispatchBatch asks the owner to accept every prepared attempt of ps
	// and returns one result per attempt, in the order of ps. Like
	// Dispatch it must be idempotent on each Identity and report a receipt
	// only for work it durably admitted. A non-nil error fails every
	// attempt of the call (each stays handed off, for recovery).
	DispatchBatch(ctx context.Context, ps []PreparedDispatch) ([]DispatchResult, error)
}

// DispatchResult is the owner's answer for one attempt of a batch: a
// receipt (JSON) proving durable admission, or the error that refused it.
type DispatchResult struct {
	Receipt json.RawMessage
	Err     error
}

// ReceiptLookup is an owner's "receipt status" contract: it
// answers, by dispatch identity, whether the owner holds a receipt.
type ReceiptLookup interface {
	LookupReceipt(ctx context.Context, identity string) (receipt json.RawMessage, found bool, err error)
}

// faultHook is the test seam's hook (internal/faultseam): Dispatch reads
// it from its context, so no public option carries it.
type faultHook = faultseam.Hook[PreparedDispatch]

// PreparedDispatch is a committed attempt intent: what the owner is asked
// to do, under which idempotency key (Identity).
type PreparedDispatch struct {
	Activation Activation
	Attempt    uint32
	Identity   string
	SideEffect Effect
	Intent     json.RawMessage // canonical
	PreparedAt time.Time
}

// Key returns the attempt key.
func (p PreparedDispatch) Key() AttemptKey {
	return AttemptKey{ActivationKey: p.Activation.Key, Attempt: p.Attempt}
}
