package workflow

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/event"
	"github.com/wfstore/wfstore/workflow/internal/state"
)

// OwnerReceipt is the receipt an owner returned for one attempt, as
// PersistReceipt commits it.
type OwnerReceipt struct {
	// Key names the attempt; its dispatch identity is Key.Identity().
	Key AttemptKey
	// Receipt is owner JSON (MaxOwnerJSONBytes, MaxOwnerJSONDepth): one
	// that is missing, invalid, too large or too deep is refused with
	// ErrInvalidInput (ErrTooLarge when too large) before anything is
	// written.
	Receipt json.RawMessage
	// Authority, when set, must be the run's current authority.
	Authority *Authority
}

// PersistReceipt commits the owner's receipt for an attempt. A prepared
// attempt becomes admitted; a cancelling one keeps its status. A
// repair_required attempt whose handoff was recorded is admitted by a late
// receipt (the receipt is the proof). A canonical-identical
// duplicate of the stored receipt is a no-op; a different one fails with
// ErrConflict.
//
// A receipt refused as owner JSON (see OwnerReceipt.Receipt) leaves the
// attempt as it was. (The Store's own paths, which receive the receipt
// from the owner themselves, settle the attempt instead: see
// UnstorableError.)
func (s *Engine) PersistReceipt(ctx context.Context, req OwnerReceipt, now time.Time) error {
	k, receipt, a := req.Key, req.Receipt, copyAuthority(req.Authority)
	if err := validateAttemptKey(k); err != nil {
		return err
	}
	if err := validateAuthority(a); err != nil {
		return err
	}
	if _, err := ownerJSON("dispatch receipt", receipt); err != nil {
		return err
	}
	return s.persistReceipt(ctx, AttemptRef{Key: k, Identity: k.Identity()}, receipt, ownedBy(a, "receipt"), now, nil)
}

// persistReceipt implements PersistReceipt for a receipt the owner
// returned. kn, when set, holds the records the handoff committed (see
// known). A receipt ownerJSON refuses settles the attempt as
// repair_required (settleUnstorableReceipt) and is returned as an
// *UnstorableError.
func (s *Store) persistReceipt(ctx context.Context, ref AttemptRef, receipt json.RawMessage, check authorityCheck, now time.Time, kn *known) error {
	k, identity := ref.Key, ref.Identity
	if identity != DispatchIdentity(k.RunID, k.NodeID, k.ActivationID, k.Attempt) {
		return invalid("dispatch receipt", "identity does not match durable attempt identity")
	}
	at, err := toMS("now", now)
	if err != nil {
		return err
	}
	rc, err := ownerJSON("dispatch receipt", receipt)
	if err != nil {
		return s.settleUnstorableReceipt(ctx, ref, receipt, err, check, now)
	}
	decide := func(tx backend.Tx, w *batch, run backend.Run, att backend.Attempt, found bool) error {
		return decideReceipt(ctx, tx, w, receiptInput{
			run: &run, att: att, found: found, key: k, identity: identity, receipt: rc, check: check, at: at,
		})
	}
	if kn != nil {
		done, err := s.decideKnown(ctx, backend.Expected{Runs: []backend.Run{kn.run}, Attempts: []backend.Attempt{kn.att}}, func(tx backend.Tx, w *batch) error {
			return decide(tx, w, kn.run, kn.att, true)
		})
		if done || err != nil {
			return err
		}
	}
	err = s.update(ctx, func(tx backend.Tx, w *batch) error {
		f, err := tx.Load(ctx, backend.Lookup{Runs: []string{k.RunID}, Attempts: []backend.AttemptKey{k}})
		if err != nil {
			return err
		}
		run, ok := f.Runs[k.RunID]
		if !ok {
			return stateErr(ErrNotFound, "run %q", k.RunID)
		}
		att, found := f.Attempts[k]
		return decide(tx, w, run, att, found)
	})
	if errors.Is(err, errNoop) {
		return nil
	}
	return err
}

// receiptInput is what one receipt decision is made on: the attempt's key
// and identity, its run and attempt as read (found reports whether the
// attempt exists), the canonical receipt, the authority check and the
// time.
type receiptInput struct {
	run      *backend.Run
	att      backend.Attempt
	found    bool
	key      backend.AttemptKey
	identity string
	receipt  []byte
	check    authorityCheck
	at       int64
}

