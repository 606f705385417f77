package workflow

import (
	"context"
	"encoding/json"
	"math"
	"time"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/event"
)

// EventQuery selects a page of one run's events.
type EventQuery struct {
	// RunID is the run whose events are listed.
	RunID string
	// After resumes after a previous page (its Next) or after an event
	// (EventCursor); empty starts at the run's first event.
	After Cursor
	// Limit is 1 to MaxPageLimit; 0 means DefaultPageLimit.
	Limit int
}

// Events returns a page of the run's events in commit (Seq) order, read in
// one snapshot.
func (s *Store) Events(ctx context.Context, q EventQuery) (Page[event.Event], error) {
	if err := ValidateID("run id", q.RunID); err != nil {
		return Page[event.Event]{}, err
	}
	limit, err := pageLimit("history limit", q.Limit)
	if err != nil {
		return Page[event.Event]{}, err
	}
	var pos eventPos
	if ok, err := decodeCursor(eventsCursor, q.After, &pos); err != nil {
		return Page[event.Event]{}, err
	} else if ok && pos.Seq < 1 {
		return Page[event.Event]{}, invalid(eventsCursor+" cursor", "must follow an event (sequence 1 or more), got %d", pos.Seq)
	}
	var out []backend.Event
	err = s.view(ctx, func(r backend.ReadTx) error {
		var err error
		out, err = r.Events(ctx, backend.EventQuery{RunID: q.RunID, After: pos.Seq, Limit: limit + 1})
		return err
	})
	if err != nil {
		return Page[event.Event]{}, err
	}
	var page Page[event.Event]
	if len(out) > limit {
		out = out[:limit]
		page.Next = EventCursor(out[limit-1].Seq)
	}
	page.Items = toEvents(out)
	return page, nil
}

// AttemptQuery selects a page of attempts.
type AttemptQuery struct {
	// RunID restricts to one run when set.
	RunID string
	// Status restricts to one status when set.
	Status AttemptStatus
	// Descending lists in descending (prepared time, identity) order; After
	// then resumes strictly before its position.
	Descending bool
	// After resumes after a previous page (its Next) or after an attempt
	// (AttemptCursor); empty starts at the beginning of the order.
	After Cursor
	// Limit is 1 to MaxPageLimit; 0 means DefaultPageLimit.
	Limit int
}

// Attempts returns a page of attempts ordered by (prepared time, identity),
// ascending or descending: the attempt history, paged by a keyset cursor,
// so a page costs its limit whatever the history's length.
func (s *Store) Attempts(ctx context.Context, q AttemptQuery) (Page[Attempt], error) {
	if q.RunID != "" {
		if err := ValidateID("run id", q.RunID); err != nil {
			return Page[Attempt]{}, err
		}
	}
	limit, err := pageLimit("history limit", q.Limit)
	if err != nil {
		return Page[Attempt]{}, err
	}
	var pos attemptPos
	if ok, err := decodeCursor(attemptsCursor, q.After, &pos); err != nil {
		return Page[Attempt]{}, err
	} else if ok && pos.Identity == "" {
		return Page[Attempt]{}, invalid(attemptsCursor+" cursor", "must name an attempt")
	}
	bq := backend.AttemptQuery{RunID: q.RunID, Status: backend.AttemptStatus(q.Status), Descending: q.Descending,
		After: backend.AttemptCursor{PreparedMS: pos.PreparedMS, Identity: pos.Identity}, Limit: limit + 1}
	var out []backend.Attempt
	err = s.view(ctx, func(r backend.ReadTx) error {
		var err error
		out, err = r.Attempts(ctx, bq)
		return err
	})
	if err != nil {
		return Page[Attempt]{}, err
	}
	var page Page[Attempt]
	if len(out) > limit {
		out = out[:limit]
		last := out[limit-1]
		page.Next = encodeCursor(attemptsCursor, attemptPos{last.PreparedMS, last.Identity})
	}
	page.Items = toAttempts(out)
	return page, nil
}

// GetAttempt returns the attempt with this dispatch identity.
func (s *Store) GetAttempt(ctx context.Context, identity string) (Attempt, error) {
	if err := ValidateID("dispatch identity", identity); err != nil {
		return Attempt{}, err
	}
	var out backend.Attempt
	err := s.view(ctx, func(r backend.ReadTx) error {
		a, err := backend.GetAttemptByIdentity(ctx, r, identity)
		out = a
		return notFoundFrom(err, "attempt %s", identity)
	})
	if err != nil {
		return Attempt{}, err
	}
	return toAttempt(out), nil
}

// CommittedIntent is a committed dispatch intent, as DispatchIntent
// returns it after checking it against its checksum.
type CommittedIntent struct {
	Key        AttemptKey
	Identity   string
	SideEffect Effect
	// Intent is the canonical JSON committed at prepare.
	Intent json.RawMessage
	// Checksum is the stored checksum, equal to Checksum(Intent).
	Checksum   string
	PreparedAt time.Time
}

