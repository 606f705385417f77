package model

import "fmt"

// Fan-out groups: materialising members, promotion within the group's
// bound, settlement and retirement.

// AddFanOut materialises a group of n members of controller ctl, at most
// max pending or running at once; def is the members' shared definition
// (its key is ignored). With fanIn the controller, which must be pending
// with no attempt and not a member, waits and the store settles it.
func (m *Model) AddFanOut(ctl ActivationKey, n, max int, failFast, fanIn bool, def NewActivation) (bool, Err) {
	run, ok := m.Runs[ctl.RunID]
	if !ok {
		return false, NotFound
	}
	c, ok := m.Activations[ctl]
	if !ok {
		return false, NotFound
	}
	def.Key, def.Predecessors = ActivationKey{}, nil
	if old, ok := m.Groups[ctl]; ok {
		if len(old.Members) == n && old.Max == max && old.FailFast == failFast && old.FanIn == fanIn && old.Def.same(def) {
			return false, OK
		}
		return false, Conflict
	}
	if run.Status != RunRunning || run.Cancel {
		return false, Ineligible
	}
	if fanIn && (c.Status != ActivationPending || c.LastAttempt != 0 || c.Group != nil) {
		return false, Ineligible
	}
	g := &Group{Controller: ctl, Max: max, FailFast: failFast, FanIn: fanIn, Def: def}
	for i := range n {
		k := ActivationKey{RunID: ctl.RunID, NodeID: fmt.Sprintf("%s::member::%d", ctl.NodeID, i), ActivationID: m.F.MemberID(ctl.RunID, ctl.ActivationID, int64(i))}
		d := def
		d.Key = k
		a := &Activation{Def: d, Status: ActivationPending, Group: g, Index: i}
		if i >= max {
			a.Status = ActivationWaiting
		}
		a.Admissible = m.arrives(run, a)
		m.Activations[k] = a
		g.Members = append(g.Members, k)
	}
	m.Groups[ctl] = g
	if fanIn {
		c.Status, c.Admissible = ActivationWaiting, false
	}
	return true, OK
}

// decideFanIn settles the waiting controller of fan-in group g: failed at
// once by a fail-fast member's terminal failure (failing); otherwise, once
// every member has settled and none has a retry pending, completed when
// all completed, failed when one failed, cancelled otherwise.
func (m *Model) decideFanIn(g *Group, failing bool) {
	if !g.FanIn {
		return
	}
	c := m.Activations[g.Controller]
	if c.Status != ActivationWaiting {
		return
	}
	st := ActivationFailed
	if !failing {
		failed, completed := false, 0
		for _, k := range g.Members {
			a := m.Activations[k]
			if !terminalAct(a.Status) {
				return
			}
			if _, retrying := m.Schedules[k]; retrying && a.Status == ActivationFailed {
				return
			}
			failed = failed || a.Status == ActivationFailed
			if a.Status == ActivationCompleted {
				completed++
			}
		}
		switch {
		case failed:
		case completed == len(g.Members):
			st = ActivationCompleted
			c.Output = true
		default:
			st = ActivationCancelled
		}
	}
	c.Status, c.Admissible = st, false
}

// occupied counts the group's members pending or running.
func (m *Model) occupied(g *Group) int {
	n := 0
	for _, k := range g.Members {
		if s := m.Activations[k].Status; s == ActivationPending || s == ActivationRunning {
			n++
		}
	}
	return n
}

// promote moves waiting members to pending, lowest index first, while the
// group has a free place.
func (m *Model) promote(run *Run, g *Group) {
	for _, k := range g.Members {
		if m.occupied(g) >= g.Max {
			return
		}
		if a := m.Activations[k]; a.Status == ActivationWaiting {
			a.Status = ActivationPending
			a.Admissible = m.arrives(run, a)
		}
	}
}

func terminalAct(st string) bool {
	return st == ActivationCompleted || st == ActivationFailed || st == ActivationCancelled
}

// memberSettled: a member reached a terminal status. Waiting members take
// the freed place; a wait-all group whose members have all settled fails
// the run when any of them failed for good (no retry schedule pending).
func (m *Model) memberSettled(run *Run, act *Activation) {
	g := act.Group
	if g == nil {
		return
	}
	m.promote(run, g)
	defer m.decideFanIn(g, false)
	if g.FailFast {
		return
	}
	failed := false
	for _, k := range g.Members {
		st := m.Activations[k].Status
		if !terminalAct(st) {
			return
		}
		_, retrying := m.Schedules[k] // a pending retry may still succeed
		failed = failed || (st == ActivationFailed && !retrying)
	}
	if failed && (run.Status == RunRunning || run.Status == RunPaused) {
		run.Status = RunFailed
		m.reindex(run)
	}
}

// activationFailed: the activation failed (no automatic retry scheduled
// unless scheduled). A member of a fail-fast group stops its siblings.
func (m *Model) activationFailed(run *Run, act *Activation, scheduled bool) {
	g := act.Group
	switch {
	case g == nil || scheduled:
		m.memberSettled(run, act)
	case !g.FailFast:
		m.memberSettled(run, act)
		return
	default:
		for _, k := range g.Members {
			a := m.Activations[k]
			if a == act {
				continue
			}
			switch a.Status {
			case ActivationWaiting, ActivationPending:
				a.Status = ActivationCancelled
				a.Admissible = false
			case ActivationRunning:
				att := m.Attempts[AttemptKey{k, a.LastAttempt}]
				switch {
				case att == nil:
				case att.Status == AttemptPrepared && att.Receipt == "" && att.Handoff == HandoffPending:
					att.Status = AttemptCancelled
					a.Status = ActivationCancelled
				case att.Status == AttemptPrepared || att.Status == AttemptAdmitted || att.Status == AttemptRunning:
					att.Status = AttemptSiblingCancelling
				}
			}
		}
		g.Retired = true
		m.decideFanIn(g, true)
	}
	if run.Status == RunRunning || run.Status == RunPaused {
		// A repair_required run stays so until its repair is resolved.
		run.Status = RunFailed
	}
}
