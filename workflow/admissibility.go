package workflow

import (
	"context"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/workflow/internal/state"
)

// Discovery scans only admissible activations (backend.Activation.Admissible),
// so activations that cannot be admitted for a durable reason never hold the
// first places of a scan. This file is the one place that
// decides admissibility and keeps the flag true to it.

// parkPending clears the Admissible flag of every activation of the run
// that has it, whatever admissible says: an exhaustion the dispatch just
// met keeps them out of discovery until the run's state changes again. It
// reports whether it parked any.
func parkPending(ctx context.Context, tx backend.Tx, w *batch, runID string, at int64) (bool, error) {
	var parked []backend.Activation
	err := eachActivation(ctx, tx, w, runID, func(act backend.Activation) error {
		if state.ParkActivation(&act, at) == nil {
			parked = append(parked, act)
		}
		return nil
	})
	for _, act := range parked {
		state.Replace(w, act)
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
		if state.ReindexActivation(&act, state.Admissible(run, act, g)) {
			state.Replace(w, act)
		}
		return nil
	})
}