// decideReceipt is the whole receipt decision for attempt in.key, on its
// run and attempt, with in.receipt the canonical receipt. It writes to w and to
// *run; errNoop when the same receipt is already stored. A repair_required
// attempt is written at once through tx (its repair state is settled on
// it), so a caller that must undo one decision alone keeps such attempts
// out of a shared transaction.
func decideReceipt(ctx context.Context, tx backend.Tx, w *batch, in receiptInput) error {
	run, att, found, identity := in.run, in.att, in.found, in.identity
	rc, check, at := in.receipt, in.check, in.at
	if err := check.verify(*run); err != nil {
		return err
	}
	if !found {
		return stateErr(ErrNotFound, "attempt %s", identity)
	}
	if att.Receipt != nil {
		switch att.Status {
		case backend.AttemptAdmitted, backend.AttemptRunning, backend.AttemptCancelling, backend.AttemptSiblingCancelling:
			if bytes.Equal(att.Receipt, rc) {
				return errNoop
			}
		}
		return stateErr(ErrConflict, "attempt is not prepared or receipt conflicts: %s", identity)
	}
	typ := event.AttemptAdmitted
	switch att.Status {
	case backend.AttemptPrepared:
		if err := state.AdmitAttempt(run, &att, at); err != nil {
			return err
		}
	case backend.AttemptCancelling, backend.AttemptSiblingCancelling:
		typ = event.AttemptCancellationReceiptRecorded
	case backend.AttemptRepairRequired:
		if att.Handoff != backend.HandoffRecorded {
			return stateErr(ErrConflict, "attempt is not prepared or receipt conflicts: %s", identity)
		}
		if err := state.AdmitAttempt(run, &att, at); err != nil {
			return err
		}
		if err := tx.Apply(ctx, backend.Changes{Replace: backend.Replaces{Attempts: []backend.Attempt{att}}}); err != nil {
			return err
		}
		if err := settleRepairState(ctx, tx, w, run, at); err != nil {
			return err
		}
	default:
		return stateErr(ErrConflict, "attempt is not prepared or receipt conflicts: %s", identity)
	}
	state.RecordReceipt(w, run, &att, typ, rc, at)
	run.UpdatedMS = at
	state.Replace(w, *run)
	return nil
}

// OwnerAdmission is an owner's view of an admission request.
type OwnerAdmission struct {
	Key      AttemptKey
	Identity string
	Intent   json.RawMessage
}

// CheckOwnerAdmission lets an owner verify an exact admission request at
// its own admission time, or recover the receipt it already has. It reads
// only. It returns the stored receipt whenever one exists (whatever the
// run's state: recovery grants no new execution); nil when the attempt is
// prepared and still eligible (admission may proceed); ErrIneligible when
// it is not; ErrConflict when the intent differs (compared canonically);
// ErrStaleAuthority unless auth is the run's current authority.
func (s *Engine) CheckOwnerAdmission(ctx context.Context, req OwnerAdmission, authority Authority) (json.RawMessage, error) {
	k, auth := req.Key, backend.Authority(authority)
	if err := validateAttemptKey(k); err != nil {
		return nil, err
	}
	if err := ValidateID("dispatch identity", req.Identity); err != nil {
		return nil, err
	}
	if err := validateAuthority(&auth); err != nil {
		return nil, err
	}
	intent, err := ownerJSON("owner admission intent", req.Intent)
	if err != nil {
		return nil, err
	}
	var out json.RawMessage
	err = s.view(ctx, func(r backend.ReadTx) error {
		f, err := r.Load(ctx, backend.Lookup{
			Runs: []string{k.RunID}, Activations: []backend.ActivationKey{k.ActivationKey},
			Attempts: []backend.AttemptKey{k},
		})
		if err != nil {
			return err
		}
		run, ok := f.Runs[k.RunID]
		if !ok {
			return stateErr(ErrStaleAuthority, "workflow run has no durable execution authority: %s", k.RunID)
		}
		if err := ownedBy(&auth, "owner admission").verify(run); err != nil {
			return err
		}
		act, ok := f.Activations[k.ActivationKey]
		if !ok {
			return stateErr(ErrNotFound, "activation %v", k.ActivationKey)
		}
		att, ok := f.Attempts[k]
		if !ok || att.Identity != req.Identity {
			return stateErr(ErrNotFound, "attempt %v with identity %q", k, req.Identity)
		}
		if !bytes.Equal(att.Intent, intent) {
			return stateErr(ErrConflict, "owner admission intent conflicts: %s", att.Identity)
		}
		if att.Receipt != nil {
			out = json.RawMessage(bytes.Clone(att.Receipt))
			return nil
		}
		eligible := att.Status == backend.AttemptPrepared && act.Status == backend.ActivationRunning &&
			run.Status == backend.RunRunning && run.CancelRequestedMS == 0
		if retiring, err := retirementPending(ctx, r, act); err != nil {
			return err
		} else if retiring {
			eligible = false
		}
		if !eligible {
			return stateErr(ErrIneligible, "owner admission is no longer eligible: %s", att.Identity)
		}
		return nil
	})
	return out, err
}
