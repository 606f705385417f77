package runner

import (
	"bytes"
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

	"github.com/wfstore/wfstore/event"
	"github.com/wfstore/wfstore/memstore"
	"github.com/wfstore/wfstore/workflow"
)

// cancelOwner is a testOwner with a Canceller: it records each Cancel with
// the attempt's status in the store at that moment, and remembers the
// identities it was asked to cancel. hook, when set, runs at the start of
// each call (n counts from 1); fail, when set, makes call n fail.
type cancelOwner struct {
	*testOwner
	s    *workflow.Store
	hook func(n int)
	fail func(n int) bool

	mu        sync.Mutex
	calls     []string
	seen      []workflow.AttemptStatus
	cancelled map[string]bool
}

func newCancelOwner(clock *fakeClock, s *workflow.Store) *cancelOwner {
	return &cancelOwner{testOwner: &testOwner{clock: clock, entered: make(chan workflow.PreparedDispatch, 16)}, s: s,
		cancelled: map[string]bool{}}
}

func (o *cancelOwner) Cancel(ctx context.Context, identity string) error {
	a, err := o.s.GetAttempt(ctx, identity)
	o.mu.Lock()
	o.calls = append(o.calls, identity)
	n := len(o.calls)
	if err == nil {
		o.seen = append(o.seen, a.Status)
	}
	o.mu.Unlock()
	if o.hook != nil {
		o.hook(n)
	}
	if o.fail != nil && o.fail(n) {
		return errors.New("owner: cancel failed")
	}
	o.mu.Lock()
	o.cancelled[identity] = true
	o.mu.Unlock()
	return nil
}

func (o *cancelOwner) cancelCalls() ([]string, []workflow.AttemptStatus) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.calls...), append([]workflow.AttemptStatus(nil), o.seen...)
}

// observingCancelOwner also observes: work runs until it is cancelled,
// then it reports finished (Cancelled, or what finish says: work that
// finishes anyway).
type observingCancelOwner struct {
	*cancelOwner
	finish *workflow.Observation
}

func (o *observingCancelOwner) Observe(_ context.Context, a workflow.Attempt) (workflow.Observation, error) {
	o.mu.Lock()
	done := o.cancelled[a.Identity]
	o.mu.Unlock()
	switch {
	case !done:
		return workflow.Observation{Kind: workflow.ObservedRunning}, nil
	case o.finish != nil:
		return *o.finish, nil
	}
	return workflow.Observation{Kind: workflow.ObservedCancelled}, nil
}

// eventually waits (in real time, bounded) for cond.
func eventually(t *testing.T, cond func() bool, what string) {
	t.Helper()
	require.Eventually(t, cond, 10*time.Second, time.Millisecond, what)
}

// runCancelled reports whether the run is cancelled.
func runCancelled(s *workflow.Store, runID string) func() bool {
	return func() bool {
		r, err := s.GetRun(context.Background(), runID)
		return err == nil && r.Status == workflow.RunCancelled
	}
}

// admitThenCancel starts r over s, lets it admit activation "a" of run
// "r", requests the run's cancellation once r is idle and fires its idle
// timer, so that the next pass finds the cancellation.
func admitThenCancel(t *testing.T, s *workflow.Store, o *testOwner, clock *fakeClock, r *Runner) (*started, string) {
	t.Helper()
	_, err := s.AddActivation(context.Background(), workflow.NewActivation{Key: key("r", "a"), Input: json.RawMessage(`{}`)}, clock.Now())
	require.NoError(t, err)
	st := start(t, r)
	p := <-o.entered
	tm := clock.nextTimer(t) // idle: the work is admitted
	_, err = s.RequestCancellation(context.Background(), "r", nil, clock.Now())
	require.NoError(t, err)
	clock.fire(tm)
	return st, p.Identity
}

// attemptCancelledPayloads returns the run's attempt_cancelled payloads.
func attemptCancelledPayloads(t *testing.T, s *workflow.Store, runID string) []string {
	t.Helper()
	evsPage, err := s.Events(context.Background(), workflow.EventQuery{RunID: runID, Limit: workflow.MaxPageLimit})
	require.NoError(t, err)
	evs := evsPage.Items
	var out []string
	for _, ev := range evs {
		if ev.Type == event.AttemptCancelled {
			out = append(out, string(ev.Payload))
		}
	}
	return out
}

// cancelledEvent is the stored attempt_cancelled payload for attempt id:
// the attempt's names and identity with the fields of extra (JSON), in
// canonical form.
func cancelledEvent(t *testing.T, s *workflow.Store, id, extra string) string {
	t.Helper()
	a, err := s.GetAttempt(context.Background(), id)
	require.NoError(t, err)
	p := event.AttemptCancelledPayload{AttemptNames: event.AttemptNames{RunID: a.Key.RunID,
		NodeID: a.Key.NodeID, ActivationID: a.Key.ActivationID, Attempt: a.Key.Attempt}, DispatchIdentity: id}
	require.NoError(t, json.Unmarshal([]byte(extra), &p))
	raw, err := json.Marshal(p)
	require.NoError(t, err)
	canon, err := workflow.CanonicalJSON(raw)
	require.NoError(t, err)
	return string(canon)
}

