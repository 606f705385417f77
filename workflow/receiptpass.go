package workflow

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/wfstore/wfstore/backend"
)

// Observer reports what the owner knows of an admitted attempt: the
// receipt-backed pass asks it about each attempt it selects, outside any
// transaction. An error concerns that attempt alone: the pass reports it
// for the attempt, leaves the attempt as it is, and applies the others.
type Observer interface {
	Observe(ctx context.Context, a Attempt) (Observation, error)
}

// ReceiptPassOptions selects the attempts one receipt-backed pass examines.
type ReceiptPassOptions struct {
	// RunID restricts the pass to one run when set.
	RunID string
	// Authority, when set (RunID required), must be the run's current
	// authority, up front and when the observations are applied.
	Authority *Authority
	// Limit bounds the attempts examined: 1 to MaxPageLimit, 0 means DefaultPageLimit.
	Limit int
}

// ReceiptOutcome is what the pass did with one attempt.
type ReceiptOutcome struct {
	// Attempt is the attempt the pass examined.
	Attempt AttemptRef
	// Applied is the observer's observation the pass applied. The rules
	// of ApplyObservation may still map it (a finished attempt of a run
	// whose cancellation is requested settles as cancelled; Status says
	// what came of it).
	Applied ObservationKind
	// Status is the attempt's status afterwards.
	Status AttemptStatus
	// Unresolved: an Unknown outcome of a read-only attempt, left as is.
	Unresolved bool
	// Schedule is the automatic retry a RetryableFailure scheduled, if any.
	Schedule *RetrySchedule
	// NotScheduled says why a RetryableFailure that failed the attempt
	// scheduled no retry (see ObservationResult.NotScheduled).
	NotScheduled *RetryRefusal
	// Err, when set, is why nothing was applied to this attempt (the
	// observer's error, an invalid observation, or a conflict with a
	// settlement made meanwhile); Status is then the attempt's status as
	// selected, and Applied is empty. The next pass asks about it again.
	Err error
}

// ReceiptPassSummary lists the attempts a pass examined, in selection
// order (prepared time, then identity).
type ReceiptPassSummary struct {
	Attempts []ReceiptOutcome
}

// receiptPassStatuses are the statuses the pass selects: admitted work the
// owner holds a receipt for and that has not settled.
var receiptPassStatuses = []backend.AttemptStatus{backend.AttemptAdmitted, backend.AttemptRunning,
	backend.AttemptCancelling, backend.AttemptSiblingCancelling}

