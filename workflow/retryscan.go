package workflow

import (
	"context"
	"math"

	"github.com/wfstore/wfstore/backend"
)

// retryScanStatuses are the run statuses whose retry schedules can be
// consumed, in the order a RetryScan reads them: a failed run (its failure
// scheduled the retry) and a running one (a sibling's retry requeued it
// first).
var retryScanStatuses = []backend.RunStatus{backend.RunFailed, backend.RunRunning}

// RetryScan asks ScanRetries for the earliest retry schedule of the runs
// that could consume one, a page of runs at a time.
type RetryScan struct {
	// RunID restricts the scan to one run (of any status); Cursor is then
	// ignored and the page is the last.
	RunID string
	// Cursor resumes after the last run the previous page read; the zero
	// value starts at the beginning.
	Cursor RetryScanCursor
	// Limit bounds the runs one page reads, by the page-limit rule.
	Limit int
}

// RetryScanCursor is where a RetryScan resumes. Its zero value is the
// beginning; take it from RetryScanPage.Next.
type RetryScanCursor struct {
	status int    // position in retryScanStatuses
	after  string // last run id read in that status
}

// RunRetry is one run a RetryScan read.
type RunRetry struct {
	RunID string
	// Earliest is the run's retry schedule with the earliest Due (ties by
	// node and activation id), or nil when it holds none.
	Earliest *RetrySchedule
}

// RetryScanPage is one page of a RetryScan.
type RetryScanPage struct {
	// Runs are every run the page read, in scan order, whether or not it
	// holds a schedule.
	Runs []RunRetry
	// Next resumes the scan; it is the zero cursor when Done.
	Next RetryScanCursor
	// Done reports that the page reached the end of the runs: every run
	// that was failed or running for the whole scan was read by one of its
	// pages.
	Done bool
}

// ScanRetries reads, in one snapshot, the earliest retry schedule of up
// to q.Limit runs: failed runs in id order, then running ones (the runs
// ConsumeNextDueRetry can consume a schedule of). A loop that consumes
// automatic retries pages through it, consumes the schedules whose Due has
// come, and sleeps until the earliest one left. It writes nothing.
//
// The scan reads one schedule per run, so its cost grows with the number
// of failed and running runs, not with the schedules due.
func (s *Store) ScanRetries(ctx context.Context, q RetryScan) (RetryScanPage, error) {
	limit, err := pageLimit("retry scan limit", q.Limit)
	if err != nil {
		return RetryScanPage{}, err
	}
	if q.RunID != "" {
		if err := ValidateID("run id", q.RunID); err != nil {
			return RetryScanPage{}, err
		}
	}
	if q.Cursor.status < 0 || q.Cursor.status >= len(retryScanStatuses) {
		return RetryScanPage{}, invalid("retry scan cursor", "is not a cursor ScanRetries returned")
	}
	var page RetryScanPage
	err = s.view(ctx, func(r backend.ReadTx) error {
		page = RetryScanPage{}
		read := func(runID string) error {
			sc, err := r.DueSchedules(ctx, backend.ScheduleQuery{RunID: runID, DueBy: math.MaxInt64, Limit: 1})
			if err != nil {
				return err
			}
			rr := RunRetry{RunID: runID}
			if len(sc) > 0 {
				rr.Earliest = toSchedulePtr(&sc[0])
			}
			page.Runs = append(page.Runs, rr)
			return nil
		}
		if q.RunID != "" {
			page.Done = true
			return read(q.RunID)
		}
		cur := q.Cursor
		for n := limit; n > 0; {
			runs, err := r.Runs(ctx, backend.RunQuery{Status: retryScanStatuses[cur.status], After: cur.after, Limit: n})
			if err != nil {
				return err
			}
			for _, run := range runs {
				if err := read(run.ID); err != nil {
					return err
				}
				cur.after = run.ID
			}
			n -= len(runs)
			if n > 0 { // this status has no more runs
				cur = RetryScanCursor{status: cur.status + 1}
				if cur.status == len(retryScanStatuses) {
					page.Done = true
					return nil
				}
			}
		}
		page.Next = cur
		return nil
	})
	if err != nil {
		return RetryScanPage{}, err
	}
	return page, nil
}
