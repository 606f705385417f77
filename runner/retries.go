package runner

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/wfstore/wfstore/workflow"
)

// dueEntry is what the runner knows of one run's retry schedules: the due
// time of its earliest one, and whether that one is due but cannot be
// consumed yet (its attempt has not settled, or the run cannot retry now),
// so that it wakes nobody until the run is read again.
type dueEntry struct {
	dueMS int64
	stuck bool
}

// sweep finds due retries across runs. It pages the Store's retry scan
// (bounded per pass, resuming where the last pass stopped) and remembers
// each run's earliest schedule; a pass then consumes the schedules whose
// time has come and the runner sleeps until the earliest one left.
type sweep struct {
	runID  string // a runner restricted to one run reads only it
	cursor workflow.Cursor
	known  map[string]dueEntry
	seen   map[string]bool // runs read in the current cycle
}

func newSweep(runID string) *sweep {
	return &sweep{runID: runID, known: map[string]dueEntry{}, seen: map[string]bool{}}
}

func (w *sweep) note(rr workflow.RunRetry) {
	w.seen[rr.RunID] = true
	if rr.Earliest != nil {
		w.known[rr.RunID] = dueEntry{dueMS: rr.Earliest.Due.UnixMilli()}
	} else {
		delete(w.known, rr.RunID)
	}
}

// visit reads the earliest schedule of up to n runs from where the last
// visit stopped; at the end of the runs it starts a new cycle and forgets
// runs the cycle did not read.
func (w *sweep) visit(ctx context.Context, s *workflow.Store, n int) error {
	page, err := s.Retries(ctx, workflow.RetryQuery{RunID: w.runID, After: w.cursor, Limit: n})
	if err != nil {
		return err
	}
	for _, rr := range page.Items {
		w.note(rr)
	}
	w.cursor = page.Next
	if page.Next == "" && w.runID == "" {
		for id := range w.known {
			if !w.seen[id] {
				delete(w.known, id)
			}
		}
		clear(w.seen)
	}
	return nil
}

// due returns the runs with a consumable schedule due by at, earliest
// first.
func (w *sweep) due(at int64) []string {
	var ids []string
	for id, e := range w.known {
		if !e.stuck && e.dueMS <= at {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b string) int {
		if c := w.known[a].dueMS - w.known[b].dueMS; c != 0 {
			if c < 0 {
				return -1
			}
			return 1
		}
		return cmp.Compare(a, b)
	})
	return ids
}

// next returns the earliest known due time after at.
func (w *sweep) next(at int64) (int64, bool) {
	best, ok := int64(0), false
	for _, e := range w.known {
		if !e.stuck && e.dueMS > at && (!ok || e.dueMS < best) {
			best, ok = e.dueMS, true
		}
	}
	return best, ok
}

// consumeDue consumes due retries, at most budget of them, run by run. It
// returns how many it consumed and whether due ones are left.
func (r *Runner) consumeDue(ctx context.Context, now time.Time) (int, bool, error) {
	at := now.UnixMilli()
	budget := r.cfg.retriesPerPass
	consumed := 0
	for _, runID := range r.sweep.due(at) {
		if budget == 0 || r.stopping.Load() {
			return consumed, true, nil
		}
		stuck := false
		for budget > 0 && !r.stopping.Load() {
			rq, err := r.store.Engine().ConsumeNextDueRetry(ctx, runID, now)
			if errors.Is(err, workflow.ErrIneligible) {
				r.log.LogAttrs(ctx, slog.LevelWarn, "retry refused", slog.String("run", runID),
					slog.String("reason", "run_not_retryable"), slog.String("error", err.Error()))
				r.in.refused.Add(ctx, 1, reasonAttr("run_not_retryable"))
				stuck = true
				break
			}
			if errors.Is(err, workflow.ErrNotFound) {
				stuck = true
				break
			}
			if err != nil {
				return consumed, false, err
			}
			if rq == nil {
				stuck = true // what is due waits for its attempt to settle
				break
			}
			consumed++
			budget--
			r.total.RetriesConsumed++
			r.in.consumed.Add(ctx, 1)
			r.log.LogAttrs(ctx, slog.LevelInfo, "retry consumed", slog.String("run", rq.Key.RunID),
				slog.String("node", rq.Key.NodeID), slog.String("activation", rq.Key.ActivationID),
				slog.Uint64("previous_attempt", uint64(rq.PreviousAttempt)), slog.Uint64("next_attempt", uint64(rq.NextAttempt)))
		}
		page, err := r.store.Retries(ctx, workflow.RetryQuery{RunID: runID})
		if err != nil {
			return consumed, false, err
		}
		r.sweep.note(page.Items[0])
		if e := page.Items[0].Earliest; e != nil && stuck && e.Due.UnixMilli() <= at {
			r.sweep.known[runID] = dueEntry{dueMS: e.Due.UnixMilli(), stuck: true}
		}
	}
	return consumed, len(r.sweep.due(at)) > 0, nil
}
