package state

import (
	"encoding/json"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/event"
	"github.com/wfstore/wfstore/wftype"
)

// The payloads of the events the Store appends, built from the records
// they are about; package event defines them.

// namesOf names the attempt k.
func namesOf(k backend.AttemptKey) event.AttemptNames {
	return event.AttemptNames{RunID: k.RunID, NodeID: k.NodeID, ActivationID: k.ActivationID, Attempt: k.Attempt}
}

// emit appends an event of p's type with p as its payload.
func (b *Batch) emit(run *backend.Run, p event.Payload, atMS int64) {
	b.event(run, string(p.Type()), p, atMS)
}

// emitDirect appends the event emit appends for p, the same bytes, but
// without boxing p when encodeDirect writes it (the payloads every
// admission appends): only a payload direct writing does not cover goes
// through emit, and canonical.Marshal.
func emitDirect[P event.Payload](b *Batch, run *backend.Run, p P, atMS int64) {
	enc, ok := encodeDirect(p)
	if !ok {
		b.emit(run, p, atMS)
		return
	}
	b.appendEvent(run, string(p.Type()), enc, atMS)
}

func schedulePayload(s backend.RetrySchedule) event.AutomaticRetryScheduledPayload {
	return event.AutomaticRetryScheduledPayload{
		RunID: s.Key.RunID, NodeID: s.Key.NodeID, ActivationID: s.Key.ActivationID,
		FailedAttempt: s.FailedAttempt, NextAttempt: s.NextAttempt, FailureKind: wftype.FailureKind(s.FailureKind),
		Backoff: event.Millis(s.BackoffMS), NextAttemptAt: event.UnixMS(s.DueMS), ScheduledAt: event.UnixMS(s.ScheduledMS),
	}
}

func discardPayload(s backend.RetrySchedule, reason string) event.AutomaticRetryDiscardedPayload {
	p := schedulePayload(s)
	return event.AutomaticRetryDiscardedPayload{
		RunID: p.RunID, NodeID: p.NodeID, ActivationID: p.ActivationID,
		FailedAttempt: p.FailedAttempt, NextAttempt: p.NextAttempt, FailureKind: p.FailureKind,
		Backoff: p.Backoff, NextAttemptAt: p.NextAttemptAt, ScheduledAt: p.ScheduledAt, Reason: reason,
	}
}

func PreparedPayload(k backend.AttemptKey, effect backend.Effect, intent []byte, at int64) event.AttemptPreparedPayload {
	return event.AttemptPreparedPayload{
		RunID: k.RunID, NodeID: k.NodeID, ActivationID: k.ActivationID, Attempt: k.Attempt,
		SideEffect: wftype.Effect(effect), Intent: json.RawMessage(intent), PreparedAt: event.UnixMS(at),
	}
}

func leasePayload(l backend.Lease) event.ResourceLeaseAcquiredPayload {
	return event.ResourceLeaseAcquiredPayload{
		RunID: l.Key.RunID, NodeID: l.Key.NodeID, ActivationID: l.Key.ActivationID, Attempt: l.Key.Attempt,
		ResourceKey: l.Key.Resource, Mode: wftype.LeaseMode(l.Key.Mode), AcquiredAt: event.UnixMS(l.AcquiredMS),
	}
}

func LimitsPayload(l backend.Limits) event.Limits { return event.Limits(l) }

func AdmittedPayload(k backend.AttemptKey, identity string, receipt []byte, at int64) event.AttemptAdmittedPayload {
	return event.AttemptAdmittedPayload{
		RunID: k.RunID, NodeID: k.NodeID, ActivationID: k.ActivationID, Attempt: k.Attempt,
		DispatchIdentity: identity, Receipt: json.RawMessage(receipt), AdmittedAt: event.UnixMS(at),
	}
}

// ReceiptPayload is the payload of a persisted receipt: typ is
// event.AttemptAdmitted or event.AttemptCancellationReceiptRecorded.
func ReceiptPayload(typ event.Type, k backend.AttemptKey, identity string, receipt []byte, at int64) event.Payload {
	p := AdmittedPayload(k, identity, receipt, at)
	if typ == event.AttemptCancellationReceiptRecorded {
		return event.AttemptCancellationReceiptRecordedPayload(p)
	}
	return p
}
