package model

import (
	"cmp"
	"slices"
	"strings"
)

// Facts derived from the records rather than stored: counters, leases,
// admissibility, authority checks.

func active(st string) bool {
	switch st {
	case AttemptPrepared, AttemptAdmitted, AttemptRunning, AttemptCancelling, AttemptSiblingCancelling:
		return true
	}
	return false
}

func settled(st string) bool {
	switch st {
	case AttemptSucceeded, AttemptFailed, AttemptCancelled, AttemptPaused, AttemptAbandoned:
		return true
	}
	return false
}

// holdsLease: leases are taken at prepare and released on every settled
// status; repair_required keeps them.
func holdsLease(st string) bool { return active(st) || st == AttemptRepairRequired }

func (m *Model) attemptsOf(run string) []*Attempt {
	var out []*Attempt
	for k, a := range m.Attempts {
		if k.RunID == run {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(a, b *Attempt) int {
		return cmp.Or(cmp.Compare(a.Prepared, b.Prepared), strings.Compare(a.Identity, b.Identity))
	})
	return out
}

func (m *Model) actsOf(run string) []*Activation {
	var out []*Activation
	for k, a := range m.Activations {
		if k.RunID == run {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(a, b *Activation) int { return cmpKey(a.Def.Key, b.Def.Key) })
	return out
}

func cmpKey(a, b ActivationKey) int {
	return cmp.Or(strings.Compare(a.RunID, b.RunID), strings.Compare(a.NodeID, b.NodeID), strings.Compare(a.ActivationID, b.ActivationID))
}

// Counts are a run's derived counters.
type Counts struct{ Attempts, Active, Tree, Descendants int64 }

func (m *Model) counts(run *Run) Counts {
	var c Counts
	for k, a := range m.Attempts {
		if k.RunID == run.ID {
			c.Attempts++
			if active(a.Status) {
				c.Active++
			}
		}
		if r := m.Runs[k.RunID]; r != nil && r.Root == run.ID {
			c.Tree++
		}
	}
	for _, r := range m.Runs {
		if r.Root == run.ID && r.ID != run.ID {
			c.Descendants++
		}
	}
	if run.Root != run.ID {
		c.Tree, c.Descendants = 0, 0 // kept on the root only
	}
	return c
}

func (m *Model) root(run *Run) *Run { return m.Runs[run.Root] }

func verify(run *Run, want *Authority) Err {
	if want == nil {
		return OK
	}
	if run.Authority == nil || *run.Authority != *want {
		return Stale
	}
	return OK
}

func snapshotOK(run *Run, snap *Authority) bool {
	if run.Authority == nil || snap == nil {
		return run.Authority == nil && snap == nil
	}
	return *run.Authority == *snap
}

// admissible: discovery returns pending activations of a running run
// without cancellation whose recorded exhaustion (if any) no longer holds
// on the run's own counts: its attempts below its cap and, for a root, its
// tree's attempts below it too. (A child's root-wide exhaustion parks its
// activations when a dispatch meets it; see recordExhaustion.)
func (m *Model) admissible(run *Run, a *Activation) bool {
	return a.Status == ActivationPending && run.Status == RunRunning && !run.Cancel && !m.exhaustionHolds(run)
}

// arrives: an activation that becomes pending (added, a member created or
// promoted) enters the index when admissible or when only its run's
// exhaustion keeps it out; the next dispatch that meets it reports it
// exhausted and parks it.
func (m *Model) arrives(run *Run, a *Activation) bool {
	return a.Status == ActivationPending && run.Status == RunRunning && !run.Cancel
}

func (m *Model) exhaustionHolds(run *Run) bool {
	if !run.Exhausted {
		return false
	}
	c := m.counts(run)
	return c.Attempts >= run.Limits.NodeExecutionCap || (run.Root == run.ID && c.Tree >= run.Limits.NodeExecutionCap)
}

// reindex recomputes the pending index of a run's activations (what the
// Store does whenever a run's admissibility changes).
func (m *Model) reindex(run *Run) {
	for _, a := range m.actsOf(run.ID) {
		if a.Status == ActivationPending || a.Admissible {
			a.Admissible = m.admissible(run, a)
		}
	}
}

func (m *Model) hasRepairRequired(run string) bool {
	for k, a := range m.Attempts {
		if k.RunID == run && a.Status == AttemptRepairRequired {
			return true
		}
	}
	return false
}
