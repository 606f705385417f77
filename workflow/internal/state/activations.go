package state

import (
	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/event"
	"github.com/wfstore/wfstore/wftype"
)

// Activation transitions of the state core (see doc.go). A
// settled activation (completed, failed, cancelled) leaves the admissible
// index with its transition: no caller clears the flag by hand.

// SettleActivation moves an activation to the settled status as and takes
// it out of the admissible index; an as that is not a settled status is
// refused (wftype.ErrConflict), and so is a waiting fan-out member or join for
// anything but cancellation (it never had an attempt). An activation that
// joins wait for (act.Joins) is noted in the batch, so that the
// transaction's end settles them (settleJoins): a completion with the
// joins waiting for it now. It writes act.
func SettleActivation(w *Batch, act *backend.Activation, as backend.ActivationStatus, at int64) error {
	if !activationSettled(as) || (act.Status == backend.ActivationWaiting && as != backend.ActivationCancelled) {
		return Errorf(wftype.ErrConflict, "activation %v is %s: it cannot become %s", act.Key, act.Status, as)
	}
	if act.Status != as && len(act.Joins) > 0 {
		w.WaitForSettled(*act, as == backend.ActivationCompleted, at)
	}
	act.Status = as
	act.Admissible = false
	act.UpdatedMS = at
	Replace(w, *act)
	return nil
}

// CompleteActivation settles an open activation as completed with output.
// It writes act.
func CompleteActivation(w *Batch, act *backend.Activation, output []byte, at int64) error {
	if err := SettleActivation(w, act, backend.ActivationCompleted, at); err != nil {
		return err
	}
	act.Output = output
	Replace(w, *act)
	return nil
}

// FailActivation settles an open activation as failed. It writes act.
func FailActivation(w *Batch, act *backend.Activation, at int64) error {
	return SettleActivation(w, act, backend.ActivationFailed, at)
}

// CancelActivation settles an open activation as cancelled. It is the one
// way an activation is cancelled: by its attempt's cancellation, by a
// run's finalised cancellation, by a fail-fast sibling or by a settled
// fan-out retirement. It writes act.
func CancelActivation(w *Batch, act *backend.Activation, at int64) error {
	return SettleActivation(w, act, backend.ActivationCancelled, at)
}

// RequeueActivation returns the activation of a paused attempt, or a
// failed one a retry requeues, to pending; a waiting fan-out member (it
// never had an attempt) is refused (wftype.ErrConflict). The admissible flag is
// the run's reindex to set. The caller writes act.
func RequeueActivation(act *backend.Activation, at int64) error {
	if act.Status == backend.ActivationWaiting {
		return Errorf(wftype.ErrConflict, "activation %v is waiting: it has no attempt to requeue", act.Key)
	}
	act.Status = backend.ActivationPending
	act.UpdatedMS = at
	return nil
}

// CreateActivation inserts a new pending activation of run (not a fan-out
// member), in the admissible index when it arrives there (see arrives),
// appending activation_created. open is how many of a join's WaitFor
// activations are not completed: with open above 0 the join is inserted
// waiting, out of the index, its OpenWaits open. A record not pending, or
// an open outside 0 to len(rec.WaitFor), is refused (wftype.ErrConflict). The
// caller writes run.
func CreateActivation(w *Batch, run *backend.Run, rec backend.Activation, open int64, at int64) error {
	if rec.Status != backend.ActivationPending || rec.Group != nil || open < 0 || open > int64(len(rec.WaitFor)) {
		return Errorf(wftype.ErrConflict, "activation %v is created %s with %d open waits: a new activation is pending", rec.Key, rec.Status, open)
	}
	rec.OpenWaits = open
	if open > 0 {
		rec.Status = backend.ActivationWaiting
	}
	rec.Admissible = Arrives(*run, rec, nil)
	Insert(w, rec)
	gen := rec.Generation
	w.emit(run, event.ActivationCreatedPayload{
		RunID: rec.Key.RunID, NodeID: rec.Key.NodeID, ActivationID: rec.Key.ActivationID, Generation: &gen,
	}, at)
	return nil
}

// ParkActivation takes an admissible activation out of the admissible
// index (a dispatch refused it for a durable reason, or met its run's
// exhaustion); one not in it is ErrNoop. The caller writes act.
func ParkActivation(act *backend.Activation, at int64) error {
	if !act.Admissible {
		return ErrNoop
	}
	act.Admissible = false
	act.UpdatedMS = at
	return nil
}

// ReindexActivation sets act's admissible flag to want, as the run's
// reindex decided it (see admissible); an activation that is not pending
// never enters the index, whatever want says. It reports whether the flag
// changed, for the caller to write act.
func ReindexActivation(act *backend.Activation, want bool) bool {
	want = want && act.Status == backend.ActivationPending
	if act.Admissible == want {
		return false
	}
	act.Admissible = want
	return true
}

// ReleaseJoin counts the completion of pred, one of a waiting join's
// WaitFor activations: OpenWaits decreases, and when it reaches 0 the join
// becomes pending, entering the admissible index when it arrives there
// (join_released, naming pred). A join not waiting, a fan-out member or a
// join with no open wait is ErrNoop. It writes join; the caller writes run.
func ReleaseJoin(w *Batch, run *backend.Run, join *backend.Activation, pred backend.ActivationKey, at int64) error {
	if join.Status != backend.ActivationWaiting || join.Group != nil || join.OpenWaits <= 0 {
		return ErrNoop
	}
	join.OpenWaits--
	join.UpdatedMS = at
	if join.OpenWaits == 0 {
		join.Status = backend.ActivationPending
		join.Admissible = Arrives(*run, *join, nil)
		w.emit(run, event.JoinReleasedPayload{
			RunID: join.Key.RunID, NodeID: join.Key.NodeID, ActivationID: join.Key.ActivationID,
			PredecessorNodeID: pred.NodeID, PredecessorActivationID: pred.ActivationID,
		}, at)
	}
	Replace(w, *join)
	return nil
}

// CancelJoin cancels a waiting join because pred, one of its WaitFor
// activations, was cancelled or failed with no automatic retry pending
// (join_cancelled, naming pred and its status). A join not waiting, or a
// fan-out member, is ErrNoop. It writes join; the caller writes run.
func CancelJoin(w *Batch, run *backend.Run, join *backend.Activation, pred backend.Activation, at int64) error {
	if join.Status != backend.ActivationWaiting || join.Group != nil {
		return ErrNoop
	}
	if err := CancelActivation(w, join, at); err != nil {
		return err
	}
	w.emit(run, event.JoinCancelledPayload{
		RunID: join.Key.RunID, NodeID: join.Key.NodeID, ActivationID: join.Key.ActivationID,
		PredecessorNodeID: pred.Key.NodeID, PredecessorActivationID: pred.Key.ActivationID,
		PredecessorStatus: wftype.ActivationStatus(pred.Status),
	}, at)
	return nil
}
