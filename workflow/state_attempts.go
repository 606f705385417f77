package workflow

import (
	"context"

	"github.com/wfstore/wfstore/backend"
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
	w.emit(run, AttemptCancellationSignalledPayload{AttemptNames: namesOf(att.Key), DispatchIdentity: att.Identity}, at)
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
	w.emit(run, AttemptSiblingCancellingPayload{AttemptNames: namesOf(att.Key), DispatchIdentity: att.Identity}, at)
	return nil
}

// requireAttemptRepair moves an active attempt to repair_required and
// appends p (attempt_repair_required, its identity set here); an attempt
// not active is refused (ErrIneligible). It writes att; the run's own
// status is the caller's transition (holdRunForRepair).
func requireAttemptRepair(w *batch, run *backend.Run, att *backend.Attempt, p AttemptRepairRequiredPayload, at int64) error {
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
