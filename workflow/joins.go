package workflow

import (
	"cmp"
	"context"
	"slices"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/workflow/internal/state"
)

// Joins. An activation added with WaitFor waits (status waiting, out of
// the admissible index) until every activation it names has completed:
// the transaction that completes the last of them makes it pending. When
// one of them is cancelled, or fails with no automatic retry pending, the
// join is cancelled instead, with join_cancelled naming that activation.
// Each WaitFor activation keeps the reverse edges (Joins) and each join the
// count of its WaitFor activations not yet completed (OpenWaits), so a
// settlement reads only the joins that wait for it.

// validateWaitFor checks a join's WaitFor and returns it sorted: at most
// MaxPageLimit valid ids, none naming the join itself, no duplicate
// (ErrInvalidInput).
func validateWaitFor(self backend.ActivationKey, in []NodeRef) ([]backend.NodeRef, error) {
	if len(in) == 0 {
		return nil, nil
	}
	if len(in) > MaxPageLimit {
		return nil, invalid("wait for", "names %d activations, more than %d", len(in), MaxPageLimit)
	}
	refs := slices.Clone(in)
	for _, p := range refs {
		if err := ValidateID("wait for node id", p.NodeID); err != nil {
			return nil, err
		}
		if err := ValidateID("wait for activation id", p.ActivationID); err != nil {
			return nil, err
		}
		if p.NodeID == self.NodeID && p.ActivationID == self.ActivationID {
			return nil, invalid("wait for", "an activation cannot wait for itself (%s/%s)", p.NodeID, p.ActivationID)
		}
	}
	slices.SortFunc(refs, compareNodeRefs)
	for i := 1; i < len(refs); i++ {
		if refs[i] == refs[i-1] {
			return nil, invalid("wait for", "names %s/%s twice", refs[i].NodeID, refs[i].ActivationID)
		}
	}
	return refs, nil
}

func compareNodeRefs(a, b backend.NodeRef) int {
	if c := cmp.Compare(a.NodeID, b.NodeID); c != 0 {
		return c
	}
	return cmp.Compare(a.ActivationID, b.ActivationID)
}

// refKeys returns the activation keys that refs name in run runID.
func refKeys(runID string, refs []backend.NodeRef) []backend.ActivationKey {
	keys := make([]backend.ActivationKey, len(refs))
	for i, r := range refs {
		keys[i] = backend.ActivationKey{RunID: runID, NodeID: r.NodeID, ActivationID: r.ActivationID}
	}
	return keys
}

// waitsOpen returns how many of preds are not completed and, among them,
// the ones already cancelled or failed: the join settles against those at
// the transaction's end (a failed one only when no retry is pending).
func waitsOpen(preds []backend.Activation) (open int64, settled []backend.Activation) {
	for _, p := range preds {
		if p.Status == backend.ActivationCompleted {
			continue
		}
		open++
		if p.Status == backend.ActivationFailed || p.Status == backend.ActivationCancelled {
			settled = append(settled, p)
		}
	}
	return open, settled
}

// settleJoins applies, once a transaction's own decisions are made, each
// settlement of an activation joins wait for: a completion releases one
// wait of each join then waiting for it (the last one makes the join
// pending); a cancellation, or a failure with no automatic retry pending
// (judged now, so that a retry scheduled later in the same transaction
// counts), cancels each join still waiting for it. A cancelled join that
// joins wait for settles them in turn. Completion is evaluated afterwards
// (completeSettledRuns), so a released join keeps its run open.
func settleJoins(ctx context.Context, tx backend.Tx, w *batch) error {
	for i := 0; i < len(w.Waits); i++ { // cancelling a join may note more
		ws := w.Waits[i]
		if err := flush(ctx, tx, w); err != nil {
			return err
		}
		f, err := tx.Load(ctx, backend.Lookup{Runs: []string{ws.Pred.RunID},
			Activations: []backend.ActivationKey{ws.Pred}, Schedules: []backend.ActivationKey{ws.Pred}})
		if err != nil {
			return err
		}
		run, ok := f.Runs[ws.Pred.RunID]
		if !ok {
			continue
		}
		pred, joins := f.Activations[ws.Pred], ws.Joins
		if !ws.Completed {
			_, scheduled := f.Schedules[ws.Pred]
			if pred.Status != backend.ActivationCancelled && (pred.Status != backend.ActivationFailed || scheduled) {
				continue // a retry is pending, or the activation moved on
			}
			joins = pred.Joins
		}
		keys := refKeys(ws.Pred.RunID, joins)
		jf, err := tx.Load(ctx, backend.Lookup{Activations: keys})
		if err != nil {
			return err
		}
		changed := false
		for _, k := range keys {
			join, ok := jf.Activations[k]
			if !ok {
				continue
			}
			if ws.Completed {
				err = state.ReleaseJoin(w, &run, &join, ws.Pred, ws.At)
			} else {
				err = state.CancelJoin(w, &run, &join, pred, ws.At)
			}
			switch {
			case err == nil:
				changed = true
			case err != errNoop:
				return err
			}
		}
		if changed {
			run.UpdatedMS = max(run.UpdatedMS, ws.At)
			state.Replace(w, run)
			if ws.Completed {
				w.WorkArrives() // a released join may be admissible
			}
		}
	}
	w.Waits = w.Waits[:0]
	return nil
}
