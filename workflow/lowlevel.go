package workflow

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/workflow/internal/state"
)

// AttemptIntent is a low-level attempt to prepare directly.
type AttemptIntent struct {
	Key        AttemptKey
	SideEffect Effect
	Intent     json.RawMessage
}

// PrepareAttempt is the low-level bypass: it records a
// prepared attempt at an exact attempt number without taking the pending
// gate, leases or a handoff state. Attempts it creates have an unknown
// handoff and never gain the never-dispatched proof; reconciliation treats
// them conservatively. Re-preparing the identical intent and side effect
// returns the identity and changes nothing (that is not permission to
// dispatch again); anything else at that number fails with ErrConflict.
// Only new attempts are checked against the limits.
func (s *Engine) PrepareAttempt(ctx context.Context, ai AttemptIntent, now time.Time) (string, error) {
	if err := validateAttemptKey(ai.Key); err != nil {
		return "", err
	}
	intent, err := checkPlan(Plan{SideEffect: ai.SideEffect, Intent: ai.Intent})
	if err != nil {
		return "", err
	}
	at, err := toMS("now", now)
	if err != nil {
		return "", err
	}
	k, effect := ai.Key, backend.Effect(ai.SideEffect)
	identity := DispatchIdentity(k.RunID, k.NodeID, k.ActivationID, k.Attempt)
	err = s.update(ctx, func(tx backend.Tx, w *batch) error {
		f, err := tx.Load(ctx, backend.Lookup{
			Runs: []string{k.RunID}, Activations: []backend.ActivationKey{k.ActivationKey},
			Attempts: []backend.AttemptKey{k},
		})
		if err != nil {
			return err
		}
		if old, ok := f.Attempts[k]; ok {
			if old.Identity == identity && bytes.Equal(old.Intent, intent) && old.SideEffect == effect {
				return errNoop
			}
			return stateErr(ErrConflict, "prepared attempt identity conflict: %s", identity)
		}
		run, ok := f.Runs[k.RunID]
		if !ok {
			return stateErr(ErrNotFound, "run %q", k.RunID)
		}
		act, ok := f.Activations[k.ActivationKey]
		if !ok {
			return stateErr(ErrNotFound, "activation %v", k.ActivationKey)
		}
		root := run
		if run.RootID != run.ID {
			if root, err = backend.GetRun(ctx, tx, run.RootID); err != nil {
				return notFoundFrom(err, "root run %q", run.RootID)
			}
		}
		if err := enforceAttemptLimits(run, root, k.Attempt, at); err != nil {
			return err
		}
		att := backend.Attempt{
			Key: k, Identity: identity, Status: backend.AttemptPrepared, SideEffect: effect,
			Intent: intent, IntentChecksum: Checksum(intent), Handoff: backend.HandoffUnknown, PreparedMS: at,
		}
		if err := state.PrepareLowLevelAttempt(w, state.AttemptStart{Run: &run, Root: &root, Act: &act, Att: &att}, at); err != nil {
			return err
		}
		state.Replace(w, run)
		return nil
	})
	if errors.Is(err, errNoop) {
		err = nil
	}
	if err != nil {
		return "", err
	}
	return identity, nil
}
