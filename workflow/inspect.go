package workflow

import (
	"context"

	"github.com/wfstore/wfstore/backend"
)

// Events returns up to limit of the run's events after afterSeq, in commit
// order. limit is 1..=MaxPageLimit; 0 means DefaultPageLimit.
func (s *Store) Events(ctx context.Context, runID string, afterSeq int64, limit int) ([]Event, error) {
	if err := ValidateID("run id", runID); err != nil {
		return nil, err
	}
	limit, err := pageLimit("history limit", limit)
	if err != nil {
		return nil, err
	}
	if afterSeq < 0 {
		return nil, invalid("event sequence", "must not be negative")
	}
	var out []Event
	err = s.view(ctx, func(r backend.ReadTx) error {
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
	// Limit is 1..=MaxPageLimit; 0 means DefaultPageLimit.
	Limit int
}

// Attempts returns a page of attempts ordered by (prepared time, identity).
func (s *Store) Attempts(ctx context.Context, p AttemptPage) ([]Attempt, error) {
	if p.RunID != "" {
		if err := ValidateID("run id", p.RunID); err != nil {
			return nil, err
		}
	}
	limit, err := pageLimit("history limit", p.Limit)
	if err != nil {
		return nil, err
	}
	p.Limit = limit
	q := backend.AttemptQuery{RunID: p.RunID, Status: p.Status, Limit: p.Limit}
	if p.After != nil {
		q.After = &backend.AttemptCursor{PreparedMS: p.After.PreparedMS, Identity: p.After.Identity}
	}
	var out []Attempt
	err = s.view(ctx, func(r backend.ReadTx) error {
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
