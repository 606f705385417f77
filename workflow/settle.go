package workflow

import (
	"context"
	"errors"
	"math"
	"slices"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/workflow/internal/state"
)

// memberSettled records that a fan-out member reached a terminal status:
// waiting members are promoted in index order into the freed place, and a
// wait-all group whose members have all settled fails the run when any of
// them failed.
func memberSettled(ctx context.Context, tx backend.Tx, w *batch, run *backend.Run, act backend.Activation, at int64) error {
	g, ok, err := loadGroup(ctx, tx, act)
	if err != nil || !ok {
		return err
	}
	return settleMember(ctx, tx, w, run, &g, at)
}

// finalizeCancellation ends a run whose cancellation was requested once it
// is quiescent: no attempt outside the settled statuses remains and every
// child run it started is terminal. The run becomes cancelled, its
// non-completed activations cancelled, and run_cancelled is appended; then
// its parent chain is finalised in the same transaction where it can be.
func finalizeCancellation(ctx context.Context, tx backend.Tx, w *batch, run *backend.Run, at int64) error {
	done, err := finalizeRun(ctx, tx, w, run, at)
	if err != nil || !done {
		return err
	}
	return settleParents(ctx, tx, w, run, at)
}

// finalizeRun is finalizeCancellation for run alone; it reports whether the
// run became cancelled. A failed run stays failed (tree cancellation gives
// it the intent only to stop its retries). The caller writes run.
func finalizeRun(ctx context.Context, tx backend.Tx, w *batch, run *backend.Run, at int64) (bool, error) {
	if !state.Cancellable(*run) {
		return false, nil
	}
	if blocked, err := hasAttemptIn(ctx, tx, w, run.ID, backend.AttemptRepairRequired); err != nil || blocked {
		return false, err
	}
	if open, err := hasOpenChildRun(ctx, tx, w, *run); err != nil || open {
		return false, err
	}
	if err := cancelOpenActivations(ctx, tx, w, run.ID, at); err != nil {
		return false, err
	}
	return true, state.CancelRun(w, run, at)
}

// settleParents is called once child reached a terminal status: it writes
// child, then finalises its parent if that parent's cancellation is
// requested and it is now quiescent, and so on up the chain (at most
// MaxRunDepth runs).
func settleParents(ctx context.Context, tx backend.Tx, w *batch, child *backend.Run, at int64) error {
	if child.ParentID == "" {
		return nil
	}
	state.Replace(w, *child)
	cur := *child
	for range MaxRunDepth {
		if cur.ParentID == "" {
			return nil
		}
		if err := flush(ctx, tx, w); err != nil {
			return err
		}
		f, err := tx.Load(ctx, backend.Lookup{Runs: []string{cur.ParentID}})
		if err != nil {
			return err
		}
		parent, ok := f.Runs[cur.ParentID]
		if !ok {
			return nil
		}
		done, err := finalizeRun(ctx, tx, w, &parent, at)
		if err != nil || !done {
			return err
		}
		state.Replace(w, parent)
		cur = parent
	}
	return nil
}

// completeSettledRuns evaluates completion for every run whose attempt,
// activation or retry schedule the transaction settled or removed (the
// batch notes each such write, whatever path made it), once the
// transaction's own decisions are made. It is the one place completion is
// decided, so no settlement path can skip it and the final status never
// depends on the order of observations. A completion is dated by the last
// event the transaction appended to the run.
func completeSettledRuns(ctx context.Context, tx backend.Tx, w *batch) error {
	for i := 0; i < len(w.Settled); i++ { // settling a parent may note more runs
		id := w.Settled[i]
		at := w.EventAt[id]
		if at == 0 {
			continue // nothing of the run changed status
		}
		run, ok := w.LastRun(id)
		if !ok {
			if err := flush(ctx, tx, w); err != nil {
				return err
			}
			f, err := tx.Load(ctx, backend.Lookup{Runs: []string{id}})
			if err != nil {
				return err
			}
			if run, ok = f.Runs[id]; !ok {
				continue
			}
		}
		done, err := completeIfSettled(ctx, tx, w, &run, at)
		if err != nil {
			return err
		}
		if done {
			state.Replace(w, run)
		}
	}
	w.Settled = w.Settled[:0]
	return nil
}

