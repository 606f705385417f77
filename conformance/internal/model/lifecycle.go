package model

// How a run ends: completion, cancellation finalisation up the composition
// tree, and leaving repair_required.

// terminal: a run in one of these statuses does no more work; a cancelling
// parent waits for its child runs to reach one.
func terminal(st string) bool {
	return st == RunCompleted || st == RunFailed || st == RunCancelled
}

// openChild reports whether a child run started by run is not terminal.
func (m *Model) openChild(run *Run) bool {
	for _, r := range m.Runs {
		if r.Parent == run.ID && !terminal(r.Status) {
			return true
		}
	}
	return false
}

// finalize: a run whose cancellation is requested becomes cancelled as soon
// as no active or repair_required attempt remains and every child run it
// started is terminal; then its parent may finalise in turn. A failed run
// stays failed.
func (m *Model) finalize(run *Run) {
	if m.finalizeOne(run) {
		m.settleParents(run)
	}
}

func (m *Model) finalizeOne(run *Run) bool {
	if !run.Cancel || terminal(run.Status) || m.counts(run).Active > 0 ||
		m.hasRepairRequired(run.ID) || m.openChild(run) {
		return false
	}
	for _, a := range m.actsOf(run.ID) {
		if a.Status == ActivationPending || a.Status == ActivationRunning || a.Status == ActivationWaiting {
			a.Status = ActivationCancelled
			a.Admissible = false
		}
	}
	run.Status = RunCancelled
	return true
}

// settleParents: a child run just became terminal; its parent chain
// finalises as far as it can.
func (m *Model) settleParents(child *Run) {
	for p := m.Runs[child.Parent]; p != nil && m.finalizeOne(p); p = m.Runs[p.Parent] {
	}
}

// complete: after every settlement (of an attempt, an activation or a retry
// schedule), a running or paused run with nothing open (no pending or
// running activation, no active or repair_required attempt, no retry
// schedule) is completed, whatever settled last, or failed when one of its
// activations failed for good.
func (m *Model) complete(run *Run) {
	if (run.Status != RunRunning && run.Status != RunPaused) || run.Cancel || m.counts(run).Active > 0 || m.hasRepairRequired(run.ID) {
		return
	}
	for k := range m.Schedules {
		if k.RunID == run.ID {
			return
		}
	}
	failed := false
	for _, a := range m.actsOf(run.ID) {
		if a.Status == ActivationPending || a.Status == ActivationRunning || a.Status == ActivationWaiting {
			return
		}
		failed = failed || a.Status == ActivationFailed
	}
	run.Status = RunCompleted
	if failed { // failed for good: no schedule is left
		run.Status = RunFailed
	}
	m.settleParents(run)
}

// startedChild reports whether the attempt is the parent attempt of a
// child run.
func (m *Model) startedChild(k AttemptKey) bool {
	for _, p := range m.childs {
		if p == k {
			return true
		}
	}
	return false
}

// resolveRepair: once no repair_required attempt remains, the run leaves
// repair_required for to.
func (m *Model) resolveRepair(run *Run, to string) {
	if run.Status != RunRepairRequired || m.hasRepairRequired(run.ID) {
		return
	}
	run.Status = to
	m.finalize(run)
	if run.Status == RunFailed {
		m.settleParents(run)
	}
	m.reindex(run)
}
