package model

// Operator controls on a run: authority transfer, pause and resume, and
// the allowance increase.

// TransferAuthority replaces the run's authority by compare-and-swap.
func (m *Model) TransferAuthority(runID string, expected, replacement Authority) Err {
	if replacement.Generation != expected.Generation+1 || replacement.Tag == expected.Tag {
		return Invalid
	}
	run, ok := m.Runs[runID]
	if !ok {
		return NotFound
	}
	if verify(run, &expected) != OK {
		return Stale
	}
	switch run.Status {
	case RunRunning, RunPaused, RunRepairRequired:
	default:
		return Ineligible
	}
	run.Authority = &replacement
	return OK
}

// Pause moves a running run to paused (a paused run: no-op).
func (m *Model) Pause(runID string, auth *Authority) Err { return m.gate(runID, auth, true) }

// Resume moves a paused run back to running.
func (m *Model) Resume(runID string, auth *Authority) Err { return m.gate(runID, auth, false) }

func (m *Model) gate(runID string, auth *Authority, pause bool) Err {
	run, ok := m.Runs[runID]
	if !ok {
		return NotFound
	}
	if e := verify(run, auth); e != OK {
		return e
	}
	from, to := RunRunning, RunPaused
	if !pause {
		from, to = RunPaused, RunRunning
		if run.Cancel {
			return Ineligible
		}
	}
	switch run.Status {
	case to:
		return OK
	case from:
	default:
		return Ineligible
	}
	run.Status = to
	m.reindex(run)
	return OK
}

// IncreaseAllowance raises the run's node cap from expected to target:
// target must exceed a positive expected (Invalid); the run must exist
// (NotFound); the authority must be the run's, nil exactly when it has none
// (Stale); the run must not be cancelled or cancelling (Ineligible); the
// stored cap must be expected (Conflict). Pending work whose exhaustion no
// longer holds is discoverable again, the root's descendants' too.
func (m *Model) IncreaseAllowance(runID string, expected, target int64, auth *Authority) Err {
	if expected <= 0 || target <= expected {
		return Invalid
	}
	run, ok := m.Runs[runID]
	if !ok {
		return NotFound
	}
	if (auth == nil) != (run.Authority == nil) || (auth != nil && *auth != *run.Authority) {
		return Stale
	}
	if run.Status == RunCancelled || run.Status == RunCompleted || run.Cancel {
		return Ineligible
	}
	if run.Limits.NodeExecutionCap != expected {
		return Conflict
	}
	run.Limits.NodeExecutionCap = target
	m.reindex(run)
	if run.Root == run.ID {
		for _, r := range m.Runs {
			if r.Root == run.ID && r.ID != run.ID {
				m.reindex(r)
			}
		}
	}
	return OK
}
