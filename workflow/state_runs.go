package workflow

import (
	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/event"
)

// Run transitions of the state core (see state_attempts.go).

// completable reports whether run may complete as far as its own record
// tells: running or paused, no cancellation requested, no active attempt.
// Completion asks it before it reads anything.
func completable(run backend.Run) bool {
	return (run.Status == backend.RunRunning || run.Status == backend.RunPaused) && run.CancelRequestedMS == 0 && run.ActiveCount == 0
}

// completeRun completes a running or paused run with no active attempt
// and no cancellation requested, appending run_completed; any other run is
// refused (ErrConflict). The caller has checked that nothing of the run is
// open any more, and writes run.
func completeRun(w *batch, run *backend.Run, at int64) error {
	if !completable(*run) {
		return stateErr(ErrConflict, "run %q is %s with %d active attempts: it cannot complete", run.ID, run.Status, run.ActiveCount)
	}
	run.Status = backend.RunCompleted
	run.UpdatedMS = at
	w.emit(run, event.RunCompletedPayload{RunID: run.ID}, at)
	return nil
}

// failRun fails a running or paused run; any other status is kept (a
// repair_required run stays so until its repair resolves, and a run that
// ended stays ended). The caller writes run.
func failRun(run *backend.Run) {
	if run.Status == backend.RunRunning || run.Status == backend.RunPaused {
		run.Status = backend.RunFailed
	}
}

// cancellable reports whether run's requested cancellation may finalise as
// far as its own record tells: requested, the run not ended (a failed run
// stays failed), no active attempt. Finalisation asks it before it reads
// anything.
func cancellable(run backend.Run) bool {
	if run.CancelRequestedMS == 0 || runTerminal(run.Status) || run.ActiveCount > 0 {
		return false
	}
	return true
}

// cancelRun finalises a run whose cancellation is requested, that has not
// ended and has no active attempt: it becomes cancelled and run_cancelled
// is appended. Any other run is refused (ErrConflict). The caller has
// cancelled its open activations, and writes run.
func cancelRun(w *batch, run *backend.Run, at int64) error {
	if !cancellable(*run) {
		return stateErr(ErrConflict, "run %q is %s with %d active attempts: it cannot be cancelled", run.ID, run.Status, run.ActiveCount)
	}
	run.Status = backend.RunCancelled
	run.UpdatedMS = at
	w.emit(run, event.RunCancelledPayload{RunID: run.ID}, at)
	return nil
}

// holdRunForRepair moves a run one of whose attempts became
// repair_required to repair_required; a completed or cancelled run (no
// attempt of it is open) is refused (ErrConflict). The caller writes run.
func holdRunForRepair(run *backend.Run) error {
	if run.Status == backend.RunCompleted || run.Status == backend.RunCancelled {
		return stateErr(ErrConflict, "run %q is %s: it has no attempt to repair", run.ID, run.Status)
	}
	run.Status = backend.RunRepairRequired
	return nil
}

// releaseRunFromRepair moves a repair_required run, none of whose attempts
// is repair_required any more, to status to (running, or failed after a
// repair that failed its activation); a run not repair_required is refused
// (ErrConflict). The caller writes run.
func releaseRunFromRepair(run *backend.Run, to backend.RunStatus, at int64) error {
	if run.Status != backend.RunRepairRequired {
		return stateErr(ErrConflict, "run %q is %s, not repair_required", run.ID, run.Status)
	}
	run.Status = to
	run.UpdatedMS = at
	return nil
}

// gateRun pauses a running run (pause) or resumes a paused one, appending
// run_paused or run_resumed. A run already so is errNoop; a run with
// cancellation requested does not resume, and a run in any other status is
// refused (ErrIneligible). The caller writes run.
func gateRun(w *batch, run *backend.Run, pause bool, at int64) error {
	from, to, ev := backend.RunRunning, backend.RunPaused, event.Payload(event.RunPausedPayload{RunID: run.ID})
	if !pause {
		from, to, ev = backend.RunPaused, backend.RunRunning, event.RunResumedPayload{RunID: run.ID}
		if run.CancelRequestedMS != 0 {
			return stateErr(ErrIneligible, "run %q has cancellation requested and cannot resume", run.ID)
		}
	}
	switch run.Status {
	case to:
		return errNoop
	case from:
	default:
		return stateErr(ErrIneligible, "run %q is %s", run.ID, run.Status)
	}
	run.Status = to
	run.UpdatedMS = at
	w.emit(run, ev, at)
	return nil
}

// pauseRunWithAttempt pauses a running run whose attempt reported a pause;
// a run in any other status keeps it. The caller writes run.
func pauseRunWithAttempt(run *backend.Run, at int64) {
	if run.Status == backend.RunRunning {
		run.Status = backend.RunPaused
		run.UpdatedMS = at
	}
}

// reopenable refuses (ErrIneligible) a run a retry may not reopen: one not
// failed (or already reopened by a sibling's retry, running), or with
// cancellation requested. A retry asks it before anything else.
func reopenable(run backend.Run) error {
	if (run.Status != backend.RunFailed && run.Status != backend.RunRunning) || run.CancelRequestedMS != 0 {
		return stateErr(ErrIneligible, "workflow run is not eligible for node retry (%s)", run.Status)
	}
	return nil
}

