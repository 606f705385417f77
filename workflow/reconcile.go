package workflow

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/event"
	"github.com/wfstore/wfstore/workflow/internal/state"
)

// ReconcileOptions selects the prepared attempts one reconciliation pass
// examines.
type ReconcileOptions struct {
	// RunID restricts the pass to one run when set.
	RunID string
	// Authority, when set (RunID required), must be the run's current one.
	Authority *Authority
	// Limit bounds the attempts examined: 1 to MaxPageLimit, 0 means
	// DefaultPageLimit.
	Limit int
	// Lookup, when set, is asked for a receipt of every attempt whose
	// handoff was recorded before deciding it is ambiguous (ReconcilePrepared
	// only). A typed nil (an interface holding a nil pointer) is rejected.
	Lookup ReceiptLookup
}

// ReconcileSummary sorts the prepared attempts a pass examined.
type ReconcileSummary struct {
	// NeverDispatched: handoff provably never recorded; left prepared, safe
	// to Redispatch with the same identity (mutating or not).
	NeverDispatched []AttemptRef
	// Recovered: the owner held a receipt; it was persisted (admitted).
	Recovered []AttemptRef
	// RepairRequired: ambiguous mutating attempts moved to repair_required.
	RepairRequired []AttemptRef
	// SafeReadOnly: ambiguous read-only attempts, left prepared; they may be
	// redispatched with the same identity (the owner dedupes).
	SafeReadOnly []AttemptRef
}

// ReconcilePrepared examines prepared attempts after a restart, using the
// never-dispatched proof. An attempt whose handoff was never recorded is
// left as it is and listed NeverDispatched. One whose handoff was recorded
// (or is unknown) and has no receipt is ambiguous: the owner's
// ReceiptLookup is asked first (recorded handoffs only); a receipt found is
// persisted; otherwise a mutating attempt goes to repair_required with its
// run, and a read-only one is listed SafeReadOnly.
//
// Every write of the pass is fenced. With opts.Authority set, it must be
// the run's current authority at every write; without it, each run's
// authority is read together with its attempts and must be unchanged at
// every write. A change (a transfer while the owner's lookup ran, say)
// stops the pass with ErrStaleAuthority and writes nothing for that
// attempt, which stays prepared for the current authority to recover.
func (s *Engine) ReconcilePrepared(ctx context.Context, opts ReconcileOptions, now time.Time) (ReconcileSummary, error) {
	var sum ReconcileSummary
	if opts.Lookup != nil && isNil(opts.Lookup) {
		return sum, invalid("receipt lookup", "must not be a typed nil")
	}
	limit, err := pageLimit("reconciliation limit", opts.Limit)
	if err != nil {
		return sum, err
	}
	opts.Limit = limit
	owned, err := s.passCheck(ctx, opts.RunID, copyAuthority(opts.Authority), now)
	if err != nil {
		return sum, err
	}
	attempts, err := s.preparedAttempts(ctx, opts.RunID, opts.Limit, owned)
	if err != nil {
		return sum, err
	}
	for _, pa := range attempts {
		att, check := pa.att, pa.check
		switch {
		case att.Handoff == backend.HandoffPending:
			sum.NeverDispatched = append(sum.NeverDispatched, attemptRef(att))
			continue
		case att.Handoff == backend.HandoffRecorded && opts.Lookup != nil:
			receipt, found, err := opts.Lookup.LookupReceipt(ctx, att.Identity)
			if err != nil {
				return sum, fmt.Errorf("%w: receipt lookup %s: %w", ErrOwner, att.Identity, err)
			}
			if found {
				err := s.persistReceipt(ctx, attemptRef(att), receipt, check.with("receipt"), now, nil)
				if _, ok := errors.AsType[*UnstorableError](err); ok {
					// Settled as repair_required: never redispatched, since
					// the owner would return the same receipt.
					sum.RepairRequired = append(sum.RepairRequired, attemptRef(att))
					continue
				}
				if err != nil {
					return sum, err
				}
				sum.Recovered = append(sum.Recovered, attemptRef(att))
				continue
			}
		}
		if att.SideEffect == backend.ReadOnly {
			sum.SafeReadOnly = append(sum.SafeReadOnly, attemptRef(att))
			continue
		}
		changed, err := s.markRepairRequired(ctx, att.Identity, check.with("reconciliation"), now)
		if err != nil {
			return sum, err
		}
		if changed {
			sum.RepairRequired = append(sum.RepairRequired, attemptRef(att))
		}
	}
	return sum, nil
}

// passCheck validates a pass's options and returns its owned authority
// check (mode none when the pass is unowned).
func (s *Store) passCheck(ctx context.Context, runID string, auth *backend.Authority, now time.Time) (authorityCheck, error) {
	if runID != "" {
		if err := ValidateID("run id", runID); err != nil {
			return authorityCheck{}, err
		}
	}
	if _, err := toMS("now", now); err != nil {
		return authorityCheck{}, err
	}
	if auth != nil {
		if runID == "" {
			return authorityCheck{}, invalid("reconciliation authority", "requires a run id")
		}
		if err := validateAuthority(auth); err != nil {
			return authorityCheck{}, err
		}
		if err := s.VerifyAuthority(ctx, runID, Authority(*auth)); err != nil {
			return authorityCheck{}, err
		}
	}
	return ownedBy(auth, "reconciliation"), nil
}

// passAttempt is one prepared attempt a recovery pass examines, with the
// authority check every write the pass makes for it must pass.
type passAttempt struct {
	att   backend.Attempt
	check authorityCheck
}

