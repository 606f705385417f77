package runner

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/wfstore/wfstore/workflow"
)

// gauge returns a gauge's value for the attribute set attrs.
func gauge(t *testing.T, m map[string]metricdata.Aggregation, name string, attrs ...attribute.KeyValue) int64 {
	t.Helper()
	g, ok := m[name].(metricdata.Gauge[int64])
	if !ok {
		return 0
	}
	want := attribute.NewSet(attrs...)
	for _, dp := range g.DataPoints {
		if dp.Attributes.Equals(&want) {
			return dp.Value
		}
	}
	return 0
}

// advancePast fires the runner's timers until the clock is past until,
// and returns the timer of the idle wait that follows.
func advancePast(t *testing.T, clock *fakeClock, until time.Time) *fakeTimer {
	t.Helper()
	for {
		tm := clock.nextTimer(t)
		if clock.Now().After(until) {
			return tm
		}
		clock.fire(tm)
	}
}

// An owner that keeps its results to itself (no Observer) leaves its
// attempts admitted: once they are older than the stuck age the runner
// logs each one once, however many passes see it, counts them in the
// gauge and its summary, and counts them as unresolved.
func TestStuckAdmittedAttemptsAreLoggedOnceCountedAndUnresolved(t *testing.T) {
	t.Parallel()
	reader, mp := meterProvider(t)
	clock := newFakeClock()
	s := newStore(t, clock, "r1")
	t0 := clock.Now()
	for _, a := range []string{"a", "b"} {
		_, err := s.AddActivation(context.Background(), workflow.NewActivation{Key: key("r1", a), Input: json.RawMessage(`{}`)}, t0)
		require.NoError(t, err)
	}
	var logs logBuffer
	st := start(t, newRunner(t, s, &testOwner{clock: clock}, clock, WithMeterProvider(mp), WithStuckCheck(time.Minute, 0),
		WithAttemptTimeout(0), WithLogger(slog.New(slog.NewJSONHandler(&logs, nil)))))
	clock.fire(advancePast(t, clock, t0.Add(time.Minute))) // one more pass sees them again
	clock.nextTimer(t)
	sum, err := st.stop(t)
	require.NoError(t, err)

	assert.Equal(t, 2, sum.Admitted)
	require.Len(t, sum.Stuck, 2)
	for _, sa := range sum.Stuck {
		assert.Equal(t, workflow.StuckAdmitted, sa.Stage)
		assert.Equal(t, workflow.AttemptAdmitted, sa.Attempt.Status)
		assert.GreaterOrEqual(t, sa.Age, time.Minute)
	}
	assert.Empty(t, sum.Unresolved, "every receipt was persisted")
	assert.Equal(t, 2, sum.UnresolvedCount(), "stuck attempts are unresolved")
	assert.Equal(t, 2, count(logs.messages(t), "attempt stuck"), "each stuck attempt is logged once")
	m := collected(t, reader)
	assert.Equal(t, int64(2), gauge(t, m, MetricStuckAttempts, attribute.String("stage", "admitted")))
	assert.Equal(t, int64(0), gauge(t, m, MetricStuckAttempts, attribute.String("stage", "prepared")))
}

// timeoutOwner plans activation "m*" as mutating work and every other one
// as read-only, observes every attempt as running, and records its Cancel
// calls (failing those of cancelErr).
type timeoutOwner struct {
	*testOwner
	cancelErr error
	store     *workflow.Store

	cmu       sync.Mutex
	cancelled []string
	statuses  []workflow.AttemptStatus // of each cancelled attempt, when Cancel was called
	finished  bool                     // the work finished: Observe reports it succeeded
}

func (o *timeoutOwner) Plan(_ context.Context, a workflow.Activation) (*workflow.Plan, error) {
	eff := workflow.ReadOnly
	if a.Key.ActivationID[0] == 'm' {
		eff = workflow.Mutating
	}
	return &workflow.Plan{SideEffect: eff, Intent: json.RawMessage(`{}`)}, nil
}

func (o *timeoutOwner) Observe(context.Context, workflow.Attempt) (workflow.Observation, error) {
	o.cmu.Lock()
	defer o.cmu.Unlock()
	if o.finished {
		return workflow.Observation{Kind: workflow.ObservedSucceeded, Output: json.RawMessage(`{}`)}, nil
	}
	return workflow.Observation{Kind: workflow.ObservedRunning}, nil
}

