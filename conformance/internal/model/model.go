// Package model is a compact reference model of the wfstore Store semantics
// (docs/semantics.md and docs/guarantees.md), for the conformance
// suite's model tier. It imports nothing from workflow/ or backend/: state is
// plain Go maps, every operation is a method that returns its result and an
// error class, and View renders the durable state the tier compares against
// the adapter's records.
//
// The model is deliberately written from the rules, not from the Store's
// code: it derives counters (attempts, active attempts, tree attempts,
// descendants) and leases from the attempts instead of maintaining them, so
// a counter or lease the Store forgets to update shows up as a digest
// difference.
package model

import "slices"

// Err is an error class: which sentinel an error matches ("" for none).
type Err string

// Error classes (the workflow sentinels).
const (
	OK            Err = ""
	Invalid       Err = "invalid_input"
	NotFound      Err = "not_found"
	Conflict      Err = "conflict"
	Ineligible    Err = "ineligible"
	Stale         Err = "stale_authority"
	NodeExhausted Err = "node_allowance_exhausted"
	RootExhausted Err = "root_allowance_exhausted"
	Capacity      Err = "concurrency_capacity"
	Resource      Err = "resource_conflict"
	Owner         Err = "owner"
)

// Funcs are the identity derivations, supplied by the tier (the model does
// not reimplement the hashes).
type Funcs struct {
	Identity func(run, node, act string, attempt uint32) string
	ChildID  func(root, parentRun, parentAct string, attempt uint32, target string) string
	MemberID func(run, controllerAct string, index int64) string
}

// Model is the reference state: every run the tier created in one sequence,
// plus what the owner holds.
type Model struct {
	F           Funcs
	Runs        map[string]*Run
	Activations map[ActivationKey]*Activation
	Attempts    map[AttemptKey]*Attempt
	Schedules   map[ActivationKey]Schedule
	Groups      map[ActivationKey]*Group // by controller
	Held        map[string]string        // identity → receipt kind the owner holds
	Calls       map[string]int           // owner Dispatch calls by identity
	byID        map[string]AttemptKey
	childs      map[string]AttemptKey // child run id → parent attempt
}

// New returns an empty model.
func New(f Funcs) *Model {
	return &Model{F: f, Runs: map[string]*Run{}, Activations: map[ActivationKey]*Activation{}, Attempts: map[AttemptKey]*Attempt{},
		Schedules: map[ActivationKey]Schedule{}, Groups: map[ActivationKey]*Group{}, Held: map[string]string{}, Calls: map[string]int{},
		byID: map[string]AttemptKey{}, childs: map[string]AttemptKey{}}
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
		a.Def.WaitFor = slices.Clone(v.Def.WaitFor)
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
