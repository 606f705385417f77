package state

import (
	"context"
	"encoding/json"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/event"
	"github.com/wfstore/wfstore/wftype"
)

// Attempt transitions of the state core (see doc.go).

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

// SettleAttempt moves an active or repair_required attempt to the settled
// status st and releases its leases; the caller writes att, act and run.
// A settled attempt is refused (wftype.ErrConflict): it settles once.
func SettleAttempt(ctx context.Context, t Txn, run *backend.Run, act backend.Activation, att *backend.Attempt, st backend.AttemptStatus) error {
	tx, w, at := t.Tx, t.W, t.At
	if isSettled(att.Status) {
		return Errorf(wftype.ErrConflict, "attempt %s is already settled (%s)", att.Identity, att.Status)
	}
	setAttemptStatus(run, att, st, at)
	return releaseLeases(ctx, tx, w, act, att.Key, at)
}

// AdmitAttempt admits att: a prepared attempt (its owner's receipt, or a
// linked child run), or a repair_required one whose late receipt or
// settling observation shows it was admitted after all. Any other status is
// refused (wftype.ErrConflict). The caller writes att.
func AdmitAttempt(run *backend.Run, att *backend.Attempt, at int64) error {
	switch att.Status {
	case backend.AttemptPrepared, backend.AttemptRepairRequired:
	default:
		return Errorf(wftype.ErrConflict, "attempt %s is %s: only a prepared or repair_required attempt is admitted", att.Identity, att.Status)
	}
	setAttemptStatus(run, att, backend.AttemptAdmitted, at)
	return nil
}

// ReportAttemptProgress records the owner's report that an active attempt
// is admitted or running (st); any other st, or an attempt not active, is
// refused (wftype.ErrIneligible). It writes att.
func ReportAttemptProgress(w *Batch, run *backend.Run, att *backend.Attempt, st backend.AttemptStatus, at int64) error {
	if (st != backend.AttemptAdmitted && st != backend.AttemptRunning) || !isActive(att.Status) {
		return Errorf(wftype.ErrIneligible, "attempt %s is %s: it cannot be reported %s", att.Identity, att.Status, st)
	}
	setAttemptStatus(run, att, st, at)
	Replace(w, *att)
	return nil
}

// SignalAttemptCancellation records that cancellation was signalled to the
// owner of a prepared, admitted or running attempt: it becomes cancelling
// and attempt_cancellation_signalled is appended. A cancelling attempt is
// ErrNoop; any other status is refused (wftype.ErrIneligible). It writes att.
func SignalAttemptCancellation(w *Batch, run *backend.Run, att *backend.Attempt, at int64) error {
	switch att.Status {
	case backend.AttemptCancelling:
		return ErrNoop
	case backend.AttemptPrepared, backend.AttemptAdmitted, backend.AttemptRunning:
	default:
		return Errorf(wftype.ErrIneligible, "attempt %s is %s", att.Identity, att.Status)
	}
	setAttemptStatus(run, att, backend.AttemptCancelling, at)
	Replace(w, *att)
	w.emit(run, event.AttemptCancellationSignalledPayload{AttemptNames: namesOf(att.Key), DispatchIdentity: att.Identity}, at)
	return nil
}

// HoldAttemptForChild moves the active attempt that started a child run to
// cancelling while its run's cancellation is requested, so the run waits
// for the owner to settle the child; no event is appended (the owner
// reported progress, not a signal). An attempt not active is refused
// (wftype.ErrIneligible). It writes att.
func HoldAttemptForChild(w *Batch, run *backend.Run, att *backend.Attempt, at int64) error {
	if !isActive(att.Status) {
		return Errorf(wftype.ErrIneligible, "attempt %s is %s: it cannot wait for its child run", att.Identity, att.Status)
	}
	setAttemptStatus(run, att, backend.AttemptCancelling, at)
	Replace(w, *att)
	return nil
}

