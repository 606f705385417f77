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
// whose flag disagrees with the run's (already updated) state. It reads
// through tx, which already sees w's earlier writes only after Apply, so it
// applies w first.
func reindexRun(ctx context.Context, tx backend.Tx, w *batch, run backend.Run) error {
	if err := flush(ctx, tx, w); err != nil {
		return err
	}
	groups := map[backend.ActivationKey]*backend.FanOutGroup{}
	after := backend.NodeRef{}
	for {
		page, err := tx.Activations(ctx, backend.ActivationQuery{RunID: run.ID, After: after, Limit: 500})
		if err != nil {
			return err
		}
		for _, act := range page {
			after = backend.NodeRef{NodeID: act.Key.NodeID, ActivationID: act.Key.ActivationID}
			if act.Status != backend.ActivationPending && !act.Admissible {
				continue
			}
			var g *backend.FanOutGroup
			if act.Group != nil {
				if cached, ok := groups[act.Group.Controller]; ok {
					g = cached
				} else {
					f, err := tx.Load(ctx, backend.Lookup{Groups: []backend.ActivationKey{act.Group.Controller}})
					if err != nil {
						return err
					}
					if v, ok := f.Groups[act.Group.Controller]; ok {
						g = &v
					}
					groups[act.Group.Controller] = g
				}
			}
			want := admissible(run, act, g)
			if act.Admissible != want {
				act.Admissible = want
				w.replace(act)
			}
		}
		if len(page) < 500 {
			return nil
		}
	}
}
