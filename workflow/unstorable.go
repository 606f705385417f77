package workflow

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/event"
	"github.com/wfstore/wfstore/workflow/internal/state"
)

// An owner's value the store cannot keep (a receipt or an observation
// that is not valid JSON, too large or too deep) is never stored, never
// retried and never asked for again: the Store's own paths (Dispatch in
// both modes, Redispatch, ReconcilePrepared's ReceiptLookup and the
// receipt-backed pass) settle its attempt as repair_required in one
// transaction, with an attempt_repair_required event describing the value
// (event.Unstorable), once. The owner may hold the work; its outcome is for an
// operator to settle with Repair, or for a storable late receipt.

// UnstorableError reports an owner's value the Store could not keep. Its
// attempt is repair_required (settled by this call or an earlier one), and
// Value is what the settlement event records. It matches ErrOwner, and
// ErrTooLarge when the value was too large; never ErrInvalidInput, since
// the caller's arguments were valid. Asking again returns the same value:
// no retry helps.
type UnstorableError struct {
	Identity string
	Value    event.Unstorable
}

func (e *UnstorableError) Error() string {
	return fmt.Sprintf("workflow: owner call failed: %s of %s cannot be stored (%s; %d bytes, sha256 %s): attempt settled as repair_required",
		e.Value.Document, e.Identity, e.Value.Detail, e.Value.SizeBytes, e.Value.SHA256)
}

// Is matches ErrOwner, and ErrTooLarge for a value over its size limit.
func (e *UnstorableError) Is(target error) bool {
	return target == ErrOwner || (target == ErrTooLarge && e.Value.Problem == problemTooLarge)
}

// Unstorable problems.
const (
	problemTooLarge = "too_large"
	problemTooDeep  = "too_deep"
	problemInvalid  = "invalid"
)

// maxUnstorableDetail bounds the validation error an event.Unstorable records
// (a duplicate key is quoted in it, and a key may be long).
const maxUnstorableDetail = 512

// unstorableValue describes raw, an owner's value that a check with the
// limits lim refused with err, for the event that settles its attempt.
func unstorableValue(document string, raw []byte, bytes, depth int, err error) *event.Unstorable {
	u := &event.Unstorable{
		Document: document, Problem: problemInvalid, Detail: truncateUTF8(err.Error(), maxUnstorableDetail),
		LimitBytes: int64(bytes), LimitDepth: int64(depth),
		SizeBytes: int64(len(raw)), SHA256: Checksum(raw),
	}
	if ie, ok := errors.AsType[*InputError](err); ok {
		switch {
		case ie.Oversized:
			u.Problem = problemTooLarge
		case ie.tooDeep:
			u.Problem = problemTooDeep
		}
	}
	return u
}

// truncateUTF8 cuts s to at most n bytes on a rune boundary.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// settleUnstorableReceipt settles attempt k, whose owner returned raw as
// its receipt (refused by ownerJSON with verr), as repair_required, and
// returns the *UnstorableError. An attempt already repair_required is left
// as it is (the settlement happens once); one that holds a receipt, or is
// settled, is ErrConflict (no receipt it could hold equals raw); a missing
// one ErrNotFound. check fences the write as it fences the receipt's.
func (s *Store) settleUnstorableReceipt(ctx context.Context, ref AttemptRef, raw []byte, verr error, check authorityCheck, now time.Time) error {
	k, identity := ref.Key, ref.Identity
	at, err := toMS("now", now)
	if err != nil {
		return err
	}
	u := unstorableValue("dispatch receipt", raw, MaxOwnerJSONBytes, MaxOwnerJSONDepth, verr)
	err = s.update(ctx, func(tx backend.Tx, w *batch) error {
		f, err := tx.Load(ctx, backend.Lookup{Runs: []string{k.RunID}, Attempts: []backend.AttemptKey{k}})
		if err != nil {
			return err
		}
		run, ok := f.Runs[k.RunID]
		if !ok {
			return stateErr(ErrNotFound, "run %q", k.RunID)
		}
		if err := check.verify(run); err != nil {
			return err
		}
		att, ok := f.Attempts[k]
		switch {
		case !ok:
			return stateErr(ErrNotFound, "attempt %s", identity)
		case att.Receipt != nil:
			return stateErr(ErrConflict, "attempt is not prepared or receipt conflicts: %s", identity)
		case att.Status == backend.AttemptRepairRequired:
			return errNoop
		case att.Status != backend.AttemptPrepared && att.Status != backend.AttemptCancelling &&
			att.Status != backend.AttemptSiblingCancelling:
			return stateErr(ErrConflict, "attempt is not prepared or receipt conflicts: %s", identity)
		}
		if err := settleUnstorable(ctx, txn{Tx: tx, W: w, At: at}, &run, &att, event.RepairReceiptNotStorable, u); err != nil {
			return err
		}
		state.Replace(w, run)
		return nil
	})
	if err != nil && !errors.Is(err, errNoop) {
		return err
	}
	return &UnstorableError{Identity: identity, Value: *u}
}

// settleUnstorable moves att to repair_required with the event recording
// u, and a running or paused run to repair_required; the caller replaces
// the run.
func settleUnstorable(ctx context.Context, t txn, run *backend.Run, att *backend.Attempt, reason string, u *event.Unstorable) error {
	tx, w, at := t.Tx, t.W, t.At
	if err := state.RequireAttemptRepair(w, run, att, event.AttemptRepairRequiredPayload{Reason: reason, Unstorable: u}, at); err != nil {
		return err
	}
	run.UpdatedMS = at
	if run.Status == backend.RunRunning || run.Status == backend.RunPaused {
		if err := state.HoldRunForRepair(run); err != nil {
			return err
		}
		return reindexRun(ctx, tx, w, *run)
	}
	return nil
}
