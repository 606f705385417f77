package workflow

import (
	"context"
	"math"

	"github.com/wfstore/wfstore/backend"
)

// retryScanStatuses are the run statuses whose retry schedules can be
// consumed, in the order Retries reads them: a failed run (its failure
// scheduled the retry) and a running one (a sibling's retry requeued it
// first).
var retryScanStatuses = []backend.RunStatus{backend.RunFailed, backend.RunRunning}

// RetryQuery asks Retries for the earliest retry schedule of the runs that
// could consume one, a page of runs at a time.
type RetryQuery struct {
	// RunID restricts the listing to one run (of any status); After is
	// then checked but not used, and the page is the last.
	RunID string
	// After resumes after a previous page (its Next); empty starts at the
	// beginning.
	After Cursor
	// Limit bounds the runs one page reads, by the page-limit rule.
	Limit int
}

// RunRetry is one run Retries read.
type RunRetry struct {
	RunID string
	// Earliest is the run's retry schedule with the earliest Due (ties by
	// node and activation id), or nil when it holds none.
	Earliest *RetrySchedule
}

// Retries reads, in one snapshot, the earliest retry schedule of up to
// q.Limit runs: failed runs in id order, then running ones (the runs
// ConsumeNextDueRetry can consume a schedule of). Its items are every run
// it read, whether or not it holds a schedule; once Next is empty, every
// run that was failed or running for the whole listing was read by one of
// its pages. A loop that consumes automatic retries pages through it,
// consumes the schedules whose Due has come, and sleeps until the earliest
// one left. It writes nothing.
//
// It reads one schedule per run, so its cost grows with the number of
// failed and running runs, not with the schedules due.
func (s *Store) Retries(ctx context.Context, q RetryQuery) (Page[RunRetry], error) {
	limit, err := pageLimit("retry scan limit", q.Limit)
	if err != nil {
		return Page[RunRetry]{}, err
	}
	if q.RunID != "" {
		if err := ValidateID("run id", q.RunID); err != nil {
			return Page[RunRetry]{}, err
		}
	}
	pos, err := decodeStage(retriesCursor, q.After, len(retryScanStatuses))
	if err != nil {
		return Page[RunRetry]{}, err
	}
	var page Page[RunRetry]
	err = s.view(ctx, func(r backend.ReadTx) error {
		page = Page[RunRetry]{}
		read := func(run backend.Run) error {
			sc, err := r.DueSchedules(ctx, backend.ScheduleQuery{RunID: run.ID, DueBy: math.MaxInt64, Limit: 1})
			if err != nil {
				return err
			}
			rr := RunRetry{RunID: run.ID}
			if len(sc) > 0 {
				rr.Earliest = toSchedulePtr(&sc[0])
			}
			page.Items = append(page.Items, rr)
			return nil
		}
		if q.RunID != "" {
			return read(backend.Run{ID: q.RunID})
		}
		var err error
		page.Next, err = runScan{retriesCursor, retryScanStatuses, true}.page(ctx, r, pos, limit, read)
		return err
	})
	if err != nil {
		return Page[RunRetry]{}, err
	}
	return page, nil
}

// runScan is a listing of runs by status: the runs of statuses[0] in id
// order, then those of statuses[1], and so on.
type runScan struct {
	kind     string // the cursor kind
	statuses []backend.RunStatus
	// peek reads one run past a full page so that Next is empty exactly
	// when no run is left.
	peek bool
}

// page reads up to limit runs from pos on, passing each to read. It
// returns the cursor that resumes after them: empty once the last status
// was read to its end, and, with peek, also when no run of those statuses
// is left after them (it reads at most one more run per status to tell).
func (sc runScan) page(ctx context.Context, r backend.ReadTx, pos stagePos, limit int, read func(backend.Run) error) (Cursor, error) {
	kind, statuses, peek := sc.kind, sc.statuses, sc.peek
	for n := limit; n > 0; {
		runs, err := r.Runs(ctx, backend.RunQuery{Status: statuses[pos.Stage], After: pos.RunID, Limit: n})
		if err != nil {
			return "", err
		}
		for _, run := range runs {
			if err := read(run); err != nil {
				return "", err
			}
			pos.RunID = run.ID
		}
		n -= len(runs)
		if n > 0 { // this status has no more runs
			pos = stagePos{Stage: pos.Stage + 1}
			if pos.Stage == len(statuses) {
				return "", nil
			}
		}
	}
	if !peek {
		return encodeCursor(kind, pos), nil
	}
	for st := pos; st.Stage < len(statuses); st = (stagePos{Stage: st.Stage + 1}) {
		runs, err := r.Runs(ctx, backend.RunQuery{Status: statuses[st.Stage], After: st.RunID, Limit: 1})
		if err != nil {
			return "", err
		}
		if len(runs) > 0 {
			return encodeCursor(kind, pos), nil
		}
	}
	return "", nil
}
