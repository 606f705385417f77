package workflow

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/wftype"
	"github.com/wfstore/wfstore/workflow/internal/state"
)

// FanOutFailure is package wftype's FanOutFailure.
type FanOutFailure = wftype.FanOutFailure

// The FanOutFailure values, as package wftype defines them.
const (
	WaitAll  FanOutFailure = wftype.WaitAll
	FailFast FanOutFailure = wftype.FailFast
)

// NewFanOut describes a fan-out group: members of one controller
// activation, admitted at most MaxConcurrency at a time in index order.
type NewFanOut struct {
	// Controller is an existing activation of the run that owns the group
	// (AddFanOut), or one of the Successors of the observation that
	// carries the group (Observation.FanOuts).
	Controller ActivationKey
	// Members are the member inputs, by index: 1 to MaxPageLimit of them.
	Members []json.RawMessage
	// MaxConcurrency bounds the members pending or running at once, retried
	// members included: a member requeued while the group is full waits
	// for a free place like any waiting member.
	MaxConcurrency int64
	// OnFailure is the settlement policy; empty means WaitAll.
	OnFailure FanOutFailure
	// FanIn, chosen when the group is created, makes the store settle the
	// controller (fan-in) instead of its owner: the controller, which must
	// be pending with no attempt and not itself a member, becomes waiting
	// (fan_in_waiting) in the group's transaction and is never dispatched.
	// It settles (fan_in_settled) in the transaction that decides its
	// group, by the policy: with WaitAll once every member has settled and
	// none has an automatic retry pending, completed when every member
	// completed, failed when one failed, cancelled otherwise; with
	// FailFast also failed at once by the first terminal member failure.
	// Its output is {"members":N}: successors read the members' outputs
	// with FanOutMembers. Without FanIn the owner settles the controller,
	// as for every group created before the option existed.
	FanIn bool
	// Member node facts, shared by every member.
	Claims         []ResourceClaim
	Effect         Effect
	Reconciliation Reconciliation
	RetryPolicy    *RetryPolicy
	AttemptTimeout time.Duration
}

// MemberKey returns the activation key of member i of the group whose
// controller is c: node "{controller node}::member::{i}", activation id
// derived from the run, the controller activation and i.
func MemberKey(c ActivationKey, i int64) ActivationKey {
	return memberKey(c, i)
}

func memberKey(c backend.ActivationKey, i int64) backend.ActivationKey {
	return backend.ActivationKey{RunID: c.RunID, NodeID: FanOutMemberNodeID(c.NodeID, i), ActivationID: FanOutMemberID(c.RunID, c.ActivationID, i)}
}

// validFanOut is a validated NewFanOut: its group record and members.
type validFanOut struct {
	group   backend.FanOutGroup
	members []backend.Activation
}

// record validates nf and returns the group and member records it
// describes, created at.
func (nf NewFanOut) record(at int64) (validFanOut, error) {
	ctl := nf.Controller
	if err := validateActivationKey(ctl); err != nil {
		return validFanOut{}, err
	}
	if len(nf.Members) == 0 || len(nf.Members) > MaxPageLimit {
		return validFanOut{}, invalid("fan-out members", "must number 1 to %d", MaxPageLimit)
	}
	if nf.MaxConcurrency <= 0 {
		return validFanOut{}, invalid("fan-out max concurrency", "must be positive")
	}
	switch nf.OnFailure {
	case "", WaitAll, FailFast:
	default:
		return validFanOut{}, invalid("fan-out settlement policy", "unknown policy %q", nf.OnFailure)
	}
	members := make([]backend.Activation, len(nf.Members))
	for i, in := range nf.Members {
		na := NewActivation{
			Key: MemberKey(nf.Controller, int64(i)), Generation: int64(i), Input: in, Claims: nf.Claims,
			Effect: nf.Effect, Reconciliation: nf.Reconciliation, RetryPolicy: nf.RetryPolicy,
			AttemptTimeout: nf.AttemptTimeout,
		}
		rec, err := na.record(at)
		if err != nil {
			return validFanOut{}, err
		}
		rec.Group = &backend.GroupMember{Controller: ctl, Index: int64(i)}
		members[i] = rec
	}
	group := backend.FanOutGroup{
		Controller: ctl, Size: int64(len(members)), MaxConcurrency: nf.MaxConcurrency,
		Promoted: min(nf.MaxConcurrency, int64(len(members))), CreatedMS: at, FailFast: nf.OnFailure == FailFast,
		FanIn: nf.FanIn,
	}
	return validFanOut{group: group, members: members}, nil
}

