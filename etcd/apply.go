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
