package state

import (
	"context"
	"fmt"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/event"
	"github.com/wfstore/wfstore/wftype"
)

// Fan-out member transitions of the state core (see doc.go).
// A member's place in its group (Promoted) moves with its status.

// CreateMember inserts a new fan-out member of group g: waiting
// (activation_waiting) when waiting is set, the group being full,
// otherwise pending and in the admissible index when it arrives there
// (activation_created). A record that is not a pending member is refused
// (wftype.ErrConflict). The caller inserts g (whose Promoted counts the members
// created pending) and writes run.
func CreateMember(w *Batch, run *backend.Run, g *backend.FanOutGroup, m backend.Activation, waiting bool, at int64) error {
	if m.Status != backend.ActivationPending || m.Group == nil {
		return Errorf(wftype.ErrConflict, "activation %v is not a new fan-out member", m.Key)
	}
	idx := m.Group.Index
	var p event.Payload = event.ActivationCreatedPayload{
		RunID: m.Key.RunID, NodeID: m.Key.NodeID, ActivationID: m.Key.ActivationID, MemberIndex: &idx,
	}
	if waiting {
		m.Status = backend.ActivationWaiting
		p = event.ActivationWaitingPayload{
			RunID: m.Key.RunID, NodeID: m.Key.NodeID, ActivationID: m.Key.ActivationID, MemberIndex: idx,
		}
	}
	m.Admissible = Arrives(*run, m, g)
	Insert(w, m)
	w.emit(run, p, at)
	return nil
}

// PromoteMember moves waiting member act (index i of g) to pending, taking
// a place in g (Promoted) and entering the admissible index when it
// arrives there (fan_out_member_promoted). A member not waiting is refused
// (wftype.ErrConflict). It writes act; the caller writes g.
func PromoteMember(w *Batch, run *backend.Run, g *backend.FanOutGroup, act backend.Activation, i int64, at int64) error {
	if act.Status != backend.ActivationWaiting {
		return Errorf(wftype.ErrConflict, "fan-out member %v is %s, not waiting", act.Key, act.Status)
	}
	g.Promoted++
	act.Status = backend.ActivationPending
	act.Admissible = Arrives(*run, act, g)
	act.UpdatedMS = at
	Replace(w, act)
	w.emit(run, event.FanOutMemberPromotedPayload{
		RunID: act.Key.RunID, NodeID: act.Key.NodeID, ActivationID: act.Key.ActivationID, MemberIndex: i,
	}, at)
	return nil
}

// ReturnMemberToWaiting sends a requeued member (act, already pending, not
// yet written) back to waiting, giving up its place in g
// (fan_out_member_waiting). A member not pending is refused (wftype.ErrConflict).
// The caller writes act and g.
func ReturnMemberToWaiting(w *Batch, run *backend.Run, g *backend.FanOutGroup, act *backend.Activation, at int64) error {
	if act.Status != backend.ActivationPending {
		return Errorf(wftype.ErrConflict, "fan-out member %v is %s, not pending", act.Key, act.Status)
	}
	g.Promoted--
	act.Status = backend.ActivationWaiting
	w.emit(run, event.FanOutMemberWaitingPayload{
		RunID: act.Key.RunID, NodeID: act.Key.NodeID, ActivationID: act.Key.ActivationID, MemberIndex: act.Group.Index,
	}, at)
	return nil
}

// AwaitMembers makes ctl the store-settled controller of the new fan-in
// group g: pending with no attempt, not itself a member, it becomes
// waiting, out of the admissible index, and is never dispatched
// (fan_in_waiting). Any other controller is refused (wftype.ErrIneligible). It
// writes ctl; the caller inserts g and writes run.
func AwaitMembers(w *Batch, run *backend.Run, ctl *backend.Activation, g *backend.FanOutGroup, at int64) error {
	if ctl.Status != backend.ActivationPending || ctl.LastAttempt != 0 || ctl.Group != nil {
		return Errorf(wftype.ErrIneligible, "fan-in controller %v must be pending with no attempt and not a member (it is %s, %d attempts)",
			ctl.Key, ctl.Status, ctl.LastAttempt)
	}
	ctl.Status = backend.ActivationWaiting
	ctl.Admissible = false
	ctl.UpdatedMS = at
	Replace(w, *ctl)
	policy := wftype.WaitAll
	if g.FailFast {
		policy = wftype.FailFast
	}
	w.emit(run, event.FanInWaitingPayload{
		RunID: ctl.Key.RunID, NodeID: ctl.Key.NodeID, ActivationID: ctl.Key.ActivationID, Members: g.Size, Policy: policy,
	}, at)
	return nil
}

// SettleFanIn settles the waiting controller ctl of fan-in group g as as
// (completed, failed or cancelled), its payload p saying why
// (fan_in_settled); a completed controller's output is {"members":N}. A
// controller not waiting, or a group without fan-in, is refused
// (wftype.ErrConflict): the store settles a controller once. It writes ctl.
func SettleFanIn(w *Batch, run *backend.Run, ctl *backend.Activation, g *backend.FanOutGroup, p event.FanInSettledPayload, at int64) error {
	as := backend.ActivationStatus(p.Status)
	if !g.FanIn || ctl.Status != backend.ActivationWaiting || ctl.Group != nil || !activationSettled(as) {
		return Errorf(wftype.ErrConflict, "fan-in controller %v is %s: it cannot become %s", ctl.Key, ctl.Status, as)
	}
	if len(ctl.Joins) > 0 {
		w.WaitForSettled(*ctl, as == backend.ActivationCompleted, at)
	}
	ctl.Status = as
	ctl.Admissible = false
	ctl.UpdatedMS = at
	if as == backend.ActivationCompleted {
		ctl.Output = []byte(fmt.Sprintf(`{"members":%d}`, g.Size))
	}
	Replace(w, *ctl)
	w.emit(run, p, at)
	return nil
}

