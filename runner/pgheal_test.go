package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/internal/testkit/pgtest"
	"github.com/wfstore/wfstore/postgres"
	"github.com/wfstore/wfstore/workflow"
)

// pgLookupOwner is a mutating owner that accepts each identity once, keeps
// its receipts (ReceiptLookup) and observes what it accepted as succeeded.
type pgLookupOwner struct {
	mu       sync.Mutex
	calls    map[string]int
	receipts map[string]json.RawMessage
}

func (o *pgLookupOwner) Plan(_ context.Context, a workflow.Activation) (*workflow.Plan, error) {
	return &workflow.Plan{SideEffect: workflow.Mutating, Intent: json.RawMessage(`{}`)}, nil
}

func (o *pgLookupOwner) Dispatch(_ context.Context, p workflow.PreparedDispatch) (json.RawMessage, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls[p.Identity]++
	rc, ok := o.receipts[p.Identity]
	if !ok {
		rc = json.RawMessage(fmt.Sprintf(`{"accepted":%q}`, p.Identity))
		o.receipts[p.Identity] = rc
	}
	return rc, nil
}

func (o *pgLookupOwner) LookupReceipt(_ context.Context, identity string) (json.RawMessage, bool, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	rc, ok := o.receipts[identity]
	return rc, ok, nil
}

func (o *pgLookupOwner) Observe(_ context.Context, a workflow.Attempt) (workflow.Observation, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.receipts[a.Identity]; ok {
		return workflow.Observation{Kind: workflow.ObservedSucceeded, Output: json.RawMessage(`{}`)}, nil
	}
	return workflow.Observation{Kind: workflow.ObservedUnknown}, nil
}

// The runner's PostgreSQL connections are terminated (pg_terminate_backend)
// again and again while it admits mutating work, some of the terminations
// racing a commit: every activation still completes without a restart,
// none goes to repair_required, and the owner is called once per attempt.
// (Most terminations hit a statement before COMMIT, which the adapter
// re-runs; the heal paths of a lost COMMIT answer are driven
// deterministically by TestUnknownCommitOutcomesHealWithoutARestart.)
func TestPostgresBackendTerminationsHealWithoutARestart(t *testing.T) {
	if testing.Short() {
		t.Skip("terminates PostgreSQL backends")
	}
	t.Parallel()
	dsn, schema := pgtest.Schema(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	app := "wfheal_" + schema
	pcfg, err := pgxpool.ParseConfig(dsn)
	require.NoError(t, err)
	pcfg.ConnConfig.RuntimeParams["application_name"] = app
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	require.NoError(t, err)
	defer pool.Close()
	b, err := postgres.OpenPool(ctx, pool, postgres.WithSchema(schema))
	require.NoError(t, err)
	defer b.Close()
	admin, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	// admin is one connection: adminMu serialises its users (the loop
	// below and the racing goroutines, which may outlive a failed test's
	// return), and a closed admin is never used.
	var adminMu sync.Mutex
	adminClosed := false
	defer func() {
		adminMu.Lock()
		defer adminMu.Unlock()
		adminClosed = true
		admin.Close(context.Background())
	}()

	// Besides the terminations of the loop below, a commit is sometimes
	// raced by one: the termination is sent a moment after the
	// transaction's writes are queued, while COMMIT is on the wire.
	// The racer is armed only once the runs are set up: a setup write whose
	// COMMIT is raced would fail the test before the runner starts.
	var kmu sync.Mutex
	armed := false
	racing := 0
	rngC := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 4))
	terminate := func() {
		var k int
		_ = admin.QueryRow(context.Background(),
			"SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()", app).Scan(&k)
	}
	s := workflow.New(commitRacer{Backend: b, race: func() {
		kmu.Lock()
		fire := armed && racing < 80 && rngC.IntN(3) == 0
		d := time.Duration(rngC.IntN(1500)) * time.Microsecond
		if fire {
			racing++
		}
		kmu.Unlock()
		if fire {
			go func() {
				time.Sleep(d)
				adminMu.Lock()
				defer adminMu.Unlock()
				if !adminClosed {
					terminate()
				}
			}()
		}
	}})
	const n = 40
	for i := range n {
		id := fmt.Sprintf("pg-%02d", i)
		_, err := s.CreateRun(ctx, workflow.NewRun{ID: id}, time.Now())
		require.NoError(t, err)
		_, err = s.AddActivation(ctx, workflow.NewActivation{Key: key(id, "a"), Input: json.RawMessage(`{}`),
			Effect: workflow.Mutating, Reconciliation: workflow.ReceiptStatus}, time.Now())
		require.NoError(t, err)
	}
	kmu.Lock()
	armed = true
	kmu.Unlock()
	o := &pgLookupOwner{calls: map[string]int{}, receipts: map[string]json.RawMessage{}}
	var logs logBuffer
	r, err := New(s, o, WithPollInterval(5*time.Millisecond, 50*time.Millisecond), WithLimit(2),
		WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
	require.NoError(t, err)
	st := start(t, r)

	killed := 0
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
	deadline := time.Now().Add(90 * time.Second)
	for {
		done := 0
		for i := range n {
			run, err := s.GetRun(ctx, fmt.Sprintf("pg-%02d", i))
			if err != nil {
				continue // this read's connection may be the one terminated
			}
			if run.Status == workflow.RunCompleted {
				done++
			}
		}
		if done == n {
			break
		}
		require.True(t, time.Now().Before(deadline), "only %d of %d runs completed without a restart (%d terminations)", done, n, killed)
		if killed < 40 {
			adminMu.Lock()
			var k int
			require.NoError(t, admin.QueryRow(ctx,
				"SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()", app).Scan(&k))
			adminMu.Unlock()
			killed += k
		}
		time.Sleep(time.Duration(2+rng.IntN(15)) * time.Millisecond)
	}
	sum, err := st.stop(t)
	require.NoError(t, err)
	msgs := logs.messages(t)
	kmu.Lock()
	t.Logf("%d commits raced by a termination", racing)
	kmu.Unlock()
	t.Logf("%d backend terminations; summary: admitted %d, unresolved %d; passes failed %d; healed: %d receipts persisted again, %d found committed, %d pending handoffs redispatched, %d still in doubt at a pass",
		killed, sum.Admitted, len(sum.Unresolved), count(msgs, "pass failed; backing off"), count(msgs, "receipt persisted after an unknown outcome"),
		count(msgs, "receipt found committed after an unknown outcome"), count(msgs, "handoff found pending after an unknown outcome; redispatching"),
		count(msgs, "attempt in doubt not resolved yet; retrying"))
	assert.Zero(t, count(msgs, "handoff of a mutating attempt found recorded after an unknown outcome; left for reconciliation"))
	assert.Positive(t, killed)
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := range n {
		id := workflow.DispatchIdentity(fmt.Sprintf("pg-%02d", i), "n", "a", 1)
		assert.Equal(t, 1, o.calls[id], "owner calls of %s", id)
	}
	assert.Len(t, o.calls, n, "one attempt per activation")
}

// commitRacer calls race at the end of every Update fn, just before the
// adapter sends the transaction's writes and COMMIT.
type commitRacer struct {
	backend.Backend
	race func()
}

func (b commitRacer) Update(ctx context.Context, fn func(tx backend.Tx) error) error {
	return b.Backend.Update(ctx, func(tx backend.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		b.race()
		return nil
	})
}
