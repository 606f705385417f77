package workflow

import (
	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/event"
)

// Activation transitions of the state core (see state_attempts.go). A
// settled activation (completed, failed, cancelled) leaves the admissible
// index with its transition: no caller clears the flag by hand.

// settleActivation moves an activation to the settled status as and takes
// it out of the admissible index; an as that is not a settled status is
// refused (ErrConflict), and so is a waiting fan-out member or join for
// anything but cancellation (it never had an attempt). An activation that
// joins wait for (act.Joins) is noted in the batch, so that the
// transaction's end settles them (settleJoins): a completion with the
// joins waiting for it now. It writes act.
func settleActivation(w *batch, act *backend.Activation, as backend.ActivationStatus, at int64) error {
	if !activationSettled(as) || (act.Status == backend.ActivationWaiting && as != backend.ActivationCancelled) {
		return stateErr(ErrConflict, "activation %v is %s: it cannot become %s", act.Key, act.Status, as)
	}
	if act.Status != as && len(act.Joins) > 0 {
		w.waitForSettled(*act, as == backend.ActivationCompleted, at)
	}
	act.Status = as
	act.Admissible = false
	act.UpdatedMS = at
	replace(w, *act)
	return nil
}

// completeActivation settles an open activation as completed with output.
// It writes act.
func completeActivation(w *batch, act *backend.Activation, output []byte, at int64) error {
	if err := settleActivation(w, act, backend.ActivationCompleted, at); err != nil {
		return err
	}
	act.Output = output
	replace(w, *act)
	return nil
}

// failActivation settles an open activation as failed. It writes act.
func failActivation(w *batch, act *backend.Activation, at int64) error {
	return settleActivation(w, act, backend.ActivationFailed, at)
}

// cancelActivation settles an open activation as cancelled. It is the one
// way an activation is cancelled: by its attempt's cancellation, by a
// run's finalised cancellation, by a fail-fast sibling or by a settled
// fan-out retirement. It writes act.
func cancelActivation(w *batch, act *backend.Activation, at int64) error {
	return settleActivation(w, act, backend.ActivationCancelled, at)
}

// requeueActivation returns the activation of a paused attempt, or a
// failed one a retry requeues, to pending; a waiting fan-out member (it
// never had an attempt) is refused (ErrConflict). The admissible flag is
// the run's reindex to set. The caller writes act.
func requeueActivation(act *backend.Activation, at int64) error {
	if act.Status == backend.ActivationWaiting {
		return stateErr(ErrConflict, "activation %v is waiting: it has no attempt to requeue", act.Key)
	}
	act.Status = backend.ActivationPending
	act.UpdatedMS = at
	return nil
}

// createActivation inserts a new pending activation of run (not a fan-out
// member), in the admissible index when it arrives there (see arrives),
// appending activation_created. open is how many of a join's WaitFor
// activations are not completed: with open above 0 the join is inserted
// waiting, out of the index, its OpenWaits open. A record not pending, or
// an open outside 0 to len(rec.WaitFor), is refused (ErrConflict). The
// caller writes run.
func createActivation(w *batch, run *backend.Run, rec backend.Activation, open int64, at int64) error {
	if rec.Status != backend.ActivationPending || rec.Group != nil || open < 0 || open > int64(len(rec.WaitFor)) {
		return stateErr(ErrConflict, "activation %v is created %s with %d open waits: a new activation is pending", rec.Key, rec.Status, open)
	}
	rec.OpenWaits = open
	if open > 0 {
		rec.Status = backend.ActivationWaiting
	}
	rec.Admissible = arrives(*run, rec, nil)
	insert(w, rec)
	gen := rec.Generation
	w.emit(run, event.ActivationCreatedPayload{
		RunID: rec.Key.RunID, NodeID: rec.Key.NodeID, ActivationID: rec.Key.ActivationID, Generation: &gen,
	}, at)
	return nil
}

// parkActivation takes an admissible activation out of the admissible
// index (a dispatch refused it for a durable reason, or met its run's
// exhaustion); one not in it is errNoop. The caller writes act.
func parkActivation(act *backend.Activation, at int64) error {
	if !act.Admissible {
		return errNoop
	}
	act.Admissible = false
	act.UpdatedMS = at
	return nil
}

// reindexActivation sets act's admissible flag to want, as the run's
// reindex decided it (see admissible); an activation that is not pending
// never enters the index, whatever want says. It reports whether the flag
// changed, for the caller to write act.
func reindexActivation(act *backend.Activation, want bool) bool {
	want = want && act.Status == backend.ActivationPending
	if act.Admissible == want {
		return false
	}
	act.Admissible = want
	return true
}

// releaseJoin counts the completion of pred, one of a waiting join's
// WaitFor activations: OpenWaits decreases, and when it reaches 0 the join
// becomes pending, entering the admissible index when it arrives there
// (join_released, naming pred). A join not waiting, a fan-out member or a
// join with no open wait is errNoop. It writes join; the caller writes run.
func releaseJoin(w *batch, run *backend.Run, join *backend.Activation, pred backend.ActivationKey, at int64) error {
	if join.Status != backend.ActivationWaiting || join.Group != nil || join.OpenWaits <= 0 {
		return errNoop
	}
	join.OpenWaits--
	join.UpdatedMS = at
	if join.OpenWaits == 0 {
		join.Status = backend.ActivationPending
		join.Admissible = arrives(*run, *join, nil)
		w.emit(run, event.JoinReleasedPayload{
			RunID: join.Key.RunID, NodeID: join.Key.NodeID, ActivationID: join.Key.ActivationID,
			PredecessorNodeID: pred.NodeID, PredecessorActivationID: pred.ActivationID,
		}, at)
	}
	replace(w, *join)
	return nil
}

// cancelJoin cancels a waiting join because pred, one of its WaitFor
// activations, was cancelled or failed with no automatic retry pending
// (join_cancelled, naming pred and its status). A join not waiting, or a
// fan-out member, is errNoop. It writes join; the caller writes run.
func cancelJoin(w *batch, run *backend.Run, join *backend.Activation, pred backend.Activation, at int64) error {
	if join.Status != backend.ActivationWaiting || join.Group != nil {
		return errNoop
	}
	if err := cancelActivation(w, join, at); err != nil {
		return err
	}
	w.emit(run, event.JoinCancelledPayload{
		RunID: join.Key.RunID, NodeID: join.Key.NodeID, ActivationID: join.Key.ActivationID,
		PredecessorNodeID: pred.Key.NodeID, PredecessorActivationID: pred.Key.ActivationID,
		PredecessorStatus: ActivationStatus(pred.Status),
	}, at)
	return nil
}
