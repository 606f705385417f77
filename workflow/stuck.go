package workflow

import (
	"context"
	"time"

	"github.com/wfstore/wfstore/backend"
)

// StuckStage names why an attempt counts as stuck, and so which time its
// age is measured from.
type StuckStage string

// Stuck stages, in the order StuckAttempts reads them.
const (
	// StuckPrepared: a prepared attempt without a receipt (its intent
	// committed, its owner call, if any, not answered in the store); aged
	// from its prepared time.
	StuckPrepared StuckStage = "prepared"
	// StuckAdmitted: an admitted or running attempt not observed terminal;
	// aged from its admitted time.
	StuckAdmitted StuckStage = "admitted"
	// StuckCancelling: a cancelling attempt without a receipt (cancellation
	// was signalled while it was prepared, and no receipt followed); aged
	// from the time its run's cancellation was requested, which is at or
	// before the signal, so the age may overstate the time since the
	// signal by the delay between request and signal.
	StuckCancelling StuckStage = "cancelling"
)

// stuckStage is one part of a StuckAttempts scan: the attempts of one status, and
// the time each is aged from.
type stuckStage struct {
	stage  StuckStage
	status backend.AttemptStatus
	// since returns the time att is aged from, 0 when it is not in this
	// stage (a cancelling attempt with a receipt).
	since func(att backend.Attempt, run backend.Run) int64
}

var stuckStages = []stuckStage{
	{StuckPrepared, backend.AttemptPrepared, func(a backend.Attempt, _ backend.Run) int64 {
		if a.Receipt != nil {
			return 0
		}
		return a.PreparedMS
	}},
	{StuckAdmitted, backend.AttemptAdmitted, func(a backend.Attempt, _ backend.Run) int64 { return a.AdmittedMS }},
	{StuckAdmitted, backend.AttemptRunning, func(a backend.Attempt, _ backend.Run) int64 { return a.AdmittedMS }},
	{StuckCancelling, backend.AttemptCancelling, func(a backend.Attempt, r backend.Run) int64 {
		if a.Receipt != nil {
			return 0
		}
		return r.CancelRequestedMS
	}},
}

// StuckQuery asks StuckAttempts for attempts that have not moved for
// longer than OlderThan.
type StuckQuery struct {
	// RunID restricts the listing to one run when set.
	RunID string
	// OlderThan is the age from which an attempt counts as stuck: at least
	// one millisecond (it is truncated to the millisecond).
	OlderThan time.Duration
	// After resumes after a previous page (its Next); empty starts at the
	// beginning.
	After Cursor
	// Limit bounds the attempts one call reads (and so returns), by the
	// page-limit rule: 1 to MaxPageLimit, 0 means DefaultPageLimit.
	Limit int
}

// StuckAttempt is one attempt StuckAttempts found.
type StuckAttempt struct {
	Attempt Attempt
	Stage   StuckStage
	// Since is the time the attempt is aged from: the later of its
	// prepared time and its stage's time (see StuckStage).
	Since time.Time
	// Age is now minus Since.
	Age time.Duration
}