// validFanOuts validates an observation's fan-outs against its successor
// records succ: every controller is one of them, none is shared, and the
// groups hold at most MaxPageLimit members in all.
func validFanOuts(nfs []NewFanOut, succ []backend.Activation, at int64) ([]validFanOut, error) {
	var out []validFanOut
	total := 0
	for _, nf := range nfs {
		fo, err := nf.record(at)
		if err != nil {
			return nil, err
		}
		ctl := fo.group.Controller
		if !slices.ContainsFunc(succ, func(a backend.Activation) bool { return a.Key == ctl }) {
			return nil, invalid("observation fan-out controller", "%v is not one of the observation's successors", ctl)
		}
		if slices.ContainsFunc(out, func(o validFanOut) bool { return o.group.Controller == ctl }) {
			return nil, invalid("observation fan-out controller", "%v controls two groups", ctl)
		}
		if total += len(fo.members); total > MaxPageLimit {
			return nil, invalid("observation fan-out members", "must number at most %d in all", MaxPageLimit)
		}
		out = append(out, fo)
	}
	return out, nil
}

// AddFanOut materialises a fan-out group: the first MaxConcurrency members
// pending, the rest waiting (promoted in index order as members settle).
// With FanIn the controller becomes waiting in the same transaction; one
// that is not pending, has had an attempt or is a member is refused
// (ErrIneligible). It is idempotent: an identical group returns
// created=false; a different one fails with ErrConflict.
func (s *Store) AddFanOut(ctx context.Context, nf NewFanOut, now time.Time) (created bool, err error) {
	at, err := toMS("now", now)
	if err != nil {
		return false, err
	}
	fo, err := nf.record(at)
	if err != nil {
		return false, err
	}
	ctl := fo.group.Controller
	err = s.update(ctx, func(tx backend.Tx, w *batch) error {
		run, err := backend.GetRun(ctx, tx, ctl.RunID)
		if err != nil {
			return notFoundFrom(err, "run %q", ctl.RunID)
		}
		if created, err = addFanOut(ctx, tx, w, &run, fo, at); err != nil || !created {
			return cmp.Or(err, errNoop)
		}
		run.UpdatedMS = at
		state.Replace(w, run)
		w.WorkArrives()
		return nil
	})
	if errors.Is(err, errNoop) {
		return false, nil
	}
	return created, err
}

// addFanOut inserts the group fo into run inside a transaction (used by
// AddFanOut and by Succeeded observations carrying fan-outs). An identical
// group is created=false; the caller writes run.
func addFanOut(ctx context.Context, tx backend.Tx, w *batch, run *backend.Run, fo validFanOut, at int64) (created bool, err error) {
	group, members, ctl := fo.group, fo.members, fo.group.Controller
	if err := flush(ctx, tx, w); err != nil {
		return false, err
	}
	f, err := tx.Load(ctx, backend.Lookup{Activations: []backend.ActivationKey{ctl}, Groups: []backend.ActivationKey{ctl}})
	if err != nil {
		return false, err
	}
	controller, ok := f.Activations[ctl]
	if !ok {
		return false, stateErr(ErrNotFound, "fan-out controller %v", ctl)
	}
	if old, ok := f.Groups[ctl]; ok {
		if old.Size == group.Size && old.MaxConcurrency == group.MaxConcurrency && old.FailFast == group.FailFast && old.FanIn == group.FanIn {
			keys := make([]backend.ActivationKey, len(members))
			for i, m := range members {
				keys[i] = m.Key
			}
			existing, err := tx.Load(ctx, backend.Lookup{Activations: keys})
			if err != nil {
				return false, err
			}
			same := true
			for _, m := range members {
				if old, ok := existing.Activations[m.Key]; !ok || !sameActivationDefinition(old, m) {
					same = false
					break
				}
			}
			if same {
				return false, nil
			}
		}
		return false, stateErr(ErrConflict, "fan-out group %v exists with different fields", ctl)
	}
	if err := acceptsWork(*run, at); err != nil {
		return false, err
	}
	for i, m := range members {
		if err := state.CreateMember(w, run, &group, m, int64(i) >= group.MaxConcurrency, at); err != nil {
			return false, err
		}
	}
	if group.FanIn {
		if err := state.AwaitMembers(w, run, &controller, &group, at); err != nil {
			return false, err
		}
	}
	state.Insert(w, group)
	return true, nil
}

