package workflow

import (
	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/event"
)

// Retry transitions of the state core (see state_attempts.go): a retry
// requested by a caller, and the automatic-retry schedules. A
// schedule is made, refused, consumed, superseded or discarded only here,
// each with its event in the same transaction. The caller has decided
// (the policy, the decision table, the schedule's judge) and writes run.

// makeSchedule stores sched, which no schedule of its activation exists
// beside, and appends automatic_retry_scheduled.
func makeSchedule(w *batch, run *backend.Run, sched backend.RetrySchedule, at int64) {
	insert(w, sched)
	w.emit(run, schedulePayload(sched), at)
}

// refuseSchedule records why the failed attempt of act scheduled no
// automatic retry: automatic_retry_not_scheduled, nothing else.
func refuseSchedule(w *batch, run *backend.Run, failed backend.AttemptKey, identity string, r RetryRefusal, at int64) {
	w.emit(run, event.AutomaticRetryNotScheduledPayload{
		RunID: failed.RunID, NodeID: failed.NodeID, ActivationID: failed.ActivationID,
		DispatchIdentity: identity, FailedAttempt: failed.Attempt, Reason: r.Reason, IneligibleReason: r.Ineligible,
	}, at)
}

// consumeSchedule deletes sched, which requeues its activation in the same
// transaction, and appends automatic_retry_consumed.
func consumeSchedule(w *batch, run *backend.Run, sched backend.RetrySchedule, at int64) {
	remove(w, sched)
	w.emit(run, event.AutomaticRetryConsumedPayload(schedulePayload(sched)), at)
}

// supersedeStoredSchedule deletes sched, which an explicit retry made moot,
// and appends automatic_retry_superseded.
func supersedeStoredSchedule(w *batch, run *backend.Run, sched backend.RetrySchedule, at int64) {
	remove(w, sched)
	w.emit(run, event.AutomaticRetrySupersededPayload(schedulePayload(sched)), at)
}

// discardSchedule deletes sched, which can never be consumed any more,
// and appends automatic_retry_discarded with the reason.
func discardSchedule(w *batch, run *backend.Run, sched backend.RetrySchedule, reason string, at int64) {
	remove(w, sched)
	w.emit(run, discardPayload(sched, reason), at)
}

// recordNodeRetry appends node_retry_requested for the explicit retry of
// k's failed attempt, which requeues the activation for attempt failed+1
// in the same transaction.
func recordNodeRetry(w *batch, run *backend.Run, k backend.ActivationKey, failed uint32, at int64) {
	w.emit(run, event.NodeRetryRequestedPayload{
		RunID: k.RunID, NodeID: k.NodeID, ActivationID: k.ActivationID, PreviousAttempt: failed, NextAttempt: failed + 1,
	}, at)
}