// StopSiblingAttempt moves a prepared, admitted or running attempt of a
// fail-fast group's sibling to sibling_cancelling, appending
// attempt_sibling_cancelling; any other status is refused (wftype.ErrIneligible).
// It writes att.
func StopSiblingAttempt(w *Batch, run *backend.Run, att *backend.Attempt, at int64) error {
	switch att.Status {
	case backend.AttemptPrepared, backend.AttemptAdmitted, backend.AttemptRunning:
	default:
		return Errorf(wftype.ErrIneligible, "attempt %s is %s: no sibling cancellation applies", att.Identity, att.Status)
	}
	setAttemptStatus(run, att, backend.AttemptSiblingCancelling, at)
	Replace(w, *att)
	w.emit(run, event.AttemptSiblingCancellingPayload{AttemptNames: namesOf(att.Key), DispatchIdentity: att.Identity}, at)
	return nil
}

// RequireAttemptRepair moves an active attempt to repair_required and
// appends p (attempt_repair_required, its identity set here); an attempt
// not active is refused (wftype.ErrIneligible). It writes att; the run's own
// status is the caller's transition (holdRunForRepair).
func RequireAttemptRepair(w *Batch, run *backend.Run, att *backend.Attempt, p event.AttemptRepairRequiredPayload, at int64) error {
	if !isActive(att.Status) {
		return Errorf(wftype.ErrIneligible, "attempt %s is %s: only an active attempt becomes repair_required", att.Identity, att.Status)
	}
	setAttemptStatus(run, att, backend.AttemptRepairRequired, at)
	Replace(w, *att)
	p.AttemptNames, p.DispatchIdentity = namesOf(att.Key), att.Identity
	w.emit(run, p, at)
	return nil
}

// Startable reports whether an attempt of act may start: the activation is
// pending, its run running with no cancellation requested. Admission asks
// it before anything else (and changes nothing when it is false);
// PrepareAttempt refuses what it refuses.
func Startable(run backend.Run, act backend.Activation) bool {
	if act.Status != backend.ActivationPending || run.Status != backend.RunRunning || run.CancelRequestedMS != 0 {
		return false
	}
	return true
}

// AttemptStart is a new attempt and what it is counted against: its run,
// the run's composition root (root == run for a root run) and its
// activation; leases are the resource leases it acquires (admission only).
// Every record is held by pointer (Att is only read), so that the caller's
// records can stay on its stack.
type AttemptStart struct {
	Run, Root *backend.Run
	Act       *backend.Activation
	Att       *backend.Attempt
	Leases    []backend.Lease
}

// PrepareAttempt is admission's start of an attempt: its leases are
// inserted (resource_lease_acquired each), the pending activation becomes
// running and leaves the admissible index, and the prepared attempt is
// inserted and counted against the run's and the root's allowances
// (attempt_prepared). An activation not pending, or a run not running or
// with cancellation requested, is refused (wftype.ErrIneligible). It writes the
// activation, the attempt and a root other than run, and reports whether
// it wrote the root; the caller writes run.
func PrepareAttempt(w *Batch, s AttemptStart, at int64) (bool, error) {
	if !Startable(*s.Run, *s.Act) {
		return false, Errorf(wftype.ErrIneligible, "activation %v is %s in a %s run: no attempt starts", s.Act.Key, s.Act.Status, s.Run.Status)
	}
	for _, l := range s.Leases {
		Insert(w, l)
		w.emit(s.Run, leasePayload(l), at)
	}
	s.Act.Status = backend.ActivationRunning
	s.Act.Admissible = false
	s.Act.LastAttempt = s.Att.Key.Attempt
	s.Act.UpdatedMS = at
	Replace(w, *s.Act)
	return recordAttempt(w, s, at), nil
}

// PrepareLowLevelAttempt inserts a prepared attempt outside admission (the
// activation's status is left as it is): the activation's LastAttempt
// follows a higher attempt number, and the attempt is counted
// (attempt_prepared). Attempt number 0 is refused (wftype.ErrConflict): numbers
// start at 1. It writes the activation when it changed and the attempt; the caller
// writes run.
func PrepareLowLevelAttempt(w *Batch, s AttemptStart, at int64) error {
	k := s.Att.Key
	if k.Attempt == 0 {
		return Errorf(wftype.ErrConflict, "attempt %s: attempt numbers start at 1", s.Att.Identity)
	}
	if k.Attempt > s.Act.LastAttempt {
		s.Act.LastAttempt = k.Attempt
		s.Act.UpdatedMS = at
		Replace(w, *s.Act)
	}
	recordAttempt(w, s, at)
	return nil
}

