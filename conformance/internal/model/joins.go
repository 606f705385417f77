package model

import "slices"

// Joins, derived: a waiting join (an activation with WaitFor, not a
// fan-out member) becomes pending once every activation it waits for has
// completed, and is cancelled once one of them is cancelled or failed with
// no retry schedule left. The store decides this in the transaction that
// settles the activation; the model decides it after every operation,
// which gives the same state because completed and cancelled are final and
// a failed activation loses its schedule only to a retry (it is then no
// longer failed) or to a discard (which the store judges too).

// SettleJoins releases or cancels every join whose activations decide it,
// then evaluates the completion of each run a cancellation touched.
func (m *Model) SettleJoins() {
	for changed := true; changed; {
		changed = false
		for _, k := range m.sortedActivationKeys() {
			a := m.Activations[k]
			if a.Status != ActivationWaiting || a.Group != nil || len(a.Def.WaitFor) == 0 {
				continue
			}
			all, dead := true, false
			for _, p := range a.Def.WaitFor {
				pa := m.Activations[p]
				_, scheduled := m.Schedules[p]
				all = all && pa.Status == ActivationCompleted
				dead = dead || pa.Status == ActivationCancelled || (pa.Status == ActivationFailed && !scheduled)
			}
			run := m.Runs[k.RunID]
			switch {
			case dead:
				a.Status, a.Admissible = ActivationCancelled, false
				m.complete(run)
			case all:
				a.Status = ActivationPending
				a.Admissible = m.arrives(run, a)
			default:
				continue
			}
			changed = true
		}
	}
}

// awaited reports whether a join waits for k.
func (m *Model) awaited(k ActivationKey) bool {
	for _, a := range m.Activations {
		if slices.Contains(a.Def.WaitFor, k) {
			return true
		}
	}
	return false
}

func (m *Model) sortedActivationKeys() []ActivationKey {
	keys := make([]ActivationKey, 0, len(m.Activations))
	for k := range m.Activations {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, cmpKey)
	return keys
}
