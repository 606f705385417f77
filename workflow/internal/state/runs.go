package state

import (
	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/event"
	"github.com/wfstore/wfstore/wftype"
)

// Run transitions of the state core (see doc.go).

// Completable reports whether run may complete as far as its own record
// tells: running or paused, no cancellation requested, no active attempt.
// Completion asks it before it reads anything.
func Completable(run backend.Run) bool {
	return (run.Status == backend.RunRunning || run.Status == backend.RunPaused) && run.CancelRequestedMS == 0 && run.ActiveCount == 0
}

// CompleteRun completes a running or paused run with no active attempt
// and no cancellation requested, appending run_completed; any other run is
// refused (wftype.ErrConflict). The caller has checked that nothing of the run is
// open any more, and writes run.
func CompleteRun(w *Batch, run *backend.Run, at int64) error {
	if !Completable(*run) {
		return Errorf(wftype.ErrConflict, "run %q is %s with %d active attempts: it cannot complete", run.ID, run.Status, run.ActiveCount)
	}
	run.Status = backend.RunCompleted
	run.UpdatedMS = at
	w.emit(run, event.RunCompletedPayload{RunID: run.ID}, at)
	return nil
}

// FailRun fails a running or paused run; any other status is kept (a
// repair_required run stays so until its repair resolves, and a run that
// ended stays ended). The caller writes run.
func FailRun(run *backend.Run) {
	if run.Status == backend.RunRunning || run.Status == backend.RunPaused {
		run.Status = backend.RunFailed
	}
}

// Cancellable reports whether run's requested cancellation may finalise as
// far as its own record tells: requested, the run not ended (a failed run
// stays failed), no active attempt. Finalisation asks it before it reads
// anything.
func Cancellable(run backend.Run) bool {
	if run.CancelRequestedMS == 0 || RunTerminal(run.Status) || run.ActiveCount > 0 {
		return false
	}
	return true
}

// CancelRun finalises a run whose cancellation is requested, that has not
// ended and has no active attempt: it becomes cancelled and run_cancelled
// is appended. Any other run is refused (wftype.ErrConflict). The caller has
// cancelled its open activations, and writes run.
func CancelRun(w *Batch, run *backend.Run, at int64) error {
	if !Cancellable(*run) {
		return Errorf(wftype.ErrConflict, "run %q is %s with %d active attempts: it cannot be cancelled", run.ID, run.Status, run.ActiveCount)
	}
	run.Status = backend.RunCancelled
	run.UpdatedMS = at
	w.emit(run, event.RunCancelledPayload{RunID: run.ID}, at)
	return nil
}

// HoldRunForRepair moves a run one of whose attempts became
// repair_required to repair_required; a completed or cancelled run (no
// attempt of it is open) is refused (wftype.ErrConflict). The caller writes run.
func HoldRunForRepair(run *backend.Run) error {
	if run.Status == backend.RunCompleted || run.Status == backend.RunCancelled {
		return Errorf(wftype.ErrConflict, "run %q is %s: it has no attempt to repair", run.ID, run.Status)
	}
	run.Status = backend.RunRepairRequired
	return nil
}

// ReleaseRunFromRepair moves a repair_required run, none of whose attempts
// is repair_required any more, to status to (running, or failed after a
// repair that failed its activation); a run not repair_required is refused
// (wftype.ErrConflict). The caller writes run.
func ReleaseRunFromRepair(run *backend.Run, to backend.RunStatus, at int64) error {
	if run.Status != backend.RunRepairRequired {
		return Errorf(wftype.ErrConflict, "run %q is %s, not repair_required", run.ID, run.Status)
	}
	run.Status = to
	run.UpdatedMS = at
	return nil
}

// GateRun pauses a running run (pause) or resumes a paused one, appending
// run_paused or run_resumed. A run already so is ErrNoop; a run with
// cancellation requested does not resume, and a run in any other status is
// refused (wftype.ErrIneligible). The caller writes run.
func GateRun(w *Batch, run *backend.Run, pause bool, at int64) error {
	from, to, ev := backend.RunRunning, backend.RunPaused, event.Payload(event.RunPausedPayload{RunID: run.ID})
	if !pause {
		from, to, ev = backend.RunPaused, backend.RunRunning, event.RunResumedPayload{RunID: run.ID}
		if run.CancelRequestedMS != 0 {
			return Errorf(wftype.ErrIneligible, "run %q has cancellation requested and cannot resume", run.ID)
		}
	}
	switch run.Status {
	case to:
		return ErrNoop
	case from:
	default:
		return Errorf(wftype.ErrIneligible, "run %q is %s", run.ID, run.Status)
	}
	run.Status = to
	run.UpdatedMS = at
	w.emit(run, ev, at)
	return nil
}

// PauseRunWithAttempt pauses a running run whose attempt reported a pause;
// a run in any other status keeps it. The caller writes run.
func PauseRunWithAttempt(run *backend.Run, at int64) {
	if run.Status == backend.RunRunning {
		run.Status = backend.RunPaused
		run.UpdatedMS = at
	}
}

// Reopenable refuses (wftype.ErrIneligible) a run a retry may not reopen: one not
// failed (or already reopened by a sibling's retry, running), or with
// cancellation requested. A retry asks it before anything else.
func Reopenable(run backend.Run) error {
	if (run.Status != backend.RunFailed && run.Status != backend.RunRunning) || run.CancelRequestedMS != 0 {
		return Errorf(wftype.ErrIneligible, "workflow run is not eligible for node retry (%s)", run.Status)
	}
	return nil
}

