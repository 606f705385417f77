package workflow

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/wfstore/wfstore/backend"
)

// DispatchOptions selects what one Dispatch call admits.
type DispatchOptions struct {
	// RunID restricts discovery to one run when set.
	RunID string
	// Authority, when set (RunID required), is verified before discovery and
	// required at every boundary: the owned dispatch. When nil, the run's
	// authority is snapshotted at discovery and must not change until the
	// receipt commits.
	Authority *Authority
	// Limit bounds the activations taken from discovery: 1..=MaxPageLimit,
	// 0 means DefaultPageLimit.
	Limit int
	// Fault, when set, is called at every boundary.
	Fault FaultHook
}

// Rejection is one activation discovery returned that cannot be admitted for
// a reason of its own run (DESIGN §5.9); the batch went on.
type Rejection struct {
	Key ActivationKey
	Err error
}

// DispatchSummary reports one Dispatch call.
type DispatchSummary struct {
	// Admitted lists the dispatch identities admitted (receipt committed).
	Admitted []string
	// Unsupported lists activations the owner declined to plan.
	Unsupported []ActivationKey
	// Raced lists activations another dispatcher took first, or that lost to
	// concurrency capacity or a conflicting resource lease.
	Raced []ActivationKey
	// Exhausted lists activations blocked by the run's or the root's
	// execution allowance; they stay pending and no attempt exists.
	Exhausted []ActivationKey
	// Rejected lists activations refused for a durable reason of their run.
	Rejected []Rejection
}

// Dispatch admits pending activations: for each one discovered it plans with
// the owner, commits the attempt intent, records the handoff, calls the
// owner, and commits the receipt. Storage errors, authority changes and
// owner or fault-hook errors stop the batch and are returned with the
// summary so far; everything committed before stays durable.
func (s *Store) Dispatch(ctx context.Context, owner Owner, opts DispatchOptions, now time.Time) (DispatchSummary, error) {
	var sum DispatchSummary
	if err := requireOwner(owner); err != nil {
		return sum, err
	}
	limit, err := pageLimit("dispatch limit", opts.Limit)
	if err != nil {
		return sum, err
	}
	opts.Limit = limit
	if opts.RunID != "" {
		if err := ValidateID("run id", opts.RunID); err != nil {
			return sum, err
		}
	}
	if opts.Authority != nil {
		if opts.RunID == "" {
			return sum, invalid("dispatch authority", "requires a run id")
		}
		if err := validateAuthority(opts.Authority); err != nil {
			return sum, err
		}
	}
	if _, err := toMS("now", now); err != nil {
		return sum, err
	}
	if opts.Authority != nil {
		if err := s.VerifyAuthority(ctx, opts.RunID, *opts.Authority); err != nil {
			return sum, err
		}
	}
	cands, err := s.discover(ctx, opts.RunID, opts.Limit)
	if err != nil {
		return sum, err
	}
	for _, c := range cands {
		if err := ctx.Err(); err != nil {
			return sum, err
		}
		check := authorityCheck{mode: authSnapshot, want: c.authority}
		if opts.Authority != nil {
			check = ownedBy(opts.Authority, "")
		}
		if c.full {
			sum.Raced = append(sum.Raced, c.act.Key)
			continue
		}
		identity, outcome, err := s.admitOne(ctx, owner, c.run, c.act, check, opts.Fault, now)
		switch outcome {
		case outAdmitted:
			sum.Admitted = append(sum.Admitted, identity)
		case outUnsupported:
			sum.Unsupported = append(sum.Unsupported, c.act.Key)
		case outRaced:
			sum.Raced = append(sum.Raced, c.act.Key)
		case outExhausted:
			sum.Exhausted = append(sum.Exhausted, c.act.Key)
		case outRejected:
			sum.Rejected = append(sum.Rejected, Rejection{Key: c.act.Key, Err: err})
			err = nil
		}
		if err != nil {
			return sum, err
		}
	}
	return sum, nil
}

type outcome uint8

const (
	outFailed outcome = iota
	outAdmitted
	outUnsupported
	outRaced
	outExhausted
	outRejected
)

