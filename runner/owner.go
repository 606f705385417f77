package runner

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/wfstore/wfstore/workflow"
)

// shim wraps the user's owner: it times every call, remembers the
// attempts handed to the owner until their admission is seen, and plans
// nothing once the runner is stopping, so that no new attempt starts
// during the drain.
type shim struct {
	owner    workflow.Owner
	clock    Clock
	in       *instruments
	spans    *attemptSpans // nil without a tracer provider
	stopping *atomic.Bool

	mu       sync.Mutex
	inFlight map[string]workflow.AttemptRef
	// planned holds the attempts a Plan answered for, by the identity
	// the Store prepares next, until a dispatch pass accounts for them
	// (see takePlanned).
	planned map[string]workflow.AttemptRef
	// answers holds, for attempts in inFlight, what the owner's call
	// returned once it returned: the receipt or the error.
	answers map[string]answer
}

// answer is what one owner call returned.
type answer struct {
	receipt json.RawMessage
	err     error
}

// timed runs one owner call f in its span, with attrs (see traced).
func (s *shim) timed(ctx context.Context, call string, f func(), attrs ...attribute.KeyValue) {
	s.traced(ctx, call, attrs, func(context.Context) error { f(); return nil })
}

// traced runs one owner call f in its span (SpanOwnerCall, with the call
// and attrs, naming the attempt it is about, and opts), passing f the
// context that carries the span, records its latency, and the error f
// returns on the span.
func (s *shim) traced(ctx context.Context, call string, attrs []attribute.KeyValue, f func(context.Context) error, opts ...trace.SpanStartOption) {
	opts = append(opts, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(append([]attribute.KeyValue{attribute.String("call", call)}, attrs...)...))
	ctx, span := s.in.tracer.Start(ctx, SpanOwnerCall, opts...)
	start := s.clock.Now()
	err := f(ctx)
	s.in.ownerCall.Record(ctx, s.clock.Now().Sub(start).Seconds(), callAttr(call))
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

func (s *shim) Plan(ctx context.Context, a workflow.Activation) (p *workflow.Plan, err error) {
	if s.stopping.Load() {
		return nil, nil
	}
	// The Store prepares the activation's next attempt.
	next := workflow.AttemptKey{ActivationKey: a.Key, Attempt: a.LastAttempt + 1}
	id := next.Identity()
	actx := s.spans.begin(ctx, next, id)
	s.traced(actx, "plan", attemptAttrs(next, id), func(ctx context.Context) error { p, err = s.owner.Plan(ctx, a); return err })
	switch {
	case err != nil:
		s.spans.end(id, OutcomeOwnerFailed, err)
	case p == nil:
		s.spans.end(id, OutcomeUnsupported, nil)
	default:
		s.spans.step(id, SpanAttemptPrepare)
		s.mu.Lock()
		s.planned[id] = workflow.AttemptRef{Key: next, Identity: id}
		s.mu.Unlock()
	}
	return p, err
}

// takePlanned returns and forgets the attempts planned since the last
// call that were never handed to the owner.
func (s *shim) takePlanned() []workflow.AttemptRef {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]workflow.AttemptRef, 0, len(s.planned))
	for id, r := range s.planned {
		if _, handed := s.inFlight[id]; !handed {
			out = append(out, r)
		}
		delete(s.planned, id)
	}
	return out
}

// answered records what the owner's call for identity returned.
func (s *shim) answered(identity string, rc json.RawMessage, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.inFlight[identity]; ok {
		s.answers[identity] = answer{receipt: rc, err: err}
	}
}

// answerOf reports what the owner's call for identity returned: ok is
// false while the call runs or when this runner never made it.
func (s *shim) answerOf(identity string) (a answer, handed, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, handed = s.inFlight[identity]
	a, ok = s.answers[identity]
	return a, handed, ok
}

// returned lists the attempts whose owner call returned with a receipt
// and whose admission this runner has not seen.
func (s *shim) returned() []workflow.AttemptRef {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []workflow.AttemptRef
	for id, a := range s.answers {
		if a.err == nil && len(a.receipt) > 0 {
			out = append(out, s.inFlight[id])
		}
	}
	return out
}

