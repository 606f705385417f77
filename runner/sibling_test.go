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

	"github.com/wfstore/wfstore/event"
	"github.com/wfstore/wfstore/workflow"
)

// siblingOwner runs the members of a fail-fast fan-out (the controller is
// not its work): member 0 fails, the others run until they are cancelled.
// It is a Canceller and an Observer, and records each Cancel with the
// attempt's status at that moment.
type siblingOwner struct {
	s         *workflow.Store
	mu        sync.Mutex
	cancels   []string
	seen      []workflow.AttemptStatus
	cancelled map[string]bool
}

func (o *siblingOwner) Plan(_ context.Context, a workflow.Activation) (*workflow.Plan, error) {
	if a.FanOut == nil {
		return nil, nil
	}
	return &workflow.Plan{SideEffect: workflow.ReadOnly, Intent: json.RawMessage(`{}`)}, nil
}

func (o *siblingOwner) Dispatch(_ context.Context, p workflow.PreparedDispatch) (json.RawMessage, error) {
	return json.RawMessage(`{"accepted":true}`), nil
}

func (o *siblingOwner) Observe(_ context.Context, a workflow.Attempt) (workflow.Observation, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case a.Key.NodeID == workflow.FanOutMemberNodeID("ctl", 0):
		return workflow.Observation{Kind: workflow.ObservedFailed}, nil
	case o.cancelled[a.Identity]:
		return workflow.Observation{Kind: workflow.ObservedCancelled}, nil
	}
	return workflow.Observation{Kind: workflow.ObservedRunning}, nil
}

func (o *siblingOwner) Cancel(ctx context.Context, identity string) error {
	a, err := o.s.GetAttempt(ctx, identity)
	if err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.cancels = append(o.cancels, identity)
	o.seen = append(o.seen, a.Status)
	o.cancelled[identity] = true
	return nil
}

// The siblings a fail-fast fan-out stops (sibling_cancelling) are
// cancelled through the owner's Canceller, and the signal recorded, as the
// attempts of a cancelled run are; while the owner reports them running
// they stay active, and they settle as cancelled once it reports them
// finished.
func TestFailFastSiblingsAreCancelledThroughTheCanceller(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	ctx := context.Background()
	s := newStore(t, clock, "r")
	c := key("r", "c")
	c.NodeID = "ctl"
	_, err := s.AddActivation(ctx, workflow.NewActivation{Key: c, Input: json.RawMessage(`{}`)}, clock.Now())
	require.NoError(t, err)
	_, err = s.AddFanOut(ctx, workflow.NewFanOut{Controller: c, MaxConcurrency: 3, OnFailure: workflow.FailFast,
		Members: []json.RawMessage{json.RawMessage(`0`), json.RawMessage(`1`), json.RawMessage(`2`)}}, clock.Now())
	require.NoError(t, err)
	o := &siblingOwner{s: s, cancelled: map[string]bool{}}
	st := start(t, newRunner(t, s, o, clock))
	deadline := time.Now().Add(10 * time.Second)
	for !membersSettled(t, s, c, 3) {
		require.True(t, time.Now().Before(deadline), "every member settles")
		clock.fire(clock.nextTimer(t))
	}
	_, err = st.stop(t)
	require.NoError(t, err)
	var siblings []string
	for _, i := range []int64{1, 2} {
		k := workflow.MemberKey(c, i)
		id := workflow.DispatchIdentity("r", k.NodeID, k.ActivationID, 1)
		siblings = append(siblings, id)
		a, err := s.GetAttempt(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, workflow.AttemptCancelled, a.Status, "member %d", i)
	}
	o.mu.Lock()
	assert.ElementsMatch(t, siblings, o.cancels, "Cancel is called once for each stopped sibling")
	for _, st := range o.seen {
		assert.Equal(t, workflow.AttemptSiblingCancelling, st, "Cancel reaches the stopped sibling before it settles")
	}
	o.mu.Unlock()
	evsPage, err := s.Events(ctx, workflow.EventQuery{RunID: "r", Limit: workflow.MaxPageLimit})
	require.NoError(t, err)
	evs := evsPage.Items
	signalled, cancelled := 0, 0
	for _, ev := range evs {
		switch ev.Type {
		case event.AttemptCancellationSignalled:
			signalled++
			assert.Zero(t, cancelled, "signals are recorded before the siblings settle")
		case event.AttemptCancelled:
			cancelled++
		}
	}
	assert.Equal(t, 2, signalled, "one recorded signal per stopped sibling")
}

// membersSettled reports whether the first attempt of each of the n
// members of controller c has settled.
func membersSettled(t *testing.T, s *workflow.Store, c workflow.ActivationKey, n int64) bool {
	t.Helper()
	for i := range n {
		k := workflow.MemberKey(c, i)
		a, err := s.GetAttempt(context.Background(), workflow.DispatchIdentity(k.RunID, k.NodeID, k.ActivationID, 1))
		if errors.Is(err, workflow.ErrNotFound) {
			return false
		}
		require.NoError(t, err)
		switch a.Status {
		case workflow.AttemptSucceeded, workflow.AttemptFailed, workflow.AttemptCancelled:
		default:
			return false
		}
	}
	return true
}