// preparedAttempts reads up to limit prepared attempts in one snapshot. An
// owned pass checks owned at every write; an unowned one snapshots the
// authority of each attempt's run in the same read and requires it
// unchanged at every write.
func (s *Store) preparedAttempts(ctx context.Context, runID string, limit int, owned authorityCheck) ([]passAttempt, error) {
	var out []passAttempt
	err := s.view(ctx, func(r backend.ReadTx) error {
		out = nil
		atts, err := r.Attempts(ctx, backend.AttemptQuery{RunID: runID, Status: backend.AttemptPrepared, Limit: limit})
		if err != nil || len(atts) == 0 {
			return err
		}
		var runs backend.Found
		if owned.mode != authOwned {
			var ids []string
			seen := map[string]bool{}
			for _, a := range atts {
				if !seen[a.Key.RunID] {
					seen[a.Key.RunID] = true
					ids = append(ids, a.Key.RunID)
				}
			}
			if runs, err = r.Load(ctx, backend.Lookup{Runs: ids}); err != nil {
				return err
			}
		}
		out = make([]passAttempt, len(atts))
		for i, a := range atts {
			check := owned
			if owned.mode != authOwned {
				check = authorityCheck{mode: authSnapshot, want: runs.Runs[a.Key.RunID].Authority, what: owned.what}
			}
			out[i] = passAttempt{att: a, check: check}
		}
		return nil
	})
	return out, err
}

// markRepairRequired moves a still-prepared, receipt-less attempt whose
// handoff is not pending to repair_required, with its run.
func (s *Store) markRepairRequired(ctx context.Context, identity string, check authorityCheck, now time.Time) (bool, error) {
	changed := false
	err := s.attemptTx(ctx, identity, now, func(tx backend.Tx, w *batch, run *backend.Run, act backend.Activation, att *backend.Attempt, at int64) error {
		if err := check.verify(*run); err != nil {
			return err
		}
		if att.Status != backend.AttemptPrepared || att.Receipt != nil || att.Handoff == backend.HandoffPending {
			return errNoop
		}
		if err := state.RequireAttemptRepair(w, run, att, event.AttemptRepairRequiredPayload{Reason: "ambiguous_handoff"}, at); err != nil {
			return err
		}
		if run.Status == backend.RunRunning || run.Status == backend.RunPaused {
			if err := state.HoldRunForRepair(run); err != nil {
				return err
			}
			if err := reindexRun(ctx, tx, w, *run); err != nil {
				return err
			}
		}
		changed = true
		return nil
	})
	return changed, err
}

// RedispatchSummary reports one Redispatch pass.
type RedispatchSummary struct {
	// Admitted lists the attempts redispatched and admitted.
	Admitted []AttemptRef
	// Skipped lists prepared attempts not eligible for redispatch now
	// (ambiguous mutating, or their run or activation no longer running).
	Skipped []AttemptRef
}

// Redispatch hands prepared attempts to the owner again with the same
// identity and intent: every attempt whose handoff was provably never
// recorded (mutating or not, through the 0→1 handoff), and read-only
// attempts whose handoff is recorded or unknown (the owner dedupes by
// identity). It never redispatches an ambiguous mutating attempt.
//
// It is fenced as Dispatch is. With opts.Authority set, it must be the
// run's current authority at the handoff and at the receipt; without it,
// each run's authority is read together with its attempts and must be
// unchanged at both. A change stops the pass with ErrStaleAuthority: a
// change before the handoff leaves the attempt untouched and the owner
// uncalled; one during the owner call leaves it prepared with its handoff
// recorded and no receipt, for the current authority to reconcile.
func (s *Engine) Redispatch(ctx context.Context, owner Owner, opts ReconcileOptions, now time.Time) (RedispatchSummary, error) {
	var sum RedispatchSummary
	if err := requireOwner(owner); err != nil {
		return sum, err
	}
	limit, err := pageLimit("reconciliation limit", opts.Limit)
	if err != nil {
		return sum, err
	}
	opts.Limit = limit
	owned, err := s.passCheck(ctx, opts.RunID, copyAuthority(opts.Authority), now)
	if err != nil {
		return sum, err
	}
	attempts, err := s.preparedAttempts(ctx, opts.RunID, opts.Limit, owned)
	if err != nil {
		return sum, err
	}
	for _, pa := range attempts {
		att, check := pa.att, pa.check
		if att.Receipt != nil || (att.Handoff != backend.HandoffPending && att.SideEffect != backend.ReadOnly) {
			sum.Skipped = append(sum.Skipped, attemptRef(att))
			continue
		}
		var act backend.Activation
		if err := s.view(ctx, func(r backend.ReadTx) error {
			a, err := backend.GetActivation(ctx, r, att.Key.ActivationKey)
			act = a
			return err
		}); err != nil {
			return sum, err
		}
		if _, err := s.handoff(ctx, att.Key, check.with("dispatch handoff"), true, now, nil); err != nil {
			if isIneligible(err) || errors.Is(err, ErrConflict) {
				sum.Skipped = append(sum.Skipped, attemptRef(att))
				continue
			}
			return sum, err
		}
		p := PreparedDispatch{Activation: toActivation(act), Attempt: att.Key.Attempt, Identity: att.Identity,
			SideEffect: Effect(att.SideEffect), Intent: att.Intent, PreparedAt: fromMS(att.PreparedMS)}
		receipt, err := owner.Dispatch(ctx, p)
		if err != nil {
			return sum, fmt.Errorf("%w: redispatch %s: %w", ErrOwner, att.Identity, err)
		}
		if err := s.persistReceipt(ctx, attemptRef(att), receipt, check.with("receipt"), now, nil); err != nil {
			return sum, err
		}
		sum.Admitted = append(sum.Admitted, attemptRef(att))
	}
	return sum, nil
}
