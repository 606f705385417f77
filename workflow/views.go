package workflow

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/event"
)

// This file converts the backend records the Store works on into the public
// views it returns. It is the only place that does. Keys, statuses and the
// other wftype values need no conversion; slices and the authority are
// copied, so a view shares no memory with a record.

// attemptRef names a stored attempt by key and identity.
func attemptRef(a backend.Attempt) AttemptRef {
	return AttemptRef{Key: a.Key, Identity: a.Identity}
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
		Status: r.Status, Limits: r.Limits,
		Deadline: fromMS(r.DeadlineMS), CancelRequestedAt: fromMS(r.CancelRequestedMS),
		Authority: copyAuthority(r.Authority), Metadata: rawOut(r.Metadata),
		CreatedAt: fromMS(r.CreatedMS), UpdatedAt: fromMS(r.UpdatedMS),
		LastEventSeq: r.LastEventSeq, AttemptCount: r.AttemptCount, ActiveCount: r.ActiveCount,
		TreeAttemptCount: r.TreeAttemptCount, DescendantCount: r.DescendantCount,
		AllowanceExhausted: r.ExhaustionRecorded,
	}
}

func toActivation(a backend.Activation) Activation {
	out := Activation{
		Key: a.Key, Generation: a.Generation, Status: a.Status,
		Input: rawOut(a.Input), Output: rawOut(a.Output), Claims: slices.Clone(a.Claims),
		Effect: a.Effect, Reconciliation: a.Reconciliation,
		RetryPolicy: rawOut(a.RetryPolicy), Predecessors: slices.Clone(a.Predecessors),
		LastAttempt: a.LastAttempt, CreatedAt: fromMS(a.CreatedMS), UpdatedAt: fromMS(a.UpdatedMS),
		AttemptTimeout: msToDuration(a.AttemptTimeoutMS),
		Admissible:     a.Admissible, HasSuccessors: a.HasSuccessors,
		WaitFor: slices.Clone(a.WaitFor), OpenWaits: a.OpenWaits, Joins: slices.Clone(a.Joins),
	}
	if a.Group != nil {
		out.FanOut = &FanOutMember{Controller: a.Group.Controller, Index: a.Group.Index}
	}
	return out
}

func toAttempt(a backend.Attempt) Attempt {
	return Attempt{
		Key: a.Key, Identity: a.Identity, Status: a.Status,
		SideEffect: a.SideEffect, Intent: rawOut(a.Intent), IntentChecksum: a.IntentChecksum,
		Receipt: rawOut(a.Receipt), Handoff: a.Handoff, HandoffToken: a.HandoffToken,
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
		Key:        l.Key,
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
		Key: s.Key, FailedAttempt: s.FailedAttempt, NextAttempt: s.NextAttempt,
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

func toEvent(e backend.Event) event.Event {
	return event.Event{RunID: e.RunID, Seq: e.Seq, Type: event.Type(e.Type), Payload: rawOut(e.Payload), CreatedAt: fromMS(e.CreatedMS)}
}

func toEvents(es []backend.Event) []event.Event {
	out := make([]event.Event, len(es))
	for i, e := range es {
		out[i] = toEvent(e)
	}
	return out
}
