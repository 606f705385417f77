package workflow

import (
	"context"

	"github.com/wfstore/wfstore/backend"
)

// Discovery scans only admissible activations (backend.Activation.Admissible),
// so activations that cannot be admitted for a durable reason never hold the
// first places of a scan. This file is the one place that
// decides admissibility and keeps the flag true to it.

// admissible reports whether discovery may return act.
func admissible(run backend.Run, act backend.Activation, group *backend.FanOutGroup) bool {
	if act.Status != backend.ActivationPending {
		return false
	}
	if run.Status != backend.RunRunning || run.CancelRequestedMS != 0 || exhaustionHolds(run) {
		return false
	}
	if group != nil && group.Retiring {
		return false
	}
	return true
}

// arrives reports whether an activation that becomes pending now (added,
// or a fan-out member created or promoted) enters the admissible index:
// when admissible, and also when only its run's recorded exhaustion keeps
// it out. The next pass that meets it then reports it Exhausted and parks
// it, as it parked the run's other work when it met the exhaustion, so
// that work added to an exhausted run is reported rather than in no list.
func arrives(run backend.Run, act backend.Activation, group *backend.FanOutGroup) bool {
	run.ExhaustionRecorded = false
	return admissible(run, act, group)
}

// exhaustionHolds reports whether the run's recorded exhaustion still holds
// as far as its own record tells: its attempts fill its node execution cap,
// or (a root run) its tree's attempts fill it. An allowance increase lifts
// it; ExhaustionRecorded itself stays set, since it stands for the one
// execution_allowance_exhausted event. A child run whose root's tree-wide
// cap is full is not told here (its record does not say so): the dispatch
// that meets that exhaustion parks the child's activations (parkPending).
func exhaustionHolds(run backend.Run) bool {
	if !run.ExhaustionRecorded {
		return false
	}
	return run.AttemptCount >= run.Limits.NodeExecutionCap ||
		(run.RootID == run.ID && run.TreeAttemptCount >= run.Limits.NodeExecutionCap)
}

// parkPending clears the Admissible flag of every activation of the run
// that has it, whatever admissible says: an exhaustion the dispatch just
// met keeps them out of discovery until the run's state changes again. It
// reports whether it parked any.
func parkPending(ctx context.Context, tx backend.Tx, w *batch, runID string, at int64) (bool, error) {
	var parked []backend.Activation
	err := eachActivation(ctx, tx, w, runID, func(act backend.Activation) error {
		if parkActivation(&act, at) == nil {
			parked = append(parked, act)
		}
		return nil
	})
	for _, act := range parked {
		replace(w, act)
	}
	return len(parked) > 0, err
}

// reindexRun rewrites the Admissible flag of every pending activation of run
// whose flag disagrees with the run's (already updated) state. It applies
// w's earlier writes first, so the scan sees them.
func reindexRun(ctx context.Context, tx backend.Tx, w *batch, run backend.Run) error {
	groups := map[backend.ActivationKey]*backend.FanOutGroup{}
	return eachActivation(ctx, tx, w, run.ID, func(act backend.Activation) error {
		if act.Status != backend.ActivationPending && !act.Admissible {
			return nil
		}
		var g *backend.FanOutGroup
		if act.Group != nil {
			cached, ok := groups[act.Group.Controller]
			if !ok {
				f, err := tx.Load(ctx, backend.Lookup{Groups: []backend.ActivationKey{act.Group.Controller}})
				if err != nil {
					return err
				}
				if v, found := f.Groups[act.Group.Controller]; found {
					cached = &v
				}
				groups[act.Group.Controller] = cached
			}
			g = cached
		}
		if reindexActivation(&act, admissible(run, act, g)) {
			replace(w, act)
		}
		return nil
	})
}