// recordAttempt inserts a prepared attempt, counts it and appends
// attempt_prepared; it reports whether it wrote the root.
func recordAttempt(w *Batch, s AttemptStart, at int64) bool {
	Insert(w, *s.Att)
	wroteRoot := countAttempt(w, s.Run, s.Root)
	s.Run.UpdatedMS = at
	emitDirect(w, s.Run, PreparedPayload(s.Att.Key, s.Att.SideEffect, s.Att.Intent, at), at)
	return wroteRoot
}

// countAttempt counts a new active attempt of run against the run's and
// the root's allowance counters; a root other than run is replaced in w
// (run is the caller's to write). It reports whether it wrote root.
func countAttempt(w *Batch, run, root *backend.Run) bool {
	run.AttemptCount++
	run.ActiveCount++
	if root.ID == run.ID {
		run.TreeAttemptCount++
		return false
	}
	root.TreeAttemptCount++
	Replace(w, *root)
	return true
}

// CancelAttempt settles an active attempt of act as cancelled, cancels act
// and appends attempt_cancelled with p (its names and identity filled in
// here). The caller has decided the attempt is cancelled: its owner never
// received it, or cannot be asked, or reported on it after cancellation.
// It writes att and act; the caller settles the fan-out member and the
// run.
func CancelAttempt(ctx context.Context, t Txn, run *backend.Run, act *backend.Activation, att *backend.Attempt, p event.AttemptCancelledPayload) error {
	if err := SettleAttempt(ctx, t, run, *act, att, backend.AttemptCancelled); err != nil {
		return err
	}
	Replace(t.W, *att)
	if err := CancelActivation(t.W, act, t.At); err != nil {
		return err
	}
	p.AttemptNames, p.DispatchIdentity = namesOf(att.Key), att.Identity
	t.W.emit(run, p, t.At)
	return nil
}

// RecordSiblingSignal records that the owner of a sibling_cancelling
// attempt was told to stop (attempt_cancellation_signalled); the status
// stays sibling_cancelling. Any other status is refused (wftype.ErrConflict).
func RecordSiblingSignal(w *Batch, run *backend.Run, att *backend.Attempt, at int64) error {
	if att.Status != backend.AttemptSiblingCancelling {
		return Errorf(wftype.ErrConflict, "attempt %s is %s, not sibling_cancelling", att.Identity, att.Status)
	}
	w.emit(run, event.AttemptCancellationSignalledPayload{AttemptNames: namesOf(att.Key), DispatchIdentity: att.Identity}, at)
	return nil
}

// RecordHandoff records that att is being handed to its owner under the
// holder token (dispatch_handed_off): from here on it may have reached
// its owner. The caller has checked the handoff is pending and the run
// eligible; it writes run.
func RecordHandoff(w *Batch, run *backend.Run, att *backend.Attempt, token string, at int64) {
	att.Handoff, att.HandoffToken = backend.HandoffRecorded, token
	Replace(w, *att)
	emitDirect(w, run, event.DispatchHandedOffPayload{AttemptNames: namesOf(att.Key), DispatchIdentity: att.Identity}, at)
}

// ReleaseHandoff takes back a recorded handoff its owner provably never
// received (dispatch_handoff_released): the attempt is never-dispatched
// again. The caller has checked the attempt is prepared, receiptless and
// held by its own token; it writes run.
func ReleaseHandoff(w *Batch, run *backend.Run, att *backend.Attempt, at int64) {
	att.Handoff, att.HandoffToken = backend.HandoffPending, ""
	Replace(w, *att)
	emitDirect(w, run, event.DispatchHandoffReleasedPayload{AttemptNames: namesOf(att.Key), DispatchIdentity: att.Identity}, at)
}