// reopenRun returns a failed (or already reopened, running) run whose
// failed activation a retry requeues to running; a run in any other
// status, or with cancellation requested, is refused (ErrIneligible). The
// caller writes run.
func reopenRun(run *backend.Run, at int64) error {
	if err := reopenable(*run); err != nil {
		return err
	}
	run.Status = backend.RunRunning
	run.UpdatedMS = at
	return nil
}

// createRun inserts the new run (a root, or a child whose link the caller
// inserts) and appends run_created with p.
func createRun(w *batch, run backend.Run, p event.RunCreatedPayload, at int64) {
	w.emit(&run, p, at)
	insert(w, run)
	w.workArrives()
}

// requestCancellation records that run's cancellation is requested
// (part of a tree's when rootID is set), appending cancellation_requested.
// A run whose cancellation was already requested, or that completed or was
// cancelled, is refused (ErrIneligible). The caller settles the run's
// unstarted work and writes run.
func requestCancellation(w *batch, run *backend.Run, rootID string, at int64) error {
	if run.CancelRequestedMS != 0 || run.Status == backend.RunCompleted || run.Status == backend.RunCancelled {
		return stateErr(ErrIneligible, "run %q is %s (cancellation requested at %d): its cancellation cannot be requested", run.ID, run.Status, run.CancelRequestedMS)
	}
	run.CancelRequestedMS = at
	run.UpdatedMS = at
	p := event.CancellationRequestedPayload{RunID: run.ID}
	if rootID != "" {
		p.RootRunID, p.Tree = rootID, true
	}
	w.emit(run, p, at)
	w.workArrives() // an engine has work to stop
	return nil
}

// transferAuthority replaces run's authority, whose previous generation was
// prev, with next, appending authority_transferred. The caller has fenced
// the transfer on the current authority; a run that ended is refused
// (ErrIneligible). The caller writes run.
func transferAuthority(w *batch, run *backend.Run, prev int64, next backend.Authority, at int64) error {
	switch run.Status {
	case backend.RunRunning, backend.RunPaused, backend.RunRepairRequired:
	default:
		return stateErr(ErrIneligible, "run %q is %s; authority cannot be transferred", run.ID, run.Status)
	}
	run.Authority = &next
	run.UpdatedMS = at
	w.emit(run, event.AuthorityTransferredPayload{
		PreviousGeneration: prev, Generation: next.Generation, DaemonInstanceID: next.DaemonInstanceID,
	}, at)
	return nil
}

// increaseAllowance raises run's node execution cap from its current value
// to target, appending execution_allowance_increased. The caller has checked
// the run may still admit work and that the cap is the one it expected.
// The caller reindexes and writes run.
func increaseAllowance(w *batch, run *backend.Run, target int64, at int64) {
	prev := run.Limits.NodeExecutionCap
	run.Limits.NodeExecutionCap = target
	run.UpdatedMS = at
	w.emit(run, event.ExecutionAllowanceIncreasedPayload{PreviousCap: prev, TargetCap: target}, at)
}

// recordAllowanceExhausted marks run's execution allowance as spent once,
// appending its one execution_allowance_exhausted event; it reports whether
// this call recorded it (false: recorded before). The caller writes run.
func recordAllowanceExhausted(w *batch, run *backend.Run, at int64) bool {
	if run.ExhaustionRecorded {
		return false
	}
	run.ExhaustionRecorded = true
	w.emit(run, event.ExecutionAllowanceExhaustedPayload{Version: 1, AdditionalWorkAdmitted: false}, at)
	return true
}

// linkChildRun admits parent's prepared attempt att, whose receipt (set
// by the caller) names the child run child, appending attempt_admitted and
// child_run_linked, and counts the child among the descendants of root (the
// tree's root run, which may be parent itself). The caller inserted child
// and its link, and writes parent and root.
func linkChildRun(w *batch, parent, root *backend.Run, att *backend.Attempt, child backend.Run, at int64) error {
	if err := admitAttempt(parent, att, at); err != nil {
		return err
	}
	att.AdmittedMS = at
	replace(w, *att)
	w.emit(parent, admittedPayload(att.Key, att.Identity, att.Receipt, at), at)
	w.emit(parent, event.ChildRunLinkedPayload{ChildRunID: child.ID, RootRunID: child.RootID, Depth: child.Depth}, at)
	if root.ID == parent.ID {
		parent.DescendantCount++
	} else {
		root.DescendantCount++
	}
	return nil
}

// markPruneStarted marks run, whose prune takes several transactions, with
// what it holds (run_prune_started): Verify reads the marker to understand
// a partial prune. The caller writes run.
func markPruneStarted(w *batch, run *backend.Run, holding PruneCounts, at int64) {
	w.emit(run, event.RunPruneStartedPayload{RunID: run.ID, Deleting: holding}, at)
}

// markPruned records that run's history was pruned, deleted counting what
// went (run_pruned). The caller writes run.
func markPruned(w *batch, run *backend.Run, deleted PruneCounts, at int64) {
	w.emit(run, event.RunPrunedPayload{RunID: run.ID, Deleted: deleted}, at)
}
