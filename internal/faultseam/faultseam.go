// Package faultseam is the module's test seam into an admission: a hook
// that Store.Dispatch calls at each durable boundary of each admission,
// carried on the context so that no public option exposes it. A non-nil
// error from the hook stops the pass there, as a crash at that boundary
// would (the crash proofs, the conformance suite and the runner's tests
// use it). The runner also uses it, with a hook that returns nil, to time
// each attempt's steps for its spans. Being internal, it is reachable from
// this module only.
package faultseam

import "context"

// Boundary is a durable boundary of one admission, in commit order.
type Boundary uint8

// Admission boundaries.
const (
	// IntentCommitted: the prepare transaction committed (before handoff).
	IntentCommitted Boundary = iota + 1
	// OwnerAccepted: the owner returned a receipt (before it is persisted).
	OwnerAccepted
	// ReceiptCommitted: the receipt transaction committed.
	ReceiptCommitted
)

// String returns the boundary's name as error messages print it.
func (b Boundary) String() string {
	switch b {
	case IntentCommitted:
		return "intent_committed"
	case OwnerAccepted:
		return "owner_accepted"
	case ReceiptCommitted:
		return "receipt_committed"
	}
	return "unknown_boundary"
}

// Hook is called at each boundary of each admission with the prepared
// dispatch P (workflow.PreparedDispatch).
type Hook[P any] func(ctx context.Context, b Boundary, p P) error

type key struct{}

// With returns ctx carrying h; a nil h returns ctx unchanged.
func With[P any](ctx context.Context, h func(context.Context, Boundary, P) error) context.Context {
	if h == nil {
		return ctx
	}
	return context.WithValue(ctx, key{}, Hook[P](h))
}

// From returns the hook ctx carries for prepared dispatches of type P, or
// nil when it carries none.
func From[P any](ctx context.Context) Hook[P] {
	h, _ := ctx.Value(key{}).(Hook[P])
	return h
}