// admitOne runs the whole admission of one activation.
func (s *Store) admitOne(ctx context.Context, owner Owner, run backend.Run, act Activation, check authorityCheck, fault FaultHook, now time.Time) (string, outcome, error) {
	if check.mode == authOwned {
		if err := s.VerifyAuthority(ctx, act.Key.RunID, *check.want); err != nil {
			return "", outFailed, err
		}
	}
	plan, err := owner.Plan(ctx, act)
	if err != nil {
		return "", outFailed, fmt.Errorf("%w: plan %v: %w", ErrOwner, act.Key, err)
	}
	if plan == nil {
		return "", outUnsupported, nil
	}
	p, kn, err := s.prepare(ctx, act.Key, *plan, check.with("preparation"), hintFrom(run, act), now)
	switch {
	case err == nil && p == nil:
		return "", outRaced, nil
	case errors.Is(err, ErrConcurrencyCapacity), errors.Is(err, ErrResourceConflict):
		return "", outRaced, nil
	case errors.Is(err, ErrNodeAllowanceExhausted), errors.Is(err, ErrRootAllowanceExhausted):
		if rerr := s.recordExhaustion(ctx, act.Key.RunID, check.with("exhaustion observation"), now); rerr != nil {
			return "", outFailed, rerr
		}
		return "", outExhausted, nil
	case errors.Is(err, ErrIneligible):
		if perr := s.park(ctx, act.Key, now); perr != nil {
			return "", outFailed, perr
		}
		return "", outRejected, err
	case err != nil:
		return "", outFailed, err
	}
	if err := runFault(ctx, fault, IntentCommitted, *p); err != nil {
		return "", outFailed, err
	}
	if kn, err = s.handoff(ctx, p.Key(), check.with("dispatch handoff"), false, now, kn); err != nil {
		return "", outFailed, err
	}
	receipt, err := owner.Dispatch(ctx, *p)
	if err != nil {
		return "", outFailed, fmt.Errorf("%w: dispatch %s: %w", ErrOwner, p.Identity, err)
	}
	if err := runFault(ctx, fault, OwnerAccepted, *p); err != nil {
		return "", outFailed, err
	}
	if err := s.persistReceipt(ctx, p.Key(), p.Identity, receipt, check.with("receipt"), now, kn); err != nil {
		return "", outFailed, err
	}
	if err := runFault(ctx, fault, ReceiptCommitted, *p); err != nil {
		return "", outFailed, err
	}
	return p.Identity, outAdmitted, nil
}

func runFault(ctx context.Context, f FaultHook, b Boundary, p PreparedDispatch) error {
	if f == nil {
		return nil
	}
	if err := f(ctx, b, p); err != nil {
		return fmt.Errorf("%w: fault at %s: %w", ErrOwner, b, err)
	}
	return nil
}

// candidate is one discovered activation with the facts the batch needs.
type candidate struct {
	act       Activation
	run       backend.Run // the run at discovery
	authority *Authority  // the run's authority at discovery (snapshot)
	full      bool        // the run had no concurrency room left at discovery
}

// discover reads up to limit admissible activations in one snapshot. When a
// run has no concurrency room left, its first extra activation is returned
// as full (it will be reported raced) and the rest of the run is skipped,
// so one busy run does not hold every place of the batch.
func (s *Store) discover(ctx context.Context, runID string, limit int) ([]candidate, error) {
	var out []candidate
	err := s.view(ctx, func(r backend.ReadTx) error {
		out = out[:0]
		runs := map[string]backend.Run{}
		taken := map[string]int64{}
		q := backend.PendingQuery{RunID: runID}
		taken0 := 0
		for taken0 < limit {
			q.Limit = limit - taken0
			page, err := r.PendingActivations(ctx, q)
			if err != nil {
				return err
			}
			if err := loadRuns(ctx, r, runs, page); err != nil {
				return err
			}
			skipped := false
			for _, act := range page {
				q.After, q.AfterRun = act.Key, false
				run, ok := runs[act.Key.RunID]
				if !ok {
					continue
				}
				room := run.Limits.ConcurrencyCap - run.ActiveCount - taken[run.ID]
				c := candidate{act: act, run: run, authority: run.Authority, full: room <= 0}
				out = append(out, c)
				if c.full {
					q.AfterRun = true
					skipped = true
					break
				}
				taken[run.ID]++
				taken0++
			}
			if !skipped && len(page) < q.Limit {
				break
			}
		}
		return nil
	})
	return out, err
}

func loadRuns(ctx context.Context, r backend.ReadTx, runs map[string]backend.Run, acts []Activation) error {
	var ids []string
	for _, a := range acts {
		if _, ok := runs[a.Key.RunID]; !ok {
			ids = append(ids, a.Key.RunID)
			runs[a.Key.RunID] = backend.Run{} // placeholder; replaced below
		}
	}
	if len(ids) == 0 {
		return nil
	}
	f, err := r.Load(ctx, backend.Lookup{Runs: ids})
	if err != nil {
		return err
	}
	for _, id := range ids {
		if run, ok := f.Runs[id]; ok {
			runs[id] = run
		} else {
			delete(runs, id)
		}
	}
	return nil
}
