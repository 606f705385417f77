package etcd_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/etcd"
)

// turnQueue is the start of the turn queue's keys of the store under
// prefix p (meta keys); turnKey(p) is a key in it, as another Update puts.
func turnQueue(p string) string { return p + "mturn/" }

func turnKey(p string) string { return turnQueue(p) + "another" }

// insertRun is an Update that inserts run id.
func insertRun(ctx context.Context, b *etcd.Backend, id string) error {
	return b.Update(ctx, func(tx backend.Tx) error {
		return tx.Apply(ctx, backend.Changes{Insert: backend.Inserts{Runs: []backend.Run{{ID: id, RootID: id, Depth: 1, Status: backend.RunRunning, CreatedMS: 1, UpdatedMS: 1}}}})
	})
}

// While another Update holds the turn, an Update that wrote something does
// not commit: it waits for the turn key to go, then commits. The key is a
// meta key Verify accepts.
func TestTurnHeldByAnotherHoldsCommitsBack(t *testing.T) {
	b, p := openFresh(t)
	ctx := ctxT(t)
	put(t, turnKey(p), "another update's token")
	require.NoError(t, b.Verify(ctx), "the turn key is the store's own")
	done := make(chan error, 1)
	go func() { done <- insertRun(ctx, b, "r") }()
	select {
	case err := <-done:
		t.Fatalf("Update returned (%v) while another Update held the turn", err)
	case <-time.After(500 * time.Millisecond):
	}
	require.NotZero(t, b.Stats().TurnWaits, "the Update waited for the turn")
	require.Zero(t, b.Stats().CommitRequests, "no commit was sent while the turn was held")
	del(t, turnKey(p))
	require.NoError(t, <-done)
	var got bool
	require.NoError(t, b.View(ctx, func(r backend.ReadTx) error {
		_, err := backend.GetRun(ctx, r, "r")
		got = err == nil
		return nil
	}))
	require.True(t, got, "the Update committed once the turn ended")
}

// An Update whose commits keep failing takes the turn, and its commit ends
// it: the turn key is gone once Update returns.
func TestTurnTakenAfterConflictsEndsWithTheCommit(t *testing.T) {
	var n int
	fail := func(ctx context.Context, kv clientv3.KV, c etcd.CommitTxn) (*clientv3.TxnResponse, error) {
		n++
		if n <= 4 { // a compare that fails: a conflict, as if another commit won
			c.If = append(c.If, clientv3.Compare(clientv3.Version("never-written"), ">", 0))
		}
		return c.Send(ctx, kv)
	}
	b, p := openFresh(t, etcd.WithCommitHook(fail))
	ctx := ctxT(t)
	require.NoError(t, insertRun(ctx, b, "r"))
	st := b.Stats()
	require.Equal(t, int64(4), st.Conflicts)
	require.Equal(t, int64(1), st.Turns, "the Update took the turn after 4 failed commits")
	resp, err := newClient(t).Get(ctx, turnQueue(p), clientv3.WithPrefix())
	require.NoError(t, err)
	require.Empty(t, resp.Kvs, "the commit ended the turn")
	// The next Update neither waits nor takes the turn.
	require.NoError(t, insertRun(ctx, b, "s"))
	require.Equal(t, int64(1), b.Stats().Turns)
	require.Zero(t, b.Stats().TurnWaits)
}

// A holder that returns without committing (fn's error) ends its turn.
func TestTurnEndsWhenTheHolderGivesUp(t *testing.T) {
	var n int
	fail := func(ctx context.Context, kv clientv3.KV, c etcd.CommitTxn) (*clientv3.TxnResponse, error) {
		n++
		c.If = append(c.If, clientv3.Compare(clientv3.Version("never-written"), ">", 0))
		return c.Send(ctx, kv)
	}
	b, p := openFresh(t, etcd.WithCommitHook(fail), etcd.WithBusyTimeout(time.Second))
	ctx := ctxT(t)
	err := insertRun(ctx, b, "r")
	require.ErrorIs(t, err, backend.ErrBusy)
	require.Equal(t, int64(1), b.Stats().Turns)
	resp, err := newClient(t).Get(ctx, turnQueue(p), clientv3.WithPrefix())
	require.NoError(t, err)
	require.Empty(t, resp.Kvs, "the holder that gave up ended the turn")
}

