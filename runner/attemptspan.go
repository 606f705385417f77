package runner

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/wfstore/wfstore/internal/faultseam"
	"github.com/wfstore/wfstore/workflow"
)

// Attempt spans. Every attempt the runner plans or hands to its owner is
// the root span of a trace of its own, SpanAttempt, linked both ways with
// the pass that admitted it (a pass links to its attempts rather than
// parenting them). Its children are its steps, in order: the plan call
// (SpanOwnerCall), SpanAttemptPrepare (from the plan's return to the
// commit of the attempt's intent), SpanAttemptHandoff (to the recorded
// handoff, when the owner is called), the dispatch call (SpanOwnerCall;
// a BatchOwner's one call for the batch is linked with each attempt
// instead) and SpanAttemptReceipt (from the owner's answer to the
// receipt's commit). The owner's own spans started from the context of
// its Dispatch call join the attempt's trace.
const (
	SpanAttempt        = "wfstore.runner.attempt"         // run, node, activation, attempt, identity, outcome
	SpanAttemptPrepare = "wfstore.runner.attempt.prepare" //
	SpanAttemptHandoff = "wfstore.runner.attempt.handoff" //
	SpanAttemptReceipt = "wfstore.runner.attempt.receipt" //
)

// Attempt outcomes that only the "outcome" attribute of SpanAttempt
// takes; the others are the admission outcomes (OutcomeAdmitted, ...).
const (
	// OutcomeUnoffered: prepared and never offered to the owner (a
	// stopped batch); redispatched by identity later.
	OutcomeUnoffered = "unoffered"
	// OutcomeStale: the execution authority changed under the attempt.
	OutcomeStale = "stale"
	// OutcomeInterrupted: the pass stopped before the attempt's receipt
	// committed (a storage error, a lost commit answer, shutdown); the
	// runner finishes it later from what the store says.
	OutcomeInterrupted = "interrupted"
)

// attemptSpans holds the spans of the attempts in flight in a pass, by
// identity. A nil *attemptSpans (no tracer provider) does nothing.
type attemptSpans struct {
	tracer trace.Tracer

	mu   sync.Mutex
	open map[string]*attemptSpan
}

// attemptSpan is one attempt's span and the step span it is in.
type attemptSpan struct {
	span     trace.Span
	key      workflow.ActivationKey
	step     trace.Span
	ownerErr error
}

func newAttemptSpans(tp trace.TracerProvider) *attemptSpans {
	if tp == nil {
		return nil
	}
	return &attemptSpans{tracer: tp.Tracer(instrumentationName), open: map[string]*attemptSpan{}}
}

// begin starts the span of attempt k (identity), linked both ways with
// the pass span ctx carries, and returns ctx carrying it.
func (as *attemptSpans) begin(ctx context.Context, k workflow.AttemptKey, identity string) context.Context {
	if as == nil {
		return ctx
	}
	pass := trace.SpanFromContext(ctx)
	opts := []trace.SpanStartOption{trace.WithNewRoot(), trace.WithAttributes(attemptAttrs(k, identity)...)}
	if pass.SpanContext().IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: pass.SpanContext()}))
	}
	ctx, span := as.tracer.Start(ctx, SpanAttempt, opts...)
	pass.AddLink(trace.Link{SpanContext: span.SpanContext()})
	as.mu.Lock()
	defer as.mu.Unlock()
	if old, ok := as.open[identity]; ok {
		old.end(OutcomeInterrupted, nil)
	}
	as.open[identity] = &attemptSpan{span: span, key: k.ActivationKey}
	return ctx
}

// context returns ctx carrying the span of identity, begun now when the
// owner is handed an attempt this runner did not plan in this pass (a
// redispatch).
func (as *attemptSpans) context(ctx context.Context, k workflow.AttemptKey, identity string) context.Context {
	if as == nil {
		return ctx
	}
	as.mu.Lock()
	a, ok := as.open[identity]
	as.mu.Unlock()
	if !ok {
		return as.begin(ctx, k, identity)
	}
	return trace.ContextWithSpan(ctx, a.span)
}

