package etcd_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/conformance"
	"github.com/wfstore/wfstore/etcd"
)

// TestConformance runs the exported suite on the test cluster: each case
// gets a fresh key prefix (deleted when it ends); child processes of the
// multi-process cases open the same prefix through the locator. After
// every case the suite runs the index verifier.
//
// Every Backend the suite opens loses the answer to some of its commits
// (lossyCommits): one in seven is applied and reported as a timeout, one
// in seven is not sent and reported as a lost leader. The suite's results
// must not change: the adapter resolves each unknown outcome (commit.go).
//
// The suite proves semantics, not latency: its Backends re-run conflicts
// for up to a minute and wait up to 30 s for a request, so that its racing
// cases (a dozen dispatchers on one run's counters) and its 1 MiB records
// pass under the race detector on a loaded 2-core machine too.
func TestConformance(t *testing.T) {
	conformance.Run(t, conformance.Harness{
		Name: "etcd",
		New:  func(t testing.TB) string { return suiteLocator(newPrefix(t)) },
		Open: func(ctx context.Context, loc string) (backend.Backend, error) {
			return openLocator(ctx, loc, etcd.WithCommitHook(lossyCommits()),
				etcd.WithBusyTimeout(time.Minute), etcd.WithRequestTimeout(30*time.Second))
		},
		Verify: func(ctx context.Context, b backend.Backend) error {
			return b.(*etcd.Backend).Verify(ctx)
		},
	})
}

// lossyCommits returns a commit hook that loses the answer of the 3rd and
// of the 6th of every 7 commits: the first applied, the second never sent.
func lossyCommits() etcd.CommitHook {
	var n atomic.Int64
	return func(ctx context.Context, kv clientv3.KV, c etcd.CommitTxn) (*clientv3.TxnResponse, error) {
		switch n.Add(1) % 7 {
		case 3:
			if _, err := c.Send(ctx, kv); err != nil {
				return nil, err
			}
			return nil, rpctypes.ErrTimeout
		case 6:
			return nil, rpctypes.ErrTimeoutDueToLeaderFail
		}
		return c.Send(ctx, kv)
	}
}