// updateName names an Update's commits for the commit hook.
type updateName struct{}

// Updates that wait for the turn queue up in order: each joins the queue
// behind the ones before it, waits there past its busy timeout while
// another Update holds the turn, and commits in its place once the turn
// passes. None fails with ErrBusy.
func TestTurnQueueServesWaitersInOrderPastTheirBusyTimeout(t *testing.T) {
	var mu sync.Mutex
	var order []string
	record := func(ctx context.Context, kv clientv3.KV, c etcd.CommitTxn) (*clientv3.TxnResponse, error) {
		if name, ok := ctx.Value(updateName{}).(string); ok {
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
		}
		return c.Send(ctx, kv)
	}
	const busy = 400 * time.Millisecond
	b, p := openFresh(t, etcd.WithCommitHook(record), etcd.WithBusyTimeout(busy))
	ctx := ctxT(t)
	put(t, turnKey(p), "another update's token")
	names := []string{"u1", "u2", "u3"}
	done := make(chan error, len(names))
	for i, name := range names {
		go func() { done <- insertRun(context.WithValue(ctx, updateName{}, name), b, name) }()
		// Each joins the queue (a quarter of its busy timeout after it
		// found the turn held) before the next starts.
		require.Eventually(t, func() bool { return b.Stats().Turns == int64(i+1) }, 5*time.Second, 5*time.Millisecond, "%s joined the queue", name)
	}
	time.Sleep(2 * busy)
	select {
	case err := <-done:
		t.Fatalf("an Update returned (%v) while another Update held the turn", err)
	default:
	}
	require.Zero(t, b.Stats().CommitRequests, "no commit was sent while the turn was held")
	del(t, turnKey(p))
	for range names {
		require.NoError(t, <-done, "an Update waiting in the queue is not held to its busy timeout")
	}
	mu.Lock()
	require.Equal(t, names, order, "the queue served its Updates in the order they joined")
	mu.Unlock()
	resp, err := newClient(t).Get(ctx, turnQueue(p), clientv3.WithPrefix())
	require.NoError(t, err)
	require.Empty(t, resp.Kvs, "every commit left the queue")
}

// Waiting for turns that pass one after another, none holding it back for
// a quarter of its busy timeout, neither makes an Update join the queue
// nor uses up its busy timeout: it commits once the turns end, though it
// waited for them longer than its busy timeout. (Counted, such waits made
// every Update under load join the queue, and the store admit one at a
// time.)
func TestWaitsForTurnsThatPassNeitherJoinTheQueueNorUseUpTheBusyTimeout(t *testing.T) {
	const busy = 2 * time.Second
	b, p := openFresh(t, etcd.WithBusyTimeout(busy))
	ctx := ctxT(t)
	prev := turnQueue(p) + "holder0"
	put(t, prev, "holder0")
	done := make(chan error, 1)
	go func() { done <- insertRun(ctx, b, "r") }()
	// A new turn every busy/8, for twice the busy timeout: the next
	// holder joins behind the head, then the head leaves.
	for i := 1; i <= 16; i++ {
		time.Sleep(busy / 8)
		next := turnQueue(p) + fmt.Sprint("holder", i)
		put(t, next, fmt.Sprint("holder", i))
		del(t, prev)
		prev = next
		select {
		case err := <-done:
			t.Fatalf("Update returned (%v) before the others' turns ended: it took a turn of its own", err)
		default:
		}
	}
	require.Zero(t, b.Stats().CommitRequests, "no commit was sent while others held the turn")
	del(t, prev)
	require.NoError(t, <-done, "waits for others' turns do not use up the busy timeout")
	require.NotZero(t, b.Stats().TurnWaits, "the Update waited for the turns")
	require.Zero(t, b.Stats().Turns, "no turn held the Update back for a quarter of its busy timeout: it did not join the queue")
}
