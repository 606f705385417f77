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

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

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

// Run statuses.
const (
	RunRunning        = "running"
	RunPaused         = "paused"
	RunFailed         = "failed"
	RunRepairRequired = "repair_required"
	RunCancelled      = "cancelled"
	RunCompleted      = "completed"
)

// Activation statuses.
const (
	ActivationPending   = "pending"
	ActivationRunning   = "running"
	ActivationCompleted = "completed"
	ActivationFailed    = "failed"
	ActivationCancelled = "cancelled"
	ActivationWaiting   = "waiting" // a fan-out member held back by its group's concurrency
)

// Attempt statuses.
const (
	AttemptPrepared          = "prepared"
	AttemptAdmitted          = "admitted"
	AttemptRunning           = "running"
	AttemptSucceeded         = "succeeded"
	AttemptFailed            = "failed"
	AttemptPaused            = "paused"
	AttemptCancelled         = "cancelled"
	AttemptCancelling        = "cancelling"
	AttemptSiblingCancelling = "sibling_cancelling"
	AttemptRepairRequired    = "repair_required"
	AttemptAbandoned         = "abandoned"
)

// Effects and reconciliation classes.
const (
	ReadOnly         = "read_only"
	Mutating         = "mutating"
	IdempotentReplay = "idempotent_replay"
	ReceiptStatus    = "receipt_status"
	RepairRequired   = "repair_required"
)

// Handoff states.
const (
	HandoffPending  = "pending"
	HandoffRecorded = "recorded"
)

// Receipt kinds kept on an attempt ("" = none).
const (
	ReceiptOwner = "owner" // the owner's receipt for the identity
	ReceiptOther = "other" // a different receipt supplied by a caller
	ReceiptChild = "child" // the synthetic receipt of a child-run admission
)

// Funcs are the identity derivations, supplied by the tier (the model does
// not reimplement the hashes).
type Funcs struct {
	Identity func(run, node, act string, attempt uint32) string
	ChildID  func(root, parentRun, parentAct string, attempt uint32, target string) string
	MemberID func(run, controllerAct string, index int64) string
}

// Limits of a run, as stored: no zero caps, but RetryCap may be 0 (no
// automatic retry, no explicit retry).
type Limits struct {
	NodeExecutionCap, ConcurrencyCap, CycleCap, RetryCap int64
}

// Authority is an execution authority.
type Authority struct {
	Generation int64
	Tag        string
}

// ActivationKey names an activation.
type ActivationKey struct{ RunID, NodeID, ActivationID string }

func (k ActivationKey) String() string { return k.RunID + "/" + k.NodeID + "/" + k.ActivationID }

// AttemptKey names an attempt.
type AttemptKey struct {
	ActivationKey
	Attempt uint32
}

func (k AttemptKey) String() string { return fmt.Sprintf("%s#%d", k.ActivationKey, k.Attempt) }

// Policy is an automatic-retry policy (version 1).
type Policy struct {
	MaxAttempts                      uint32
	Retryable, Unavailable           bool // eligible failures
	InitialMS, Multiplier, MaximumMS int64
}

// NewActivation describes an activation to add.
type NewActivation struct {
	Key            ActivationKey
	Effect         string
	Reconciliation string
	Policy         *Policy
	Claim          bool            // a write claim on the run's resource "res"
	Predecessors   []ActivationKey // predecessors (same run)
}

func (a NewActivation) same(b NewActivation) bool {
	pe := (a.Policy == nil) == (b.Policy == nil) && (a.Policy == nil || *a.Policy == *b.Policy)
	return a.Effect == b.Effect && a.Reconciliation == b.Reconciliation && a.Claim == b.Claim && pe && slices.Equal(a.Predecessors, b.Predecessors)
}

// Run is a run's durable state.
type Run struct {
	ID, Root, Parent string
	Depth            int
	Status           string
	Cancel           bool
	Authority        *Authority
	Limits           Limits
	Exhausted        bool // the one execution_allowance_exhausted event was written
}

// Activation is an activation's durable state.
type Activation struct {
	Def           NewActivation
	Status        string
	LastAttempt   uint32
	Admissible    bool
	Output        bool
	HasSuccessors bool
	Group         *Group // the fan-out group of a member, nil otherwise
	Index         int    // a member's index
}

