package state

import (
	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/event"
	"github.com/wfstore/wfstore/wftype"
)

// Retry transitions of the state core (see doc.go): a retry
// requested by a caller, and the automatic-retry schedules. A
// schedule is made, refused, consumed, superseded or discarded only here,
// each with its event in the same transaction. The caller has decided
// (the policy, the decision table, the schedule's judge) and writes run.

// MakeSchedule stores sched, which no schedule of its activation exists
// beside, and appends automatic_retry_scheduled.
func MakeSchedule(w *Batch, run *backend.Run, sched backend.RetrySchedule, at int64) {
	Insert(w, sched)
	w.emit(run, schedulePayload(sched), at)
}

// Refusal is why a retryable failure scheduled no automatic retry: the
// failed attempt, its dispatch identity and the reasons.
type Refusal struct {
	Failed     backend.AttemptKey
	Identity   string
	Reason     wftype.RefusalReason
	Ineligible wftype.IneligibleReason
}

// RefuseSchedule records why the failed attempt r.Failed scheduled no
// automatic retry: automatic_retry_not_scheduled, nothing else.
func RefuseSchedule(w *Batch, run *backend.Run, r Refusal, at int64) {
	w.emit(run, event.AutomaticRetryNotScheduledPayload{
		RunID: r.Failed.RunID, NodeID: r.Failed.NodeID, ActivationID: r.Failed.ActivationID,
		DispatchIdentity: r.Identity, FailedAttempt: r.Failed.Attempt, Reason: r.Reason, IneligibleReason: r.Ineligible,
	}, at)
}

// ConsumeSchedule deletes sched, which requeues its activation in the same
// transaction, and appends automatic_retry_consumed.
func ConsumeSchedule(w *Batch, run *backend.Run, sched backend.RetrySchedule, at int64) {
	Remove(w, sched)
	w.emit(run, event.AutomaticRetryConsumedPayload(schedulePayload(sched)), at)
}

// SupersedeStoredSchedule deletes sched, which an explicit retry made moot,
// and appends automatic_retry_superseded.
func SupersedeStoredSchedule(w *Batch, run *backend.Run, sched backend.RetrySchedule, at int64) {
	Remove(w, sched)
	w.emit(run, event.AutomaticRetrySupersededPayload(schedulePayload(sched)), at)
}

// DiscardSchedule deletes sched, which can never be consumed any more,
// and appends automatic_retry_discarded with the reason.
func DiscardSchedule(w *Batch, run *backend.Run, sched backend.RetrySchedule, reason string, at int64) {
	Remove(w, sched)
	w.emit(run, discardPayload(sched, reason), at)
}

// RecordNodeRetry appends node_retry_requested for the explicit retry of
// k's failed attempt, which requeues the activation for attempt failed+1
// in the same transaction.
func RecordNodeRetry(w *Batch, run *backend.Run, k backend.ActivationKey, failed uint32, at int64) {
	w.emit(run, event.NodeRetryRequestedPayload{
		RunID: k.RunID, NodeID: k.NodeID, ActivationID: k.ActivationID, PreviousAttempt: failed, NextAttempt: failed + 1,
	}, at)
}