// Group accounting. Promoted counts the members that are not waiting and
// Settled the members in a terminal status, so Promoted-Settled is the
// number of members pending or running: the places MaxConcurrency bounds.
// Every transition of a member keeps both true: promotion (waiting →
// pending), settlement (pending/running → terminal), a retry requeue
// (failed → pending, or back to waiting when the group is full) and the
// cancellations of retirement and fail-fast.

// occupied returns the number of members pending or running.
func occupied(g *backend.FanOutGroup) int64 { return g.Promoted - g.Settled }

// loadGroup reads the group act belongs to; ok is false for an activation
// that is not a member (or whose group record is missing).
func loadGroup(ctx context.Context, tx backend.ReadTx, act backend.Activation) (backend.FanOutGroup, bool, error) {
	if act.Group == nil {
		return backend.FanOutGroup{}, false, nil
	}
	f, err := tx.Load(ctx, backend.Lookup{Groups: []backend.ActivationKey{act.Group.Controller}})
	if err != nil {
		return backend.FanOutGroup{}, false, err
	}
	g, ok := f.Groups[act.Group.Controller]
	return g, ok, nil
}

// loadMembers returns the group's member activations in index order, after
// applying w's pending writes so it sees them. A group has at most
// MaxPageLimit members, so this is one bounded read.
func loadMembers(ctx context.Context, tx backend.Tx, w *batch, g *backend.FanOutGroup) ([]backend.Activation, error) {
	if err := flush(ctx, tx, w); err != nil {
		return nil, err
	}
	keys := make([]backend.ActivationKey, g.Size)
	for i := range keys {
		keys[i] = memberKey(g.Controller, int64(i))
	}
	f, err := tx.Load(ctx, backend.Lookup{Activations: keys})
	if err != nil {
		return nil, err
	}
	out := make([]backend.Activation, len(keys))
	for i, k := range keys {
		act, ok := f.Activations[k]
		if !ok {
			return nil, fmt.Errorf("workflow: fan-out group %v lacks member %d", g.Controller, i)
		}
		out[i] = act
	}
	return out, nil
}

// promoteMembers moves waiting members to pending, lowest index first,
// while fewer than MaxConcurrency members are pending or running. A
// retiring group promotes nothing. The caller writes g.
func promoteMembers(ctx context.Context, tx backend.Tx, w *batch, run *backend.Run, g *backend.FanOutGroup, at int64) error {
	if g.Retiring || g.Promoted >= g.Size || occupied(g) >= g.MaxConcurrency {
		return nil
	}
	members, err := loadMembers(ctx, tx, w, g)
	if err != nil {
		return err
	}
	for i, act := range members {
		if g.Promoted >= g.Size || occupied(g) >= g.MaxConcurrency {
			break
		}
		if act.Status != backend.ActivationWaiting {
			continue
		}
		if err := state.PromoteMember(w, run, g, act, int64(i), at); err != nil {
			return err
		}
	}
	return nil
}

// memberRequeued adjusts the group of a failed member that a retry is
// requeueing (act already set to pending, not yet written): the member
// leaves Settled, and when the group already has MaxConcurrency members
// pending or running it goes back to waiting, to be promoted in index
// order. A member of a retiring or retired group (fail-fast included), or
// of a fan-in group whose controller has settled, is not requeued:
// ErrIneligible.
func memberRequeued(ctx context.Context, tx backend.ReadTx, w *batch, run *backend.Run, act *backend.Activation, at int64) error {
	g, ok, err := loadGroup(ctx, tx, *act)
	if err != nil || !ok {
		return err
	}
	if g.Retiring || g.RetiredMS != 0 {
		return stateErr(ErrIneligible, "fan-out group %v is retiring or retired; its members are not requeued", g.Controller)
	}
	if g.FanIn {
		f, err := tx.Load(ctx, backend.Lookup{Activations: []backend.ActivationKey{g.Controller}})
		if err != nil {
			return err
		}
		if ctl, ok := f.Activations[g.Controller]; !ok || ctl.Status != backend.ActivationWaiting {
			return stateErr(ErrIneligible, "fan-in group %v has settled its controller; its members are not requeued", g.Controller)
		}
	}
	state.ReopenMember(&g)
	if occupied(&g) > g.MaxConcurrency {
		if err := state.ReturnMemberToWaiting(w, run, &g, act, at); err != nil {
			return err
		}
	}
	state.Replace(w, g)
	return nil
}