// ReconcileReceiptBacked asks the observer about admitted attempts after a
// restart and applies what it reports. It selects, in one snapshot, up to
// opts.Limit attempts that hold a receipt and are admitted, running,
// cancelling or sibling_cancelling (optionally of one run), earliest
// prepared first. It then asks the observer about each one outside any
// transaction, those of runs whose cancellation is requested included
// (signalled or not: the owner's word decides whether the work still
// runs). Finally it applies every observation in one transaction, by the
// rules of ApplyObservation: a finished attempt of a cancelled run is
// terminal (cancelled, with what the owner observed on its event), never
// repair_required, and an Unknown read-only outcome is listed Unresolved.
//
// One attempt's trouble stays with that attempt: a failing observer
// (ErrOwner), an invalid observation (ErrOwner and ErrInvalidInput) or an
// observation that contradicts an attempt settled meanwhile (ErrConflict)
// is reported in that attempt's ReceiptOutcome.Err, the attempt is left as
// it was, and the other observations are applied.
//
// Concurrent passes of one Store spread their work: a pass selects past
// the attempts another pass of the Store is asking about and claims the
// ones it selected until it has applied them, so the owner is asked about
// an attempt by one of them only. On a backend that shares claims across
// processes (backend.Claimer), passes of different Stores spread the same
// way through the backend; elsewhere they are not told of each other's
// claims. Claims only spread work: the transaction that applies the
// observations decides, whoever held the claim.
//
// Fencing: with opts.Authority, the run's authority must be it, up front
// and when applying; without, each run's authority as read when selecting
// must be unchanged when applying. A changed authority (ErrStaleAuthority)
// fails the pass, and nothing is applied. The selection reads at most
// 10*Limit attempts of each status.
func (s *Engine) ReconcileReceiptBacked(ctx context.Context, o Observer, opts ReceiptPassOptions, now time.Time) (ReceiptPassSummary, error) {
	var sum ReceiptPassSummary
	if o == nil || isNil(o) {
		return sum, invalid("observer", "is required")
	}
	limit, err := pageLimit("reconciliation limit", opts.Limit)
	if err != nil {
		return sum, err
	}
	opts.Limit = limit
	check, err := s.passCheck(ctx, opts.RunID, copyAuthority(opts.Authority), now)
	if err != nil {
		return sum, err
	}
	at, err := toMS("now", now)
	if err != nil {
		return sum, err
	}
	selected, runs, err := s.receiptBacked(ctx, opts.RunID, opts.Limit)
	if err != nil {
		return sum, err
	}
	ids := make([]string, len(selected))
	for i, a := range selected {
		ids[i] = a.Identity
	}
	mine, release := s.observing.claim(ids)
	defer release()
	mine, releaseShared := s.claimObserving(ctx, selected, mine)
	defer releaseShared()
	type planned struct {
		att backend.Attempt
		obs Observation
		v   validObservation
		out ReceiptOutcome
	}
	var plan []planned
	for i, att := range selected {
		if !mine[i] {
			continue // another pass of this Store asks about it
		}
		p := planned{att: att, out: ReceiptOutcome{Attempt: attemptRef(att), Status: AttemptStatus(att.Status)}}
		if err := ctx.Err(); err != nil {
			return sum, err
		}
		obs, err := o.Observe(ctx, toAttempt(att))
		if err != nil {
			p.out.Err = fmt.Errorf("%w: observe %s: %w", ErrOwner, att.Identity, err)
			plan = append(plan, p)
			continue
		}
		p.obs = obs
		v, err := p.obs.validate(at)
		if err != nil && v.unstorable == nil { // an unstorable one settles its attempt
			p.out.Err = fmt.Errorf("%w: observation of %s: %w", ErrOwner, att.Identity, err)
			plan = append(plan, p)
			continue
		}
		p.v = v
		p.out.Applied = p.obs.Kind
		plan = append(plan, p)
	}
	err = s.update(ctx, func(tx backend.Tx, w *batch) error {
		for i := range plan {
			p := &plan[i]
			if p.out.Applied == "" {
				continue // nothing to apply: its error is reported
			}
			c := check.with("receipt-backed reconciliation")
			if opts.Authority == nil {
				c = authorityCheck{mode: authSnapshot, want: runs[p.att.Key.RunID].Authority, what: "receipt-backed reconciliation"}
			}
			if err := conflictsWithSettled(ctx, tx, p.att.Identity, p.obs.Kind); err != nil {
				if !errors.Is(err, ErrConflict) {
					return err
				}
				p.out.Err = err // this attempt only; nothing of it written
				continue
			}
			mark := w.Mark()
			res, err := applyObservation(ctx, txn{Tx: tx, W: w, At: at}, p.att.Identity, p.obs, p.v, c)
			switch {
			case errors.Is(err, errNoop):
				w.Truncate(mark)
			case err != nil:
				return err
			}
			p.out.Status, p.out.Unresolved, p.out.Schedule, p.out.NotScheduled = res.Status, res.Unresolved, res.Schedule, res.NotScheduled
			if err := flush(ctx, tx, w); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return ReceiptPassSummary{}, err
	}
	for _, p := range plan {
		if p.out.Err != nil {
			p.out.Applied, p.out.Schedule, p.out.NotScheduled, p.out.Unresolved = "", nil, nil, false
		}
		sum.Attempts = append(sum.Attempts, p.out)
	}
	return sum, nil
}

// conflictsWithSettled fails with ErrConflict when observing kind
// contradicts the attempt's status because it settled since the pass
// selected it: the check ApplyObservation makes first, made here before
// anything of the attempt is written so that the pass can skip it alone.
func conflictsWithSettled(ctx context.Context, tx backend.Tx, identity string, kind ObservationKind) error {
	att, err := backend.GetAttemptByIdentity(ctx, tx, identity)
	if err != nil {
		return notFoundFrom(err, "attempt %s", identity)
	}
	if (isSettled(att.Status) || att.Status == backend.AttemptRepairRequired) && !compatibleSettled(att.Status, kind) {
		return stateErr(ErrConflict, "terminal workflow attempt observation conflicts with persisted status %s: %s", att.Status, identity)
	}
	return nil
}

// receiptBacked selects, in one snapshot, up to limit receipt-backed
// attempts in the pass's statuses, earliest prepared first, with the runs
// they belong to as read then.
func (s *Store) receiptBacked(ctx context.Context, runID string, limit int) ([]backend.Attempt, map[string]backend.Run, error) {
	var out []backend.Attempt
	var runs map[string]backend.Run
	err := s.view(ctx, func(r backend.ReadTx) error {
		out = out[:0]
		for _, st := range receiptPassStatuses {
			q := backend.AttemptQuery{RunID: runID, Status: st, Limit: limit}
			found := 0
			for read := 0; read < 10*limit && found < limit; {
				page, err := r.Attempts(ctx, q)
				if err != nil {
					return err
				}
				read += len(page)
				for _, a := range page {
					if a.Receipt != nil && found < limit && !s.observing.has(a.Identity) && !s.foreign.hasObserving(a.Identity) {
						out = append(out, a)
						found++
					}
				}
				if len(page) < q.Limit {
					break
				}
				last := page[len(page)-1]
				q.After = backend.AttemptCursor{PreparedMS: last.PreparedMS, Identity: last.Identity}
			}
		}
		slices.SortFunc(out, func(a, b backend.Attempt) int {
			return cmp.Or(cmp.Compare(a.PreparedMS, b.PreparedMS), cmp.Compare(a.Identity, b.Identity))
		})
		out = out[:min(len(out), limit)]
		var ids []string
		for _, a := range out {
			if !slices.Contains(ids, a.Key.RunID) {
				ids = append(ids, a.Key.RunID)
			}
		}
		f, err := r.Load(ctx, backend.Lookup{Runs: ids})
		if err != nil {
			return err
		}
		runs = f.Runs
		return nil
	})
	return out, runs, err
}