// FailWaitAll records that the members of wait-all group g have all
// settled with the members failed failed for good (fan_out_failed), and
// fails a running or paused run; it reports whether the run failed, for
// the caller to reindex it. The caller writes run.
func FailWaitAll(w *Batch, run *backend.Run, g *backend.FanOutGroup, failed []int64, at int64) bool {
	w.emit(run, event.FanOutFailedPayload{ControllerActivationID: g.Controller.ActivationID, FailedMembers: failed, Policy: wftype.WaitAll}, at)
	if run.Status != backend.RunRunning && run.Status != backend.RunPaused {
		return false
	}
	FailRun(run)
	return true
}

// CountMemberSettled counts one more settled member of g. The caller
// writes g.
func CountMemberSettled(g *backend.FanOutGroup) { g.Settled++ }

// ReopenMember counts a settled member of g open again: its retry
// requeued it. The caller writes g.
func ReopenMember(g *backend.FanOutGroup) { g.Settled-- }

// CancelMember cancels member m of g, which has not settled (waiting,
// pending, or running with its never-dispatched attempt just settled),
// counts it settled (and promoted, when it was waiting: it can never be
// promoted again) and appends fan_out_member_cancelled with reason. It
// writes m; the caller writes g.
func CancelMember(w *Batch, run *backend.Run, g *backend.FanOutGroup, m backend.Activation, reason string, at int64) error {
	waiting := m.Status == backend.ActivationWaiting
	if err := CancelActivation(w, &m, at); err != nil {
		return err
	}
	if waiting {
		g.Promoted++
	}
	g.Settled++
	w.emit(run, event.FanOutMemberCancelledPayload{
		RunID: m.Key.RunID, NodeID: m.Key.NodeID, ActivationID: m.Key.ActivationID,
		MemberIndex: m.Group.Index, Reason: reason,
	}, at)
	return nil
}

// CancelUndispatchedSibling cancels member m of fail-fast group g and its
// prepared attempt att, which provably never reached its owner (handoff
// pending, no receipt): attempt_cancelled (never_dispatched), then the
// member's cancellation. It writes att and m; the caller writes g.
func CancelUndispatchedSibling(ctx context.Context, t Txn, run *backend.Run, g *backend.FanOutGroup, m backend.Activation, att *backend.Attempt) error {
	if err := SettleAttempt(ctx, t, run, m, att, backend.AttemptCancelled); err != nil {
		return err
	}
	Replace(t.W, *att)
	t.W.emit(run, event.AttemptCancelledPayload{AttemptNames: namesOf(att.Key), DispatchIdentity: att.Identity, Reason: "never_dispatched"}, t.At)
	return CancelMember(t.W, run, g, m, "fail_fast", t.At)
}

// FailFastGroup records the terminal failure of member idx of fail-fast
// group g, whose siblings the caller stopped: the group is retired (if it
// was not already), fan_out_failed is appended and the run fails. The
// caller writes g and run.
func FailFastGroup(w *Batch, run *backend.Run, g *backend.FanOutGroup, idx int64, at int64) {
	if g.RetiredMS == 0 {
		g.RetiredMS = at
	}
	w.emit(run, event.FanOutFailedPayload{ControllerActivationID: g.Controller.ActivationID, MemberIndex: &idx, Policy: wftype.FailFast}, at)
	FailRun(run)
}

// RequestRetirement records g's retirement intent
// (fan_out_retirement_requested): its members get no new attempt until it
// settles. A group already retiring is refused (wftype.ErrConflict). The caller
// writes g and run.
func RequestRetirement(w *Batch, run *backend.Run, g *backend.FanOutGroup, at int64) error {
	if g.Retiring {
		return Errorf(wftype.ErrConflict, "fan-out group %v is already retiring", g.Controller)
	}
	g.Retiring = true
	w.emit(run, event.FanOutRetirementRequestedPayload{ControllerActivationID: g.Controller.ActivationID}, at)
	return nil
}

// RetireMember cancels member act of retiring group g, which never started
// (waiting or pending), and counts it settled. It writes act; the caller
// writes g.
func RetireMember(w *Batch, g *backend.FanOutGroup, act backend.Activation, at int64) error {
	if err := CancelActivation(w, &act, at); err != nil {
		return err
	}
	g.Settled++
	return nil
}

// SettleRetirement ends g's retirement once its unstarted members are
// cancelled (fan_out_retired): no member is promoted any more. A group not
// retiring is refused (wftype.ErrIneligible). The caller writes g and run.
func SettleRetirement(w *Batch, run *backend.Run, g *backend.FanOutGroup, at int64) error {
	if !g.Retiring {
		return Errorf(wftype.ErrIneligible, "fan-out group %v has no retirement pending", g.Controller)
	}
	g.Retiring = false
	g.Promoted = g.Size
	g.RetiredMS = at
	w.emit(run, event.FanOutRetiredPayload{ControllerActivationID: g.Controller.ActivationID}, at)
	return nil
}
