package workflow_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/workflow"
)

// The public views carry the counters and the admissible flag, so a caller
// reads them without dropping below the Store: they move with an
// admission and a pause exactly as the records they come from do.
func TestViewsCarryCountersAndAdmissibleFlag(t *testing.T) {
	s, _, now := newCounted(t)
	ctx := context.Background()
	a1 := workflow.ActivationKey{RunID: "run", NodeID: "node-a1", ActivationID: "a1"}

	run, err := s.GetRun(ctx, "run")
	require.NoError(t, err)
	assert.Zero(t, run.AttemptCount)
	assert.Zero(t, run.ActiveCount)
	assert.Zero(t, run.TreeAttemptCount)
	assert.False(t, run.AllowanceExhausted)
	seq := run.LastEventSeq
	assert.Positive(t, seq, "creating the run and its activations appended events")
	act, err := s.GetActivation(ctx, a1)
	require.NoError(t, err)
	assert.True(t, act.Admissible, "a pending activation of a running run is admissible")

	sum, err := s.Dispatch(ctx, acceptOwner{}, workflow.DispatchOptions{RunID: "run", Limit: 1}, now.Add(time.Second))
	require.NoError(t, err)
	require.Len(t, sum.Admitted, 1)
	admitted := sum.Admitted[0].Key.ActivationKey

	run, err = s.GetRun(ctx, "run")
	require.NoError(t, err)
	assert.Equal(t, int64(1), run.AttemptCount)
	assert.Equal(t, int64(1), run.ActiveCount)
	assert.Equal(t, int64(1), run.TreeAttemptCount, "a root run counts its own attempts in its tree")
	assert.Zero(t, run.DescendantCount)
	assert.Greater(t, run.LastEventSeq, seq, "the admission appended events")
	act, err = s.GetActivation(ctx, admitted)
	require.NoError(t, err)
	assert.False(t, act.Admissible, "an admitted activation leaves the pending index")
	assert.Equal(t, uint32(1), act.LastAttempt)

	require.NoError(t, s.PauseRun(ctx, "run", nil, now.Add(2*time.Second)))
	other := a1
	if admitted == a1 {
		other = workflow.ActivationKey{RunID: "run", NodeID: "node-a2", ActivationID: "a2"}
	}
	act, err = s.GetActivation(ctx, other)
	require.NoError(t, err)
	assert.Equal(t, workflow.ActivationPending, act.Status)
	assert.False(t, act.Admissible, "a paused run's pending work waits")
}
