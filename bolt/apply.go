package bolt

import (
	"context"
	"fmt"

	"github.com/wfstore/wfstore/backend"
)

// Apply applies c (kvlayout's Layout.Apply, through tx's Put and Delete):
// every Expect, then every Delete, then every Insert, then every Replace,
// kinds in the order of backend.Changes's fields and each slice in slice
// order; it stops at the first operation that fails and returns its error.
// An operation that fails with ErrConflict, ErrNotFound or ErrChanged has
// changed nothing (the operations before it in c stay applied). Only a
// storage failure can stop an operation part-way; then the transaction is
// marked broken and Update will not commit it.
func (t *tx) Apply(ctx context.Context, c backend.Changes) error {
	if err := t.check(ctx, "apply"); err != nil {
		return err
	}
	if t.broken != nil {
		return fmt.Errorf("bolt: apply after a failed write: %w", t.broken)
	}
	return layout.Apply(ctx, t, &c)
}

var _ backend.Swapper = (*tx)(nil)

// SwapAttempts implements backend.Swapper (kvlayout's Layout.SwapAttempts):
// the transaction holds bbolt's write lock, so each swap reads, compares
// and writes its attempt in it.
func (t *tx) SwapAttempts(ctx context.Context, swaps []backend.AttemptSwap) ([]bool, error) {
	if err := t.check(ctx, "swap"); err != nil {
		return nil, err
	}
	if t.broken != nil {
		return nil, fmt.Errorf("bolt: swap after a failed write: %w", t.broken)
	}
	return layout.SwapAttempts(ctx, t, swaps)
}
