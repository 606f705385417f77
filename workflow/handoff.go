package workflow

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"time"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/workflow/internal/state"
)

// Handoff records, as a 0→1 compare-and-set, that the owner is about to be
// called for the prepared attempt. Only the caller whose
// Handoff succeeded may call the owner: a second Handoff of the same
// identity fails with ErrConflict. It re-checks everything the owner call
// depends on (attempt prepared, activation and run running, no
// cancellation, no retirement pending, authority) and fails with
// ErrIneligible or ErrStaleAuthority otherwise, recording nothing. authority,
// when set, must be the run's current authority. Like every handoff write,
// it stores a fresh random holder token (see Dispatch, "Batch mode").
func (s *Engine) Handoff(ctx context.Context, key AttemptKey, authority *Authority, now time.Time) error {
	auth := copyAuthority(authority)
	k := key
	if err := validateAttemptKey(k); err != nil {
		return err
	}
	if err := validateAuthority(auth); err != nil {
		return err
	}
	_, err := s.handoff(ctx, k, ownedBy(auth, "dispatch handoff"), false, now, nil)
	return err
}

// newHandoffToken returns a fresh holder token for one handoff write: 128
// random bits, hex encoded. It is made outside any transaction function,
// so that a transaction that re-runs writes the same token, and never
// reused: a write fenced on "this dispatcher's own handoff" compares it
// exactly, and any later handoff write of the attempt replaces it.
func newHandoffToken() string {
	var b [16]byte
	rand.Read(b[:])          // never fails (crypto/rand)
	var out [2 * len(b)]byte // hex.EncodeToString's buffer, not allocated
	hex.Encode(out[:], b[:])
	return string(out[:])
}

// handoff implements Handoff. reHandoff allows an already recorded handoff
// of a read-only attempt to be re-verified (redispatch with the same
// identity); it never flips anything for a mutating attempt. Every handoff
// write (the flip, and the re-verify of a recorded read-only handoff)
// stores a fresh holder token. kn, when set,
// holds the records prepare committed (see known); the returned known holds
// the records the handoff committed, for the receipt.
func (s *Store) handoff(ctx context.Context, k backend.AttemptKey, check authorityCheck, reHandoff bool, now time.Time, kn *known) (*known, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	at, err := toMS("now", now)
	if err != nil {
		return nil, err
	}
	var (
		next  *known
		ident string
	)
	token := newHandoffToken()
	decide := func(tx backend.Tx, w *batch, run backend.Run, act backend.Activation, att backend.Attempt, found bool) error {
		ident = att.Identity
		kn, err := decideHandoff(ctx, tx, w, handoffInput{
			run: &run, act: act, att: att, found: found, key: k, check: check, reHandoff: reHandoff, token: token, at: at,
		})
		next = nil
		if err == nil {
			next = &kn
		}
		return err
	}
	if kn != nil {
		done, err := s.decideKnown(ctx, kn.expected(), func(tx backend.Tx, w *batch) error {
			return decide(tx, w, kn.run, kn.act, kn.att, true)
		})
		if done || err != nil {
			return next, handoffOutcomeUnknown(err, heldBy(k, ident, token))
		}
	}
	err = s.update(ctx, func(tx backend.Tx, w *batch) error {
		f, err := tx.Load(ctx, backend.Lookup{
			Runs: []string{k.RunID}, Activations: []backend.ActivationKey{k.ActivationKey},
			Attempts: []backend.AttemptKey{k},
		})
		if err != nil {
			return err
		}
		run, ok := f.Runs[k.RunID]
		if !ok {
			return stateErr(ErrNotFound, "run %q", k.RunID)
		}
		att, found := f.Attempts[k]
		return decide(tx, w, run, f.Activations[k.ActivationKey], att, found)
	})
	if errors.Is(err, errNoop) {
		return nil, nil
	}
	if err != nil {
		return nil, handoffOutcomeUnknown(err, heldBy(k, ident, token))
	}
	return next, nil
}

// heldBy names the handoff write of attempt k (identity ident) with token;
// nothing when the write never read the attempt.
func heldBy(k backend.AttemptKey, ident, token string) []HeldHandoff {
	if ident == "" {
		return nil
	}
	return []HeldHandoff{{Attempt: AttemptRef{Key: k, Identity: ident}, Token: token}}
}

// handoffInput is what one handoff decision is made on: attempt key, its
// run, activation and attempt as read (found reports whether the attempt
// exists), the authority check, whether this is a read-only attempt's
// re-verification for a redispatch (reHandoff), the fresh holder token and
// the time.
type handoffInput struct {
	run       *backend.Run
	act       backend.Activation
	att       backend.Attempt
	found     bool
	key       backend.AttemptKey
	check     authorityCheck
	reHandoff bool
	token     string
	at        int64
}

// decideHandoff is the whole handoff decision for attempt in.key, on its
// run, activation and attempt. It writes to w and to *in.run (the
// handed-off event advances its sequence), recording in.token as the
// handoff's holder token, and returns the records it committed (by value,
// valid only with a nil error); errNoop when there is nothing to write.
func decideHandoff(ctx context.Context, tx backend.ReadTx, w *batch, in handoffInput) (known, error) {
	run, act, att, found, k := in.run, in.act, in.att, in.found, in.key
	check, reHandoff, token, at := in.check, in.reHandoff, in.token, in.at
	if err := check.verify(*run); err != nil {
		return known{}, err
	}
	if !found || att.Status != backend.AttemptPrepared || act.Status != backend.ActivationRunning ||
		run.Status != backend.RunRunning || run.CancelRequestedMS != 0 {
		return known{}, stateErr(ErrIneligible, "dispatch handoff is no longer eligible: %v", k)
	}
	if retiring, err := retirementPending(ctx, tx, act); err != nil {
		return known{}, err
	} else if retiring {
		return known{}, stateErr(ErrIneligible, "dispatch handoff is no longer eligible: fan-out retirement pending for %v", k)
	}
	switch att.Handoff {
	case backend.HandoffPending:
	case backend.HandoffRecorded:
		if reHandoff && att.SideEffect == backend.ReadOnly {
			// Re-verified for a redispatch: the handoff is this caller's
			// now, and a late release by the one that recorded it fails.
			att.HandoffToken = token
			state.Replace(w, att)
			return known{run: *run, act: act, att: att}, nil
		}
		return known{}, stateErr(ErrConflict, "dispatch handoff already recorded for %s", att.Identity)
	case backend.HandoffUnknown:
		// No handoff state exists (low-level prepare): nothing to flip,
		// and never a never-dispatched proof. Only read-only work may go.
		if att.SideEffect == backend.ReadOnly {
			return known{}, errNoop
		}
		return known{}, stateErr(ErrIneligible, "mutating attempt %s has no handoff state; reconcile it", att.Identity)
	}
	state.RecordHandoff(w, run, &att, token, at)
	state.Replace(w, *run)
	return known{run: *run, act: act, att: att}, nil
}

// retirementPending reports whether act is a fan-out member whose group has
// a retirement intent recorded and not settled.
func retirementPending(ctx context.Context, r backend.ReadTx, act backend.Activation) (bool, error) {
	if act.Group == nil {
		return false, nil
	}
	f, err := r.Load(ctx, backend.Lookup{Groups: []backend.ActivationKey{act.Group.Controller}})
	if err != nil {
		return false, err
	}
	g, ok := f.Groups[act.Group.Controller]
	return ok && g.Retiring, nil
}
