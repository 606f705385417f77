package model

import (
	"cmp"
	"slices"
	"strings"
)

// Cancellation: the intent (one run or a whole tree) and settling the
// attempts a cancelling run still has.

// RequestCancellation records the run's cancellation intent and returns its
// status afterwards.
func (m *Model) RequestCancellation(runID string, auth *Authority) (string, Err) {
	run, ok := m.Runs[runID]
	if !ok {
		return "", NotFound
	}
	if e := verify(run, auth); e != OK {
		return "", e
	}
	if run.Cancel {
		return run.Status, OK
	}
	switch run.Status {
	case RunRunning, RunPaused, RunRepairRequired:
	default:
		return run.Status, Ineligible
	}
	run.Cancel = true
	for _, a := range m.actsOf(runID) {
		if a.Status == ActivationPending || a.Status == ActivationWaiting {
			a.Status = ActivationCancelled
			a.Admissible = false
		}
	}
	m.finalize(run)
	return run.Status, OK
}

// RequestTreeCancellation records the cancellation intent on a composition
// root and every run of its tree that is neither completed nor cancelled
// (failed ones included: they stay failed and lose their retry schedules),
// cancels their pending and waiting activations, and finalises the
// quiescent ones deepest first. It returns the root's status.
func (m *Model) RequestTreeCancellation(rootID string, auth *Authority) (string, Err) {
	root, ok := m.Runs[rootID]
	if !ok {
		return "", NotFound
	}
	if e := verify(root, auth); e != OK {
		return "", e
	}
	if root.Root != root.ID {
		return root.Status, Ineligible
	}
	if !root.Cancel {
		switch root.Status {
		case RunRunning, RunPaused, RunRepairRequired, RunFailed:
		default:
			return root.Status, Ineligible
		}
	}
	var tree []*Run
	for _, r := range m.Runs {
		if r.Root == rootID {
			tree = append(tree, r)
		}
	}
	for _, r := range tree {
		if r.Cancel || r.Status == RunCompleted || r.Status == RunCancelled {
			continue
		}
		r.Cancel = true
		for _, a := range m.actsOf(r.ID) {
			if a.Status == ActivationPending || a.Status == ActivationWaiting {
				a.Status = ActivationCancelled
				a.Admissible = false
			}
		}
		if r.Status == RunFailed {
			for k := range m.Schedules {
				if k.RunID == r.ID {
					delete(m.Schedules, k) // a failed run stays failed and can never retry
				}
			}
		}
	}
	slices.SortFunc(tree, func(a, b *Run) int { return cmp.Or(cmp.Compare(b.Depth, a.Depth), strings.Compare(a.ID, b.ID)) })
	for _, r := range tree {
		m.finalizeOne(r)
	}
	return root.Status, OK
}

// MarkCancellationSignalled moves an active attempt of a cancelling run to
// cancelling.
func (m *Model) MarkCancellationSignalled(identity string) Err {
	k, ok := m.byID[identity]
	if !ok {
		return NotFound
	}
	att, run := m.Attempts[k], m.Runs[k.RunID]
	if att.Status == AttemptSiblingCancelling {
		return OK // the signal is recorded; the status stays
	}
	if !run.Cancel {
		return Ineligible
	}
	switch att.Status {
	case AttemptCancelling:
		return OK
	case AttemptPrepared, AttemptAdmitted, AttemptRunning:
	default:
		return Ineligible
	}
	att.Status = AttemptCancelling
	return OK
}

// CancelNeverDispatched cancels a provably never-dispatched attempt of a
// cancelling run.
func (m *Model) CancelNeverDispatched(identity string, auth *Authority) (bool, Err) {
	k, ok := m.byID[identity]
	if !ok {
		return false, NotFound
	}
	att, act, run := m.Attempts[k], m.Activations[k.ActivationKey], m.Runs[k.RunID]
	if att.Status != AttemptPrepared || att.Receipt != "" || att.Handoff != HandoffPending {
		return false, OK
	}
	if e := verify(run, auth); e != OK {
		return false, e
	}
	if !run.Cancel {
		return false, Ineligible
	}
	att.Status = AttemptCancelled
	act.Status = ActivationCancelled
	act.Admissible = false
	m.memberSettled(run, act)
	m.finalize(run)
	return true, OK
}

// SettleOrphanedCancellation settles an attempt of a cancelling run whose
// owner is gone, returning the run's status.
func (m *Model) SettleOrphanedCancellation(identity string) (string, Err) {
	k, ok := m.byID[identity]
	if !ok {
		return "", NotFound
	}
	att, act, run := m.Attempts[k], m.Activations[k.ActivationKey], m.Runs[k.RunID]
	if !run.Cancel {
		return run.Status, Ineligible
	}
	if !active(att.Status) || (att.Status == AttemptPrepared && att.Receipt == "" && att.Handoff == HandoffRecorded) {
		return run.Status, OK
	}
	if att.Effect == Mutating {
		att.Status = AttemptRepairRequired
		run.Status = RunRepairRequired
	} else {
		att.Status = AttemptCancelled
		act.Status = ActivationCancelled
		m.finalize(run)
	}
	return run.Status, OK
}
