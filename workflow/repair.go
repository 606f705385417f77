package workflow

import (
	"context"
	"encoding/json"
	"time"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/wftype"
	"github.com/wfstore/wfstore/workflow/internal/state"
)

// RepairAction is package wftype's RepairAction.
type RepairAction = wftype.RepairAction

// The RepairAction values, as package wftype defines them.
const (
	RepairConfirmSucceeded RepairAction = wftype.RepairConfirmSucceeded
	RepairConfirmFailed    RepairAction = wftype.RepairConfirmFailed
	RepairConfirmCancelled RepairAction = wftype.RepairConfirmCancelled
	RepairAbandon          RepairAction = wftype.RepairAbandon
)

// RepairRequest names a repair_required attempt by its dispatch identity
// and says how to resolve it.
type RepairRequest struct {
	Identity string
	Action   RepairAction
	// Output is required with RepairConfirmSucceeded (the activation's
	// output JSON, owner JSON: see MaxOwnerJSONBytes) and ignored
	// otherwise.
	Output json.RawMessage
	// Authority, when set, must be the run's current authority.
	Authority *Authority
}

// Repair resolves a repair_required attempt: a mutating one, or one of
// either effect settled for an owner's value the store could not keep
// (see UnstorableError). It never dispatches
// anything. Once no repair_required attempt remains, the run leaves
// repair_required: to failed after an abandon or a confirmed failure (so
// RetryFailedNode applies), to running otherwise (or cancelled when its
// cancellation is requested and nothing is active). A repair that leaves
// nothing of the run open (a confirmed success or cancellation) completes
// the run, as any settlement does (see ApplyObservation).
func (s *Store) Repair(ctx context.Context, req RepairRequest, now time.Time) error {
	identity, action, output, auth := req.Identity, req.Action, req.Output, copyAuthority(req.Authority)
	if err := validateAuthority(auth); err != nil {
		return err
	}
	var out []byte
	switch action {
	case RepairConfirmSucceeded:
		if len(output) == 0 {
			return invalid("repair output", "is required to confirm success")
		}
		var err error
		if out, err = ownerJSON("repair output", output); err != nil {
			return err
		}
	case RepairConfirmFailed, RepairConfirmCancelled, RepairAbandon:
	default:
		return invalid("repair action", "unknown action %q", action)
	}
	return s.attemptTx(ctx, identity, now, func(tx backend.Tx, w *batch, run *backend.Run, act backend.Activation, att *backend.Attempt, at int64) error {
		if err := ownedBy(auth, "repair").verify(*run); err != nil {
			return err
		}
		if att.Status != backend.AttemptRepairRequired {
			return stateErr(ErrIneligible, "attempt %s is not a repair_required attempt", identity)
		}
		st, as, to := backend.AttemptSucceeded, backend.ActivationCompleted, backend.RunRunning
		switch action {
		case RepairConfirmFailed:
			st, as, to = backend.AttemptFailed, backend.ActivationFailed, backend.RunFailed
		case RepairConfirmCancelled:
			st, as = backend.AttemptCancelled, backend.ActivationCancelled
		case RepairAbandon:
			st, as, to = backend.AttemptAbandoned, backend.ActivationFailed, backend.RunFailed
		}
		if err := state.SettleAttempt(ctx, txn{Tx: tx, W: w, At: at}, run, act, att, st); err != nil {
			return err
		}
		act.Output = out
		state.Replace(w, *att)
		if err := state.SettleActivation(w, &act, as, at); err != nil {
			return err
		}
		state.RecordRepair(w, run, att, action, at)
		if err := memberSettled(ctx, tx, w, run, act, at); err != nil {
			return err
		}
		return resolveRepair(ctx, tx, w, run, to, at)
	})
}
