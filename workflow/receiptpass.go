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
// transaction. An error stops the pass before anything is applied.
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
	// OwnerAsked is false when the run's cancellation was requested: the
	// pass then applied Cancelled without asking the observer.
	OwnerAsked bool
	// Applied is the observation the pass applied (the observer's, or
	// Cancelled). The rules of ApplyObservation may still map it (a run
	// whose cancellation is requested by then gets Cancelled).
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
// transaction, except that an attempt whose run has cancellation requested
// gets Cancelled without the observer being asked. Finally it applies
// every observation in one transaction, by the rules of ApplyObservation:
// a cancelled receipt-backed mutation is terminal (cancelled), never
// repair_required, and an Unknown read-only outcome is listed Unresolved.
//
// Fencing: with opts.Authority, the run's authority must be it, up front
// and when applying; without, each run's authority as read when selecting
// must be unchanged when applying. A failing observer (ErrOwner), an
// invalid observation (ErrOwner and ErrInvalidInput), a changed authority
// (ErrStaleAuthority) or an observation that contradicts an attempt
// settled meanwhile (ErrConflict) fails the pass, and nothing is applied.
// The selection reads at most 10*Limit attempts of each status.
func (s *Store) ReconcileReceiptBacked(ctx context.Context, o Observer, opts ReceiptPassOptions, now time.Time) (ReceiptPassSummary, error) {
	var sum ReceiptPassSummary
	if o == nil || isNil(o) {
		return sum, invalid("observer", "is required")
	}
	limit, err := pageLimit("reconciliation limit", opts.Limit)
	if err != nil {
		return sum, err
	}
	opts.Limit = limit
	check, err := s.passCheck(ctx, opts.RunID, authorityIn(opts.Authority), now)
	if err != nil {
		return sum, err
	}
	at, err := toMS("now", now)
	if err != nil {
		return sum, err
	}
	attempts, runs, err := s.receiptBacked(ctx, opts.RunID, opts.Limit)
	if err != nil {
		return sum, err
	}
	type planned struct {
		att backend.Attempt
		obs Observation
		v   validObservation
		out ReceiptOutcome
	}
	var plan []planned
	for _, att := range attempts {
		p := planned{att: att, out: ReceiptOutcome{Attempt: attemptRef(att)}}
		if runs[att.Key.RunID].CancelRequestedMS != 0 {
			p.obs = Observation{Kind: ObservedCancelled}
		} else {
			if err := ctx.Err(); err != nil {
				return sum, err
			}
			obs, err := o.Observe(ctx, toAttempt(att))
			if err != nil {
				return sum, fmt.Errorf("%w: observe %s: %w", ErrOwner, att.Identity, err)
			}
			p.obs, p.out.OwnerAsked = obs, true
		}
		v, err := p.obs.validate(at)
		if err != nil && v.unstorable == nil { // an unstorable one settles its attempt
			return sum, fmt.Errorf("%w: observation of %s: %w", ErrOwner, att.Identity, err)
		}
		p.v = v
		p.out.Applied = p.obs.Kind
		plan = append(plan, p)
	}
	err = s.update(ctx, func(tx backend.Tx, w *batch) error {
		for i := range plan {
			p := &plan[i]
			c := check.with("receipt-backed reconciliation")
			if opts.Authority == nil {
				c = authorityCheck{mode: authSnapshot, want: runs[p.att.Key.RunID].Authority, what: "receipt-backed reconciliation"}
			}
			mark := w.mark()
			res, err := applyObservation(ctx, tx, w, p.att.Identity, p.obs, p.v, c, at)
			switch {
			case errors.Is(err, errNoop):
				w.truncate(mark)
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
		sum.Attempts = append(sum.Attempts, p.out)
	}
	return sum, nil
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
					if a.Receipt != nil && found < limit {
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
