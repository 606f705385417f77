package workflow

import (
	"context"
	"time"
)

// Observer reports what the owner knows about an admitted attempt. The
// receipt-backed pass calls it outside any transaction.
type Observer interface {
	Observe(ctx context.Context, a Attempt) (Observation, error)
}

// ReceiptPassOptions selects the attempts one receipt-backed pass examines.
type ReceiptPassOptions struct {
	RunID     string
	Authority *Authority
	Limit     int
}

// ReceiptOutcome is what the pass did with one attempt.
type ReceiptOutcome struct {
	Identity   string
	OwnerAsked bool
	Applied    ObservationKind
	Status     AttemptStatus
	Unresolved bool
	Schedule   *RetrySchedule
}

// ReceiptPassSummary lists the attempts a pass examined.
type ReceiptPassSummary struct {
	Attempts []ReceiptOutcome
}

// ReconcileReceiptBacked is not implemented yet.
func (s *Store) ReconcileReceiptBacked(ctx context.Context, o Observer, opts ReceiptPassOptions, now time.Time) (ReceiptPassSummary, error) {
	return ReceiptPassSummary{}, nil
}
