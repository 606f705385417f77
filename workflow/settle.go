package workflow

import (
	"context"
	"slices"

	"github.com/wfstore/wfstore/backend"
)

// Transitions shared by observations, cancellation and repair. Each keeps
// the run's durable counters true and releases leases on settled statuses.

// setAttemptStatus moves att to st, adjusting run.ActiveCount and setting
// TerminalMS on settled statuses.
func setAttemptStatus(run *backend.Run, att *backend.Attempt, st AttemptStatus, at int64) {
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

// settleAttempt moves an attempt to a settled status and releases its
// leases; the caller writes att, act and run.
func settleAttempt(ctx context.Context, tx backend.ReadTx, w *batch, run *backend.Run, act backend.Activation, att *backend.Attempt, st AttemptStatus, at int64) error {
	setAttemptStatus(run, att, st, at)
	return releaseLeases(ctx, tx, w, act, att.Key, at)
}

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

// finalizeCancellation ends a run whose cancellation was requested once no
// attempt outside the settled statuses remains: the run becomes cancelled,
// its non-completed activations cancelled, and run_cancelled is appended.
func finalizeCancellation(ctx context.Context, tx backend.Tx, w *batch, run *backend.Run, at int64) error {
	if run.CancelRequestedMS == 0 || run.Status == backend.RunCancelled || run.ActiveCount > 0 {
		return nil
	}
	if blocked, err := hasAttemptIn(ctx, tx, w, run.ID, backend.AttemptRepairRequired); err != nil || blocked {
		return err
	}
	if err := cancelOpenActivations(ctx, tx, w, run.ID, at); err != nil {
		return err
	}
	run.Status = backend.RunCancelled
	run.UpdatedMS = at
	w.event(run, "run_cancelled", map[string]any{"run_id": run.ID}, at)
	return nil
}

// cancelOpenActivations cancels every activation of the run that is not
// completed, failed or already cancelled.
func cancelOpenActivations(ctx context.Context, tx backend.Tx, w *batch, runID string, at int64) error {
	return cancelActivations(ctx, tx, w, runID, at, backend.ActivationPending, backend.ActivationWaiting, backend.ActivationRunning)
}

// cancelActivations cancels the run's activations in any of statuses.
func cancelActivations(ctx context.Context, tx backend.Tx, w *batch, runID string, at int64, statuses ...ActivationStatus) error {
	return eachActivation(ctx, tx, w, runID, func(act backend.Activation) error {
		if slices.Contains(statuses, act.Status) {
			act.Status = backend.ActivationCancelled
			act.Admissible = false
			act.UpdatedMS = at
			w.replace(act)
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
func hasAttemptIn(ctx context.Context, tx backend.Tx, w *batch, runID string, st AttemptStatus) (bool, error) {
	if err := flush(ctx, tx, w); err != nil {
		return false, err
	}
	page, err := tx.Attempts(ctx, backend.AttemptQuery{RunID: runID, Status: st, Limit: 1})
	return len(page) > 0, err
}

// flush applies the batch's pending writes so later scans see them.
func flush(ctx context.Context, tx backend.Tx, w *batch) error {
	if len(w.writes) == 0 {
		return nil
	}
	err := tx.Apply(ctx, w.writes...)
	w.writes = w.writes[:0]
	return err
}

// settleRepairState returns a repair_required run to running once no
// repair_required attempt remains (after flushing w so the scan sees it).
func settleRepairState(ctx context.Context, tx backend.Tx, w *batch, run *backend.Run, at int64) error {
	return resolveRepair(ctx, tx, w, run, backend.RunRunning, at)
}

func resolveRepair(ctx context.Context, tx backend.Tx, w *batch, run *backend.Run, to RunStatus, at int64) error {
	if run.Status != backend.RunRepairRequired {
		return nil
	}
	if blocked, err := hasAttemptIn(ctx, tx, w, run.ID, backend.AttemptRepairRequired); err != nil || blocked {
		return err
	}
	run.Status = to
	run.UpdatedMS = at
	if err := finalizeCancellation(ctx, tx, w, run, at); err != nil {
		return err
	}
	return reindexRun(ctx, tx, w, *run)
}