// DispatchIntent returns the committed intent of the attempt with this
// dispatch identity after verifying it against its stored checksum: a
// mismatch fails with ErrCorrupt (and changes nothing), a missing attempt
// with ErrNotFound.
func (s *Engine) DispatchIntent(ctx context.Context, identity string) (CommittedIntent, error) {
	var out CommittedIntent
	att, err := s.GetAttempt(ctx, identity)
	if err != nil {
		return out, err
	}
	if Checksum(att.Intent) != att.IntentChecksum {
		return out, stateErr(ErrCorrupt, "dispatch intent of %s does not match its checksum", identity)
	}
	return CommittedIntent{Key: att.Key, Identity: att.Identity, SideEffect: att.SideEffect,
		Intent: att.Intent, Checksum: att.IntentChecksum, PreparedAt: att.PreparedAt}, nil
}

// DispatchReceipt returns the committed receipt of the attempt with this
// dispatch identity. While none is committed, and when the attempt does
// not exist, it fails with an error matching ErrNotFound.
func (s *Engine) DispatchReceipt(ctx context.Context, identity string) (json.RawMessage, error) {
	att, err := s.GetAttempt(ctx, identity)
	if err != nil {
		return nil, err
	}
	if att.Receipt == nil {
		return nil, stateErr(ErrNotFound, "no receipt committed for attempt %s", identity)
	}
	return att.Receipt, nil
}

// SummaryReadBudget bounds each part of a RunSummary: it reads at most this
// many activations, attempts and leases of the run (plus one, to tell
// whether there are more).
const SummaryReadBudget = 1000

// RunSummary is a bounded view of one run, read in one snapshot.
type RunSummary struct {
	Run Run
	// Activations counts the run's activations by status. When
	// ActivationsComplete is false the run has more than
	// SummaryReadBudget of them and the counts cover the first
	// SummaryReadBudget in key order only; they are never estimated.
	Activations         map[ActivationStatus]int
	ActivationsComplete bool
	// Attempts counts the run's attempts by status, bounded the same way
	// (the first SummaryReadBudget in prepared-time order).
	Attempts         map[AttemptStatus]int
	AttemptsComplete bool
	// Allowance is the run's allowance observation (see
	// AllowanceObservation), from the same snapshot.
	Allowance Allowance
	// Leases are the run's unreleased leases in key order, at most
	// SummaryReadBudget; LeasesComplete is false when there are more.
	Leases         []Lease
	LeasesComplete bool
	// NextRetry is the run's earliest automatic retry schedule by due
	// time, nil when it has none. A failed run with NextRetry set is
	// "failed, retry due at NextRetry.Due": its automatic retry may still
	// requeue it, so it has not failed for good.
	NextRetry *RetrySchedule
}

// RunSummary returns a bounded summary of the run: its record, counts of
// its activations and attempts by status, its allowance observation and
// its active leases, and its earliest pending retry schedule (NextRetry,
// which tells "failed, retry due at T" from "failed"). It reads at most
// about 3*SummaryReadBudget rows plus the allowance observation's budget,
// and writes nothing.
func (s *Store) RunSummary(ctx context.Context, runID string) (RunSummary, error) {
	var out RunSummary
	if err := ValidateID("run id", runID); err != nil {
		return out, err
	}
	const b = SummaryReadBudget
	err := s.view(ctx, func(r backend.ReadTx) error {
		out = RunSummary{Activations: map[ActivationStatus]int{}, Attempts: map[AttemptStatus]int{}}
		run, err := backend.GetRun(ctx, r, runID)
		if err != nil {
			return notFoundFrom(err, "run %q", runID)
		}
		out.Run = toRun(run)
		acts, err := r.Activations(ctx, backend.ActivationQuery{RunID: runID, Limit: b + 1})
		if err != nil {
			return err
		}
		out.ActivationsComplete = len(acts) <= b
		for _, a := range acts[:min(len(acts), b)] {
			out.Activations[ActivationStatus(a.Status)]++
		}
		atts, err := r.Attempts(ctx, backend.AttemptQuery{RunID: runID, Limit: b + 1})
		if err != nil {
			return err
		}
		out.AttemptsComplete = len(atts) <= b
		for _, a := range atts[:min(len(atts), b)] {
			out.Attempts[AttemptStatus(a.Status)]++
		}
		leases, err := r.Leases(ctx, backend.LeaseQuery{RunID: runID, Limit: b + 1})
		if err != nil {
			return err
		}
		out.LeasesComplete = len(leases) <= b
		out.Leases = toLeases(leases[:min(len(leases), b)])
		next, err := r.DueSchedules(ctx, backend.ScheduleQuery{RunID: runID, DueBy: math.MaxInt64, Limit: 1})
		if err != nil {
			return err
		}
		if len(next) > 0 {
			out.NextRetry = toSchedulePtr(&next[0])
		}
		out.Allowance, err = allowanceIn(ctx, r, run)
		return err
	})
	return out, err
}