// ReopenRun returns a failed (or already reopened, running) run whose
// failed activation a retry requeues to running; a run in any other
// status, or with cancellation requested, is refused (wftype.ErrIneligible). The
// caller writes run.
func ReopenRun(run *backend.Run, at int64) error {
	if err := Reopenable(*run); err != nil {
		return err
	}
	run.Status = backend.RunRunning
	run.UpdatedMS = at
	return nil
}

// CreateRun inserts the new run (a root, or a child whose link the caller
// inserts) and appends run_created with p.
func CreateRun(w *Batch, run backend.Run, p event.RunCreatedPayload, at int64) {
	w.emit(&run, p, at)
	Insert(w, run)
	w.WorkArrives()
}

// RequestCancellation records that run's cancellation is requested
// (part of a tree's when rootID is set), appending cancellation_requested.
// A run whose cancellation was already requested, or that completed or was
// cancelled, is refused (wftype.ErrIneligible). The caller settles the run's
// unstarted work and writes run.
func RequestCancellation(w *Batch, run *backend.Run, rootID string, at int64) error {
	if run.CancelRequestedMS != 0 || run.Status == backend.RunCompleted || run.Status == backend.RunCancelled {
		return Errorf(wftype.ErrIneligible, "run %q is %s (cancellation requested at %d): its cancellation cannot be requested", run.ID, run.Status, run.CancelRequestedMS)
	}
	run.CancelRequestedMS = at
	run.UpdatedMS = at
	p := event.CancellationRequestedPayload{RunID: run.ID}
	if rootID != "" {
		p.RootRunID, p.Tree = rootID, true
	}
	w.emit(run, p, at)
	w.WorkArrives() // an engine has work to stop
	return nil
}

// TransferAuthority replaces run's authority, whose previous generation was
// prev, with next, appending authority_transferred. The caller has fenced
// the transfer on the current authority; a run that ended is refused
// (wftype.ErrIneligible). The caller writes run.
func TransferAuthority(w *Batch, run *backend.Run, prev int64, next backend.Authority, at int64) error {
	switch run.Status {
	case backend.RunRunning, backend.RunPaused, backend.RunRepairRequired:
	default:
		return Errorf(wftype.ErrIneligible, "run %q is %s; authority cannot be transferred", run.ID, run.Status)
	}
	run.Authority = &next
	run.UpdatedMS = at
	w.emit(run, event.AuthorityTransferredPayload{
		PreviousGeneration: prev, Generation: next.Generation, DaemonInstanceID: next.DaemonInstanceID,
	}, at)
	return nil
}

// IncreaseAllowance raises run's node execution cap from its current value
// to target, appending execution_allowance_increased. The caller has checked
// the run may still admit work and that the cap is the one it expected.
// The caller reindexes and writes run.
func IncreaseAllowance(w *Batch, run *backend.Run, target int64, at int64) {
	prev := run.Limits.NodeExecutionCap
	run.Limits.NodeExecutionCap = target
	run.UpdatedMS = at
	w.emit(run, event.ExecutionAllowanceIncreasedPayload{PreviousCap: prev, TargetCap: target}, at)
}

// RecordAllowanceExhausted marks run's execution allowance as spent once,
// appending its one execution_allowance_exhausted event; it reports whether
// this call recorded it (false: recorded before). The caller writes run.
func RecordAllowanceExhausted(w *Batch, run *backend.Run, at int64) bool {
	if run.ExhaustionRecorded {
		return false
	}
	run.ExhaustionRecorded = true
	w.emit(run, event.ExecutionAllowanceExhaustedPayload{Version: 1, AdditionalWorkAdmitted: false}, at)
	return true
}

// LinkChildRun admits parent's prepared attempt att, whose receipt (set
// by the caller) names the child run child, appending attempt_admitted and
// child_run_linked, and counts the child among the descendants of root (the
// tree's root run, which may be parent itself). The caller inserted child
// and its link, and writes parent and root.
func LinkChildRun(w *Batch, parent, root *backend.Run, att *backend.Attempt, child backend.Run, at int64) error {
	if err := AdmitAttempt(parent, att, at); err != nil {
		return err
	}
	att.AdmittedMS = at
	Replace(w, *att)
	emitDirect(w, parent, AdmittedPayload(att.Key, att.Identity, att.Receipt, at), at)
	w.emit(parent, event.ChildRunLinkedPayload{ChildRunID: child.ID, RootRunID: child.RootID, Depth: child.Depth}, at)
	if root.ID == parent.ID {
		parent.DescendantCount++
	} else {
		root.DescendantCount++
	}
	return nil
}

// MarkPruneStarted marks run, whose prune takes several transactions, with
// what it holds (run_prune_started): Verify reads the marker to understand
// a partial prune. The caller writes run.
func MarkPruneStarted(w *Batch, run *backend.Run, holding wftype.PruneCounts, at int64) {
	w.emit(run, event.RunPruneStartedPayload{RunID: run.ID, Deleting: holding}, at)
}

// MarkPruned records that run's history was pruned, deleted counting what
// went (run_pruned). The caller writes run.
func MarkPruned(w *Batch, run *backend.Run, deleted wftype.PruneCounts, at int64) {
	w.emit(run, event.RunPrunedPayload{RunID: run.ID, Deleted: deleted}, at)
}
