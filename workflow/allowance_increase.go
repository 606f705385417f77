package workflow

import (
	"context"
	"time"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/workflow/internal/state"
)

// AllowanceIncrease asks IncreaseAllowance to raise RunID's node
// execution cap from ExpectedCap to TargetCap.
type AllowanceIncrease struct {
	RunID       string
	ExpectedCap int64
	TargetCap   int64
	// Authority must be the run's authority, nil when it has none.
	Authority *Authority
}

// IncreaseAllowance raises one run's node execution cap from
// req.ExpectedCap to req.TargetCap by compare-and-set, and appends an
// execution_allowance_increased event with both caps, in one transaction.
//
// The increase is fenced: when the run has an execution authority,
// req.Authority must be exactly it; when it has none, it must be nil (otherwise
// ErrStaleAuthority). The stored cap must equal ExpectedCap (otherwise
// ErrConflict, so a replayed or raced increase changes nothing), and
// TargetCap must exceed ExpectedCap (ErrInvalidInput). A completed or
// cancelled run, or one whose cancellation is requested, is refused with
// ErrIneligible.
//
// Only this run's own cap changes. A child run's increase never raises its
// composition root's tree-wide allowance, which keeps binding; raising a
// root's cap raises the tree-wide allowance too.
//
// Pending activations the run's exhaustion had taken out of discovery are
// discoverable again once it has room (for a root, its descendants' too)
// and are admitted up to the new cap. The run's one
// execution_allowance_exhausted event stays the only one: when the run
// exhausts its raised cap, Dispatch reports its activations Exhausted and
// takes them out of discovery again, and no second event is written. Work
// added while the exhaustion holds is reported Exhausted by the next pass
// that meets it.
func (s *Store) IncreaseAllowance(ctx context.Context, req AllowanceIncrease, now time.Time) error {
	runID, expectedCap, targetCap, auth := req.RunID, req.ExpectedCap, req.TargetCap, copyAuthority(req.Authority)
	at, err := runCallArgs(runID, auth, now)
	if err != nil {
		return err
	}
	if expectedCap <= 0 {
		return invalid("expected node execution cap", "must be positive")
	}
	if targetCap <= expectedCap {
		return invalid("target node execution cap", "must exceed the expected cap %d", expectedCap)
	}
	return s.update(ctx, func(tx backend.Tx, w *batch) error {
		run, err := backend.GetRun(ctx, tx, runID)
		if err != nil {
			return notFoundFrom(err, "run %q", runID)
		}
		if auth == nil && run.Authority != nil {
			return stateErr(ErrStaleAuthority, "run %q has an execution authority; an allowance increase must present it", runID)
		}
		if err := ownedBy(auth, "allowance increase").verify(run); err != nil {
			return err
		}
		switch {
		case run.Status == backend.RunCompleted || run.Status == backend.RunCancelled:
			return stateErr(ErrIneligible, "run %q is %s; its allowance cannot be increased", runID, run.Status)
		case run.CancelRequestedMS != 0:
			return stateErr(ErrIneligible, "run %q has cancellation requested; its allowance cannot be increased", runID)
		}
		if run.Limits.NodeExecutionCap != expectedCap {
			return stateErr(ErrConflict, "run %q node execution cap is %d, not the expected %d", runID, run.Limits.NodeExecutionCap, expectedCap)
		}
		state.IncreaseAllowance(w, &run, targetCap, at)
		if err := reindexRun(ctx, tx, w, run); err != nil {
			return err
		}
		state.Replace(w, run)
		w.WorkArrives() // activations parked by exhaustion are discoverable again
		if run.RootID != run.ID {
			return nil
		}
		// The tree-wide allowance rose too: the descendants' work parked
		// by its exhaustion may be discoverable again.
		return reindexDescendants(ctx, tx, w, run.ID)
	})
}

// reindexDescendants runs reindexRun on every run linked to root.
func reindexDescendants(ctx context.Context, tx backend.Tx, w *batch, root string) error {
	q := backend.ChildRunQuery{RootRunID: root, Limit: MaxPageLimit}
	for {
		links, err := tx.ChildRuns(ctx, q)
		if err != nil {
			return err
		}
		for _, l := range links {
			if err := flush(ctx, tx, w); err != nil {
				return err
			}
			child, err := backend.GetRun(ctx, tx, l.ChildRunID)
			if err != nil {
				return err
			}
			if err := reindexRun(ctx, tx, w, child); err != nil {
				return err
			}
		}
		if len(links) < q.Limit {
			return nil
		}
		last := links[len(links)-1]
		q.After = backend.ChildRunCursor{CreatedMS: last.CreatedMS, ChildRunID: last.ChildRunID}
	}
}
