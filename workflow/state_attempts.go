package workflow

import (
	"context"
	"encoding/json"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/event"
)

// The state core. The files named state_*.go are the only code in this
// package that changes a record's status, its admissible flag or one of
// its counters, or appends an event (tools/statecheck enforces it). Each
// transition is one function named for it: it checks its preconditions
// (returning the package's typed errors), makes the change, keeps the
// counters that follow from it true and appends its event. Callers decide
// WHICH transition happens; the core decides what the transition is.

// setAttemptStatus moves att to st, adjusting run.ActiveCount and setting
// TerminalMS on settled statuses. It is the primitive under every attempt
// transition below; nothing outside the core calls it.
func setAttemptStatus(run *backend.Run, att *backend.Attempt, st backend.AttemptStatus, at int64) {
	was, now := isActive(att.Status), isActive(st)
	switch {
	case was && !now:
		run.ActiveCount--
	case !was && now:
		run.ActiveCount++
	}
	att.Status = st
	if isSettled(st) || st == backend.AttemptRepairRequired {
		att.TerminalMS = at
	}
}

// settleAttempt moves an active or repair_required attempt to the settled
// status st and releases its leases; the caller writes att, act and run.
// A settled attempt is refused (ErrConflict): it settles once.
func settleAttempt(ctx context.Context, t txn, run *backend.Run, act backend.Activation, att *backend.Attempt, st backend.AttemptStatus) error {
	tx, w, at := t.tx, t.w, t.at
	if isSettled(att.Status) {
		return stateErr(ErrConflict, "attempt %s is already settled (%s)", att.Identity, att.Status)
	}
	setAttemptStatus(run, att, st, at)
	return releaseLeases(ctx, tx, w, act, att.Key, at)
}

// admitAttempt admits att: a prepared attempt (its owner's receipt, or a
// linked child run), or a repair_required one whose late receipt or
// settling observation shows it was admitted after all. Any other status is
// refused (ErrConflict). The caller writes att.
func admitAttempt(run *backend.Run, att *backend.Attempt, at int64) error {
	switch att.Status {
	case backend.AttemptPrepared, backend.AttemptRepairRequired:
	default:
		return stateErr(ErrConflict, "attempt %s is %s: only a prepared or repair_required attempt is admitted", att.Identity, att.Status)
	}
	setAttemptStatus(run, att, backend.AttemptAdmitted, at)
	return nil
}

// reportAttemptProgress records the owner's report that an active attempt
// is admitted or running (st); any other st, or an attempt not active, is
// refused (ErrIneligible). It writes att.
func reportAttemptProgress(w *batch, run *backend.Run, att *backend.Attempt, st backend.AttemptStatus, at int64) error {
	if (st != backend.AttemptAdmitted && st != backend.AttemptRunning) || !isActive(att.Status) {
		return stateErr(ErrIneligible, "attempt %s is %s: it cannot be reported %s", att.Identity, att.Status, st)
	}
	setAttemptStatus(run, att, st, at)
	replace(w, *att)
	return nil
}

// signalAttemptCancellation records that cancellation was signalled to the
// owner of a prepared, admitted or running attempt: it becomes cancelling
// and attempt_cancellation_signalled is appended. A cancelling attempt is
// errNoop; any other status is refused (ErrIneligible). It writes att.
func signalAttemptCancellation(w *batch, run *backend.Run, att *backend.Attempt, at int64) error {
	switch att.Status {
	case backend.AttemptCancelling:
		return errNoop
	case backend.AttemptPrepared, backend.AttemptAdmitted, backend.AttemptRunning:
	default:
		return stateErr(ErrIneligible, "attempt %s is %s", att.Identity, att.Status)
	}
	setAttemptStatus(run, att, backend.AttemptCancelling, at)
	replace(w, *att)
	w.emit(run, event.AttemptCancellationSignalledPayload{AttemptNames: namesOf(att.Key), DispatchIdentity: att.Identity}, at)
	return nil
}

