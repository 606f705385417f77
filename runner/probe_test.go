package runner

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/workflow"
)

// probeOwner logs every Plan and Dispatch call in order ("plan x",
// "dispatch x"); its first Dispatch call fails.
type probeOwner struct {
	mu     sync.Mutex
	log    []string
	failed bool
}

func (o *probeOwner) Plan(_ context.Context, a workflow.Activation) (*workflow.Plan, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.log = append(o.log, "plan "+a.Key.ActivationID)
	return &workflow.Plan{SideEffect: workflow.ReadOnly, Intent: json.RawMessage(`{}`)}, nil
}

func (o *probeOwner) Dispatch(_ context.Context, p workflow.PreparedDispatch) (json.RawMessage, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.log = append(o.log, "dispatch "+p.Activation.Key.ActivationID)
	if !o.failed {
		o.failed = true
		return nil, errors.New("owner down")
	}
	return json.RawMessage(`{"accepted":true}`), nil
}

func (o *probeOwner) calls() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.log...)
}

// After a pass whose owner failed, the runner's next pass plans and
// prepares one attempt and hands it to the owner before it plans a batch
// again: an owner still down costs one attempt, not a batch. Once that
// admission succeeds, the pass goes on in batches.
func TestAfterAnOwnerErrorTheNextPassProbesWithOneAttempt(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	ctx := context.Background()
	s := newStore(t, clock, "r1")
	acts := []string{"a", "b", "c", "d", "e", "f", "g"}
	for _, a := range acts {
		_, err := s.AddActivation(ctx, workflow.NewActivation{Key: key("r1", a), Input: json.RawMessage(`{}`)}, clock.Now())
		require.NoError(t, err)
	}
	o := &probeOwner{}
	st := start(t, newRunner(t, s, o, clock, WithBatchSize(3)))
	deadline := time.Now().Add(10 * time.Second)
	for {
		attsPage, err := s.Attempts(ctx, workflow.AttemptQuery{RunID: "r1", Limit: 20})
		require.NoError(t, err)
		atts := attsPage.Items
		admitted := 0
		for _, a := range atts {
			if a.Status == workflow.AttemptAdmitted {
				admitted++
			}
		}
		if admitted == len(acts) {
			break
		}
		require.True(t, time.Now().Before(deadline), "only %d of %d admitted", admitted, len(acts))
		clock.fire(clock.nextTimer(t))
	}
	_, err := st.stop(t)
	require.NoError(t, err)
	log := o.calls()
	require.Equal(t, []string{"plan a", "plan b", "plan c", "dispatch a"}, log[:4], "the first pass plans a batch; its owner fails")
	// The next planning after the failure is of one attempt, handed to the
	// owner before anything else is planned.
	i := 4
	for i < len(log) && log[i][:4] != "plan" {
		i++
	}
	require.Less(t, i+1, len(log))
	assert.Equal(t, "dispatch"+log[i][4:], log[i+1], "after an owner error one attempt is planned and handed off before another is planned: %v", log)
	// Then batches again.
	assert.Contains(t, log, "plan f")
	fi := indexOf(log, "plan f")
	assert.Equal(t, "plan", log[fi-1][:4], "batches resume after the probe succeeded: %v", log)
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}
