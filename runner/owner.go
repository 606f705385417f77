package runner

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"

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
	stopping *atomic.Bool

	mu       sync.Mutex
	inFlight map[string]workflow.AttemptRef
}

func (s *shim) timed(ctx context.Context, call string, f func()) {
	start := s.clock.Now()
	f()
	s.in.ownerCall.Record(ctx, s.clock.Now().Sub(start).Seconds(), callAttr(call))
}

func (s *shim) Plan(ctx context.Context, a workflow.Activation) (p *workflow.Plan, err error) {
	if s.stopping.Load() {
		return nil, nil
	}
	s.timed(ctx, "plan", func() { p, err = s.owner.Plan(ctx, a) })
	return p, err
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
	s.timed(ctx, "dispatch", func() { rc, err = s.owner.Dispatch(ctx, p) })
	return rc, err
}

// batchShim is the shim of a workflow.BatchOwner.
type batchShim struct {
	*shim
	batch workflow.BatchOwner
}

func (s batchShim) DispatchBatch(ctx context.Context, ps []workflow.PreparedDispatch) (rs []workflow.DispatchResult, err error) {
	s.handed(ps...)
	s.timed(ctx, "dispatch_batch", func() { rs, err = s.batch.DispatchBatch(ctx, ps) })
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
	t.s.timed(ctx, "lookup", func() { rc, found, err = t.l.LookupReceipt(ctx, identity) })
	return rc, found, err
}

type timedObserver struct {
	s *shim
	o workflow.Observer
}

func (t timedObserver) Observe(ctx context.Context, a workflow.Attempt) (obs workflow.Observation, err error) {
	t.s.timed(ctx, "observe", func() { obs, err = t.o.Observe(ctx, a) })
	return obs, err
}