func (o *timeoutOwner) Cancel(ctx context.Context, identity string) error {
	a, err := o.store.GetAttempt(ctx, identity)
	if err != nil {
		return err
	}
	o.cmu.Lock()
	defer o.cmu.Unlock()
	o.cancelled = append(o.cancelled, identity)
	o.statuses = append(o.statuses, a.Status)
	return o.cancelErr
}

func (o *timeoutOwner) cancels() []string {
	o.cmu.Lock()
	defer o.cmu.Unlock()
	return append([]string(nil), o.cancelled...)
}

// An attempt the owner keeps reporting as running is settled once its
// timeout passed: the owner's Cancel is called once first (a Cancel error
// does not hold the settlement back), then a read-only attempt fails and
// a mutating one becomes repair_required; no second attempt starts. When
// the owner later observes the work succeeded, the runner applies it and
// it settles the mutating one.
func TestTimedOutAttemptsAreCancelledOnceThenSettledNeverRetried(t *testing.T) {
	t.Parallel()
	reader, mp := meterProvider(t)
	clock := newFakeClock()
	ctx := context.Background()
	s := newStore(t, clock, "r1", "r2")
	t0 := clock.Now()
	_, err := s.AddActivation(ctx, workflow.NewActivation{Key: key("r1", "a"), Input: json.RawMessage(`{}`),
		Effect: workflow.ReadOnly, Reconciliation: workflow.IdempotentReplay, RetryPolicy: retryPolicy}, t0)
	require.NoError(t, err)
	_, err = s.AddActivation(ctx, workflow.NewActivation{Key: key("r2", "m"), Input: json.RawMessage(`{}`),
		Effect: workflow.Mutating, Reconciliation: workflow.ReceiptStatus}, t0)
	require.NoError(t, err)
	o := &timeoutOwner{testOwner: &testOwner{clock: clock}, cancelErr: errors.New("owner unreachable"), store: s}
	st := start(t, newRunner(t, s, o, clock, WithMeterProvider(mp), WithAttemptTimeout(30*time.Second),
		WithStuckCheck(time.Hour, 0)))
	tm := advancePast(t, clock, t0.Add(30*time.Second))
	for range 3 { // later passes change nothing
		clock.fire(tm)
		tm = clock.nextTimer(t)
	}
	// The owner's work finishes after all: its late word settles the
	// mutating attempt (the read-only one stays failed).
	o.cmu.Lock()
	o.finished = true
	o.cmu.Unlock()
	clock.fire(tm)
	clock.nextTimer(t)
	sum, err := st.stop(t)
	require.NoError(t, err)

	ra := workflow.DispatchIdentity("r1", "n", "a", 1)
	rm := workflow.DispatchIdentity("r2", "n", "m", 1)
	assert.ElementsMatch(t, []string{ra, rm}, o.cancels(), "Cancel once per timed-out attempt")
	assert.Equal(t, []workflow.AttemptStatus{workflow.AttemptRunning, workflow.AttemptRunning}, o.statuses, "Cancel before the settlement")
	assert.Len(t, sum.TimedOut, 2)
	assert.Len(t, o.dispatched(), 2, "no second attempt")
	a, err := s.GetAttempt(ctx, ra)
	require.NoError(t, err)
	assert.Equal(t, workflow.AttemptFailed, a.Status)
	m, err := s.GetAttempt(ctx, rm)
	require.NoError(t, err)
	assert.Equal(t, workflow.AttemptSucceeded, m.Status, "the owner's late word settled the timed-out mutating attempt")
	_, err = s.GetRetrySchedule(ctx, key("r1", "a"))
	require.ErrorIs(t, err, workflow.ErrNotFound, "a timeout is never retried automatically")
	mt := collected(t, reader)
	assert.Equal(t, int64(1), counter(t, mt, MetricAttemptsTimedOut, attribute.String("status", "failed")))
	assert.Equal(t, int64(1), counter(t, mt, MetricAttemptsTimedOut, attribute.String("status", "repair_required")))

	run, err := s.GetRun(ctx, "r2")
	require.NoError(t, err)
	assert.Equal(t, workflow.RunCompleted, run.Status)
}
