package etcd_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/etcd"
)

// readRunInsert is an Update that reads run read (absent or not) and
// inserts run id; each run of its fn calls during first.
func readRunInsert(ctx context.Context, b *etcd.Backend, read, id string, during func(run int)) error {
	var runs int
	return b.Update(ctx, func(tx backend.Tx) error {
		runs++
		if _, err := backend.GetRun(ctx, tx, read); err != nil && !errors.Is(err, backend.ErrNotFound) {
			return err
		}
		if during != nil {
			during(runs)
		}
		return tx.Apply(ctx, backend.Changes{Insert: backend.Inserts{Runs: []backend.Run{{ID: id, RootID: id, Depth: 1, Status: backend.RunRunning, CreatedMS: 1, UpdatedMS: 1}}}})
	})
}

// failFirstCommitOf returns a commit hook that makes the first commit of
// each named Update (its ctx's updateName) fail its compare: a conflict, as
// if another commit had won.
func failFirstCommitOf(names ...string) etcd.CommitHook {
	var mu sync.Mutex
	failed := map[string]bool{}
	return func(ctx context.Context, kv clientv3.KV, c etcd.CommitTxn) (*clientv3.TxnResponse, error) {
		name, _ := ctx.Value(updateName{}).(string)
		mu.Lock()
		fail := slices.Contains(names, name) && !failed[name]
		failed[name] = failed[name] || fail
		mu.Unlock()
		if fail {
			c.If = append(c.If, clientv3.Compare(clientv3.Version("never-written"), ">", 0))
		}
		return c.Send(ctx, kv)
	}
}

// heldAfterConflict starts an Update named name that reads run runID and
// inserts it, and returns once that Update, its first commit failed by
// the Backend's commit hook, runs again (holding the gate's queue of what
// it read). The Update then waits until release is closed; its result
// arrives on done.
func heldAfterConflict(t *testing.T, ctx context.Context, b *etcd.Backend, name, runID string) (done <-chan error, release chan struct{}) {
	t.Helper()
	in, release := make(chan struct{}), make(chan struct{})
	result := make(chan error, 1)
	go func() {
		result <- readRunInsert(context.WithValue(ctx, updateName{}, name), b, runID, runID, func(run int) {
			if run == 2 { // running again after its conflict
				close(in)
				<-release
			}
		})
	}()
	select {
	case <-in:
	case err := <-result:
		t.Fatalf("Update %s returned (%v) before running again", name, err)
	}
	return result, release
}

// After a commit fails, the Backend's commit gate holds back its Updates
// that read what the failed one read, while the failed one runs again
// holding it, and only those: an Update of the same Backend on other keys
// commits meanwhile, instead of waiting for every conflict of the Backend
// to pass.
func TestGateHoldsBackOnlyUpdatesOfWhatConflicted(t *testing.T) {
	b, _ := openFresh(t, etcd.WithCommitHook(failFirstCommitOf("u1")))
	ctx := ctxT(t)
	u1, release := heldAfterConflict(t, ctx, b, "u1", "a")
	// Both start within the gate's window after the conflict.
	other, same := make(chan error, 1), make(chan error, 1)
	go func() { other <- insertRun(ctx, b, "x") }()
	go func() { same <- readRunInsert(ctx, b, "a", "y", nil) }()
	select {
	case err := <-other:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		close(release)
		t.Fatal("an Update on keys no failed commit read waited for the gate")
	}
	select {
	case err := <-same:
		close(release)
		t.Fatalf("an Update reading what the failed one read returned (%v) while that one ran again through the gate", err)
	default:
	}
	close(release)
	require.NoError(t, <-u1)
	require.NoError(t, <-same)
	require.Equal(t, int64(1), b.Stats().Conflicts, "only the forced conflict: the held-back Update read after the commit")
}

// Updates conflicting on one run queue behind each other only: an Update
// whose commit on run b fails while another Update runs again after its
// own conflict on run a (holding run a's queue) runs again at once in run
// b's queue and commits, instead of waiting behind run a's. (The runs'
// records hash to different queues of the gate.)
func TestGateQueuesUpdatesPerConflictingRun(t *testing.T) {
	b, _ := openFresh(t, etcd.WithCommitHook(failFirstCommitOf("ua", "ub")))
	ctx := ctxT(t)
	ua, release := heldAfterConflict(t, ctx, b, "ua", "a")
	var runsB atomic.Int32
	ub := make(chan error, 1)
	go func() {
		ub <- readRunInsert(context.WithValue(ctx, updateName{}, "ub"), b, "b", "b", func(run int) { runsB.Store(int32(run)) })
	}()
	select {
	case err := <-ub:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		close(release)
		t.Fatalf("an Update whose commit on run b failed waited, after %d runs, for the Update running again after its conflict on run a", runsB.Load())
	}
	require.Equal(t, int32(2), runsB.Load(), "the Update on run b ran again once, after its conflict")
	// A later Update reading run b's hot record does not wait for run a's
	// queue either.
	later := make(chan error, 1)
	go func() { later <- readRunInsert(ctx, b, "b", "c", nil) }()
	select {
	case err := <-later:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		close(release)
		t.Fatal("an Update reading run b's hot record waited for run a's queue")
	}
	close(release)
	require.NoError(t, <-ua)
	require.Equal(t, int64(2), b.Stats().Conflicts, "only the forced conflicts")
}

// Time an Update spends waiting at the gate for the Backend's other
// Updates counts neither toward its busy timeout nor toward the turn's
// time rule: an Update held back at the gate longer than its busy timeout
// by an Update running again after its conflict, and whose own commit then
// fails once, runs again and commits, without ErrBusy and without taking
// the turn (which would hold every other Update of the store back).
func TestGateWaitCountsNeitherTowardBusyTimeoutNorTurn(t *testing.T) {
	const busy = time.Second
	b, _ := openFresh(t, etcd.WithCommitHook(failFirstCommitOf("u1", "same")), etcd.WithBusyTimeout(busy))
	ctx := ctxT(t)
	u1, release := heldAfterConflict(t, ctx, b, "u1", "a")
	same := make(chan error, 1)
	go func() { same <- readRunInsert(context.WithValue(ctx, updateName{}, "same"), b, "a", "y", nil) }()
	// The second Update waits at the gate past its busy timeout.
	time.Sleep(busy + busy/2)
	select {
	case err := <-same:
		close(release)
		t.Fatalf("an Update reading what the failed one read returned (%v) while that one ran again through the gate", err)
	default:
	}
	close(release)
	require.NoError(t, <-u1)
	require.NoError(t, <-same, "waiting at the gate does not use up the busy timeout")
	st := b.Stats()
	require.Equal(t, int64(2), st.Conflicts, "the forced conflicts")
	require.Zero(t, st.Turns, "waiting at the gate does not make an Update take the turn")
}