// holdAttemptForChild moves the active attempt that started a child run to
// cancelling while its run's cancellation is requested, so the run waits
// for the owner to settle the child; no event is appended (the owner
// reported progress, not a signal). An attempt not active is refused
// (ErrIneligible). It writes att.
func holdAttemptForChild(w *batch, run *backend.Run, att *backend.Attempt, at int64) error {
	if !isActive(att.Status) {
		return stateErr(ErrIneligible, "attempt %s is %s: it cannot wait for its child run", att.Identity, att.Status)
	}
	setAttemptStatus(run, att, backend.AttemptCancelling, at)
	replace(w, *att)
	return nil
}

// stopSiblingAttempt moves a prepared, admitted or running attempt of a
// fail-fast group's sibling to sibling_cancelling, appending
// attempt_sibling_cancelling; any other status is refused (ErrIneligible).
// It writes att.
func stopSiblingAttempt(w *batch, run *backend.Run, att *backend.Attempt, at int64) error {
	switch att.Status {
	case backend.AttemptPrepared, backend.AttemptAdmitted, backend.AttemptRunning:
	default:
		return stateErr(ErrIneligible, "attempt %s is %s: no sibling cancellation applies", att.Identity, att.Status)
	}
	setAttemptStatus(run, att, backend.AttemptSiblingCancelling, at)
	replace(w, *att)
	w.emit(run, event.AttemptSiblingCancellingPayload{AttemptNames: namesOf(att.Key), DispatchIdentity: att.Identity}, at)
	return nil
}

// requireAttemptRepair moves an active attempt to repair_required and
// appends p (attempt_repair_required, its identity set here); an attempt
// not active is refused (ErrIneligible). It writes att; the run's own
// status is the caller's transition (holdRunForRepair).
func requireAttemptRepair(w *batch, run *backend.Run, att *backend.Attempt, p event.AttemptRepairRequiredPayload, at int64) error {
	if !isActive(att.Status) {
		return stateErr(ErrIneligible, "attempt %s is %s: only an active attempt becomes repair_required", att.Identity, att.Status)
	}
	setAttemptStatus(run, att, backend.AttemptRepairRequired, at)
	replace(w, *att)
	p.AttemptNames, p.DispatchIdentity = namesOf(att.Key), att.Identity
	w.emit(run, p, at)
	return nil
}

// startable reports whether an attempt of act may start: the activation is
// pending, its run running with no cancellation requested. Admission asks
// it before anything else (and changes nothing when it is false);
// prepareAttempt refuses what it refuses.
func startable(run backend.Run, act backend.Activation) bool {
	if act.Status != backend.ActivationPending || run.Status != backend.RunRunning || run.CancelRequestedMS != 0 {
		return false
	}
	return true
}

// attemptStart is a new attempt and what it is counted against: its run,
// the run's composition root (root == run for a root run) and its
// activation; leases are the resource leases it acquires (admission only).
type attemptStart struct {
	run, root *backend.Run
	act       *backend.Activation
	att       backend.Attempt
	leases    []backend.Lease
}

// prepareAttempt is admission's start of an attempt: its leases are
// inserted (resource_lease_acquired each), the pending activation becomes
// running and leaves the admissible index, and the prepared attempt is
// inserted and counted against the run's and the root's allowances
// (attempt_prepared). An activation not pending, or a run not running or
// with cancellation requested, is refused (ErrIneligible). It writes the
// activation, the attempt and a root other than run, and reports whether
// it wrote the root; the caller writes run.
func prepareAttempt(w *batch, s attemptStart, at int64) (bool, error) {
	if !startable(*s.run, *s.act) {
		return false, stateErr(ErrIneligible, "activation %v is %s in a %s run: no attempt starts", s.act.Key, s.act.Status, s.run.Status)
	}
	for _, l := range s.leases {
		insert(w, l)
		w.emit(s.run, leasePayload(l), at)
	}
	s.act.Status = backend.ActivationRunning
	s.act.Admissible = false
	s.act.LastAttempt = s.att.Key.Attempt
	s.act.UpdatedMS = at
	replace(w, *s.act)
	return recordAttempt(w, s, at), nil
}

