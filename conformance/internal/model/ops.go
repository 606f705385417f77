package model

import "slices"

// ---- operations beyond admission: receipt-backed pass, allowance
// increase, inspection ----

// PassOutcome is what a receipt-backed pass did with one attempt.
type PassOutcome struct {
	Identity   string
	OwnerAsked bool
	Applied    string
	Status     string
	Unresolved bool
}

// ReceiptPass is the receipt-backed reconciliation pass over one run: it
// selects up to limit attempts that hold a receipt and are admitted,
// running or cancelling, earliest prepared first; asks the owner (answer)
// about each unless the run's cancellation is requested (then Cancelled is
// applied without asking); and applies every observation by Observe's rules,
// all or nothing. answer's false second result is an owner failure: the
// pass fails with Owner and applies nothing. auth, when set, must be the
// run's authority.
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
		o := PassOutcome{Identity: a.Identity, Applied: ObservedCancelled}
		if !run.Cancel {
			kind, ok := answer(a.Identity)
			if !ok {
				return nil, Owner
			}
			o.Applied, o.OwnerAsked = kind, true
		}
		out = append(out, o)
	}
	saved := m.clone()
	for i := range out {
		res, e := m.Observe(out[i].Identity, out[i].Applied, now)
		if e != OK {
			*m = *saved
			return nil, e
		}
		out[i].Status, out[i].Unresolved = res.Status, res.Unresolved
	}
	return out, OK
}

// clone deep-copies the durable state, so that an all-or-nothing operation
// can roll back.
func (m *Model) clone() *Model {
	c := &Model{F: m.F, Runs: map[string]*Run{}, Activations: map[ActivationKey]*Activation{}, Attempts: map[AttemptKey]*Attempt{},
		Schedules: map[ActivationKey]Schedule{}, Held: map[string]string{}, Calls: map[string]int{},
		byID: map[string]AttemptKey{}, childs: map[string]AttemptKey{}}
	for k, v := range m.Runs {
		r := *v
		r.Authority = cloneAuth(v.Authority)
		c.Runs[k] = &r
	}
	for k, v := range m.Activations {
		a := *v
		a.Def.Predecessors = slices.Clone(v.Def.Predecessors)
		c.Activations[k] = &a
	}
	for k, v := range m.Attempts {
		a := *v
		c.Attempts[k] = &a
	}
	for k, v := range m.Schedules {
		c.Schedules[k] = v
	}
	for k, v := range m.Held {
		c.Held[k] = v
	}
	for k, v := range m.Calls {
		c.Calls[k] = v
	}
	for k, v := range m.byID {
		c.byID[k] = v
	}
	for k, v := range m.childs {
		c.childs[k] = v
	}
	return c
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

// RunCounts is the bounded run summary's content the tier compares.
type RunCounts struct {
	Activations map[string]int
	Attempts    map[string]int
	Leases      int
	RunCap      int64
}

// Summary counts the run's activations and attempts by status and its
// held leases.
func (m *Model) Summary(runID string) (RunCounts, Err) {
	run, ok := m.Runs[runID]
	if !ok {
		return RunCounts{}, NotFound
	}
	out := RunCounts{Activations: map[string]int{}, Attempts: map[string]int{}, RunCap: run.Limits.NodeExecutionCap}
	for _, a := range m.actsOf(runID) {
		out.Activations[a.Status]++
	}
	for _, a := range m.attemptsOf(runID) {
		out.Attempts[a.Status]++
		if holdsLease(a.Status) && m.Activations[a.Key.ActivationKey].Def.Claim {
			out.Leases++
		}
	}
	return out, OK
}

// History returns the identities of the run's attempts in (prepared,
// identity) order, or its reverse.
func (m *Model) History(runID string, desc bool) []string {
	var out []string
	for _, a := range m.attemptsOf(runID) {
		out = append(out, a.Identity)
	}
	if desc {
		slices.Reverse(out)
	}
	return out
}

// Intent is what inspection reports of one attempt: its side effect and
// the receipt kind committed ("" = none).
func (m *Model) Intent(identity string) (effect, receipt string, e Err) {
	k, ok := m.byID[identity]
	if !ok {
		return "", "", NotFound
	}
	a := m.Attempts[k]
	return a.Effect, a.Receipt, OK
}
