package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/internal/testkit/pgtest"
	"github.com/wfstore/wfstore/postgres"
	"github.com/wfstore/wfstore/workflow"
)

// heardLog records the payloads a Backend's work listener receives.
type heardLog struct {
	mu       sync.Mutex
	payloads []string
	marker   chan struct{} // closed when the payload "marker" is heard
}

func hear(b *postgres.Backend) *heardLog {
	h := &heardLog{marker: make(chan struct{})}
	b.SetHeard(func(p string) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.payloads = append(h.payloads, p)
		if p == "marker" {
			close(h.marker)
		}
	})
	return h
}

// untilMarker notifies "marker" on schema's channel from another session
// and returns every payload the listener heard up to it. Notifications
// arrive in commit order, so a notification any earlier transaction sent
// is among them.
func (h *heardLog) untilMarker(t *testing.T, schema string) []string {
	t.Helper()
	_, err := pgtest.Admin(t).Exec(ctxT(t), "SELECT pg_notify($1, 'marker')", postgres.WorkChannel(schema))
	require.NoError(t, err)
	select {
	case <-h.marker:
	case <-time.After(10 * time.Second):
		t.Fatal("the listener did not hear the marker within 10s")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.payloads...)
}

func listen(t *testing.T, b *postgres.Backend) <-chan struct{} {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ch, err := b.ListenWork(ctx)
	require.NoError(t, err)
	return ch
}

func woken(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("no wake-up within 10s after %s", what)
	}
}

func empty(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return false
	default:
		return true
	}
}

// A commit that adds work through one Backend wakes a listener on another
// Backend over the same schema, and no listener on another schema.
func TestListenWorkHearsCommitsOfOtherBackends(t *testing.T) {
	t.Parallel()
	a, dsn, schema := openFresh(t)
	b := openOn(t, dsn, schema)
	other, _, otherSchema := openFresh(t)
	otherHeard := hear(other)
	chB, chOther := listen(t, b), listen(t, other)

	s := workflow.New(a)
	now := time.UnixMilli(1_700_000_000_000)
	_, err := s.CreateRun(ctxT(t), workflow.NewRun{ID: "r"}, now)
	require.NoError(t, err)
	woken(t, chB, "CreateRun")
	require.True(t, empty(chB))
	_, err = s.AddActivation(ctxT(t), workflow.NewActivation{Key: workflow.ActivationKey{RunID: "r", NodeID: "n", ActivationID: "a"},
		Input: json.RawMessage(`{}`)}, now)
	require.NoError(t, err)
	woken(t, chB, "AddActivation")

	assert.Equal(t, []string{"marker"}, otherHeard.untilMarker(t, otherSchema), "another schema's listener heard nothing of ours")
	woken(t, chOther, "the marker")
}

// A signalled transaction that does not commit notifies no one: fn
// returning an error, and a deferred write failing in the commit batch
// (which then skips COMMIT and the NOTIFY after it). One that commits does.
func TestListenWorkIgnoresRolledBackTransactions(t *testing.T) {
	t.Parallel()
	a, dsn, schema := openFresh(t)
	b := openOn(t, dsn, schema)
	heard := hear(b)
	ch := listen(t, b)
	apply(t, a, insertRuns("seed"))

	boom := errors.New("boom")
	err := a.Update(ctxT(t), func(tx backend.Tx) error {
		tx.(backend.WorkSignaler).SignalWork()
		if err := tx.Apply(context.Background(), insertRuns("x")); err != nil {
			return err
		}
		return boom
	})
	require.ErrorIs(t, err, boom)
	err = a.Update(ctxT(t), func(tx backend.Tx) error {
		tx.(backend.WorkSignaler).SignalWork()
		return tx.Apply(context.Background(), insertRuns("seed")) // deferred: fails in the commit batch
	})
	require.ErrorIs(t, err, backend.ErrConflict)
	assert.Equal(t, []string{"marker"}, heard.untilMarker(t, schema), "a rolled-back transaction notified")
	woken(t, ch, "the marker")

	require.NoError(t, a.Update(ctxT(t), func(tx backend.Tx) error {
		tx.(backend.WorkSignaler).SignalWork()
		return tx.Apply(context.Background(), insertRuns("y"))
	}))
	woken(t, ch, "a committed signalled transaction")
	heard.mu.Lock()
	assert.Equal(t, []string{"marker", ""}, heard.payloads)
	heard.mu.Unlock()
}

// The listener survives the termination of its connection: it reconnects
// on another one, wakes its receiver once (it may have missed a commit
// while deaf), and hears commits again. When ctx ends it closes its
// connection.
func TestListenWorkReconnectsAfterTermination(t *testing.T) {
	t.Parallel()
	a, dsn, schema := openFresh(t)
	b := openOn(t, dsn, schema)
	pids := make(chan uint32, 4)
	b.SetListening(func(pid uint32) { pids <- pid })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := b.ListenWork(ctx)
	require.NoError(t, err)
	first := <-pids // LISTEN is in place when ListenWork returns
	require.True(t, empty(ch), "no wake-up before anything happened")

	admin := pgtest.Admin(t)
	var ok bool
	require.NoError(t, admin.QueryRow(ctxT(t), "SELECT pg_terminate_backend($1, 10000)", int64(first)).Scan(&ok))
	require.True(t, ok)
	var second uint32
	select {
	case second = <-pids:
	case <-time.After(10 * time.Second):
		t.Fatal("the listener did not reconnect within 10s")
	}
	require.NotEqual(t, first, second, "a new connection")
	woken(t, ch, "the reconnection")
	require.True(t, empty(ch), "one wake-up per reconnection")

	require.NoError(t, a.Update(ctxT(t), func(tx backend.Tx) error {
		tx.(backend.WorkSignaler).SignalWork()
		return tx.Apply(context.Background(), insertRuns("r"))
	}))
	woken(t, ch, "a commit after the reconnection")

	cancel()
	qctx := ctxT(t)
	require.Eventually(t, func() bool {
		var gone bool
		err := admin.QueryRow(qctx, "SELECT NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $1)", int64(second)).Scan(&gone)
		return err == nil && gone
	}, 10*time.Second, 10*time.Millisecond, "the listener closed its connection when ctx ended")
}

// ListenWork on a closed Backend fails with ErrClosed; Close stops a
// running listener.
func TestListenWorkAndClose(t *testing.T) {
	t.Parallel()
	dsn, schema := pgtest.Schema(t)
	b, err := postgres.Open(ctxT(t), withMaxConns(dsn, 3), postgres.WithSchema(schema))
	require.NoError(t, err)
	_, err = b.ListenWork(context.Background()) // stopped by Close alone
	require.NoError(t, err)
	require.NoError(t, b.Close()) // returns once the listener has let go
	_, err = b.ListenWork(context.Background())
	require.ErrorIs(t, err, backend.ErrClosed)
}

// Every store has its own channel, within the server's 63-byte limit.
func TestWorkChannelNames(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("s", 63)
	names := map[string]bool{}
	for _, schema := range []string{"wfstore", "wfstore_test_0123456789abcdef", long, long[:62] + "t", long[:50]} {
		c := postgres.WorkChannel(schema)
		assert.LessOrEqual(t, len(c), 63, c)
		assert.True(t, strings.HasPrefix(c, "wfstore_work_"), c)
		assert.False(t, names[c], "two schemas share %s", c)
		names[c] = true
	}
	assert.Equal(t, "wfstore_work_wfstore", postgres.WorkChannel("wfstore"))
}
