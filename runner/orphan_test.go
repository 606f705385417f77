package runner

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/workflow"
)

// A cancelling attempt without a receipt (its dispatcher stopped after the
// signal) that no ReceiptLookup resolves is settled as an orphaned
// cancellation once the attempt timeout has passed since the run's
// cancellation was requested, and not before: the mutating one (runner
// default timeout) becomes repair_required, the read-only one (its own
// shorter timeout) cancelled.
func TestOrphanedCancellationIsSettledAfterTheAttemptTimeout(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	ctx := context.Background()
	s := newStore(t, clock, "rm", "rr")
	_, err := s.AddActivation(ctx, workflow.NewActivation{Key: key("rm", "a"), Input: json.RawMessage(`{}`),
		Effect: workflow.Mutating, Reconciliation: workflow.ReceiptStatus}, clock.Now())
	require.NoError(t, err)
	_, err = s.AddActivation(ctx, workflow.NewActivation{Key: key("rr", "a"), Input: json.RawMessage(`{}`),
		AttemptTimeout: 10 * time.Second}, clock.Now())
	require.NoError(t, err)
	var ids []string
	for _, run := range []string{"rm", "rr"} {
		eff := workflow.ReadOnly
		if run == "rm" {
			eff = workflow.Mutating
		}
		p, err := s.Engine().PreparePending(ctx, key(run, "a"), workflow.Plan{SideEffect: eff, Intent: json.RawMessage(`{}`)}, clock.Now())
		require.NoError(t, err)
		require.NoError(t, s.Engine().Handoff(ctx, p.Key(), nil, clock.Now()))
		_, err = s.RequestCancellation(ctx, run, nil, clock.Now())
		require.NoError(t, err)
		require.NoError(t, s.Engine().MarkCancellationSignalled(ctx, p.Identity, clock.Now()))
		ids = append(ids, p.Identity)
	}
	co := newCancelOwner(clock, s) // a Canceller, no ReceiptLookup, no Observer
	st := start(t, newRunner(t, s, co, clock, WithAttemptTimeout(time.Minute)))
	status := func(id string) workflow.AttemptStatus {
		a, err := s.GetAttempt(ctx, id)
		require.NoError(t, err)
		return a.Status
	}
	clock.fire(clock.nextTimer(t))
	clock.nextTimer(t) // a pass ran before any timeout passed
	assert.Equal(t, workflow.AttemptCancelling, status(ids[0]), "left while its timeout runs")
	assert.Equal(t, workflow.AttemptCancelling, status(ids[1]), "left while its timeout runs")
	requested := clock.Now()
	// advanceUntil moves the fake clock a second at a time until id leaves
	// cancelling, and returns how long after the request that was.
	advanceUntil := func(id string) time.Duration {
		deadline := time.Now().Add(10 * time.Second)
		for status(id) == workflow.AttemptCancelling {
			require.True(t, time.Now().Before(deadline), "%s still cancelling after %v", id, clock.Now().Sub(requested))
			clock.Advance(time.Second)
			time.Sleep(2 * time.Millisecond)
		}
		return clock.Now().Sub(requested)
	}
	took := advanceUntil(ids[1])
	assert.GreaterOrEqual(t, took, 10*time.Second, "the read-only orphan waits for its own timeout")
	assert.Less(t, took, time.Minute)
	assert.Equal(t, workflow.AttemptCancelling, status(ids[0]), "the mutating orphan waits for the runner's default")
	took = advanceUntil(ids[0])
	assert.GreaterOrEqual(t, took, time.Minute)
	_, err = st.stop(t)
	require.NoError(t, err)
	assert.Equal(t, workflow.AttemptRepairRequired, status(ids[0]), "mutating orphan")
	assert.Equal(t, workflow.AttemptCancelled, status(ids[1]), "read-only orphan")
	rr, err := s.GetRun(ctx, "rr")
	require.NoError(t, err)
	assert.Equal(t, workflow.RunCancelled, rr.Status)
	calls, _ := co.cancelCalls()
	assert.Empty(t, calls, "both were signalled already")
}