// step ends the step identity is in and starts the named one ("" starts
// none).
func (as *attemptSpans) step(identity, name string) {
	if as == nil {
		return
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	a, ok := as.open[identity]
	if !ok {
		return
	}
	if a.step != nil {
		a.step.End()
		a.step = nil
	}
	if name != "" {
		_, a.step = as.tracer.Start(trace.ContextWithSpan(context.Background(), a.span), name)
	}
}

// link links the span of identity to sc.
func (as *attemptSpans) link(identity string, sc trace.SpanContext) {
	if as == nil {
		return
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	if a, ok := as.open[identity]; ok {
		a.span.AddLink(trace.Link{SpanContext: sc})
	}
}

// ownerFailed records that the owner's call for identity failed with err.
func (as *attemptSpans) ownerFailed(identity string, err error) {
	if as == nil || err == nil {
		return
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	if a, ok := as.open[identity]; ok {
		a.ownerErr = err
	}
}

// end ends the span of identity with outcome (an error status when err is
// not nil).
func (as *attemptSpans) end(identity, outcome string, err error) {
	if as == nil {
		return
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	if a, ok := as.open[identity]; ok {
		a.end(outcome, err)
		delete(as.open, identity)
	}
}

// admitted ends the spans of refs as admitted.
func (as *attemptSpans) admitted(refs []workflow.AttemptRef) {
	for _, r := range refs {
		as.end(r.Identity, OutcomeAdmitted, nil)
	}
}

// finish ends every open span after a Dispatch that returned sum and err,
// each with the outcome the summary gives its attempt or activation; an
// attempt the summary does not name ends owner_failed when its owner call
// failed, else interrupted (an error status when err is not nil).
func (as *attemptSpans) finish(sum workflow.DispatchSummary, err error) {
	if as == nil {
		return
	}
	as.admitted(sum.Admitted)
	for _, of := range sum.OwnerFailed {
		as.end(of.Attempt.Identity, OutcomeOwnerFailed, of.Err)
	}
	for _, u := range sum.Unoffered {
		as.end(u.Identity, OutcomeUnoffered, nil)
	}
	byActivation := map[workflow.ActivationKey]string{}
	for _, c := range []struct {
		o    string
		keys []workflow.ActivationKey
	}{{OutcomeRaced, sum.Raced}, {OutcomeExhausted, sum.Exhausted}, {OutcomeStale, sum.Stale}} {
		for _, k := range c.keys {
			byActivation[k] = c.o
		}
	}
	for _, rj := range sum.Rejected {
		byActivation[rj.Key] = OutcomeRejected
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	for id, a := range as.open {
		switch o, ok := byActivation[a.key]; {
		case ok && o == OutcomeStale:
			a.end(o, err)
		case ok:
			a.end(o, nil)
		case a.ownerErr != nil:
			a.end(OutcomeOwnerFailed, a.ownerErr)
		default:
			a.end(OutcomeInterrupted, err)
		}
		delete(as.open, id)
	}
}

// end ends the step and the attempt's span.
func (a *attemptSpan) end(outcome string, err error) {
	if a.step != nil {
		a.step.End()
	}
	a.span.SetAttributes(attribute.String("outcome", outcome))
	if err == nil && outcome == OutcomeOwnerFailed {
		err = a.ownerErr
	}
	if err != nil {
		a.span.RecordError(err)
		a.span.SetStatus(codes.Error, err.Error())
	}
	a.span.End()
}

// boundary is the faultseam hook of the runner's dispatch passes: it moves
// the attempt's span to its next step at each durable boundary, then runs
// the configured fault hook, if any.
func (r *Runner) boundary(ctx context.Context, b faultseam.Boundary, p workflow.PreparedDispatch) error {
	as := r.shim.spans
	switch b {
	case faultseam.IntentCommitted:
		as.step(p.Identity, SpanAttemptHandoff)
	case faultseam.OwnerAccepted:
		as.step(p.Identity, SpanAttemptReceipt)
	case faultseam.ReceiptCommitted:
		as.end(p.Identity, OutcomeAdmitted, nil)
	}
	if r.cfg.fault != nil {
		return r.cfg.fault(ctx, b, p)
	}
	return nil
}

// dispatchHook is the faultseam hook dispatch passes run with: boundary
// when there are attempt spans, else the configured one.
func (r *Runner) dispatchHook() faultseam.Hook[workflow.PreparedDispatch] {
	if r.shim.spans == nil {
		return r.cfg.fault
	}
	return r.boundary
}