// Group is a fan-out group: its members, by index, share one definition.
// Its accounting is derived from the members' statuses.
type Group struct {
	Controller ActivationKey
	Members    []ActivationKey
	Max        int
	FailFast   bool
	Retired    bool // a fail-fast failure stopped the group
	Def        NewActivation
}

// Attempt is an attempt's durable state.
type Attempt struct {
	Key      AttemptKey
	Identity string
	Status   string
	Handoff  string
	Effect   string
	Receipt  string
	Prepared int64 // ms
}

// Schedule is an automatic retry schedule.
type Schedule struct {
	FailedAttempt, NextAttempt uint32
	BackoffMS                  int64
	DueMS                      int64
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

// ---- derived facts ----

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

// terminal: a run in one of these statuses does no more work; a cancelling
// parent waits for its child runs to reach one.
func terminal(st string) bool {
	return st == RunCompleted || st == RunFailed || st == RunCancelled
}

// openChild reports whether a child run started by run is not terminal.
func (m *Model) openChild(run *Run) bool {
	for _, r := range m.Runs {
		if r.Parent == run.ID && !terminal(r.Status) {
			return true
		}
	}
	return false
}

// finalize: a run whose cancellation is requested becomes cancelled as soon
// as no active or repair_required attempt remains and every child run it
// started is terminal; then its parent may finalise in turn.
func (m *Model) finalize(run *Run) {
	if m.finalizeOne(run) {
		m.settleParents(run)
	}
}

func (m *Model) finalizeOne(run *Run) bool {
	if !run.Cancel || run.Status == RunCancelled || run.Status == RunCompleted || m.counts(run).Active > 0 ||
		m.hasRepairRequired(run.ID) || m.openChild(run) {
		return false
	}
	for _, a := range m.actsOf(run.ID) {
		if a.Status == ActivationPending || a.Status == ActivationRunning || a.Status == ActivationWaiting {
			a.Status = ActivationCancelled
			a.Admissible = false
		}
	}
	run.Status = RunCancelled
	return true
}

// settleParents: a child run just became terminal; its parent chain
// finalises as far as it can.
func (m *Model) settleParents(child *Run) {
	for p := m.Runs[child.Parent]; p != nil && m.finalizeOne(p); p = m.Runs[p.Parent] {
	}
}

// complete: after an activation completes, a running or paused run with
// nothing open (no pending or running activation, no active or
// repair_required attempt, no retry schedule) is completed.
func (m *Model) complete(run *Run) {
	if (run.Status != RunRunning && run.Status != RunPaused) || run.Cancel || m.counts(run).Active > 0 || m.hasRepairRequired(run.ID) {
		return
	}
	for k := range m.Schedules {
		if k.RunID == run.ID {
			return
		}
	}
	for _, a := range m.actsOf(run.ID) {
		if a.Status == ActivationPending || a.Status == ActivationRunning {
			return
		}
	}
	run.Status = RunCompleted
	m.settleParents(run)
}

// startedChild reports whether the attempt is the parent attempt of a
// child run.
func (m *Model) startedChild(k AttemptKey) bool {
	for _, p := range m.childs {
		if p == k {
			return true
		}
	}
	return false
}

// resolveRepair: once no repair_required attempt remains, the run leaves
// repair_required for to.
func (m *Model) resolveRepair(run *Run, to string) {
	if run.Status != RunRepairRequired || m.hasRepairRequired(run.ID) {
		return
	}
	run.Status = to
	m.finalize(run)
	if run.Status == RunFailed {
		m.settleParents(run)
	}
	m.reindex(run)
}

// ---- runs and activations ----

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

func cloneAuth(a *Authority) *Authority {
	if a == nil {
		return nil
	}
	c := *a
	return &c
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
	for _, p := range na.Predecessors {
		m.Activations[p].HasSuccessors = true
	}
	a := &Activation{Def: na, Status: ActivationPending}
	a.Admissible = m.admissible(run, a)
	m.Activations[na.Key] = a
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

// ---- fan-out ----

// AddFanOut materialises a group of n members of controller ctl, at most
// max pending or running at once; def is the members' shared definition
// (its key is ignored).
func (m *Model) AddFanOut(ctl ActivationKey, n, max int, failFast bool, def NewActivation) (bool, Err) {
	run, ok := m.Runs[ctl.RunID]
	if !ok {
		return false, NotFound
	}
	if _, ok := m.Activations[ctl]; !ok {
		return false, NotFound
	}
	def.Key, def.Predecessors = ActivationKey{}, nil
	if old, ok := m.Groups[ctl]; ok {
		if len(old.Members) == n && old.Max == max && old.FailFast == failFast && old.Def.same(def) {
			return false, OK
		}
		return false, Conflict
	}
	if run.Status != RunRunning || run.Cancel {
		return false, Ineligible
	}
	g := &Group{Controller: ctl, Max: max, FailFast: failFast, Def: def}
	for i := range n {
		k := ActivationKey{RunID: ctl.RunID, NodeID: fmt.Sprintf("%s::member::%d", ctl.NodeID, i), ActivationID: m.F.MemberID(ctl.RunID, ctl.ActivationID, int64(i))}
		d := def
		d.Key = k
		a := &Activation{Def: d, Status: ActivationPending, Group: g, Index: i}
		if i >= max {
			a.Status = ActivationWaiting
		}
		a.Admissible = m.admissible(run, a)
		m.Activations[k] = a
		g.Members = append(g.Members, k)
	}
	m.Groups[ctl] = g
	return true, OK
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
			a.Admissible = m.admissible(run, a)
		}
	}
}

