package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/internal/testkit/pgtest"
	"github.com/wfstore/wfstore/postgres"
	"github.com/wfstore/wfstore/workflow"
)

// The PostgreSQL server crashes (immediate shutdown) and comes back again
// and again while a runner admits mutating work over it: every run still
// completes without a runner restart, no attempt needs repair, and the
// owner is called once per attempt. A restart cuts off every connection
// at once, COMMITs on the wire included, so the commit-outcome-unknown
// heal paths run against a real server rather than a fault injector.
// The server is a throwaway cluster of this test's own (the shared
// server is never restarted).
func TestPostgresServerRestartsHealWithoutARunnerRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts a PostgreSQL server")
	}
	bins, err := pgtest.FindBinaries()
	if err != nil {
		if os.Getenv("WFSTORE_REQUIRE_POSTGRES") == "1" {
			t.Fatalf("WFSTORE_REQUIRE_POSTGRES=1 and no initdb/pg_ctl to start a server this test may restart: %v", err)
		}
		t.Skipf("SKIPPED: no initdb/pg_ctl to start a server this test may restart: %v", err)
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := pgtest.StartCluster(ctx, bins)
	require.NoError(t, err)
	defer func() { assert.NoError(t, c.Stop()) }()

	pcfg, err := pgxpool.ParseConfig(c.DSN())
	require.NoError(t, err)
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	require.NoError(t, err)
	defer pool.Close()
	b, err := postgres.OpenPool(ctx, pool)
	require.NoError(t, err)
	defer b.Close()
	s := workflow.New(b)
	const n = 80
	for i := range n {
		id := fmt.Sprintf("rs-%02d", i)
		_, err := s.CreateRun(ctx, workflow.NewRun{ID: id}, time.Now())
		require.NoError(t, err)
		_, err = s.AddActivation(ctx, workflow.NewActivation{Key: key(id, "a"), Input: json.RawMessage(`{}`),
			Effect: workflow.Mutating, Reconciliation: workflow.ReceiptStatus}, time.Now())
		require.NoError(t, err)
	}
	// The owner takes a token per call: the test lets work through in
	// rounds and restarts the server while a round's calls and commits are
	// in flight, however fast or slow the machine is.
	o := &gatedOwner{pgLookupOwner: &pgLookupOwner{calls: map[string]int{}, receipts: map[string]json.RawMessage{}},
		tokens: make(chan struct{}, 2*n)}
	var logs logBuffer
	r, err := New(s, o, WithPollInterval(5*time.Millisecond, 50*time.Millisecond), WithLimit(2),
		WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
	require.NoError(t, err)
	st := start(t, r)

	const rounds, perRound = 5, 12
	deadline := time.Now().Add(2 * time.Minute)
	for round := range rounds {
		for range perRound {
			o.tokens <- struct{}{}
		}
		for o.called() < round*perRound+perRound/3 {
			require.True(t, time.Now().Before(deadline), "the owner was called %d times by round %d", o.called(), round)
			time.Sleep(2 * time.Millisecond)
		}
		require.NoError(t, c.Restart(ctx))
	}
	for range 2*n - rounds*perRound {
		o.tokens <- struct{}{}
	}
	completed := func() int {
		done := 0
		for i := range n {
			run, err := s.GetRun(ctx, fmt.Sprintf("rs-%02d", i))
			if err == nil && run.Status == workflow.RunCompleted {
				done++
			}
		}
		return done
	}
	for done := completed(); done < n; done = completed() {
		require.True(t, time.Now().Before(deadline), "only %d of %d runs completed without a runner restart (%d server restarts)", done, n, rounds)
		time.Sleep(20 * time.Millisecond)
	}
	sum, err := st.stop(t)
	require.NoError(t, err)
	msgs := logs.messages(t)
	t.Logf("%d server restarts; summary: admitted %d, unresolved %d; passes failed %d", rounds, sum.Admitted, len(sum.Unresolved),
		count(msgs, "pass failed; backing off"))
	attsPage, err := s.Attempts(ctx, workflow.AttemptQuery{Status: workflow.AttemptRepairRequired, Limit: workflow.MaxPageLimit})
	require.NoError(t, err)
	atts := attsPage.Items
	assert.Empty(t, atts, "no attempt needs repair")
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := range n {
		id := workflow.DispatchIdentity(fmt.Sprintf("rs-%02d", i), "n", "a", 1)
		assert.Equal(t, 1, o.calls[id], "owner calls of %s", id)
	}
	assert.Len(t, o.calls, n, "one attempt per activation")
}

// gatedOwner is a pgLookupOwner whose Dispatch first takes a token.
type gatedOwner struct {
	*pgLookupOwner
	tokens chan struct{}
}

func (o *gatedOwner) Dispatch(ctx context.Context, p workflow.PreparedDispatch) (json.RawMessage, error) {
	select {
	case <-o.tokens:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return o.pgLookupOwner.Dispatch(ctx, p)
}

// called is the number of owner calls so far.
func (o *gatedOwner) called() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	k := 0
	for _, c := range o.calls {
		k += c
	}
	return k
}