// StuckAttempts returns, from one snapshot, a page of attempts that have
// not moved for at least q.OlderThan before now: prepared attempts
// without a receipt (aged from their prepared time), admitted and running
// ones (aged from their admitted time) and cancelling ones without a
// receipt (aged from their run's cancellation request); each is aged from
// the later of that time and its prepared time. Items are by stage, then
// by (prepared time, identity). It writes nothing.
//
// Cost: one call reads at most q.Limit attempts (and, for cancelling
// ones, their runs). It pages the backend's attempt index by status in
// (prepared time, identity) order and stops a status at the first attempt
// prepared after now-OlderThan, which cannot be stuck; so the attempts it
// reads and passes over are those prepared long enough ago whose stage
// began recently (admitted, or their run's cancellation requested, within
// OlderThan). It filters what it reads (see Page.Next): a page may hold
// fewer than Limit items, none included, while Next is not empty. A full
// scan pages until Next is empty.
func (s *Engine) StuckAttempts(ctx context.Context, q StuckQuery, now time.Time) (Page[StuckAttempt], error) {
	var page Page[StuckAttempt]
	if q.RunID != "" {
		if err := ValidateID("run id", q.RunID); err != nil {
			return page, err
		}
	}
	limit, err := pageLimit("stuck attempt limit", q.Limit)
	if err != nil {
		return page, err
	}
	if q.OlderThan < time.Millisecond {
		return page, invalid("stuck age", "must be at least 1ms, got %v", q.OlderThan)
	}
	start, err := decodeStage(stuckCursor, q.After, len(stuckStages))
	if err != nil {
		return page, err
	}
	at, err := toMS("now", now)
	if err != nil {
		return page, err
	}
	cutoff := at - q.OlderThan.Milliseconds()
	err = s.view(ctx, func(r backend.ReadTx) error {
		page = Page[StuckAttempt]{}
		cur := start
		budget := limit
		for cur.Stage < len(stuckStages) && budget > 0 {
			st := stuckStages[cur.Stage]
			asked := budget
			rows, err := r.Attempts(ctx, backend.AttemptQuery{RunID: q.RunID, Status: st.status, After: cur.after(), Limit: asked})
			if err != nil {
				return err
			}
			budget -= len(rows)
			runs := map[string]backend.Run{}
			if st.status == backend.AttemptCancelling && len(rows) > 0 {
				ids := make([]string, 0, len(rows))
				for _, a := range rows {
					ids = append(ids, a.Key.RunID)
				}
				f, err := r.Load(ctx, backend.Lookup{Runs: ids})
				if err != nil {
					return err
				}
				runs = f.Runs
			}
			ended := len(rows) < asked
			for _, a := range rows {
				if a.PreparedMS > cutoff {
					ended = true
					break
				}
				cur.Prepared, cur.Identity = a.PreparedMS, a.Identity
				since := st.since(a, runs[a.Key.RunID])
				if since == 0 {
					continue
				}
				since = max(since, a.PreparedMS)
				if since > cutoff {
					continue
				}
				page.Items = append(page.Items, StuckAttempt{
					Attempt: toAttempt(a), Stage: st.stage, Since: fromMS(since), Age: msToDuration(at - since),
				})
			}
			if ended {
				cur = stagePos{Stage: cur.Stage + 1}
			}
		}
		if cur.Stage < len(stuckStages) {
			page.Next = encodeCursor(stuckCursor, cur)
		}
		return nil
	})
	if err != nil {
		return Page[StuckAttempt]{}, err
	}
	return page, nil
}

// after is the attempt-index position p resumes after within its stage.
func (p stagePos) after() backend.AttemptCursor {
	return backend.AttemptCursor{PreparedMS: p.Prepared, Identity: p.Identity}
}

// moreAttempts reports whether an attempt is left to read from pos on, in
// the attempt index of statuses[pos.Stage] after pos, then of each later
// status from its beginning, reading at most one attempt per status. A
// status whose next attempt ok refuses counts as ended (ok tells whether
// any attempt from there on in (prepared time, identity) order can be
// listed).
func moreAttempts(ctx context.Context, r backend.ReadTx, runID string, statuses []backend.AttemptStatus, pos stagePos,
	ok func(backend.Attempt) bool) (bool, error) {
	for st := pos; st.Stage < len(statuses); st = (stagePos{Stage: st.Stage + 1}) {
		rows, err := r.Attempts(ctx, backend.AttemptQuery{RunID: runID, Status: statuses[st.Stage], After: st.after(), Limit: 1})
		if err != nil {
			return false, err
		}
		if len(rows) > 0 && (ok == nil || ok(rows[0])) {
			return true, nil
		}
	}
	return false, nil
}