func terminalAct(st string) bool {
	return st == ActivationCompleted || st == ActivationFailed || st == ActivationCancelled
}

// memberSettled: a member reached a terminal status. Waiting members take
// the freed place; a wait-all group whose members have all settled fails
// the run when any of them failed.
func (m *Model) memberSettled(run *Run, act *Activation) {
	g := act.Group
	if g == nil {
		return
	}
	m.promote(run, g)
	if g.FailFast {
		return
	}
	failed := false
	for _, k := range g.Members {
		st := m.Activations[k].Status
		if !terminalAct(st) {
			return
		}
		failed = failed || st == ActivationFailed
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
	}
	if run.Status == RunRunning || run.Status == RunPaused {
		// A repair_required run stays so until its repair is resolved.
		run.Status = RunFailed
	}
}

// ---- dispatch ----

// OwnerMode is how the owner behaves in one Dispatch or Redispatch.
type OwnerMode int

// Owner modes.
const (
	OwnerOK OwnerMode = iota
	OwnerUnsupported
	OwnerPlanError
	OwnerDispatchError // refuses before accepting: holds nothing
	FaultIntent        // fault hook fails at IntentCommitted
	FaultAccepted      // fault hook fails at OwnerAccepted (the owner holds the receipt)
	FaultReceipt       // fault hook fails at ReceiptCommitted
)

// Summary is a Dispatch summary.
type Summary struct {
	Admitted    []string
	Unsupported []ActivationKey
	Raced       []ActivationKey
	Exhausted   []ActivationKey
	Rejected    []ActivationKey
}