// prepareLowLevelAttempt inserts a prepared attempt outside admission (the
// activation's status is left as it is): the activation's LastAttempt
// follows a higher attempt number, and the attempt is counted
// (attempt_prepared). Attempt number 0 is refused (ErrConflict): numbers
// start at 1. It writes the activation when it changed and the attempt; the caller
// writes run.
func prepareLowLevelAttempt(w *batch, s attemptStart, at int64) error {
	k := s.att.Key
	if k.Attempt == 0 {
		return stateErr(ErrConflict, "attempt %s: attempt numbers start at 1", s.att.Identity)
	}
	if k.Attempt > s.act.LastAttempt {
		s.act.LastAttempt = k.Attempt
		s.act.UpdatedMS = at
		replace(w, *s.act)
	}
	recordAttempt(w, s, at)
	return nil
}

// recordAttempt inserts a prepared attempt, counts it and appends
// attempt_prepared; it reports whether it wrote the root.
func recordAttempt(w *batch, s attemptStart, at int64) bool {
	insert(w, s.att)
	wroteRoot := countAttempt(w, s.run, s.root)
	s.run.UpdatedMS = at
	w.emit(s.run, preparedPayload(s.att.Key, s.att.SideEffect, s.att.Intent, at), at)
	return wroteRoot
}

// countAttempt counts a new active attempt of run against the run's and
// the root's allowance counters; a root other than run is replaced in w
// (run is the caller's to write). It reports whether it wrote root.
func countAttempt(w *batch, run, root *backend.Run) bool {
	run.AttemptCount++
	run.ActiveCount++
	if root.ID == run.ID {
		run.TreeAttemptCount++
		return false
	}
	root.TreeAttemptCount++
	replace(w, *root)
	return true
}

// cancelAttempt settles an active attempt of act as cancelled, cancels act
// and appends attempt_cancelled with p (its names and identity filled in
// here). The caller has decided the attempt is cancelled: its owner never
// received it, or cannot be asked, or reported on it after cancellation.
// It writes att and act; the caller settles the fan-out member and the
// run.
func cancelAttempt(ctx context.Context, t txn, run *backend.Run, act *backend.Activation, att *backend.Attempt, p event.AttemptCancelledPayload) error {
	if err := settleAttempt(ctx, t, run, *act, att, backend.AttemptCancelled); err != nil {
		return err
	}
	replace(t.w, *att)
	if err := cancelActivation(t.w, act, t.at); err != nil {
		return err
	}
	p.AttemptNames, p.DispatchIdentity = namesOf(att.Key), att.Identity
	t.w.emit(run, p, t.at)
	return nil
}

// recordSiblingSignal records that the owner of a sibling_cancelling
// attempt was told to stop (attempt_cancellation_signalled); the status
// stays sibling_cancelling. Any other status is refused (ErrConflict).
func recordSiblingSignal(w *batch, run *backend.Run, att *backend.Attempt, at int64) error {
	if att.Status != backend.AttemptSiblingCancelling {
		return stateErr(ErrConflict, "attempt %s is %s, not sibling_cancelling", att.Identity, att.Status)
	}
	w.emit(run, event.AttemptCancellationSignalledPayload{AttemptNames: namesOf(att.Key), DispatchIdentity: att.Identity}, at)
	return nil
}

// recordHandoff records that att is being handed to its owner under the
// holder token (dispatch_handed_off): from here on it may have reached
// its owner. The caller has checked the handoff is pending and the run
// eligible; it writes run.
func recordHandoff(w *batch, run *backend.Run, att *backend.Attempt, token string, at int64) {
	att.Handoff, att.HandoffToken = backend.HandoffRecorded, token
	replace(w, *att)
	w.emit(run, event.DispatchHandedOffPayload{AttemptNames: namesOf(att.Key), DispatchIdentity: att.Identity}, at)
}

// releaseHandoff takes back a recorded handoff its owner provably never
// received (dispatch_handoff_released): the attempt is never-dispatched
// again. The caller has checked the attempt is prepared, receiptless and
// held by its own token; it writes run.
func releaseHandoff(w *batch, run *backend.Run, att *backend.Attempt, at int64) {
	att.Handoff, att.HandoffToken = backend.HandoffPending, ""
	replace(w, *att)
	w.emit(run, event.DispatchHandoffReleasedPayload{AttemptNames: namesOf(att.Key), DispatchIdentity: att.Identity}, at)
}

