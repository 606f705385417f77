package workflow

import (
	"encoding/json"
	"time"

	"github.com/wfstore/wfstore/backend"
)

// This file converts between the public views and the backend records the
// Store works on. It is the only place that does.

func keyOut(k backend.ActivationKey) ActivationKey { return ActivationKey(k) }
func keyIn(k ActivationKey) backend.ActivationKey  { return backend.ActivationKey(k) }

func attemptKeyOut(k backend.AttemptKey) AttemptKey {
	return AttemptKey{ActivationKey: keyOut(k.ActivationKey), Attempt: k.Attempt}
}

// attemptRef names a stored attempt by key and identity.
func attemptRef(a backend.Attempt) AttemptRef {
	return AttemptRef{Key: attemptKeyOut(a.Key), Identity: a.Identity}
}

func attemptKeyIn(k AttemptKey) backend.AttemptKey {
	return backend.AttemptKey{ActivationKey: keyIn(k.ActivationKey), Attempt: k.Attempt}
}

func authorityIn(a *Authority) *backend.Authority {
	if a == nil {
		return nil
	}
	b := backend.Authority(*a)
	return &b
}

func authorityOut(a *backend.Authority) *Authority {
	if a == nil {
		return nil
	}
	p := Authority(*a)
	return &p
}

func claimsIn(cs []ResourceClaim) []backend.ResourceClaim {
	if cs == nil {
		return nil
	}
	out := make([]backend.ResourceClaim, len(cs))
	for i, c := range cs {
		out[i] = backend.ResourceClaim{Resource: c.Resource, Mode: backend.LeaseMode(c.Mode)}
	}
	return out
}

func claimsOut(cs []backend.ResourceClaim) []ResourceClaim {
	if cs == nil {
		return nil
	}
	out := make([]ResourceClaim, len(cs))
	for i, c := range cs {
		out[i] = ResourceClaim{Resource: c.Resource, Mode: LeaseMode(c.Mode)}
	}
	return out
}

func nodeRefsIn(rs []NodeRef) []backend.NodeRef {
	if rs == nil {
		return nil
	}
	out := make([]backend.NodeRef, len(rs))
	for i, r := range rs {
		out[i] = backend.NodeRef(r)
	}
	return out
}

func nodeRefsOut(rs []backend.NodeRef) []NodeRef {
	if rs == nil {
		return nil
	}
	out := make([]NodeRef, len(rs))
	for i, r := range rs {
		out[i] = NodeRef(r)
	}
	return out
}

func rawOut(b []byte) json.RawMessage {
	if b == nil {
		return nil
	}
	return json.RawMessage(b)
}

func msToDuration(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }

func toRun(r backend.Run) Run {
	return Run{
		ID: r.ID, RootID: r.RootID, ParentID: r.ParentID, Depth: int(r.Depth),
		Status: RunStatus(r.Status), Limits: Limits(r.Limits),
		Deadline: fromMS(r.DeadlineMS), CancelRequestedAt: fromMS(r.CancelRequestedMS),
		Authority: authorityOut(r.Authority), Metadata: rawOut(r.Metadata),
		CreatedAt: fromMS(r.CreatedMS), UpdatedAt: fromMS(r.UpdatedMS),
		LastEventSeq: r.LastEventSeq, AttemptCount: r.AttemptCount, ActiveCount: r.ActiveCount,
		TreeAttemptCount: r.TreeAttemptCount, DescendantCount: r.DescendantCount,
		AllowanceExhausted: r.ExhaustionRecorded,
	}
}

func toActivation(a backend.Activation) Activation {
	out := Activation{
		Key: keyOut(a.Key), Generation: a.Generation, Status: ActivationStatus(a.Status),
		Input: rawOut(a.Input), Output: rawOut(a.Output), Claims: claimsOut(a.Claims),
		Effect: Effect(a.Effect), Reconciliation: Reconciliation(a.Reconciliation),
		RetryPolicy: rawOut(a.RetryPolicy), Predecessors: nodeRefsOut(a.Predecessors),
		LastAttempt: a.LastAttempt, CreatedAt: fromMS(a.CreatedMS), UpdatedAt: fromMS(a.UpdatedMS),
		AttemptTimeout: msToDuration(a.AttemptTimeoutMS),
		Admissible:     a.Admissible, HasSuccessors: a.HasSuccessors,
		WaitFor: nodeRefsOut(a.WaitFor), OpenWaits: a.OpenWaits, Joins: nodeRefsOut(a.Joins),
	}
	if a.Group != nil {
		out.FanOut = &FanOutMember{Controller: keyOut(a.Group.Controller), Index: a.Group.Index}
	}
	return out
}

func toAttempt(a backend.Attempt) Attempt {
	return Attempt{
		Key: attemptKeyOut(a.Key), Identity: a.Identity, Status: AttemptStatus(a.Status),
		SideEffect: Effect(a.SideEffect), Intent: rawOut(a.Intent), IntentChecksum: a.IntentChecksum,
		Receipt: rawOut(a.Receipt), Handoff: Handoff(a.Handoff), HandoffToken: a.HandoffToken,
		Detail: rawOut(a.Detail), PreparedAt: fromMS(a.PreparedMS), AdmittedAt: fromMS(a.AdmittedMS), TerminalAt: fromMS(a.TerminalMS),
	}
}

func toAttempts(as []backend.Attempt) []Attempt {
	out := make([]Attempt, len(as))
	for i, a := range as {
		out[i] = toAttempt(a)
	}
	return out
}

func toLease(l backend.Lease) Lease {
	return Lease{
		Key:        LeaseKey{AttemptKey: attemptKeyOut(l.Key.AttemptKey), Resource: l.Key.Resource, Mode: LeaseMode(l.Key.Mode)},
		AcquiredAt: fromMS(l.AcquiredMS), ReleasedAt: fromMS(l.ReleasedMS),
	}
}

func toLeases(ls []backend.Lease) []Lease {
	out := make([]Lease, len(ls))
	for i, l := range ls {
		out[i] = toLease(l)
	}
	return out
}

func toSchedule(s backend.RetrySchedule) RetrySchedule {
	return RetrySchedule{
		Key: keyOut(s.Key), FailedAttempt: s.FailedAttempt, NextAttempt: s.NextAttempt,
		FailureKind: FailureKind(s.FailureKind), Backoff: msToDuration(s.BackoffMS),
		Due: fromMS(s.DueMS), ScheduledAt: fromMS(s.ScheduledMS),
	}
}

func toSchedulePtr(s *backend.RetrySchedule) *RetrySchedule {
	if s == nil {
		return nil
	}
	out := toSchedule(*s)
	return &out
}

func toEvent(e backend.Event) Event {
	return Event{RunID: e.RunID, Seq: e.Seq, Type: EventType(e.Type), Payload: rawOut(e.Payload), CreatedAt: fromMS(e.CreatedMS)}
}

func toEvents(es []backend.Event) []Event {
	out := make([]Event, len(es))
	for i, e := range es {
		out[i] = toEvent(e)
	}
	return out
}

// key returns the prepared attempt's key as the backend names it.
func (p PreparedDispatch) key() backend.AttemptKey { return attemptKeyIn(p.Key()) }