// completeIfSettled completes a running (or paused) run once nothing of it
// is open any more: no pending, waiting or running activation, no active
// or repair_required attempt and no retry schedule still to be consumed.
// The run becomes completed and run_completed is appended in the same
// transaction, or failed when one of its activations failed for good (a
// failure a sibling's retry or a repair left behind); a cancelling parent
// may then finalise. A run paused by
// PauseRun completes too: it has nothing left to admit, and would
// otherwise never complete. It reports whether the run ended; the caller
// writes run.
//
// It reads nothing while an attempt is active, and an indexed page of one
// admissible activation comes before any scan.
func completeIfSettled(ctx context.Context, tx backend.Tx, w *batch, run *backend.Run, at int64) (bool, error) {
	if !state.Completable(*run) {
		return false, nil
	}
	if err := flush(ctx, tx, w); err != nil {
		return false, err
	}
	if p, err := tx.AdmissibleActivations(ctx, backend.AdmissibleQuery{RunID: run.ID, Limit: 1}); err != nil || len(p) > 0 {
		return false, err
	}
	if blocked, err := hasAttemptIn(ctx, tx, w, run.ID, backend.AttemptRepairRequired); err != nil || blocked {
		return false, err
	}
	if due, err := tx.DueSchedules(ctx, backend.ScheduleQuery{RunID: run.ID, DueBy: math.MaxInt64, Limit: 1}); err != nil || len(due) > 0 {
		return false, err
	}
	open, failed := false, false
	err := eachActivation(ctx, tx, w, run.ID, func(act backend.Activation) error {
		switch act.Status {
		case backend.ActivationPending, backend.ActivationWaiting, backend.ActivationRunning:
			open = true
			return errStopScan
		case backend.ActivationFailed:
			failed = true
		}
		return nil
	})
	if err != nil && err != errStopScan {
		return false, err
	}
	if open {
		return false, nil
	}
	if failed {
		// An activation failed for good (no schedule is left to retry it)
		// while a sibling's retry had made the run running, or while it
		// was repair_required: the run ends failed, as it would had that
		// failure come last.
		run.UpdatedMS = at
		state.FailRun(run)
		return true, settleParents(ctx, tx, w, run, at)
	}
	if err := state.CompleteRun(w, run, at); err != nil {
		return false, err
	}
	return true, settleParents(ctx, tx, w, run, at)
}

// failedRunSettled lets a cancelling parent finalise once run has just
// failed (was is its status before).
func failedRunSettled(ctx context.Context, tx backend.Tx, w *batch, run *backend.Run, was backend.RunStatus, at int64) error {
	if was == backend.RunFailed || run.Status != backend.RunFailed {
		return nil
	}
	return settleParents(ctx, tx, w, run, at)
}

// errStopScan ends an eachActivation scan early.
var errStopScan = errors.New("workflow: stop scan")

// hasOpenChildRun reports whether a child run that run started is not yet
// terminal. It scans the links of run's composition root (at most
// MaxDescendants of them are ever created).
func hasOpenChildRun(ctx context.Context, tx backend.Tx, w *batch, run backend.Run) (bool, error) {
	if run.RootID == run.ID && run.DescendantCount == 0 {
		return false, nil
	}
	links, err := treeLinks(ctx, tx, w, run.RootID)
	if err != nil {
		return false, err
	}
	var ids []string
	for _, l := range links {
		if l.Parent.RunID == run.ID {
			ids = append(ids, l.ChildRunID)
		}
	}
	if len(ids) == 0 {
		return false, nil
	}
	f, err := tx.Load(ctx, backend.Lookup{Runs: ids})
	if err != nil {
		return false, err
	}
	for _, id := range ids {
		if c, ok := f.Runs[id]; ok && !state.RunTerminal(c.Status) {
			return true, nil
		}
	}
	return false, nil
}