// Dispatch runs one Dispatch restricted to runID. owned, when set, is the
// owned-dispatch authority.
func (m *Model) Dispatch(runID string, limit int, mode OwnerMode, owned *Authority, now int64) (Summary, Err) {
	var sum Summary
	run, ok := m.Runs[runID]
	if owned != nil && (!ok || verify(run, owned) != OK) {
		return sum, Stale
	}
	if !ok {
		return sum, OK
	}
	// Discovery: admissible activations in key order; a run without
	// concurrency room contributes its next one as raced and stops, unless
	// a check that comes before capacity (retry cap, node allowance, root
	// allowance, counting the activations already taken) refuses that
	// activation first: then it is taken like any other.
	type cand struct {
		act  *Activation
		full bool
	}
	var cands []cand
	c0 := m.counts(run)
	room := run.Limits.ConcurrencyCap - c0.Active
	attempts, tree := c0.Attempts, m.counts(m.root(run)).Tree
	for _, a := range m.actsOf(runID) {
		if len(cands) >= limit {
			break
		}
		if !a.Admissible {
			continue
		}
		refused := int64(a.LastAttempt+1) > run.Limits.RetryCap+1 || attempts >= run.Limits.NodeExecutionCap ||
			tree >= m.root(run).Limits.NodeExecutionCap
		if refused {
			cands = append(cands, cand{a, false})
			continue
		}
		if room <= 0 {
			cands = append(cands, cand{a, true})
			break
		}
		room--
		attempts++
		tree++
		cands = append(cands, cand{a, false})
	}
	snap := cloneAuth(run.Authority)
	for _, c := range cands {
		k := c.act.Def.Key
		if c.full {
			sum.Raced = append(sum.Raced, k)
			continue
		}
		switch mode {
		case OwnerUnsupported:
			sum.Unsupported = append(sum.Unsupported, k)
			continue
		case OwnerPlanError:
			return sum, Owner
		}
		check := func() Err {
			if owned != nil {
				return verify(run, owned)
			}
			if !snapshotOK(run, snap) {
				return Stale
			}
			return OK
		}
		att, e := m.prepare(run, c.act, check, now)
		switch e {
		case OK:
		case Capacity, Resource:
			sum.Raced = append(sum.Raced, k)
			continue
		case NodeExhausted, RootExhausted:
			m.recordExhaustion(run)
			sum.Exhausted = append(sum.Exhausted, k)
			continue
		case Ineligible:
			c.act.Admissible = false // parked
			sum.Rejected = append(sum.Rejected, k)
			continue
		default:
			return sum, e
		}
		if att == nil {
			sum.Raced = append(sum.Raced, k)
			continue
		}
		if mode == FaultIntent {
			return sum, Owner
		}
		att.Handoff = HandoffRecorded
		if mode == OwnerDispatchError {
			m.Calls[att.Identity]++
			return sum, Owner
		}
		m.ownerAccept(att.Identity)
		if mode == FaultAccepted {
			return sum, Owner
		}
		att.Status = AttemptAdmitted
		att.Receipt = ReceiptOwner
		if mode == FaultReceipt {
			return sum, Owner
		}
		sum.Admitted = append(sum.Admitted, att.Identity)
	}
	return sum, OK
}

func (m *Model) ownerAccept(identity string) {
	m.Calls[identity]++
	m.Held[identity] = ReceiptOwner
}

// prepare is the single-winner gate for one activation (nil: not
// admissible now).
func (m *Model) prepare(run *Run, act *Activation, check func() Err, now int64) (*Attempt, Err) {
	if e := check(); e != OK {
		return nil, e
	}
	if act.Status != ActivationPending || run.Status != RunRunning || run.Cancel {
		return nil, OK
	}
	n := act.LastAttempt + 1
	k := AttemptKey{act.Def.Key, n}
	if act.Def.Claim {
		for ak, a := range m.Attempts {
			if ak.RunID == run.ID && ak != k && holdsLease(a.Status) && m.Activations[ak.ActivationKey].Def.Claim {
				return nil, Resource
			}
		}
	}
	if int64(n) > run.Limits.RetryCap+1 {
		return nil, Ineligible
	}
	c := m.counts(run)
	if c.Attempts >= run.Limits.NodeExecutionCap {
		return nil, NodeExhausted
	}
	root := m.root(run)
	if m.counts(root).Tree >= root.Limits.NodeExecutionCap {
		return nil, RootExhausted
	}
	if c.Active >= run.Limits.ConcurrencyCap {
		return nil, Capacity
	}
	act.Status = ActivationRunning
	act.Admissible = false
	act.LastAttempt = n
	id := m.F.Identity(k.RunID, k.NodeID, k.ActivationID, n)
	att := &Attempt{Key: k, Identity: id, Status: AttemptPrepared, Handoff: HandoffPending, Effect: act.Def.Effect, Prepared: now}
	m.Attempts[k] = att
	m.byID[id] = k
	return att, OK
}

// recordExhaustion: a confirmed exhaustion writes the run's one exhaustion
// event the first time (Exhausted) and, every time, parks the run's
// admissible activations.
func (m *Model) recordExhaustion(run *Run) {
	root := m.root(run)
	local := m.counts(run).Attempts >= run.Limits.NodeExecutionCap
	tree := m.counts(root).Tree >= root.Limits.NodeExecutionCap
	if !local && !tree {
		return
	}
	run.Exhausted = true
	for _, a := range m.actsOf(run.ID) {
		a.Admissible = false
	}
}

// ---- handoff and receipts ----

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

// ---- observations ----

