package workflow

import (
	"context"

	"github.com/wfstore/wfstore/backend"
)

// cancelScanStatuses are the run statuses a run whose cancellation is
// requested can still hold work in, in the order a CancellationScan reads
// them (a failed run of a cancelled tree included: its active attempts may
// still run).
var cancelScanStatuses = []backend.RunStatus{backend.RunRunning, backend.RunPaused, backend.RunRepairRequired, backend.RunFailed}

// cancelScanAttempts are the attempt statuses of work an engine must still
// act on for a cancelled run: signal it (prepared with a recorded handoff,
// admitted, running), cancel it (prepared, provably never dispatched), or
// settle it (cancelling).
var cancelScanAttempts = []backend.AttemptStatus{backend.AttemptPrepared, backend.AttemptAdmitted,
	backend.AttemptRunning, backend.AttemptCancelling}

// CancellationScan asks ScanCancellations for the runs whose cancellation
// is requested and the attempts of theirs an engine must still act on, a
// page of runs at a time.
type CancellationScan struct {
	// RunID restricts the scan to one run (of any status); Cursor is then
	// ignored and the page is the last.
	RunID string
	// Cursor resumes after the last run the previous page read; the zero
	// value starts at the beginning.
	Cursor CancellationScanCursor
	// Limit bounds the runs one page reads, and the attempts it lists of
	// each status of one run, by the page-limit rule.
	Limit int
}

// CancellationScanCursor is where a CancellationScan resumes. Its zero
// value is the beginning; take it from CancellationScanPage.Next.
type CancellationScanCursor struct {
	status int    // position in cancelScanStatuses
	after  string // last run id read in that status
}

// RunCancellation is one run whose cancellation is requested, with its
// prepared, admitted, running and cancelling attempts (up to the scan's
// Limit of each status, earliest prepared first).
type RunCancellation struct {
	RunID    string
	Attempts []Attempt
}

// CancellationScanPage is one page of a CancellationScan.
type CancellationScanPage struct {
	// Runs are the runs the page read whose cancellation is requested and
	// that are not cancelled yet, in scan order.
	Runs []RunCancellation
	// Next resumes the scan; it is the zero cursor when Done.
	Next CancellationScanCursor
	// Done reports that the page reached the end of the runs.
	Done bool
}

// ScanCancellations reads, in one snapshot, up to q.Limit runs that are
// running, paused, repair_required or failed (in that order, each in id
// order) and lists those whose cancellation is requested, each with the
// attempts an engine must still act on: a prepared one whose handoff is
// pending (CancelNeverDispatched), one whose owner may hold the work
// (prepared with a recorded or unknown handoff, admitted, running) to
// signal through the owner's Canceller and MarkCancellationSignalled, and
// a cancelling one to observe or settle. It writes nothing.
//
// The scan has no index of cancelled runs: its cost grows with the number
// of runs in those statuses, Limit runs per page (plus up to 4*Limit
// attempts of each cancelled run listed).
func (s *Engine) ScanCancellations(ctx context.Context, q CancellationScan) (CancellationScanPage, error) {
	limit, err := pageLimit("cancellation scan limit", q.Limit)
	if err != nil {
		return CancellationScanPage{}, err
	}
	if q.RunID != "" {
		if err := ValidateID("run id", q.RunID); err != nil {
			return CancellationScanPage{}, err
		}
	}
	if q.Cursor.status < 0 || q.Cursor.status >= len(cancelScanStatuses) {
		return CancellationScanPage{}, invalid("cancellation scan cursor", "is not a cursor ScanCancellations returned")
	}
	var page CancellationScanPage
	err = s.view(ctx, func(r backend.ReadTx) error {
		page = CancellationScanPage{}
		read := func(run backend.Run) error {
			if run.CancelRequestedMS == 0 || run.Status == backend.RunCancelled || run.Status == backend.RunCompleted {
				return nil
			}
			rc := RunCancellation{RunID: run.ID}
			for _, st := range cancelScanAttempts {
				atts, err := r.Attempts(ctx, backend.AttemptQuery{RunID: run.ID, Status: st, Limit: limit})
				if err != nil {
					return err
				}
				rc.Attempts = append(rc.Attempts, toAttempts(atts)...)
			}
			page.Runs = append(page.Runs, rc)
			return nil
		}
		if q.RunID != "" {
			page.Done = true
			run, err := backend.GetRun(ctx, r, q.RunID)
			if err != nil {
				return notFoundFrom(err, "run %q", q.RunID)
			}
			return read(run)
		}
		cur := q.Cursor
		for n := limit; n > 0; {
			runs, err := r.Runs(ctx, backend.RunQuery{Status: cancelScanStatuses[cur.status], After: cur.after, Limit: n})
			if err != nil {
				return err
			}
			for _, run := range runs {
				if err := read(run); err != nil {
					return err
				}
				cur.after = run.ID
			}
			n -= len(runs)
			if n > 0 { // this status has no more runs
				cur = CancellationScanCursor{status: cur.status + 1}
				if cur.status == len(cancelScanStatuses) {
					page.Done = true
					return nil
				}
			}
		}
		page.Next = cur
		return nil
	})
	if err != nil {
		return CancellationScanPage{}, err
	}
	return page, nil
}
