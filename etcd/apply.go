package etcd

import (
	"context"
	"fmt"

	"github.com/wfstore/wfstore/backend"
)

// Apply applies c (kvlayout's Layout.Apply): every Expect, then every
// Delete, then every Insert, then every Replace, kinds in the order of
// backend.Changes's fields and each slice in slice order; it stops at the
// first operation that fails and returns its error. An operation that
// fails with ErrConflict, ErrNotFound or ErrChanged has changed nothing
// (the operations before it in c stay applied): every check runs before
// the operation's first buffered write. Every key the operations check is
// read first, in one batch of gets (store.Prefetch); writes go to the
// transaction's buffer (tx.go) and reach etcd with the commit.
func (t *tx) Apply(ctx context.Context, c backend.Changes) error {
	if err := t.check(ctx, "apply"); err != nil {
		return err
	}
	if t.w.broken != nil {
		return fmt.Errorf("etcd: apply after a failed write: %w", t.w.broken)
	}
	return layout.Apply(ctx, store{t: &t.readTx, op: "apply"}, &c)
}

var _ backend.Swapper = (*tx)(nil)

// SwapAttempts implements backend.Swapper (kvlayout's Layout.SwapAttempts):
// the attempts are read in one batch of gets and compared, and each equal
// one's New buffered like a Replace. The reads join the transaction's read
// set, so of concurrent Updates swapping one row from the same Old only
// the first to commit keeps its swap: the others' commits fail their
// compare and their fns run again, finding New stored.
func (t *tx) SwapAttempts(ctx context.Context, swaps []backend.AttemptSwap) ([]bool, error) {
	if err := t.check(ctx, "swap"); err != nil {
		return nil, err
	}
	if t.w.broken != nil {
		return nil, fmt.Errorf("etcd: swap after a failed write: %w", t.w.broken)
	}
	return layout.SwapAttempts(ctx, store{t: &t.readTx, op: "swap"}, swaps)
}