// Observation kinds.
const (
	ObservedAdmitted         = "admitted"
	ObservedRunning          = "running"
	ObservedDeferred         = "deferred"
	ObservedSucceeded        = "succeeded"
	ObservedFailed           = "failed"
	ObservedRetryableFailure = "retryable_failure"
	ObservedPaused           = "paused"
	ObservedCancelled        = "cancelled"
	ObservedUnknown          = "unknown"
)

// ObsResult is what an observation did.
type ObsResult struct {
	Status   string
	Schedule *Schedule
	// NotScheduled is why a retryable failure scheduled nothing: "no_policy",
	// "failure_kind_not_admitted", "ineligible/<decision reason>" or
	// "schedule_exists"; empty otherwise.
	NotScheduled string
	Unresolved   bool
}

func compatible(st, kind string) bool {
	switch kind {
	case ObservedAdmitted, ObservedRunning, ObservedDeferred:
		return true
	case ObservedSucceeded:
		return st == AttemptSucceeded
	case ObservedFailed, ObservedRetryableFailure:
		return st == AttemptFailed
	case ObservedPaused:
		return st == AttemptPaused
	case ObservedCancelled:
		return st == AttemptCancelled
	case ObservedUnknown:
		return st == AttemptRepairRequired
	}
	return false
}

// Observe applies an owner observation to an attempt (by identity).
func (m *Model) Observe(identity, kind string, now int64) (ObsResult, Err) {
	k, ok := m.byID[identity]
	if !ok {
		return ObsResult{}, NotFound
	}
	att, act, run := m.Attempts[k], m.Activations[k.ActivationKey], m.Runs[k.RunID]
	res := ObsResult{Status: att.Status}
	if settled(att.Status) || att.Status == AttemptRepairRequired {
		if compatible(att.Status, kind) {
			return res, OK
		}
		return res, Conflict
	}
	if att.Receipt == "" {
		return res, Ineligible
	}
	if run.Cancel && (kind == ObservedAdmitted || kind == ObservedRunning) && att.Receipt == ReceiptChild && m.startedChild(k) {
		// The owner settles the child run first.
		att.Status = AttemptCancelling
		res.Status = att.Status
		return res, OK
	}
	if run.Cancel || att.Status == AttemptSiblingCancelling {
		kind = ObservedCancelled
	}
	was := run.Status
	switch kind {
	case ObservedAdmitted, ObservedRunning:
		att.Status = map[string]string{ObservedAdmitted: AttemptAdmitted, ObservedRunning: AttemptRunning}[kind]
	case ObservedDeferred:
	case ObservedSucceeded:
		att.Status = AttemptSucceeded
		act.Status = ActivationCompleted
		act.Output = true
		m.memberSettled(run, act)
		m.complete(run)
	case ObservedFailed, ObservedRetryableFailure:
		if kind == ObservedRetryableFailure {
			// The failure always settles. A different schedule left for an
			// earlier attempt is replaced; one for this attempt is kept.
			s, why := m.retrySchedule(run, act, k.Attempt, now)
			old, had := m.Schedules[k.ActivationKey]
			switch {
			case why != "":
				res.NotScheduled = why
			case had && old != s && old.FailedAttempt >= k.Attempt:
				res.NotScheduled = "schedule_exists"
			default:
				m.Schedules[k.ActivationKey] = s
				res.Schedule = &s
			}
		}
		att.Status = AttemptFailed
		act.Status = ActivationFailed
		m.activationFailed(run, act, res.Schedule != nil)
		m.reindex(run)
	case ObservedPaused:
		att.Status = AttemptPaused
		act.Status = ActivationPending
		if run.Status == RunRunning {
			run.Status = RunPaused
		}
		m.reindex(run)
	case ObservedCancelled:
		att.Status = AttemptCancelled
		act.Status = ActivationCancelled
		act.Admissible = false
		m.memberSettled(run, act)
		m.finalize(run)
	case ObservedUnknown:
		if att.Effect == ReadOnly {
			res.Unresolved = true
			return res, OK
		}
		att.Status = AttemptRepairRequired
		run.Status = RunRepairRequired
		m.reindex(run)
	}
	if was != RunFailed && run.Status == RunFailed {
		m.settleParents(run)
	}
	res.Status = att.Status
	return res, OK
}