// activationFailed settles a failed activation's effect on its run (act is
// already failed and written to w). A plain activation fails the run. A
// fan-out member settles as a member; with an automatic retry scheduled
// the run fails as for any activation (consuming the schedule requeues
// both), otherwise the group's policy decides: fail-fast cancels the
// siblings and fails the run now, wait-all fails the run once every member
// has settled. A fan-in group's controller settles with it (see
// decideFanIn). A repair_required run stays so until its repair resolves.
func activationFailed(ctx context.Context, t txn, run *backend.Run, act backend.Activation, scheduled bool) error {
	tx, w, at := t.Tx, t.W, t.At
	g, ok, err := loadGroup(ctx, tx, act)
	if err != nil {
		return err
	}
	if !ok || scheduled {
		if ok {
			if err := settleMember(ctx, tx, w, run, &g, at); err != nil {
				return err
			}
		}
		state.FailRun(run)
		return nil
	}
	if !g.FailFast {
		return settleMember(ctx, tx, w, run, &g, at)
	}
	state.CountMemberSettled(&g)
	if err := cancelSiblings(ctx, txn{Tx: tx, W: w, At: at}, run, &g, act); err != nil {
		return err
	}
	idx := act.Group.Index
	state.FailFastGroup(w, run, &g, idx, at)
	state.Replace(w, g)
	return decideFanIn(ctx, txn{Tx: tx, W: w, At: at}, run, &g, &idx)
}

// settleMember counts one more settled member of g, promotes waiting
// members into the freed place and, for a wait-all group whose members
// have now all settled, fails the run when any member failed for good (a
// failed member with an automatic retry pending is not: fan_out_failed is
// recorded only once its retry, too, has failed with none left). A
// fan-in group's controller settles with it (see decideFanIn). It writes
// g.
func settleMember(ctx context.Context, tx backend.Tx, w *batch, run *backend.Run, g *backend.FanOutGroup, at int64) error {
	state.CountMemberSettled(g)
	if err := promoteMembers(ctx, tx, w, run, g, at); err != nil {
		return err
	}
	state.Replace(w, *g)
	if err := waitAllFailed(ctx, tx, w, run, g, at); err != nil {
		return err
	}
	return decideFanIn(ctx, txn{Tx: tx, W: w, At: at}, run, g, nil)
}

// waitAllFailed fails the run of a wait-all group g whose members have all
// settled when any of them failed for good (fan_out_failed).
func waitAllFailed(ctx context.Context, tx backend.Tx, w *batch, run *backend.Run, g *backend.FanOutGroup, at int64) error {
	if g.FailFast || g.Settled < g.Size {
		return nil
	}
	members, err := loadMembers(ctx, tx, w, g)
	if err != nil {
		return err
	}
	var failed []int64
	var keys []backend.ActivationKey
	for i, m := range members {
		if m.Status == backend.ActivationFailed {
			failed = append(failed, int64(i))
			keys = append(keys, m.Key)
		}
	}
	if len(failed) == 0 {
		return nil
	}
	// A member whose automatic retry is pending may still succeed: it is
	// not failed for good, and the group decides again once it settles.
	f, err := tx.Load(ctx, backend.Lookup{Schedules: keys})
	if err != nil {
		return err
	}
	failed = slices.DeleteFunc(failed, func(i int64) bool {
		_, pending := f.Schedules[members[i].Key]
		return pending
	})
	if len(failed) == 0 {
		return nil
	}
	if !state.FailWaitAll(w, run, g, failed, at) {
		return nil
	}
	return reindexRun(ctx, tx, w, *run)
}

