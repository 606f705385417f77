package etcd_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/etcd"
)

// Commits whose answer is lost: the adapter must neither report them as
// failed nor as committed until it knows, and must never apply them twice.

type commitHook = etcd.CommitHook

// onFirst runs h for the first commit and sends the others as they are.
func onFirst(h commitHook) commitHook {
	var n atomic.Int64
	return func(ctx context.Context, kv clientv3.KV, c etcd.CommitTxn) (*clientv3.TxnResponse, error) {
		if n.Add(1) == 1 {
			return h(ctx, kv, c)
		}
		return c.Send(ctx, kv)
	}
}

// appliedThenTimeout applies the commit and reports a server timeout.
func appliedThenTimeout(ctx context.Context, kv clientv3.KV, c etcd.CommitTxn) (*clientv3.TxnResponse, error) {
	if _, err := c.Send(ctx, kv); err != nil {
		return nil, err
	}
	return nil, rpctypes.ErrTimeout
}

// lostRequest reports a timeout without sending the commit.
func lostRequest(context.Context, clientv3.KV, etcd.CommitTxn) (*clientv3.TxnResponse, error) {
	return nil, rpctypes.ErrTimeoutDueToLeaderFail
}

func setup(t *testing.T, b *etcd.Backend) {
	t.Helper()
	require.NoError(t, b.Update(ctxT(t), func(tx backend.Tx) error {
		return tx.Apply(context.Background(), backend.Changes{Insert: backend.Inserts{Runs: []backend.Run{{ID: "r"}}}})
	}))
}

// insertEvent returns an fn that inserts event seq of run r, seq being
// the number of times fn has run (so a re-run writes another key).
func insertEvent(runs *atomic.Int64) func(tx backend.Tx) error {
	return func(tx backend.Tx) error {
		seq := runs.Add(1)
		return tx.Apply(context.Background(), backend.Changes{Insert: backend.Inserts{Events: []backend.Event{
			{RunID: "r", Seq: seq, Type: "t", Payload: []byte(`{}`), CreatedMS: 1},
		}}})
	}
}

func events(t *testing.T, b backend.Backend) []int64 {
	t.Helper()
	var seqs []int64
	require.NoError(t, b.View(ctxT(t), func(r backend.ReadTx) error {
		evs, err := r.Events(context.Background(), backend.EventQuery{RunID: "r", Limit: 100})
		for _, e := range evs {
			seqs = append(seqs, e.Seq)
		}
		return err
	}))
	return seqs
}

// TestOutcomeUnknownCommitThatAppliedIsSuccess: the commit applied and
// its answer was lost: Update returns nil without running fn again.
func TestOutcomeUnknownCommitThatAppliedIsSuccess(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		hook commitHook
	}{
		{"server_timeout", appliedThenTimeout},
		{"request_deadline", func(ctx context.Context, kv clientv3.KV, c etcd.CommitTxn) (*clientv3.TxnResponse, error) {
			if _, err := c.Send(ctx, kv); err != nil {
				return nil, err
			}
			<-ctx.Done() // the request timeout passes before the answer comes
			return nil, ctx.Err()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, _ := openFresh(t, etcd.WithRequestTimeout(time.Second))
			setup(t, b)
			hooked, err := openLocator(ctxT(t), locatorOf(t, b), etcd.WithRequestTimeout(time.Second), etcd.WithCommitHook(onFirst(tc.hook)))
			require.NoError(t, err)
			defer hooked.Close()
			var runs atomic.Int64
			require.NoError(t, hooked.Update(ctxT(t), insertEvent(&runs)), "a commit that applied is a success")
			assert.Equal(t, int64(1), runs.Load(), "fn ran once")
			assert.Equal(t, []int64{1}, events(t, b))
			s := hooked.Stats()
			assert.Equal(t, int64(1), s.Unknown)
			assert.Equal(t, int64(1), s.UnknownApplied)
			assert.Equal(t, int64(0), s.UnknownFenced)
			assert.Equal(t, int64(1), s.Commits)
			require.NoError(t, b.Verify(ctxT(t)))
		})
	}
}

// TestOutcomeUnknownCommitThatDidNotApplyRunsFnAgain: the request was
// lost: the fence proves it did not apply, fn runs again and commits once.
func TestOutcomeUnknownCommitThatDidNotApplyRunsFnAgain(t *testing.T) {
	t.Parallel()
	b, _ := openFresh(t, etcd.WithCommitHook(onFirst(lostRequest)))
	setup(t, b) // the first commit: lost, fenced, re-run
	var runs atomic.Int64
	require.NoError(t, b.Update(ctxT(t), insertEvent(&runs)))
	assert.Equal(t, int64(1), runs.Load())
	assert.Equal(t, []int64{1}, events(t, b))
	s := b.Stats()
	assert.Equal(t, int64(1), s.Unknown)
	assert.Equal(t, int64(1), s.UnknownFenced)
	assert.Equal(t, int64(0), s.UnknownApplied)
	assert.Equal(t, int64(2), s.Commits, "setup and the event, each once")
}

// TestOutcomeUnknownLateCommitNeverApplies: the lost commit reaches the
// cluster only after the fence (a proposal stuck behind a leader change):
// it must fail, although nothing else it read has changed since.
func TestOutcomeUnknownLateCommitNeverApplies(t *testing.T) {
	t.Parallel()
	b, p := openFresh(t)
	setup(t, b)
	var mu sync.Mutex
	var late etcd.CommitTxn
	hooked, err := openLocator(ctxT(t), locator(p), etcd.WithCommitHook(onFirst(func(_ context.Context, _ clientv3.KV, c etcd.CommitTxn) (*clientv3.TxnResponse, error) {
		mu.Lock()
		defer mu.Unlock()
		late = c
		return nil, rpctypes.ErrTimeout
	})))
	require.NoError(t, err)
	defer hooked.Close()
	var runs atomic.Int64
	require.NoError(t, hooked.Update(ctxT(t), insertEvent(&runs)))
	assert.Equal(t, int64(2), runs.Load(), "fn ran again after the fence")
	assert.Equal(t, []int64{2}, events(t, b))
	mu.Lock()
	resp, err := late.Send(ctxT(t), newClient(t))
	mu.Unlock()
	require.NoError(t, err)
	assert.False(t, resp.Succeeded, "the fenced commit must not apply")
	assert.Equal(t, []int64{2}, events(t, b), "event 1 never appears")
	s := hooked.Stats()
	assert.Equal(t, int64(1), s.UnknownFenced)
	require.NoError(t, b.Verify(ctxT(t)))
}

// locatorOf returns the locator of b's store (its prefix on the test
// cluster).
func locatorOf(t *testing.T, b *etcd.Backend) string {
	t.Helper()
	return locator(b.Prefix())
}