// retrySchedule decides an observation-driven automatic retry (the decision
// table with the policy's max_attempts and the run's retry_cap); why names
// the refusal when it schedules nothing.
func (m *Model) retrySchedule(run *Run, act *Activation, attempt uint32, now int64) (s Schedule, why string) {
	p := act.Def.Policy
	if p == nil {
		return Schedule{}, "no_policy"
	}
	if !p.Retryable {
		return Schedule{}, "failure_kind_not_admitted"
	}
	if p.MaxAttempts == 0 || run.Limits.RetryCap == 0 {
		return Schedule{}, "ineligible/invalid_limit"
	}
	limit := min(int64(p.MaxAttempts), run.Limits.RetryCap)
	if int64(attempt)+1 > limit {
		return Schedule{}, "ineligible/attempts_exhausted"
	}
	switch {
	case act.Def.Effect == ReadOnly && (act.Def.Reconciliation == IdempotentReplay || act.Def.Reconciliation == ReceiptStatus):
	case act.Def.Effect == Mutating && act.Def.Reconciliation == ReceiptStatus:
	default:
		return Schedule{}, "ineligible/unsafe_effect_or_reconciliation"
	}
	next := attempt + 1
	backoff := p.InitialMS
	for i := uint32(2); i < next; i++ {
		backoff *= p.Multiplier
		if backoff >= p.MaximumMS {
			backoff = p.MaximumMS
			break
		}
	}
	backoff = min(backoff, p.MaximumMS)
	return Schedule{FailedAttempt: attempt, NextAttempt: next, BackoffMS: backoff, DueMS: now + backoff}, ""
}

// ---- retries ----

// Requeue is a retry's result.
type Requeue struct {
	Key        ActivationKey
	Prev, Next uint32
}

// RetryFailedNode explicitly requeues a failed activation.
func (m *Model) RetryFailedNode(k ActivationKey, failed uint32) (Requeue, Err) {
	return m.retry(k, failed, nil)
}

// ConsumeDueRetry consumes the activation's due schedule.
func (m *Model) ConsumeDueRetry(k ActivationKey, now int64) (Requeue, Err) {
	s, ok := m.Schedules[k]
	if !ok {
		return Requeue{}, NotFound
	}
	if s.DueMS > now {
		return Requeue{}, Ineligible
	}
	return m.retry(k, s.FailedAttempt, &s)
}

// ConsumeNextDueRetry consumes the run's first consumable due schedule (by
// due time, node, activation); ok is false when none was consumed. Due
// schedules that can never be consumed are discarded on the way; those
// whose attempt has not settled are passed over. A run that cannot be
// retried refuses (Ineligible) when any schedule is due.
func (m *Model) ConsumeNextDueRetry(runID string, now int64) (Requeue, bool, Err) {
	var due []ActivationKey
	for k, s := range m.Schedules {
		if k.RunID == runID && s.DueMS <= now {
			due = append(due, k)
		}
	}
	if len(due) == 0 {
		return Requeue{}, false, OK
	}
	slices.SortFunc(due, func(a, b ActivationKey) int {
		return cmp.Or(cmp.Compare(m.Schedules[a].DueMS, m.Schedules[b].DueMS), cmpKey(a, b))
	})
	run := m.Runs[runID]
	if (run.Status != RunFailed && run.Status != RunRunning) || run.Cancel {
		return Requeue{}, false, Ineligible
	}
	for _, k := range due {
		s, act := m.Schedules[k], m.Activations[k]
		att := m.Attempts[AttemptKey{k, s.FailedAttempt}]
		switch {
		case s.FailedAttempt == 0 || s.NextAttempt != s.FailedAttempt+1, int64(s.NextAttempt) > run.Limits.RetryCap+1, act.HasSuccessors, act.LastAttempt > s.FailedAttempt:
			delete(m.Schedules, k) // can never be consumed
		case act.LastAttempt < s.FailedAttempt || att == nil:
			// its attempt does not exist yet: passed over
		case att.Status == AttemptFailed:
			if act.Status != ActivationFailed || act.Output {
				delete(m.Schedules, k)
				continue
			}
			rq, e := m.retry(k, s.FailedAttempt, &s)
			return rq, e == OK, e
		case settled(att.Status):
			delete(m.Schedules, k) // settled other than failed (abandoned included)
		}
	}
	return Requeue{}, false, OK
}

