package etcd

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// CommitTxn is the content of one commit Txn.
type CommitTxn = commitTxn

// Send sends c through kv.
func (c commitTxn) Send(ctx context.Context, kv clientv3.KV) (*clientv3.TxnResponse, error) {
	return c.send(ctx, kv)
}

// CommitHook sends a commit Txn, or pretends to.
type CommitHook = func(ctx context.Context, kv clientv3.KV, c CommitTxn) (*clientv3.TxnResponse, error)

// WithCommitHook makes Update send its commit Txns through h, which may
// lose the answer (tests of unknown outcomes).
func WithCommitHook(h CommitHook) Option {
	return func(c *config) { c.hooks.commitFn = h }
}
