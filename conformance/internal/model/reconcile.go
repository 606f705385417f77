package model

// Recovery: reconciling prepared attempts, redispatch, the receipt-backed
// pass and explicit repair.

// ReconcileSummary sorts the prepared attempts one pass examined.
type ReconcileSummary struct {
	NeverDispatched, Recovered, RepairRequired, SafeReadOnly []string
}

// Reconcile is ReconcilePrepared for one run; lookup says whether the
// owner's ReceiptLookup is passed.
func (m *Model) Reconcile(runID string, auth *Authority, limit int, lookup bool) (ReconcileSummary, Err) {
	var sum ReconcileSummary
	run, ok := m.Runs[runID]
	if auth != nil && (!ok || verify(run, auth) != OK) {
		return sum, Stale
	}
	for _, att := range m.prepared(runID, limit) {
		switch {
		case att.Handoff == HandoffPending:
			sum.NeverDispatched = append(sum.NeverDispatched, att.Identity)
			continue
		case lookup:
			if r, ok := m.Held[att.Identity]; ok {
				if e := m.PersistReceipt(att.Key, r, auth); e != OK {
					return sum, e
				}
				sum.Recovered = append(sum.Recovered, att.Identity)
				continue
			}
		}
		if att.Effect == ReadOnly {
			sum.SafeReadOnly = append(sum.SafeReadOnly, att.Identity)
			continue
		}
		if e := verify(run, auth); e != OK {
			return sum, e
		}
		att.Status = AttemptRepairRequired
		if run.Status == RunRunning || run.Status == RunPaused {
			run.Status = RunRepairRequired
			m.reindex(run)
		}
		sum.RepairRequired = append(sum.RepairRequired, att.Identity)
	}
	return sum, OK
}

func (m *Model) prepared(runID string, limit int) []*Attempt {
	var out []*Attempt
	for _, a := range m.attemptsOf(runID) {
		if a.Status == AttemptPrepared && len(out) < limit {
			out = append(out, a)
		}
	}
	return out
}

// RedispatchSummary reports one Redispatch pass.
type RedispatchSummary struct{ Admitted, Skipped []string }

// Redispatch hands prepared attempts to the owner again with the same
// identity: never-dispatched ones (any effect) and read-only ones.
func (m *Model) Redispatch(runID string, auth *Authority, limit int, ownerFails bool) (RedispatchSummary, Err) {
	var sum RedispatchSummary
	run, ok := m.Runs[runID]
	if auth != nil && (!ok || verify(run, auth) != OK) {
		return sum, Stale
	}
	for _, att := range m.prepared(runID, limit) {
		if att.Receipt != "" || (att.Handoff != HandoffPending && att.Effect != ReadOnly) {
			sum.Skipped = append(sum.Skipped, att.Identity)
			continue
		}
		if e := verify(run, auth); e != OK {
			return sum, e
		}
		act := m.Activations[att.Key.ActivationKey]
		if act.Status != ActivationRunning || run.Status != RunRunning || run.Cancel {
			sum.Skipped = append(sum.Skipped, att.Identity)
			continue
		}
		att.Handoff = HandoffRecorded
		if ownerFails {
			m.Calls[att.Identity]++
			return sum, Owner
		}
		m.ownerAccept(att.Identity)
		att.Status = AttemptAdmitted
		att.Receipt = ReceiptOwner
		sum.Admitted = append(sum.Admitted, att.Identity)
	}
	return sum, OK
}

// PassOutcome is what a receipt-backed pass did with one attempt.
type PassOutcome struct {
	Identity   string
	Applied    string
	Status     string
	Unresolved bool
	// Failed: the owner failed to answer; nothing was applied to it.
	Failed bool
}

// ReceiptPass is the receipt-backed reconciliation pass over one run: it
// selects up to limit attempts that hold a receipt and are admitted,
// running or cancelling, earliest prepared first; asks the owner (answer)
// about each (those of a run whose cancellation is requested included);
// and applies every observation by Observe's rules,
// all or nothing. answer's false second result is an owner failure for
// that attempt: it is listed Failed, left as it was, and the others are
// applied. auth, when set, must be the run's authority.
func (m *Model) ReceiptPass(runID string, auth *Authority, limit int, answer func(identity string) (string, bool), now int64) ([]PassOutcome, Err) {
	run, ok := m.Runs[runID]
	if !ok {
		return nil, NotFound
	}
	if auth != nil && verify(run, auth) != OK {
		return nil, Stale
	}
	var sel []*Attempt
	for _, a := range m.attemptsOf(runID) {
		switch a.Status {
		case AttemptAdmitted, AttemptRunning, AttemptCancelling:
			if a.Receipt != "" && len(sel) < limit {
				sel = append(sel, a)
			}
		}
	}
	var out []PassOutcome
	for _, a := range sel {
		o := PassOutcome{Identity: a.Identity}
		if kind, ok := answer(a.Identity); ok {
			o.Applied = kind
		} else {
			o.Failed, o.Status = true, a.Status
		}
		out = append(out, o)
	}
	saved := m.clone()
	for i := range out {
		if out[i].Failed {
			continue
		}
		res, e := m.Observe(out[i].Identity, out[i].Applied, now)
		if e != OK {
			*m = *saved
			return nil, e
		}
		out[i].Status, out[i].Unresolved = res.Status, res.Unresolved
	}
	return out, OK
}

// Repair actions.
const (
	RepairSucceeded = "confirm_succeeded"
	RepairFailed    = "confirm_failed"
	RepairCancelled = "confirm_cancelled"
	RepairAbandon   = "abandon_for_explicit_retry"
)

// Repair resolves a mutating repair_required attempt.
func (m *Model) Repair(identity, action string, auth *Authority) Err {
	k, ok := m.byID[identity]
	if !ok {
		return NotFound
	}
	att, act, run := m.Attempts[k], m.Activations[k.ActivationKey], m.Runs[k.RunID]
	if e := verify(run, auth); e != OK {
		return e
	}
	if att.Status != AttemptRepairRequired || att.Effect != Mutating {
		return Ineligible
	}
	st, as, to := AttemptSucceeded, ActivationCompleted, RunRunning
	switch action {
	case RepairFailed:
		st, as, to = AttemptFailed, ActivationFailed, RunFailed
	case RepairCancelled:
		st, as = AttemptCancelled, ActivationCancelled
	case RepairAbandon:
		st, as, to = AttemptAbandoned, ActivationFailed, RunFailed
	}
	att.Status = st
	act.Status = as
	act.Output = action == RepairSucceeded
	m.memberSettled(run, act)
	m.resolveRepair(run, to)
	m.complete(run)
	return OK
}
