package workflow

import (
	"context"
	"encoding/json"
	"time"

	"github.com/wfstore/wfstore/backend"
)

// Events returns up to limit (1..=1000) of the run's events after afterSeq,
// in commit order.
func (s *Store) Events(ctx context.Context, runID string, afterSeq int64, limit int) ([]Event, error) {
	if err := ValidateID("run id", runID); err != nil {
		return nil, err
	}
	if err := validateLimit("history limit", limit); err != nil {
		return nil, err
	}
	if afterSeq < 0 {
		return nil, invalid("event sequence", "must not be negative")
	}
	var out []Event
	err := s.view(ctx, func(r backend.ReadTx) error {
		var err error
		out, err = r.Events(ctx, backend.EventQuery{RunID: runID, AfterSeq: afterSeq, Limit: limit})
		return err
	})
	return out, err
}

// AttemptPage selects a page of attempts.
type AttemptPage struct {
	// RunID restricts to one run when set.
	RunID string
	// Status restricts to one status when set.
	Status AttemptStatus
	// After resumes after this attempt (from the previous page's last).
	After *Attempt
	// Descending is not implemented yet.
	Descending bool
	// Limit is 1..=1000.
	Limit int
}

// Attempts returns a page of attempts ordered by (prepared time, identity).
func (s *Store) Attempts(ctx context.Context, p AttemptPage) ([]Attempt, error) {
	if p.RunID != "" {
		if err := ValidateID("run id", p.RunID); err != nil {
			return nil, err
		}
	}
	if err := validateLimit("history limit", p.Limit); err != nil {
		return nil, err
	}
	q := backend.AttemptQuery{RunID: p.RunID, Status: p.Status, Limit: p.Limit}
	if p.After != nil {
		q.After = &backend.AttemptCursor{PreparedMS: p.After.PreparedMS, Identity: p.After.Identity}
	}
	var out []Attempt
	err := s.view(ctx, func(r backend.ReadTx) error {
		var err error
		out, err = r.Attempts(ctx, q)
		return err
	})
	return out, err
}

// GetAttempt returns the attempt with this dispatch identity.
func (s *Store) GetAttempt(ctx context.Context, identity string) (Attempt, error) {
	if err := ValidateID("dispatch identity", identity); err != nil {
		return Attempt{}, err
	}
	var out Attempt
	err := s.view(ctx, func(r backend.ReadTx) error {
		a, err := backend.GetAttemptByIdentity(ctx, r, identity)
		out = a
		return notFoundFrom(err, "attempt %s", identity)
	})
	return out, err
}

// SummaryReadBudget bounds each count of a RunSummary.
const SummaryReadBudget = 1000

// CommittedIntent is a committed dispatch intent.
type CommittedIntent struct {
	Key        AttemptKey
	Identity   string
	SideEffect Effect
	Intent     json.RawMessage
	Checksum   string
	PreparedAt time.Time
}

// DispatchIntent is not implemented yet.
func (s *Store) DispatchIntent(ctx context.Context, identity string) (CommittedIntent, error) {
	return CommittedIntent{}, nil
}

// DispatchReceipt is not implemented yet.
func (s *Store) DispatchReceipt(ctx context.Context, identity string) (json.RawMessage, bool, error) {
	return nil, false, nil
}

// RunSummary is a bounded summary of one run.
type RunSummary struct {
	Run                 Run
	Activations         map[ActivationStatus]int
	ActivationsComplete bool
	Attempts            map[AttemptStatus]int
	AttemptsComplete    bool
	Allowance           Allowance
	Leases              []Lease
	LeasesComplete      bool
}

// RunSummary is not implemented yet.
func (s *Store) RunSummary(ctx context.Context, runID string) (RunSummary, error) {
	return RunSummary{}, nil
}