// treeLinks returns every link of the composition root rootID in link
// order, after applying w's pending writes.
func treeLinks(ctx context.Context, tx backend.Tx, w *batch, rootID string) ([]backend.RunLink, error) {
	if err := flush(ctx, tx, w); err != nil {
		return nil, err
	}
	const page = 100
	q := backend.ChildRunQuery{RootRunID: rootID, Limit: page}
	var out []backend.RunLink
	for {
		links, err := tx.ChildRuns(ctx, q)
		if err != nil {
			return nil, err
		}
		out = append(out, links...)
		if len(links) < page {
			return out, nil
		}
		last := links[len(links)-1]
		q.After = backend.ChildRunCursor{CreatedMS: last.CreatedMS, ChildRunID: last.ChildRunID}
	}
}

// cancelOpenActivations cancels every activation of the run that is not
// completed, failed or already cancelled.
func cancelOpenActivations(ctx context.Context, tx backend.Tx, w *batch, runID string, at int64) error {
	return cancelActivations(ctx, tx, w, runID, at, backend.ActivationPending, backend.ActivationWaiting, backend.ActivationRunning)
}

// cancelActivations cancels the run's activations in any of statuses.
func cancelActivations(ctx context.Context, tx backend.Tx, w *batch, runID string, at int64, statuses ...backend.ActivationStatus) error {
	return eachActivation(ctx, tx, w, runID, func(act backend.Activation) error {
		if slices.Contains(statuses, act.Status) {
			return state.CancelActivation(w, &act, at)
		}
		return nil
	})
}

// eachActivation calls fn for every activation of the run, in key order,
// after applying w's pending writes so the scan sees them.
func eachActivation(ctx context.Context, tx backend.Tx, w *batch, runID string, fn func(backend.Activation) error) error {
	if err := flush(ctx, tx, w); err != nil {
		return err
	}
	const page = 500
	q := backend.ActivationQuery{RunID: runID, Limit: page}
	for {
		acts, err := tx.Activations(ctx, q)
		if err != nil {
			return err
		}
		for _, act := range acts {
			q.After = backend.NodeRef{NodeID: act.Key.NodeID, ActivationID: act.Key.ActivationID}
			if err := fn(act); err != nil {
				return err
			}
		}
		if len(acts) < page {
			return nil
		}
	}
}

// hasAttemptIn reports whether the run has an attempt in status st.
func hasAttemptIn(ctx context.Context, tx backend.Tx, w *batch, runID string, st backend.AttemptStatus) (bool, error) {
	if err := flush(ctx, tx, w); err != nil {
		return false, err
	}
	page, err := tx.Attempts(ctx, backend.AttemptQuery{RunID: runID, Status: st, Limit: 1})
	return len(page) > 0, err
}

// flush applies the batch's pending writes so later scans see them.
func flush(ctx context.Context, tx backend.Tx, w *batch) error {
	return w.Apply(ctx, tx)
}

// settleRepairState returns a repair_required run to running once no
// repair_required attempt remains (after flushing w so the scan sees it).
func settleRepairState(ctx context.Context, tx backend.Tx, w *batch, run *backend.Run, at int64) error {
	return resolveRepair(ctx, tx, w, run, backend.RunRunning, at)
}

func resolveRepair(ctx context.Context, tx backend.Tx, w *batch, run *backend.Run, to backend.RunStatus, at int64) error {
	if run.Status != backend.RunRepairRequired {
		return nil
	}
	if blocked, err := hasAttemptIn(ctx, tx, w, run.ID, backend.AttemptRepairRequired); err != nil || blocked {
		return err
	}
	if err := state.ReleaseRunFromRepair(run, to, at); err != nil {
		return err
	}
	if err := finalizeCancellation(ctx, tx, w, run, at); err != nil {
		return err
	}
	if run.Status == backend.RunFailed {
		if err := settleParents(ctx, tx, w, run, at); err != nil {
			return err
		}
	}
	return reindexRun(ctx, tx, w, *run)
}