// The owner is told first and the signal recorded only after Cancel
// returned nil: a runner that stops between the two (here its store fails
// once Cancel returned) leaves the attempt unsignalled, and the next
// runner signals again (Cancel is idempotent) before recording it. The
// owner has no Observer, so only the recorded signal lets the attempt
// settle.
func TestCancellationIsSignalledBeforeItIsRecorded(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	fb := &flaky{Backend: memstore.New()}
	s := workflow.New(fb)
	_, err := s.CreateRun(context.Background(), workflow.NewRun{ID: "r"}, clock.Now())
	require.NoError(t, err)
	co := newCancelOwner(clock, s)
	o := co
	co.hook = func(n int) {
		if n == 1 { // the store goes away once the owner has been told
			fb.mu.Lock()
			fb.n = 1 << 30
			fb.mu.Unlock()
		}
	}
	st, id := admitThenCancel(t, s, co.testOwner, clock, newRunner(t, s, o, clock))
	clock.nextTimer(t) // the pass failed on the store: backing off
	_, err = st.stop(t)
	require.NoError(t, err)
	fb.mu.Lock()
	fb.n = 0
	fb.mu.Unlock()
	a, err := s.GetAttempt(context.Background(), id)
	require.NoError(t, err)
	assert.NotEqual(t, workflow.AttemptCancelling, a.Status, "a stop between Cancel and its record leaves the attempt unsignalled")

	start(t, newRunner(t, s, o, clock))
	eventually(t, runCancelled(s, "r"), "the next runner signals again and the run is cancelled")
	calls, seen := co.cancelCalls()
	assert.Equal(t, []string{id, id}, calls, "the next runner signals again")
	for _, st := range seen {
		assert.NotEqual(t, workflow.AttemptCancelling, st, "Cancel is called before the signal is recorded")
	}
	a, err = s.GetAttempt(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, workflow.AttemptCancelled, a.Status)
}

// A failing Cancel is retried with backoff; nothing is recorded until it
// succeeds.
func TestFailingCancelIsRetriedWithBackoff(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	s := newStore(t, clock, "r")
	co := newCancelOwner(clock, s)
	co.fail = func(n int) bool { return n <= 2 }
	o := &observingCancelOwner{cancelOwner: co}
	_, id := admitThenCancel(t, s, co.testOwner, clock, newRunner(t, s, o, clock))
	for i := 1; i <= 2; i++ {
		tm := clock.nextTimer(t)
		calls, _ := co.cancelCalls()
		require.Len(t, calls, i)
		a, err := s.GetAttempt(context.Background(), id)
		require.NoError(t, err)
		assert.NotEqual(t, workflow.AttemptCancelling, a.Status, "no signal is recorded while Cancel fails")
		clock.fire(tm)
	}
	eventually(t, runCancelled(s, "r"), "the third Cancel succeeds")
	calls, _ := co.cancelCalls()
	assert.Len(t, calls, 3)
}

// An owner that finishes the work anyway: its observation decides, and
// the attempt_cancelled event records it, output included.
func TestOwnerThatFinishesAnywayIsRecorded(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	s := newStore(t, clock, "r")
	co := newCancelOwner(clock, s)
	o := &observingCancelOwner{cancelOwner: co,
		finish: &workflow.Observation{Kind: workflow.ObservedSucceeded, Output: json.RawMessage(`{"shipped":5}`)}}
	_, id := admitThenCancel(t, s, co.testOwner, clock, newRunner(t, s, o, clock))
	eventually(t, runCancelled(s, "r"), "the run is cancelled")
	a, err := s.GetAttempt(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, workflow.AttemptCancelled, a.Status)
	assert.Equal(t, []string{cancelledEvent(t, s, id, `{"observed":"succeeded","output":{"shipped":5}}`)},
		attemptCancelledPayloads(t, s, "r"), "what the owner observed stays on record")
}

// An owner with a Canceller and no Observer: settled cancelled once Cancel
// returned nil and the signal is recorded.
func TestCancellerWithoutObserverSettlesOnceSignalled(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	s := newStore(t, clock, "r")
	co := newCancelOwner(clock, s)
	_, id := admitThenCancel(t, s, co.testOwner, clock, newRunner(t, s, co, clock))
	eventually(t, runCancelled(s, "r"), "the run is cancelled")
	calls, _ := co.cancelCalls()
	assert.Equal(t, []string{id}, calls)
	assert.Equal(t, []string{cancelledEvent(t, s, id, `{"reason":"signalled_not_observed"}`)},
		attemptCancelledPayloads(t, s, "r"))
}