// recordReceipt stores the owner's receipt rc on att, admitted at at, and
// appends typ (attempt_admitted, or
// attempt_cancellation_receipt_recorded for an attempt being cancelled).
// The caller has admitted the attempt where it was prepared; it writes
// run.
func recordReceipt(w *batch, run *backend.Run, att *backend.Attempt, typ event.Type, rc []byte, at int64) {
	att.Receipt = rc
	att.AdmittedMS = at
	replace(w, *att)
	w.emit(run, receiptPayload(typ, att.Key, att.Identity, rc, at), at)
}

// recordTimeout appends attempt_timed_out for att, which the caller has
// settled failed or is about to require repair of (ev.Status says which).
func recordTimeout(w *batch, run *backend.Run, att *backend.Attempt, ev event.AttemptTimedOutPayload, at int64) {
	ev.AttemptNames, ev.DispatchIdentity = namesOf(att.Key), att.Identity
	w.emit(run, ev, at)
}

// recordLateObservation appends attempt_observed_after_timeout: an
// observation of kind arrived for att after a timeout settled it.
func recordLateObservation(w *batch, run *backend.Run, att *backend.Attempt, kind ObservationKind, at int64) {
	w.emit(run, event.AttemptObservedAfterTimeoutPayload{AttemptNames: namesOf(att.Key), DispatchIdentity: att.Identity, Observed: kind, Was: AttemptStatus(att.Status)}, at)
	run.UpdatedMS = at
}

// recordRepair appends attempt_repaired for att, which the operator's
// repair just settled with action.
func recordRepair(w *batch, run *backend.Run, att *backend.Attempt, action RepairAction, at int64) {
	w.emit(run, event.AttemptRepairedPayload{AttemptNames: namesOf(att.Key), DispatchIdentity: att.Identity, Action: action}, at)
}

// succeedAttempt settles an active attempt of act as succeeded, completes
// act with output and appends attempt_succeeded. It writes att and act.
func succeedAttempt(ctx context.Context, t txn, run *backend.Run, act *backend.Activation, att *backend.Attempt, output []byte) error {
	if err := settleAttempt(ctx, t, run, *act, att, backend.AttemptSucceeded); err != nil {
		return err
	}
	replace(t.w, *att)
	if err := completeActivation(t.w, act, output, t.at); err != nil {
		return err
	}
	t.w.emit(run, event.AttemptSucceededPayload{AttemptNames: namesOf(att.Key), DispatchIdentity: att.Identity, Output: json.RawMessage(output)}, t.at)
	return nil
}

// failAttempt settles an active attempt of act as failed (retryable: the
// owner reported the failure retryable), fails act and appends
// attempt_failed. It writes att and act; the caller decides the retry.
func failAttempt(ctx context.Context, t txn, run *backend.Run, act *backend.Activation, att *backend.Attempt, retryable bool) error {
	if err := settleAttempt(ctx, t, run, *act, att, backend.AttemptFailed); err != nil {
		return err
	}
	replace(t.w, *att)
	if err := failActivation(t.w, act, t.at); err != nil {
		return err
	}
	t.w.emit(run, event.AttemptFailedPayload{AttemptNames: namesOf(att.Key), DispatchIdentity: att.Identity, Retryable: retryable}, t.at)
	return nil
}

// pauseAttempt settles an active attempt of act as paused for reason,
// returns act to pending, appends attempt_paused and pauses the run. It
// writes att and act; the caller reindexes and writes run.
func pauseAttempt(ctx context.Context, t txn, run *backend.Run, act *backend.Activation, att *backend.Attempt, reason string) error {
	if err := settleAttempt(ctx, t, run, *act, att, backend.AttemptPaused); err != nil {
		return err
	}
	if err := requeueActivation(act, t.at); err != nil {
		return err
	}
	replace(t.w, *att)
	replace(t.w, *act)
	t.w.emit(run, event.AttemptPausedPayload{AttemptNames: namesOf(att.Key), DispatchIdentity: att.Identity, Reason: reason}, t.at)
	pauseRunWithAttempt(run, t.at)
	return nil
}