// cancelSiblings is a fail-fast failure of member failed: every other
// member that has not settled is stopped. A waiting or pending member is
// cancelled; a running member's active attempt moves to sibling_cancelling
// (one event per attempt), except a prepared attempt that provably never
// reached its owner (handoff pending, no receipt), which is cancelled with
// its member at once. It updates g's counters; the caller writes g.
func cancelSiblings(ctx context.Context, t txn, run *backend.Run, g *backend.FanOutGroup, failed backend.Activation) error {
	tx, w, at := t.Tx, t.W, t.At
	members, err := loadMembers(ctx, tx, w, g)
	if err != nil {
		return err
	}
	var running []backend.AttemptKey
	for _, m := range members {
		if m.Key == failed.Key {
			continue
		}
		switch m.Status {
		case backend.ActivationWaiting, backend.ActivationPending:
			if err := state.CancelMember(w, run, g, m, "fail_fast", at); err != nil {
				return err
			}
		case backend.ActivationRunning:
			running = append(running, backend.AttemptKey{ActivationKey: m.Key, Attempt: m.LastAttempt})
		}
	}
	if len(running) == 0 {
		return nil
	}
	f, err := tx.Load(ctx, backend.Lookup{Attempts: running})
	if err != nil {
		return err
	}
	for _, k := range running {
		att, ok := f.Attempts[k]
		if !ok {
			continue
		}
		m := members[memberIndex(members, k.ActivationKey)]
		switch att.Status {
		case backend.AttemptPrepared, backend.AttemptAdmitted, backend.AttemptRunning:
		default:
			continue // cancelling or repair_required: settled by their own paths
		}
		if att.Status == backend.AttemptPrepared && att.Receipt == nil && att.Handoff == backend.HandoffPending {
			if err := state.CancelUndispatchedSibling(ctx, txn{Tx: tx, W: w, At: at}, run, g, m, &att); err != nil {
				return err
			}
			continue
		}
		if err := state.StopSiblingAttempt(w, run, &att, at); err != nil {
			return err
		}
	}
	return nil
}

func memberIndex(members []backend.Activation, k backend.ActivationKey) int {
	for i, m := range members {
		if m.Key == k {
			return i
		}
	}
	return -1
}

// RetireFanOut records a durable retirement intent on the group: until
// SettleFanOutRetirement, its members get no new attempt, no handoff and no
// receipt-less owner admission. Recording it twice is a no-op.
func (s *Store) RetireFanOut(ctx context.Context, controllerKey ActivationKey, now time.Time) error {
	controller := controllerKey
	return s.retire(ctx, controller, now, false)
}

// SettleFanOutRetirement settles a recorded retirement: members that never
// started (waiting or pending) are cancelled and the intent is cleared.
// Members with attempts keep them; they settle through observations.
func (s *Engine) SettleFanOutRetirement(ctx context.Context, controllerKey ActivationKey, now time.Time) error {
	controller := controllerKey
	return s.retire(ctx, controller, now, true)
}

func (s *Store) retire(ctx context.Context, controller backend.ActivationKey, now time.Time, settle bool) error {
	if err := validateActivationKey(controller); err != nil {
		return err
	}
	at, err := toMS("now", now)
	if err != nil {
		return err
	}
	err = s.update(ctx, func(tx backend.Tx, w *batch) error {
		f, err := tx.Load(ctx, backend.Lookup{Runs: []string{controller.RunID}, Groups: []backend.ActivationKey{controller}})
		if err != nil {
			return err
		}
		run, ok := f.Runs[controller.RunID]
		g, gok := f.Groups[controller]
		if !ok || !gok {
			return stateErr(ErrNotFound, "fan-out group %v", controller)
		}
		if !settle {
			if g.Retiring {
				return errNoop
			}
			if err := state.RequestRetirement(w, &run, &g, at); err != nil {
				return err
			}
			state.Replace(w, g)
			if err := reindexRun(ctx, tx, w, run); err != nil {
				return err
			}
			state.Replace(w, run)
			return nil
		}
		if !g.Retiring {
			return stateErr(ErrIneligible, "fan-out group %v has no retirement pending", controller)
		}
		for i := int64(0); i < g.Size; i++ {
			act, err := backend.GetActivation(ctx, tx, memberKey(controller, i))
			if err != nil {
				return err
			}
			if act.Status == backend.ActivationWaiting || act.Status == backend.ActivationPending {
				if err := state.RetireMember(w, &g, act, at); err != nil {
					return err
				}
			}
		}
		if err := state.SettleRetirement(w, &run, &g, at); err != nil {
			return err
		}
		state.Replace(w, g)
		if err := decideFanIn(ctx, txn{Tx: tx, W: w, At: at}, &run, &g, nil); err != nil {
			return err
		}
		run.UpdatedMS = at
		state.Replace(w, run)
		return nil
	})
	if errors.Is(err, errNoop) {
		return nil
	}
	return err
}