// An owner with neither capability: settled cancelled without a signal or
// an observation, with an event saying so, a warning and a metric.
func TestOwnerWithoutCancellerOrObserverIsSettledWithAWarning(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	s := newStore(t, clock, "r")
	o := &testOwner{clock: clock, entered: make(chan workflow.PreparedDispatch, 4)}
	var logs syncBuffer
	reader, mp := meterProvider(t)
	r := newRunner(t, s, o, clock, WithMeterProvider(mp),
		WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	_, id := admitThenCancel(t, s, o, clock, r)
	eventually(t, runCancelled(s, "r"), "the run is cancelled")
	assert.Equal(t, []string{cancelledEvent(t, s, id, `{"reason":"not_signalled_not_observed"}`)},
		attemptCancelledPayloads(t, s, "r"))
	assert.Contains(t, logs.String(), "its work is never stopped")
	assert.Contains(t, logs.String(), id)
	assert.Equal(t, int64(1), counter(t, collected(t, reader), MetricCancellations, attribute.String("outcome", CancelNotSignalled)))
}

// A cancelling attempt whose dispatcher stopped before persisting the
// receipt is resolved through the owner's ReceiptLookup, then observed; a
// prepared attempt that provably never reached the owner is cancelled
// without telling it.
func TestCancellingAttemptWithoutReceiptIsResolvedThroughReceiptLookup(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	ctx := context.Background()
	s := newStore(t, clock, "r")
	for _, a := range []string{"a", "b"} {
		_, err := s.AddActivation(ctx, workflow.NewActivation{Key: key("r", a), Input: json.RawMessage(`{}`)}, clock.Now())
		require.NoError(t, err)
	}
	plan := workflow.Plan{SideEffect: workflow.Mutating, Intent: json.RawMessage(`{}`)}
	pa, err := s.Engine().PreparePending(ctx, key("r", "a"), plan, clock.Now())
	require.NoError(t, err)
	require.NoError(t, s.Engine().Handoff(ctx, pa.Key(), nil, clock.Now()))
	pb, err := s.Engine().PreparePending(ctx, key("r", "b"), plan, clock.Now())
	require.NoError(t, err)
	_, err = s.RequestCancellation(ctx, "r", nil, clock.Now())
	require.NoError(t, err)
	require.NoError(t, s.Engine().MarkCancellationSignalled(ctx, pa.Identity, clock.Now()))

	co := newCancelOwner(clock, s)
	co.cancelled[pa.Identity] = true // told before its dispatcher stopped
	o := &lookingUpCancelOwner{observingCancelOwner{cancelOwner: co}}
	start(t, newRunner(t, s, o, clock))
	eventually(t, runCancelled(s, "r"), "the run is cancelled")
	a, err := s.GetAttempt(ctx, pa.Identity)
	require.NoError(t, err)
	assert.Equal(t, workflow.AttemptCancelled, a.Status)
	assert.JSONEq(t, `{"looked_up":true}`, string(a.Receipt), "the receipt found is persisted")
	b, err := s.GetAttempt(ctx, pb.Identity)
	require.NoError(t, err)
	assert.Equal(t, workflow.AttemptCancelled, b.Status)
	calls, _ := co.cancelCalls()
	assert.Empty(t, calls, "neither attempt needed a signal")
	assert.Empty(t, co.dispatched(), "nothing was dispatched")
}

// lookingUpCancelOwner also has a ReceiptLookup that holds a receipt for
// every identity.
type lookingUpCancelOwner struct{ observingCancelOwner }

func (lookingUpCancelOwner) LookupReceipt(context.Context, string) (json.RawMessage, bool, error) {
	return json.RawMessage(`{"looked_up":true}`), true, nil
}

// syncBuffer is a bytes.Buffer safe for a logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// A cancellation requested through the runner's Store wakes an idle
// runner at once (its poll interval is an hour, on a clock that does not
// move): the owner is told without waiting.
func TestCancellationRequestWakesTheRunner(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	s := newStore(t, clock, "r")
	co := newCancelOwner(clock, s)
	_, err := s.AddActivation(context.Background(), workflow.NewActivation{Key: key("r", "a"), Input: json.RawMessage(`{}`)}, clock.Now())
	require.NoError(t, err)
	start(t, newRunner(t, s, co, clock, WithPollInterval(time.Hour, time.Hour)))
	p := <-co.entered
	clock.nextTimer(t) // idle for an hour
	at := clock.Now()
	_, err = s.RequestCancellation(context.Background(), "r", nil, clock.Now())
	require.NoError(t, err)
	eventually(t, runCancelled(s, "r"), "the owner is told and the run cancelled without a poll")
	calls, _ := co.cancelCalls()
	assert.Equal(t, []string{p.Identity}, calls)
	assert.Equal(t, at, clock.Now(), "no time passed")
}
