package workflow

import (
	"fmt"

	"github.com/wfstore/wfstore/backend"
)

// Fan-out member transitions of the state core (see state_attempts.go).
// A member's place in its group (Promoted) moves with its status.

// createMember inserts a new fan-out member of group g: waiting
// (activation_waiting) when waiting is set, the group being full,
// otherwise pending and in the admissible index when it arrives there
// (activation_created). A record that is not a pending member is refused
// (ErrConflict). The caller inserts g (whose Promoted counts the members
// created pending) and writes run.
func createMember(w *batch, run *backend.Run, g *backend.FanOutGroup, m backend.Activation, waiting bool, at int64) error {
	if m.Status != backend.ActivationPending || m.Group == nil {
		return stateErr(ErrConflict, "activation %v is not a new fan-out member", m.Key)
	}
	idx := m.Group.Index
	var p EventPayload = ActivationCreatedPayload{
		RunID: m.Key.RunID, NodeID: m.Key.NodeID, ActivationID: m.Key.ActivationID, MemberIndex: &idx,
	}
	if waiting {
		m.Status = backend.ActivationWaiting
		p = ActivationWaitingPayload{
			RunID: m.Key.RunID, NodeID: m.Key.NodeID, ActivationID: m.Key.ActivationID, MemberIndex: idx,
		}
	}
	m.Admissible = arrives(*run, m, g)
	insert(w, m)
	w.emit(run, p, at)
	return nil
}

// promoteMember moves waiting member act (index i of g) to pending, taking
// a place in g (Promoted) and entering the admissible index when it
// arrives there (fan_out_member_promoted). A member not waiting is refused
// (ErrConflict). It writes act; the caller writes g.
func promoteMember(w *batch, run *backend.Run, g *backend.FanOutGroup, act backend.Activation, i int64, at int64) error {
	if act.Status != backend.ActivationWaiting {
		return stateErr(ErrConflict, "fan-out member %v is %s, not waiting", act.Key, act.Status)
	}
	g.Promoted++
	act.Status = backend.ActivationPending
	act.Admissible = arrives(*run, act, g)
	act.UpdatedMS = at
	replace(w, act)
	w.emit(run, FanOutMemberPromotedPayload{
		RunID: act.Key.RunID, NodeID: act.Key.NodeID, ActivationID: act.Key.ActivationID, MemberIndex: i,
	}, at)
	return nil
}

// returnMemberToWaiting sends a requeued member (act, already pending, not
// yet written) back to waiting, giving up its place in g
// (fan_out_member_waiting). A member not pending is refused (ErrConflict).
// The caller writes act and g.
func returnMemberToWaiting(w *batch, run *backend.Run, g *backend.FanOutGroup, act *backend.Activation, at int64) error {
	if act.Status != backend.ActivationPending {
		return stateErr(ErrConflict, "fan-out member %v is %s, not pending", act.Key, act.Status)
	}
	g.Promoted--
	act.Status = backend.ActivationWaiting
	w.emit(run, FanOutMemberWaitingPayload{
		RunID: act.Key.RunID, NodeID: act.Key.NodeID, ActivationID: act.Key.ActivationID, MemberIndex: act.Group.Index,
	}, at)
	return nil
}

// awaitMembers makes ctl the store-settled controller of the new fan-in
// group g: pending with no attempt, not itself a member, it becomes
// waiting, out of the admissible index, and is never dispatched
// (fan_in_waiting). Any other controller is refused (ErrIneligible). It
// writes ctl; the caller inserts g and writes run.
func awaitMembers(w *batch, run *backend.Run, ctl *backend.Activation, g *backend.FanOutGroup, at int64) error {
	if ctl.Status != backend.ActivationPending || ctl.LastAttempt != 0 || ctl.Group != nil {
		return stateErr(ErrIneligible, "fan-in controller %v must be pending with no attempt and not a member (it is %s, %d attempts)",
			ctl.Key, ctl.Status, ctl.LastAttempt)
	}
	ctl.Status = backend.ActivationWaiting
	ctl.Admissible = false
	ctl.UpdatedMS = at
	replace(w, *ctl)
	policy := WaitAll
	if g.FailFast {
		policy = FailFast
	}
	w.emit(run, FanInWaitingPayload{
		RunID: ctl.Key.RunID, NodeID: ctl.Key.NodeID, ActivationID: ctl.Key.ActivationID, Members: g.Size, Policy: policy,
	}, at)
	return nil
}

// settleFanIn settles the waiting controller ctl of fan-in group g as as
// (completed, failed or cancelled), its payload p saying why
// (fan_in_settled); a completed controller's output is {"members":N}. A
// controller not waiting, or a group without fan-in, is refused
// (ErrConflict): the store settles a controller once. It writes ctl.
func settleFanIn(w *batch, run *backend.Run, ctl *backend.Activation, g *backend.FanOutGroup, p FanInSettledPayload, at int64) error {
	as := backend.ActivationStatus(p.Status)
	if !g.FanIn || ctl.Status != backend.ActivationWaiting || ctl.Group != nil || !activationSettled(as) {
		return stateErr(ErrConflict, "fan-in controller %v is %s: it cannot become %s", ctl.Key, ctl.Status, as)
	}
	if len(ctl.Joins) > 0 {
		w.waitForSettled(*ctl, as == backend.ActivationCompleted, at)
	}
	ctl.Status = as
	ctl.Admissible = false
	ctl.UpdatedMS = at
	if as == backend.ActivationCompleted {
		ctl.Output = []byte(fmt.Sprintf(`{"members":%d}`, g.Size))
	}
	replace(w, *ctl)
	w.emit(run, p, at)
	return nil
}

// failWaitAll records that the members of wait-all group g have all
// settled with the members failed failed for good (fan_out_failed), and
// fails a running or paused run; it reports whether the run failed, for
// the caller to reindex it. The caller writes run.
func failWaitAll(w *batch, run *backend.Run, g *backend.FanOutGroup, failed []int64, at int64) bool {
	w.emit(run, FanOutFailedPayload{ControllerActivationID: g.Controller.ActivationID, FailedMembers: failed, Policy: WaitAll}, at)
	if run.Status != backend.RunRunning && run.Status != backend.RunPaused {
		return false
	}
	failRun(run)
	return true
}