// RecordReceipt stores the owner's receipt rc on att, admitted at at, and
// appends typ (attempt_admitted, or
// attempt_cancellation_receipt_recorded for an attempt being cancelled).
// The caller has admitted the attempt where it was prepared; it writes
// run.
func RecordReceipt(w *Batch, run *backend.Run, att *backend.Attempt, typ event.Type, rc []byte, at int64) {
	att.Receipt = rc
	att.AdmittedMS = at
	Replace(w, *att)
	// ReceiptPayload's payload, unboxed.
	p := AdmittedPayload(att.Key, att.Identity, rc, at)
	if typ == event.AttemptCancellationReceiptRecorded {
		emitDirect(w, run, event.AttemptCancellationReceiptRecordedPayload(p), at)
		return
	}
	emitDirect(w, run, p, at)
}

// RecordTimeout appends attempt_timed_out for att, which the caller has
// settled failed or is about to require repair of (ev.Status says which).
func RecordTimeout(w *Batch, run *backend.Run, att *backend.Attempt, ev event.AttemptTimedOutPayload, at int64) {
	ev.AttemptNames, ev.DispatchIdentity = namesOf(att.Key), att.Identity
	w.emit(run, ev, at)
}

// RecordLateObservation appends attempt_observed_after_timeout: an
// observation of kind arrived for att after a timeout settled it.
func RecordLateObservation(w *Batch, run *backend.Run, att *backend.Attempt, kind wftype.ObservationKind, at int64) {
	w.emit(run, event.AttemptObservedAfterTimeoutPayload{AttemptNames: namesOf(att.Key), DispatchIdentity: att.Identity, Observed: kind, Was: wftype.AttemptStatus(att.Status)}, at)
	run.UpdatedMS = at
}

// RecordRepair appends attempt_repaired for att, which the operator's
// repair just settled with action.
func RecordRepair(w *Batch, run *backend.Run, att *backend.Attempt, action wftype.RepairAction, at int64) {
	w.emit(run, event.AttemptRepairedPayload{AttemptNames: namesOf(att.Key), DispatchIdentity: att.Identity, Action: action}, at)
}

// SucceedAttempt settles an active attempt of act as succeeded, completes
// act with output and appends attempt_succeeded. It writes att and act.
func SucceedAttempt(ctx context.Context, t Txn, run *backend.Run, act *backend.Activation, att *backend.Attempt, output []byte) error {
	if err := SettleAttempt(ctx, t, run, *act, att, backend.AttemptSucceeded); err != nil {
		return err
	}
	Replace(t.W, *att)
	if err := CompleteActivation(t.W, act, output, t.At); err != nil {
		return err
	}
	t.W.emit(run, event.AttemptSucceededPayload{AttemptNames: namesOf(att.Key), DispatchIdentity: att.Identity, Output: json.RawMessage(output)}, t.At)
	return nil
}

// FailAttempt settles an active attempt of act as failed (retryable: the
// owner reported the failure retryable), fails act and appends
// attempt_failed. It writes att and act; the caller decides the retry.
func FailAttempt(ctx context.Context, t Txn, run *backend.Run, act *backend.Activation, att *backend.Attempt, retryable bool) error {
	if err := SettleAttempt(ctx, t, run, *act, att, backend.AttemptFailed); err != nil {
		return err
	}
	Replace(t.W, *att)
	if err := FailActivation(t.W, act, t.At); err != nil {
		return err
	}
	t.W.emit(run, event.AttemptFailedPayload{AttemptNames: namesOf(att.Key), DispatchIdentity: att.Identity, Retryable: retryable}, t.At)
	return nil
}

// PauseAttempt settles an active attempt of act as paused for reason,
// returns act to pending, appends attempt_paused and pauses the run. It
// writes att and act; the caller reindexes and writes run.
func PauseAttempt(ctx context.Context, t Txn, run *backend.Run, act *backend.Activation, att *backend.Attempt, reason string) error {
	if err := SettleAttempt(ctx, t, run, *act, att, backend.AttemptPaused); err != nil {
		return err
	}
	if err := RequeueActivation(act, t.At); err != nil {
		return err
	}
	Replace(t.W, *att)
	Replace(t.W, *act)
	t.W.emit(run, event.AttemptPausedPayload{AttemptNames: namesOf(att.Key), DispatchIdentity: att.Identity, Reason: reason}, t.At)
	PauseRunWithAttempt(run, t.At)
	return nil
}
