package model

import (
	"fmt"
	"slices"
	"strings"
)

// The comparison: View renders the durable state the tier compares
// against the adapter's records.

// View renders the durable state of the named runs (and what the owner
// holds for their attempts), one fact per line, in a fixed order. The tier
// renders the adapter's records with the same function (through FromRecords
// style views it builds), so equal strings mean equal states.
func (m *Model) View(runIDs []string) string {
	var v State
	for _, g := range m.Groups {
		if slices.Contains(runIDs, g.Controller.RunID) {
			v.Groups = append(v.Groups, GroupView{Controller: g.Controller, Size: len(g.Members), Max: g.Max, FailFast: g.FailFast, Retired: g.Retired, FanIn: g.FanIn})
		}
	}
	for _, id := range runIDs {
		r, ok := m.Runs[id]
		if !ok {
			continue
		}
		c := m.counts(r)
		rv := RunView{ID: r.ID, Root: r.Root, Parent: r.Parent, Depth: r.Depth, Status: r.Status,
			Cancel: r.Cancel, Limits: r.Limits, Exhausted: r.Exhausted, Counts: c}
		if r.Authority != nil {
			rv.Authority = fmt.Sprintf("%d:%s", r.Authority.Generation, r.Authority.Tag)
		}
		v.Runs = append(v.Runs, rv)
		for _, a := range m.actsOf(id) {
			v.Activations = append(v.Activations, ActivationView{Key: a.Def.Key, Status: a.Status, LastAttempt: a.LastAttempt,
				Admissible: a.Admissible, Output: a.Output, HasSuccessors: a.HasSuccessors})
			if s, ok := m.Schedules[a.Def.Key]; ok {
				v.Schedules = append(v.Schedules, ScheduleView{Key: a.Def.Key, Schedule: s})
			}
		}
		for _, a := range m.attemptsOf(id) {
			v.Attempts = append(v.Attempts, AttemptView{Key: a.Key, Status: a.Status, Handoff: a.Handoff, Effect: a.Effect,
				Receipt: a.Receipt, Calls: m.Calls[a.Identity], Held: m.Held[a.Identity] != ""})
			if holdsLease(a.Status) && m.Activations[a.Key.ActivationKey].Def.Claim {
				v.Leases = append(v.Leases, a.Key)
			}
		}
	}
	return v.String()
}

// State is a rendered durable state (see View).
type State struct {
	Runs        []RunView
	Activations []ActivationView
	Attempts    []AttemptView
	Schedules   []ScheduleView
	Leases      []AttemptKey
	Groups      []GroupView
}

// GroupView is one fan-out group in a State.
type GroupView struct {
	Controller        ActivationKey
	Size, Max         int
	FailFast, Retired bool
	FanIn             bool
}

// RunView is one run in a State.
type RunView struct {
	ID, Root, Parent string
	Depth            int
	Status           string
	Cancel           bool
	Authority        string
	Limits           Limits
	Exhausted        bool
	Counts           Counts
}

// ActivationView is one activation in a State.
type ActivationView struct {
	Key                               ActivationKey
	Status                            string
	LastAttempt                       uint32
	Admissible, Output, HasSuccessors bool
}

// AttemptView is one attempt in a State, with the owner's view of its identity.
type AttemptView struct {
	Key                              AttemptKey
	Status, Handoff, Effect, Receipt string
	Calls                            int
	Held                             bool
}

// ScheduleView is one schedule in a State.
type ScheduleView struct {
	Key ActivationKey
	Schedule
}

// String renders the state, sorted, one line per record.
func (s State) String() string {
	var lines []string
	for _, r := range s.Runs {
		lines = append(lines, fmt.Sprintf("run %s root=%s parent=%s depth=%d status=%s cancel=%v auth=%s limits=%+v exhausted=%v counts=%+v",
			r.ID, r.Root, r.Parent, r.Depth, r.Status, r.Cancel, r.Authority, r.Limits, r.Exhausted, r.Counts))
	}
	for _, a := range s.Activations {
		lines = append(lines, fmt.Sprintf("act %s status=%s last=%d admissible=%v output=%v successors=%v",
			a.Key, a.Status, a.LastAttempt, a.Admissible, a.Output, a.HasSuccessors))
	}
	for _, a := range s.Attempts {
		lines = append(lines, fmt.Sprintf("attempt %s status=%s handoff=%s effect=%s receipt=%s owner_calls=%d owner_holds=%v",
			a.Key, a.Status, a.Handoff, a.Effect, a.Receipt, a.Calls, a.Held))
	}
	for _, sc := range s.Schedules {
		lines = append(lines, fmt.Sprintf("schedule %s failed=%d next=%d backoff=%d due=%d",
			sc.Key, sc.FailedAttempt, sc.NextAttempt, sc.BackoffMS, sc.DueMS))
	}
	for _, l := range s.Leases {
		lines = append(lines, "lease "+l.String())
	}
	for _, g := range s.Groups {
		lines = append(lines, fmt.Sprintf("group %s size=%d max=%d fail_fast=%v retired=%v fan_in=%v", g.Controller, g.Size, g.Max, g.FailFast, g.Retired, g.FanIn))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}