func (m *Model) retry(k ActivationKey, failed uint32, sched *Schedule) (Requeue, Err) {
	run, ok := m.Runs[k.RunID]
	if !ok {
		return Requeue{}, NotFound
	}
	act, ok := m.Activations[k]
	if !ok {
		return Requeue{}, NotFound
	}
	if (run.Status != RunFailed && run.Status != RunRunning) || run.Cancel {
		return Requeue{}, Ineligible
	}
	if act.Status != ActivationFailed || act.Output {
		return Requeue{}, Ineligible
	}
	att, ok := m.Attempts[AttemptKey{k, failed}]
	// A schedule consumes only a failed attempt: an abandoned mutation is
	// retried only explicitly.
	if !ok || act.LastAttempt != failed || (sched != nil && att.Status != AttemptFailed) || (att.Status != AttemptFailed && att.Status != AttemptAbandoned) {
		if sched != nil {
			return Requeue{}, Conflict
		}
		return Requeue{}, Ineligible
	}
	next := failed + 1
	if int64(next) > run.Limits.RetryCap+1 || act.HasSuccessors {
		return Requeue{}, Ineligible
	}
	if sched != nil && (sched.FailedAttempt != failed || sched.NextAttempt != next) {
		return Requeue{}, Conflict
	}
	act.Status = ActivationPending
	if g := act.Group; g != nil {
		if g.Retired {
			return Requeue{}, Ineligible
		}
		act.Status = ActivationWaiting
		if m.occupied(g) < g.Max {
			act.Status = ActivationPending
		}
	}
	run.Status = RunRunning
	delete(m.Schedules, k) // consumed, or superseded by the explicit retry
	m.reindex(run)
	return Requeue{Key: k, Prev: failed, Next: next}, OK
}

// ---- authority, gates, cancellation ----

// TransferAuthority replaces the run's authority by compare-and-swap.
func (m *Model) TransferAuthority(runID string, expected, replacement Authority) Err {
	if replacement.Generation != expected.Generation+1 || replacement.Tag == expected.Tag {
		return Invalid
	}
	run, ok := m.Runs[runID]
	if !ok {
		return NotFound
	}
	if verify(run, &expected) != OK {
		return Stale
	}
	switch run.Status {
	case RunRunning, RunPaused, RunRepairRequired:
	default:
		return Ineligible
	}
	run.Authority = &replacement
	return OK
}

// Pause moves a running run to paused (a paused run: no-op).
func (m *Model) Pause(runID string, auth *Authority) Err { return m.gate(runID, auth, true) }

// Resume moves a paused run back to running.
func (m *Model) Resume(runID string, auth *Authority) Err { return m.gate(runID, auth, false) }

func (m *Model) gate(runID string, auth *Authority, pause bool) Err {
	run, ok := m.Runs[runID]
	if !ok {
		return NotFound
	}
	if e := verify(run, auth); e != OK {
		return e
	}
	from, to := RunRunning, RunPaused
	if !pause {
		from, to = RunPaused, RunRunning
		if run.Cancel {
			return Ineligible
		}
	}
	switch run.Status {
	case to:
		return OK
	case from:
	default:
		return Ineligible
	}
	run.Status = to
	m.reindex(run)
	return OK
}

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
// (failed ones included), cancels their pending and waiting activations, and finalises
// the quiescent ones deepest first. It returns the root's status.
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
		case RunRunning, RunPaused, RunRepairRequired:
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
	if !active(att.Status) || (att.Receipt == "" && att.Handoff == HandoffRecorded) {
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
	if action == RepairSucceeded {
		m.complete(run)
	}
	return OK
}

// ---- reconciliation ----

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

// ---- the digest ----

// View renders the durable state of the named runs (and what the owner
// holds for their attempts), one fact per line, in a fixed order. The tier
// renders the adapter's records with the same function (through FromRecords
// style views it builds), so equal strings mean equal states.
func (m *Model) View(runIDs []string) string {
	var v State
	for _, g := range m.Groups {
		if slices.Contains(runIDs, g.Controller.RunID) {
			v.Groups = append(v.Groups, GroupView{Controller: g.Controller, Size: len(g.Members), Max: g.Max, FailFast: g.FailFast, Retired: g.Retired})
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
		lines = append(lines, fmt.Sprintf("group %s size=%d max=%d fail_fast=%v retired=%v", g.Controller, g.Size, g.Max, g.FailFast, g.Retired))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}
