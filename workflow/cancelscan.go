package workflow

import (
	"context"

	"github.com/wfstore/wfstore/backend"
)

// cancelScanStatuses are the run statuses a run whose cancellation is
// requested can still hold work in, in the order Cancellations reads
// them (a failed run of a cancelled tree included: its active attempts may
// still run).
var cancelScanStatuses = []backend.RunStatus{backend.RunRunning, backend.RunPaused, backend.RunRepairRequired, backend.RunFailed}

// cancelScanAttempts are the attempt statuses of work an engine must still
// act on for a cancelled run: signal it (prepared with a recorded handoff,
// admitted, running), cancel it (prepared, provably never dispatched), or
// settle it (cancelling).
var cancelScanAttempts = []backend.AttemptStatus{backend.AttemptPrepared, backend.AttemptAdmitted,
	backend.AttemptRunning, backend.AttemptCancelling}

// CancellationQuery asks Cancellations for the runs whose cancellation is
// requested and the attempts of theirs an engine must still act on, a page
// of runs at a time.
type CancellationQuery struct {
	// RunID restricts the listing to one run (of any status); After is
	// then checked but not used, and the page is the last.
	RunID string
	// After resumes after a previous page (its Next); empty starts at the
	// beginning.
	After Cursor
	// Limit bounds the runs one page reads, and the attempts it lists of
	// each status of one run, by the page-limit rule.
	Limit int
}

// RunCancellation is one run whose cancellation is requested, with its
// prepared, admitted, running and cancelling attempts (up to the query's
// Limit of each status, earliest prepared first).
type RunCancellation struct {
	RunID    string
	Attempts []Attempt
}

// Cancellations reads, in one snapshot, up to q.Limit runs that are
// running, paused, repair_required or failed (in that order, each in id
// order) and lists those whose cancellation is requested and that are not
// cancelled yet, each with the attempts an engine must still act on: a
// prepared one whose handoff is pending (CancelNeverDispatched), one whose
// owner may hold the work (prepared with a recorded or unknown handoff,
// admitted, running) to signal through the owner's Canceller and
// MarkCancellationSignalled, and a cancelling one to observe or settle. It
// writes nothing. It filters the runs it reads (see Page.Next): a page
// may list fewer runs than Limit, none included, while Next is not empty.
//
// The listing has no index of cancelled runs: its cost grows with the
// number of runs in those statuses, Limit runs per page (plus up to
// 4*Limit attempts of each cancelled run listed).
func (s *Engine) Cancellations(ctx context.Context, q CancellationQuery) (Page[RunCancellation], error) {
	limit, err := pageLimit("cancellation scan limit", q.Limit)
	if err != nil {
		return Page[RunCancellation]{}, err
	}
	if q.RunID != "" {
		if err := ValidateID("run id", q.RunID); err != nil {
			return Page[RunCancellation]{}, err
		}
	}
	pos, err := decodeStage(cancellationsCursor, q.After, len(cancelScanStatuses))
	if err != nil {
		return Page[RunCancellation]{}, err
	}
	var page Page[RunCancellation]
	err = s.view(ctx, func(r backend.ReadTx) error {
		page = Page[RunCancellation]{}
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
			page.Items = append(page.Items, rc)
			return nil
		}
		if q.RunID != "" {
			run, err := backend.GetRun(ctx, r, q.RunID)
			if err != nil {
				return notFoundFrom(err, "run %q", q.RunID)
			}
			return read(run)
		}
		var err error
		page.Next, err = runScan{cancellationsCursor, cancelScanStatuses, false}.page(ctx, r, pos, limit, read)
		return err
	})
	if err != nil {
		return Page[RunCancellation]{}, err
	}
	return page, nil
}
