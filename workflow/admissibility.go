package workflow

import (
	"context"

	"github.com/wfstore/wfstore/backend"
)

// Discovery scans only admissible activations (backend.Activation.Admissible),
// so activations that cannot be admitted for a durable reason never hold the
// first places of a scan (DESIGN §5.9). This file is the one place that
// decides admissibility and keeps the flag true to it.

// admissible reports whether discovery may return act.
func admissible(run backend.Run, act backend.Activation, group *backend.FanOutGroup) bool {
	if act.Status != backend.ActivationPending {
		return false
	}
	if run.Status != backend.RunRunning || run.CancelRequestedMS != 0 || run.ExhaustionRecorded {
		return false
	}
	if group != nil && group.Retiring {
		return false
	}
	return true
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
		if want := admissible(run, act, g); act.Admissible != want {
			act.Admissible = want
			w.replace(act)
		}
		return nil
	})
}