func (s *shim) handed(ps ...workflow.PreparedDispatch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range ps {
		s.inFlight[p.Identity] = workflow.AttemptRef{Key: p.Key(), Identity: p.Identity}
	}
}

// admitted forgets attempts whose receipt is committed.
func (s *shim) admitted(refs []workflow.AttemptRef) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range refs {
		delete(s.inFlight, r.Identity)
		delete(s.answers, r.Identity)
	}
}

// unresolved returns the attempts handed to the owner whose admission
// this runner did not see.
func (s *shim) unresolved() []workflow.AttemptRef {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]workflow.AttemptRef, 0, len(s.inFlight))
	for _, r := range s.inFlight {
		out = append(out, r)
	}
	return out
}

func (s *shim) Dispatch(ctx context.Context, p workflow.PreparedDispatch) (rc json.RawMessage, err error) {
	s.handed(p)
	actx := s.spans.context(ctx, p.Key(), p.Identity)
	s.spans.step(p.Identity, "") // the handoff is recorded
	s.traced(actx, "dispatch", attemptAttrs(p.Key(), p.Identity), func(ctx context.Context) error { rc, err = s.owner.Dispatch(ctx, p); return err })
	s.spans.ownerFailed(p.Identity, err)
	s.answered(p.Identity, rc, err)
	return rc, err
}

// batchShim is the shim of a workflow.BatchOwner.
type batchShim struct {
	*shim
	batch workflow.BatchOwner
}

func (s batchShim) DispatchBatch(ctx context.Context, ps []workflow.PreparedDispatch) (rs []workflow.DispatchResult, err error) {
	s.handed(ps...)
	ids := make([]string, len(ps))
	var links []trace.Link
	for i, p := range ps {
		ids[i] = p.Identity
		if sc := trace.SpanContextFromContext(s.spans.context(ctx, p.Key(), p.Identity)); sc.IsValid() {
			links = append(links, trace.Link{SpanContext: sc})
		}
		s.spans.step(p.Identity, "") // the handoff is recorded
	}
	// The one call for the whole batch stays in the pass; it and each
	// attempt's span link to each other.
	s.traced(ctx, "dispatch_batch", []attribute.KeyValue{attribute.StringSlice("identities", ids), attribute.Int("attempts", len(ps))},
		func(ctx context.Context) error {
			for _, id := range ids {
				s.spans.link(id, trace.SpanContextFromContext(ctx))
			}
			rs, err = s.batch.DispatchBatch(ctx, ps)
			return err
		}, trace.WithLinks(links...))
	for i, p := range ps {
		switch {
		case err != nil:
			s.spans.ownerFailed(p.Identity, err)
			s.answered(p.Identity, nil, err)
		case i < len(rs):
			s.spans.ownerFailed(p.Identity, rs[i].Err)
			s.answered(p.Identity, rs[i].Receipt, rs[i].Err)
		}
	}
	return rs, err
}

// wrap returns the owner the runner passes to the Store.
func (s *shim) wrap() workflow.Owner {
	if b, ok := s.owner.(workflow.BatchOwner); ok {
		return batchShim{shim: s, batch: b}
	}
	return s
}

type timedLookup struct {
	s *shim
	l workflow.ReceiptLookup
}

func (t timedLookup) LookupReceipt(ctx context.Context, identity string) (rc json.RawMessage, found bool, err error) {
	t.s.traced(ctx, "lookup", []attribute.KeyValue{attribute.String("identity", identity)},
		func(ctx context.Context) error { rc, found, err = t.l.LookupReceipt(ctx, identity); return err })
	return rc, found, err
}

type timedObserver struct {
	s *shim
	o workflow.Observer
}

func (t timedObserver) Observe(ctx context.Context, a workflow.Attempt) (obs workflow.Observation, err error) {
	t.s.traced(ctx, "observe", attemptAttrs(a.Key, a.Identity), func(ctx context.Context) error { obs, err = t.o.Observe(ctx, a); return err })
	return obs, err
}
