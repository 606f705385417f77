package workflow

import "github.com/wfstore/wfstore/backend"

// Activation transitions of the state core (see state_attempts.go). A
// settled activation (completed, failed, cancelled) leaves the admissible
// index with its transition: no caller clears the flag by hand.

// settleActivation moves an activation to the settled status as and takes
// it out of the admissible index; an as that is not a settled status is
// refused (ErrConflict), and so is a waiting fan-out member for anything
// but cancellation (it never had an attempt). It writes act.
func settleActivation(w *batch, act *backend.Activation, as backend.ActivationStatus, at int64) error {
	if !activationSettled(as) || (act.Status == backend.ActivationWaiting && as != backend.ActivationCancelled) {
		return stateErr(ErrConflict, "activation %v is %s: it cannot become %s", act.Key, act.Status, as)
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
// appending activation_created. A record not pending is refused
// (ErrConflict). The caller writes run.
func createActivation(w *batch, run *backend.Run, rec backend.Activation, at int64) error {
	if rec.Status != backend.ActivationPending || rec.Group != nil {
		return stateErr(ErrConflict, "activation %v is created %s: a new activation is pending", rec.Key, rec.Status)
	}
	rec.Admissible = arrives(*run, rec, nil)
	insert(w, rec)
	gen := rec.Generation
	w.emit(run, ActivationCreatedPayload{
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
