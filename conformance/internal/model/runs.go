package model

// Creating runs, activations and child runs.

// CreateRun creates a root run.
func (m *Model) CreateRun(id string, l Limits, auth *Authority) (bool, Err) {
	if old, ok := m.Runs[id]; ok {
		same := old.Parent == "" && old.Limits == l && ((old.Authority == nil) == (auth == nil)) && (auth == nil || *old.Authority == *auth)
		if same {
			return false, OK
		}
		return false, Conflict
	}
	m.Runs[id] = &Run{ID: id, Root: id, Depth: 1, Status: RunRunning, Limits: l, Authority: cloneAuth(auth)}
	return true, OK
}

// AddActivation adds a pending activation.
func (m *Model) AddActivation(na NewActivation) (bool, Err) {
	run, ok := m.Runs[na.Key.RunID]
	if !ok {
		return false, NotFound
	}
	if old, ok := m.Activations[na.Key]; ok {
		if old.Def.same(na) {
			return false, OK
		}
		return false, Conflict
	}
	if run.Status != RunRunning || run.Cancel {
		return false, Ineligible
	}
	for _, p := range na.Predecessors {
		if _, ok := m.Activations[p]; !ok {
			return false, NotFound
		}
	}
	for _, p := range na.WaitFor {
		if _, ok := m.Activations[p]; !ok {
			return false, NotFound
		}
	}
	for _, p := range na.Predecessors {
		m.Activations[p].HasSuccessors = true
	}
	a := &Activation{Def: na, Status: ActivationPending}
	for _, p := range na.WaitFor {
		if m.Activations[p].Status != ActivationCompleted {
			a.Status = ActivationWaiting
		}
	}
	a.Admissible = m.arrives(run, a)
	m.Activations[na.Key] = a
	m.SettleJoins()
	return true, OK
}

// CreateChildRun creates the child of a prepared parent attempt (target is
// the canonical target JSON) and admits the parent attempt.
func (m *Model) CreateChildRun(parent AttemptKey, target string) (string, bool, Err) {
	prun, ok := m.Runs[parent.RunID]
	if !ok {
		return "", false, NotFound
	}
	id := m.F.ChildID(prun.Root, parent.RunID, parent.ActivationID, parent.Attempt, target)
	if p, ok := m.childs[id]; ok {
		if p == parent {
			return id, false, OK
		}
		return id, false, Conflict
	}
	att, ok := m.Attempts[parent]
	act := m.Activations[parent.ActivationKey]
	if !ok || att.Status != AttemptPrepared || act == nil || act.Status != ActivationRunning {
		return id, false, Ineligible
	}
	if prun.Status != RunRunning || prun.Cancel {
		return id, false, Ineligible
	}
	root := m.root(prun)
	rc := m.counts(root)
	if rc.Tree >= root.Limits.NodeExecutionCap {
		return id, false, RootExhausted
	}
	if rc.Descendants >= 64 || prun.Depth+1 > 8 {
		return id, false, Ineligible
	}
	m.Runs[id] = &Run{ID: id, Root: root.ID, Parent: prun.ID, Depth: prun.Depth + 1, Status: RunRunning,
		Limits: prun.Limits, Authority: cloneAuth(prun.Authority)}
	m.childs[id] = parent
	att.Status = AttemptAdmitted
	att.Receipt = ReceiptChild
	return id, true, OK
}
