package workflow

import "github.com/wfstore/wfstore/backend"

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
