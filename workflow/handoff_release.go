package workflow

import (
	"context"
	"errors"
	"time"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/workflow/internal/state"
)

// releaseTimeout bounds the release of a stopped batch's unoffered
// handoffs. The release runs on a context detached from the pass's, so
// that it also happens when the pass ends on shutdown.
const releaseTimeout = 30 * time.Second

// heldHandoff is a handoff this dispatcher recorded: the attempt and the
// holder token its handoff write stored.
type heldHandoff struct {
	key   backend.AttemptKey
	token string
}

// releaseHandoffs returns to pending (1→0), in one transaction, the
// handoffs of held that are still exactly this dispatcher's: the attempt
// is still prepared, has no receipt, and its handoff is recorded with the
// very token this dispatcher wrote. Only those change, each with a
// dispatch_handoff_released event; any other (a recovery pass
// re-dispatched it, which replaced the token, or it settled) is left as it
// is. It is fenced by the token, not by the run's authority: the owner was
// never called for these attempts, so they are provably never dispatched
// whoever holds the run now, and a release after the authority moved (or
// on shutdown: it runs on a context detached from ctx, with its own
// timeout) keeps that proof. It reports which were released.
func (s *Store) releaseHandoffs(ctx context.Context, held []heldHandoff, now time.Time) ([]bool, error) {
	at, err := toMS("now", now)
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	var released []bool
	err = s.update(rctx, func(tx backend.Tx, w *batch) error {
		released = make([]bool, len(held))
		var l backend.Lookup
		seen := map[string]bool{}
		for _, h := range held {
			if !seen[h.key.RunID] {
				seen[h.key.RunID] = true
				l.Runs = append(l.Runs, h.key.RunID)
			}
			l.Attempts = append(l.Attempts, h.key)
		}
		f, err := tx.Load(rctx, l)
		if err != nil {
			return err
		}
		var changed []string // runs whose event sequence moved, in order
		moved := map[string]bool{}
		for i, h := range held {
			att, ok := f.Attempts[h.key]
			run, rok := f.Runs[h.key.RunID]
			if !ok || !rok || att.Status != backend.AttemptPrepared || att.Receipt != nil ||
				att.Handoff != backend.HandoffRecorded || att.HandoffToken != h.token {
				continue
			}
			state.ReleaseHandoff(w, &run, &att, at)
			if !moved[run.ID] {
				moved[run.ID] = true
				changed = append(changed, run.ID)
			}
			f.Runs[run.ID] = run
			released[i] = true
		}
		for _, id := range changed {
			state.Replace(w, f.Runs[id])
		}
		if w.Empty() {
			return errNoop
		}
		return nil
	})
	if err != nil && !errors.Is(err, errNoop) {
		return nil, err
	}
	return released, nil
}
