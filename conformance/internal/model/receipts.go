package model

// The handoff and receipt boundaries of the low-level admission path.

// Handoff records the handoff of a prepared attempt (0→1).
func (m *Model) Handoff(k AttemptKey, auth *Authority) Err {
	run, ok := m.Runs[k.RunID]
	if !ok {
		return NotFound
	}
	if e := verify(run, auth); e != OK {
		return e
	}
	att, ok := m.Attempts[k]
	act := m.Activations[k.ActivationKey]
	if !ok || att.Status != AttemptPrepared || act.Status != ActivationRunning || run.Status != RunRunning || run.Cancel {
		return Ineligible
	}
	if att.Handoff == HandoffRecorded {
		return Conflict
	}
	att.Handoff = HandoffRecorded
	return OK
}

// PersistReceipt commits a receipt of the given kind.
func (m *Model) PersistReceipt(k AttemptKey, receipt string, auth *Authority) Err {
	run, ok := m.Runs[k.RunID]
	if !ok {
		return NotFound
	}
	if e := verify(run, auth); e != OK {
		return e
	}
	att, ok := m.Attempts[k]
	if !ok {
		return NotFound
	}
	if att.Receipt != "" {
		switch att.Status {
		case AttemptAdmitted, AttemptRunning, AttemptCancelling, AttemptSiblingCancelling:
			if att.Receipt == receipt {
				return OK
			}
		}
		return Conflict
	}
	switch att.Status {
	case AttemptPrepared:
		att.Status = AttemptAdmitted
	case AttemptCancelling, AttemptSiblingCancelling:
	case AttemptRepairRequired:
		if att.Handoff != HandoffRecorded {
			return Conflict
		}
		att.Status = AttemptAdmitted
		att.Receipt = receipt
		m.resolveRepair(run, RunRunning)
	default:
		return Conflict
	}
	att.Receipt = receipt
	return OK
}
