package runner

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/workflow"
)

// addingObserver reports every attempt still running; once add is set, the
// first time it is asked it adds an activation of run "r" (through the
// runner's own Store): work arriving during a pass, after its discovery.
type addingObserver struct {
	*testOwner
	s     *workflow.Store
	clock *fakeClock
	add   atomic.Pointer[workflow.ActivationKey]
	added chan struct{}
}

func (o *addingObserver) Observe(ctx context.Context, a workflow.Attempt) (workflow.Observation, error) {
	if k := o.add.Swap(nil); k != nil {
		_, err := o.s.AddActivation(ctx, workflow.NewActivation{Key: *k, Input: json.RawMessage(`{}`)}, o.clock.Now())
		if err != nil {
			return workflow.Observation{}, err
		}
		close(o.added)
	}
	return workflow.Observation{Kind: workflow.ObservedRunning}, nil
}

// Work that arrives while a pass that finds nothing is running is not
// lost: the runner's wake-up is armed before the pass looks for work, so
// the arrival wakes the wait that follows the pass at once, without the
// poll interval (an hour here, on a fake clock that does not move).
func TestWorkArrivingDuringAnIdlePassWakesTheRunner(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	s := newStore(t, clock, "r")
	_, err := s.AddActivation(context.Background(), workflow.NewActivation{Key: key("r", "a"), Input: json.RawMessage(`{}`)}, clock.Now())
	require.NoError(t, err)
	o := &addingObserver{testOwner: &testOwner{clock: clock, entered: make(chan workflow.PreparedDispatch, 4)}, s: s, clock: clock,
		added: make(chan struct{})}
	start(t, newRunner(t, s, o, clock, WithPollInterval(time.Hour, time.Hour), WithAttemptTimeout(0))) // "a" runs on past the hour the timer moves the clock by
	p := <-o.entered
	require.Equal(t, key("r", "a"), p.Activation.Key)
	tm := clock.nextTimer(t) // idle: "a" runs on, nothing else to do

	// The next pass finds nothing; while its receipt-backed pass asks about
	// "a", "b" arrives.
	o.add.Store(new(key("r", "b")))
	clock.fire(tm)
	select {
	case <-o.added:
	case <-time.After(10 * time.Second):
		t.Fatal("the idle pass never asked the observer")
	}
	at := clock.Now()
	select {
	case p := <-o.entered:
		assert.Equal(t, key("r", "b"), p.Activation.Key)
	case <-time.After(10 * time.Second):
		t.Fatal("work that arrived during an idle pass waited for the poll interval")
	}
	assert.Equal(t, at, clock.Now(), "no time passed")
}
