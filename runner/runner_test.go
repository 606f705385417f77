package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/internal/faultseam"
	"github.com/wfstore/wfstore/memstore"
	"github.com/wfstore/wfstore/workflow"
)

// call is one owner Dispatch call as the test owner saw it.
type call struct {
	key workflow.AttemptKey
	at  time.Time
}

// testOwner accepts every activation as read-only work and records each
// Dispatch with the fake time it happened at. With block set, Dispatch
// waits for block (or its context) before it accepts.
type testOwner struct {
	clock   *fakeClock
	block   chan struct{}
	entered chan workflow.PreparedDispatch

	mu    sync.Mutex
	calls []call
	plans int
}

func (o *testOwner) Plan(_ context.Context, a workflow.Activation) (*workflow.Plan, error) {
	o.mu.Lock()
	o.plans++
	o.mu.Unlock()
	return &workflow.Plan{SideEffect: workflow.ReadOnly, Intent: json.RawMessage(`{}`)}, nil
}

func (o *testOwner) Dispatch(ctx context.Context, p workflow.PreparedDispatch) (json.RawMessage, error) {
	if o.entered != nil {
		o.entered <- p
	}
	if o.block != nil {
		select {
		case <-o.block:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	o.mu.Lock()
	o.calls = append(o.calls, call{key: p.Key(), at: o.clock.Now()})
	o.mu.Unlock()
	return json.RawMessage(`{"accepted":true}`), nil
}

func (o *testOwner) dispatched() []call {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]call(nil), o.calls...)
}

func (o *testOwner) planCount() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.plans
}

// retryingOwner also observes: attempt 1 of every activation failed
// retryably, later attempts succeeded.
type retryingOwner struct{ *testOwner }

func (retryingOwner) Observe(_ context.Context, a workflow.Attempt) (workflow.Observation, error) {
	if a.Key.Attempt == 1 {
		return workflow.Observation{Kind: workflow.ObservedRetryableFailure}, nil
	}
	return workflow.Observation{Kind: workflow.ObservedSucceeded, Output: json.RawMessage(`{"ok":true}`)}, nil
}

var retryPolicy = &workflow.RetryPolicy{Version: 1, MaxAttempts: 3,
	EligibleFailures: []workflow.FailureKind{workflow.FailureOwnerReportedRetryable},
	InitialBackoff:   10 * time.Second, BackoffMultiplier: 2, MaximumBackoff: time.Minute}

func key(run, act string) workflow.ActivationKey {
	return workflow.ActivationKey{RunID: run, NodeID: "n", ActivationID: act}
}

func addRetryable(t *testing.T, s *workflow.Store, k workflow.ActivationKey, now time.Time) {
	t.Helper()
	_, err := s.AddActivation(context.Background(), workflow.NewActivation{Key: k, Input: json.RawMessage(`{}`),
		Effect: workflow.ReadOnly, Reconciliation: workflow.IdempotentReplay, RetryPolicy: retryPolicy}, now)
	require.NoError(t, err)
}

func newStore(t *testing.T, clock *fakeClock, runs ...string) *workflow.Store {
	t.Helper()
	s := workflow.New(memstore.New())
	for _, id := range runs {
		_, err := s.CreateRun(context.Background(), workflow.NewRun{ID: id}, clock.Now())
		require.NoError(t, err)
	}
	return s
}

// started runs r in the background; stop cancels it and returns what Run
// returned.
type started struct {
	cancel context.CancelFunc
	done   chan struct{}
	sum    Summary
	err    error
}

func start(t *testing.T, r *Runner) *started {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st := &started{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(st.done)
		st.sum, st.err = r.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-st.done
	})
	return st
}

func (st *started) wait(t *testing.T) (Summary, error) {
	t.Helper()
	select {
	case <-st.done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10s")
	}
	return st.sum, st.err
}

func (st *started) stop(t *testing.T) (Summary, error) {
	st.cancel()
	return st.wait(t)
}

func newRunner(t *testing.T, s *workflow.Store, o workflow.Owner, clock *fakeClock, opts ...Option) *Runner {
	t.Helper()
	opts = append([]Option{WithClock(clock), WithJitter(0), WithPollInterval(time.Second, 8*time.Second)}, opts...)
	r, err := New(s, o, opts...)
	require.NoError(t, err)
	return r
}

func TestDueRetryIsConsumedAtItsDueTimeNotBefore(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	s := newStore(t, clock, "r1")
	t0 := clock.Now()
	addRetryable(t, s, key("r1", "a"), t0)
	o := retryingOwner{&testOwner{clock: clock}}
	start(t, newRunner(t, s, o, clock))

	// Attempt 1 is admitted and fails at t0; its retry is due at t0+10s.
	// The runner idles 1s, 2s, 4s, then 3s: exactly to the due time.
	var waits []time.Duration
	for clock.Now().Before(t0.Add(10 * time.Second)) {
		tm := clock.nextTimer(t)
		waits = append(waits, tm.d)
		require.Len(t, o.dispatched(), 1, "attempt 2 dispatched before its retry was due (at %v)", clock.Now().Sub(t0))
		clock.fire(tm)
	}
	assert.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 3 * time.Second}, waits)
	clock.nextTimer(t) // idle again: attempt 2 was admitted and succeeded
	calls := o.dispatched()
	require.Len(t, calls, 2)
	assert.Equal(t, uint32(1), calls[0].key.Attempt)
	assert.Equal(t, t0, calls[0].at)
	assert.Equal(t, uint32(2), calls[1].key.Attempt)
	assert.Equal(t, t0.Add(10*time.Second), calls[1].at, "attempt 2 dispatched at its due time")
	run, err := s.GetRun(context.Background(), "r1")
	require.NoError(t, err)
	assert.Equal(t, workflow.RunCompleted, run.Status)
}

func TestBackoffGrowsAndResetsOnWork(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	s := newStore(t, clock, "r1")
	o := &testOwner{clock: clock}
	start(t, newRunner(t, s, o, clock))

	var waits []time.Duration
	for range 5 {
		tm := clock.nextTimer(t)
		waits = append(waits, tm.d)
		clock.fire(tm)
	}
	assert.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second}, waits)

	tm := clock.nextTimer(t) // waiting 8s
	_, err := s.AddActivation(context.Background(), workflow.NewActivation{Key: key("r1", "a"), Input: json.RawMessage(`{}`)}, clock.Now())
	require.NoError(t, err)
	after := clock.nextTimer(t)
	assert.Equal(t, time.Second, after.d, "work resets the backoff")
	assert.Equal(t, 8*time.Second, tm.d)
	assert.Len(t, o.dispatched(), 1)
}

func TestWakesOnInProcessAdd(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	s := newStore(t, clock)
	o := &testOwner{clock: clock, entered: make(chan workflow.PreparedDispatch, 1)}
	start(t, newRunner(t, s, o, clock, WithPollInterval(time.Hour, time.Hour)))
	clock.nextTimer(t) // idle for an hour

	_, err := s.CreateRun(context.Background(), workflow.NewRun{ID: "late"}, clock.Now())
	require.NoError(t, err)
	clock.nextTimer(t) // woke on the new run, found nothing, idles again
	_, err = s.AddActivation(context.Background(), workflow.NewActivation{Key: key("late", "a"), Input: json.RawMessage(`{}`)}, clock.Now())
	require.NoError(t, err)
	wokeFor(t, o, clock, key("late", "a"), "an in-process AddActivation")
}

// wokeFor waits (in real time, bounded) for the idle runner's owner to be
// asked to dispatch k, with no fake time passed: what woke the runner was
// the arrival of work, not its poll.
func wokeFor(t *testing.T, o *testOwner, clock *fakeClock, k workflow.ActivationKey, what string) {
	t.Helper()
	select {
	case p := <-o.entered:
		assert.Equal(t, k, p.Activation.Key)
	case <-time.After(10 * time.Second):
		t.Fatalf("the runner did not wake on %s", what)
	}
	assert.Equal(t, time.UnixMilli(1_700_000_000_000).UTC(), clock.Now(), "no time passed")
}

// inOwnerCall starts a runner (drain timeout one minute) over a store with
// one activation, r1/a, and returns once its owner call for it blocks.
func inOwnerCall(t *testing.T) (*fakeClock, *workflow.Store, *testOwner, *started, workflow.PreparedDispatch) {
	t.Helper()
	clock := newFakeClock()
	s := newStore(t, clock, "r1")
	_, err := s.AddActivation(context.Background(), workflow.NewActivation{Key: key("r1", "a"), Input: json.RawMessage(`{}`)}, clock.Now())
	require.NoError(t, err)
	o := &testOwner{clock: clock, block: make(chan struct{}), entered: make(chan workflow.PreparedDispatch, 1)}
	st := start(t, newRunner(t, s, o, clock, WithDrainTimeout(time.Minute)))
	return clock, s, o, st, <-o.entered
}

func TestCancelDrainsInFlightOwnerCalls(t *testing.T) {
	t.Parallel()
	clock, s, o, st, p := inOwnerCall(t)
	ctx := context.Background()

	st.cancel()
	drain := clock.nextTimer(t)
	assert.Equal(t, time.Minute, drain.d)
	// New work after the cancellation is not planned.
	plans := o.planCount()
	_, err := s.AddActivation(ctx, workflow.NewActivation{Key: key("r1", "b"), Input: json.RawMessage(`{}`)}, clock.Now())
	require.NoError(t, err)
	select {
	case <-st.done:
		t.Fatal("Run returned while an owner call was in flight")
	case <-time.After(20 * time.Millisecond):
	}
	close(o.block)
	sum, err := st.wait(t)
	require.NoError(t, err)
	assert.False(t, sum.DrainExpired)
	assert.Empty(t, sum.Unresolved)
	assert.Equal(t, 1, sum.Admitted)
	assert.Equal(t, plans, o.planCount(), "nothing planned after the cancellation")
	att, err := s.GetAttempt(ctx, p.Identity)
	require.NoError(t, err)
	assert.Equal(t, workflow.AttemptAdmitted, att.Status, "the receipt was persisted during the drain")
	b, err := s.GetActivation(ctx, key("r1", "b"))
	require.NoError(t, err)
	assert.Equal(t, workflow.ActivationPending, b.Status)
}

func TestDrainTimeoutLeavesTheAttemptForTheNextStart(t *testing.T) {
	t.Parallel()
	clock, s, _, st, p := inOwnerCall(t)
	ctx := context.Background()
	st.cancel()
	clock.fire(clock.nextTimer(t))
	sum, err := st.wait(t)
	require.NoError(t, err)
	assert.True(t, sum.DrainExpired)
	require.Len(t, sum.Unresolved, 1)
	assert.Equal(t, p.Identity, sum.Unresolved[0].Identity)
	att, err := s.GetAttempt(ctx, p.Identity)
	require.NoError(t, err)
	assert.Equal(t, workflow.AttemptPrepared, att.Status)

	// The next start recovers it: read-only, so it is redispatched.
	o2 := &testOwner{clock: clock}
	st2 := start(t, newRunner(t, s, o2, clock))
	clock.nextTimer(t)
	sum2, err := st2.stop(t)
	require.NoError(t, err)
	assert.Equal(t, 1, sum2.Admitted)
	require.Len(t, sum2.Reconciled.SafeReadOnly, 1)
	att, err = s.GetAttempt(ctx, p.Identity)
	require.NoError(t, err)
	assert.Equal(t, workflow.AttemptAdmitted, att.Status)
}

// fencedRun creates run r1 owned by one authority and transfers it to
// another; it returns the replaced (stale) authority.
func fencedRun(t *testing.T, s *workflow.Store, clock *fakeClock) workflow.Authority {
	t.Helper()
	ctx := context.Background()
	auth := workflow.Authority{TargetArtifactID: "art", DaemonInstanceID: "d1", Generation: 1, FencingToken: "t1"}
	_, err := s.CreateRun(ctx, workflow.NewRun{ID: "r1", Authority: &auth}, clock.Now())
	require.NoError(t, err)
	next := workflow.Authority{TargetArtifactID: "art", DaemonInstanceID: "d2", Generation: 2, FencingToken: "t2"}
	require.NoError(t, s.TransferAuthority(ctx, workflow.AuthorityTransfer{RunID: "r1", Expected: auth, Replacement: next}, clock.Now()))
	return auth
}

func TestOwnedRunnerStopsWhenFenced(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	ctx := context.Background()
	s := workflow.New(memstore.New())
	auth := workflow.Authority{TargetArtifactID: "art", DaemonInstanceID: "d1", Generation: 1, FencingToken: "t1"}
	_, err := s.CreateRun(ctx, workflow.NewRun{ID: "r1", Authority: &auth}, clock.Now())
	require.NoError(t, err)
	o := &testOwner{clock: clock}
	st := start(t, newRunner(t, s, o, clock, WithRun("r1", &auth)))
	clock.nextTimer(t)

	next := workflow.Authority{TargetArtifactID: "art", DaemonInstanceID: "d2", Generation: 2, FencingToken: "t2"}
	require.NoError(t, s.TransferAuthority(ctx, workflow.AuthorityTransfer{RunID: "r1", Expected: auth, Replacement: next}, clock.Now()))
	_, err = s.AddActivation(ctx, workflow.NewActivation{Key: key("r1", "a"), Input: json.RawMessage(`{}`)}, clock.Now())
	require.NoError(t, err)
	_, err = st.wait(t)
	require.ErrorIs(t, err, workflow.ErrStaleAuthority)
	assert.Empty(t, o.dispatched(), "a fenced runner admits nothing")
}

// flaky fails the first n transactions with ErrBusy.
type flaky struct {
	backend.Backend
	mu sync.Mutex
	n  int
}

func (f *flaky) fail() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n > 0 {
		f.n--
		return fmt.Errorf("injected: %w", backend.ErrBusy)
	}
	return nil
}

func (f *flaky) View(ctx context.Context, fn func(backend.ReadTx) error) error {
	if err := f.fail(); err != nil {
		return err
	}
	return f.Backend.View(ctx, fn)
}

func (f *flaky) Update(ctx context.Context, fn func(backend.Tx) error) error {
	if err := f.fail(); err != nil {
		return err
	}
	return f.Backend.Update(ctx, fn)
}

func TestTransientErrorsBackOffAndGoOn(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	ctx := context.Background()
	fb := &flaky{Backend: memstore.New()}
	s := workflow.New(fb)
	_, err := s.CreateRun(ctx, workflow.NewRun{ID: "r1"}, clock.Now())
	require.NoError(t, err)
	_, err = s.AddActivation(ctx, workflow.NewActivation{Key: key("r1", "a"), Input: json.RawMessage(`{}`)}, clock.Now())
	require.NoError(t, err)
	fb.mu.Lock()
	fb.n = 3
	fb.mu.Unlock()
	o := &testOwner{clock: clock}
	st := start(t, newRunner(t, s, o, clock))
	var waits []time.Duration
	for range 3 {
		tm := clock.nextTimer(t)
		assert.Empty(t, o.dispatched())
		waits = append(waits, tm.d)
		clock.fire(tm)
	}
	assert.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}, waits, "each failure backs off further")
	assert.Equal(t, time.Second, clock.nextTimer(t).d, "work resets the backoff")
	assert.Len(t, o.dispatched(), 1)
	_, err = st.stop(t)
	require.NoError(t, err)
}

func TestNewRejectsBadOptions(t *testing.T) {
	t.Parallel()
	s := workflow.New(memstore.New())
	o := &testOwner{}
	for name, opts := range map[string][]Option{
		"poll":      {WithPollInterval(2*time.Second, time.Second)},
		"jitter":    {WithJitter(2)},
		"retries":   {WithRetriesPerPass(0)},
		"authority": {WithRun("", &workflow.Authority{})},
		"drain":     {WithDrainTimeout(-1)},
	} {
		_, err := New(s, o, opts...)
		assert.ErrorIs(t, err, ErrInvalidOptions, name)
	}
	_, err := New(nil, o)
	assert.ErrorIs(t, err, ErrInvalidOptions)
	r, err := New(s, o)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = r.Run(ctx)
	require.NoError(t, err)
	_, err = r.Run(ctx)
	assert.True(t, errors.Is(err, ErrInvalidOptions))
}

func TestJitterShortensIdleWaits(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	s := newStore(t, clock)
	start(t, newRunner(t, s, &testOwner{clock: clock}, clock, WithJitter(0.2), withRand(func() float64 { return 0.5 })))
	tm := clock.nextTimer(t)
	assert.Equal(t, 900*time.Millisecond, tm.d)
	clock.fire(tm)
	assert.Equal(t, 1800*time.Millisecond, clock.nextTimer(t).d)
}

// A run paused between an attempt's intent and its handoff refuses the
// handoff: the attempt stays prepared, provably never dispatched. Once the
// run is resumed the runner redispatches it, with the same identity.
// pauseAtFirstIntent returns a fault hook that pauses run r1 once, when
// the first attempt's intent commits, so that its handoff is refused; it
// sets *prepared to that attempt's identity.
func pauseAtFirstIntent(t *testing.T, s *workflow.Store, clock *fakeClock, prepared *string) faultseam.Hook[workflow.PreparedDispatch] {
	var once sync.Once
	return func(ctx context.Context, b faultseam.Boundary, p workflow.PreparedDispatch) error {
		if b == faultseam.IntentCommitted {
			once.Do(func() {
				*prepared = p.Identity
				require.NoError(t, s.PauseRun(ctx, "r1", nil, clock.Now()))
			})
		}
		return nil
	}
}

func TestAttemptRefusedAtHandoffIsRedispatchedLater(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	ctx := context.Background()
	s := newStore(t, clock, "r1")
	_, err := s.AddActivation(ctx, workflow.NewActivation{Key: key("r1", "a"), Input: json.RawMessage(`{}`)}, clock.Now())
	require.NoError(t, err)
	var prepared string
	o := &testOwner{clock: clock}
	st := start(t, newRunner(t, s, o, clock, withFault(pauseAtFirstIntent(t, s, clock, &prepared))))
	tm := clock.nextTimer(t)
	assert.Empty(t, o.dispatched(), "the handoff was refused")
	att, err := s.GetAttempt(ctx, prepared)
	require.NoError(t, err)
	assert.Equal(t, workflow.AttemptPrepared, att.Status)
	assert.Equal(t, workflow.HandoffPending, att.Handoff)

	require.NoError(t, s.ResumeRun(ctx, "r1", nil, clock.Now()))
	clock.fire(tm)
	clock.nextTimer(t)
	calls := o.dispatched()
	require.Len(t, calls, 1)
	assert.Equal(t, uint32(1), calls[0].key.Attempt)
	att, err = s.GetAttempt(ctx, prepared)
	require.NoError(t, err)
	assert.Equal(t, workflow.AttemptAdmitted, att.Status, "redispatched with the same identity")
	sum, err := st.stop(t)
	require.NoError(t, err)
	assert.Equal(t, 1, sum.Admitted)
}

// lookupOwner holds a receipt for every identity it is asked about.
type lookupOwner struct{ *testOwner }

func (lookupOwner) LookupReceipt(context.Context, string) (json.RawMessage, bool, error) {
	return json.RawMessage(`{"accepted":true}`), true, nil
}

// An attempt marked repair_required while its owner call was still running
// (by another process's start-up reconciliation, say) is admitted at the
// next start by the receipt the owner holds.
// mutatingStore returns a store with run r1 and one pending mutating
// activation, r1/a.
func mutatingStore(t *testing.T, clock *fakeClock) *workflow.Store {
	t.Helper()
	s := newStore(t, clock, "r1")
	_, err := s.AddActivation(context.Background(), workflow.NewActivation{Key: key("r1", "a"), Input: json.RawMessage(`{}`),
		Effect: workflow.Mutating}, clock.Now())
	require.NoError(t, err)
	return s
}

func TestStartPersistsLateReceiptsOfRepairRequiredAttempts(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	ctx := context.Background()
	s := mutatingStore(t, clock)
	crash := errors.New("crashed after the owner accepted")
	mutating := &mutatingOwner{testOwner: &testOwner{clock: clock}}
	_, err := s.Dispatch(faultseam.With(ctx, func(_ context.Context, b faultseam.Boundary, _ workflow.PreparedDispatch) error {
		if b == faultseam.OwnerAccepted {
			return crash
		}
		return nil
	}), mutating, workflow.DispatchOptions{}, clock.Now())
	require.ErrorIs(t, err, crash)
	rs, err := s.Engine().ReconcilePrepared(ctx, workflow.ReconcileOptions{}, clock.Now())
	require.NoError(t, err)
	require.Len(t, rs.RepairRequired, 1)
	id := rs.RepairRequired[0].Identity

	st := start(t, newRunner(t, s, lookupOwner{&testOwner{clock: clock}}, clock))
	clock.nextTimer(t)
	sum, err := st.stop(t)
	require.NoError(t, err)
	require.Len(t, sum.Reconciled.Recovered, 1)
	assert.Equal(t, id, sum.Reconciled.Recovered[0].Identity)
	att, err := s.GetAttempt(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, workflow.AttemptAdmitted, att.Status)
}

// A timed-out mutating attempt is repair_required with its receipt kept
// and its handoff recorded: the owner holding that same receipt is no late
// receipt, and the start-up pass neither fails on it nor stops the work
// of other runs (it did: every pass failed "attempt is not prepared").
func TestStartSkipsTimedOutAttemptsWhoseReceiptIsKept(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	ctx := context.Background()
	s := newStore(t, clock, "r1", "r2")
	_, err := s.AddActivation(ctx, workflow.NewActivation{Key: key("r1", "a"), Input: json.RawMessage(`{}`), Effect: workflow.Mutating}, clock.Now())
	require.NoError(t, err)
	mutating := &mutatingOwner{testOwner: &testOwner{clock: clock}}
	ds, err := s.Dispatch(ctx, mutating, workflow.DispatchOptions{}, clock.Now())
	require.NoError(t, err)
	require.Len(t, ds.Admitted, 1)
	id := ds.Admitted[0].Identity
	res, err := s.Engine().SettleTimedOut(ctx, id, workflow.TimeoutOptions{Default: time.Second}, clock.Now().Add(time.Minute))
	require.NoError(t, err)
	require.Equal(t, workflow.AttemptRepairRequired, res.Status)
	_, err = s.AddActivation(ctx, workflow.NewActivation{Key: key("r2", "b"), Input: json.RawMessage(`{}`)}, clock.Now())
	require.NoError(t, err)

	st := start(t, newRunner(t, s, lookupOwner{&testOwner{clock: clock}}, clock))
	clock.nextTimer(t)
	sum, err := st.stop(t)
	require.NoError(t, err)
	assert.Empty(t, sum.Reconciled.Recovered)
	att, err := s.GetAttempt(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, workflow.AttemptRepairRequired, att.Status, "the timed-out attempt waits for its owner's word or an operator")
	b, err := s.GetActivation(ctx, key("r2", "b"))
	require.NoError(t, err)
	assert.NotEqual(t, workflow.ActivationPending, b.Status, "the other run's work was dispatched")
}

// mutatingOwner plans mutating work.
type mutatingOwner struct{ *testOwner }

func (mutatingOwner) Plan(context.Context, workflow.Activation) (*workflow.Plan, error) {
	return &workflow.Plan{SideEffect: workflow.Mutating, Intent: json.RawMessage(`{}`)}, nil
}

// Every in-process arrival the runner relies on closes the channel
// WorkArrived returned before it: a run, an activation, a fan-out, an
// applied observation (which may schedule a retry) and a resumed run.
func TestWorkArrivedClosesOnEveryArrival(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.UnixMilli(1_700_000_000_000)
	s := workflow.New(memstore.New())
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	ch := s.WorkArrived()
	assert.False(t, closed(ch))
	_, err := s.CreateRun(ctx, workflow.NewRun{ID: "r"}, now)
	require.NoError(t, err)
	assert.True(t, closed(ch), "CreateRun")

	ch = s.WorkArrived()
	_, err = s.AddActivation(ctx, workflow.NewActivation{Key: key("r", "a"), Input: json.RawMessage(`{}`)}, now)
	require.NoError(t, err)
	assert.True(t, closed(ch), "AddActivation")

	ch = s.WorkArrived()
	_, err = s.AddActivation(ctx, workflow.NewActivation{Key: key("r", "a"), Input: json.RawMessage(`{}`)}, now)
	require.NoError(t, err)
	assert.False(t, closed(ch), "adding an existing activation adds no work")

	_, err = s.AddFanOut(ctx, workflow.NewFanOut{Controller: key("r", "a"),
		Members: []json.RawMessage{json.RawMessage(`{}`), json.RawMessage(`{}`)}, MaxConcurrency: 1}, now)
	require.NoError(t, err)
	assert.True(t, closed(ch), "AddFanOut")

	sum, err := s.Dispatch(ctx, &testOwner{clock: newFakeClock()}, workflow.DispatchOptions{RunID: "r", Limit: 1}, now)
	require.NoError(t, err)
	require.NotEmpty(t, sum.Admitted)
	ch = s.WorkArrived()
	_, err = s.ApplyObservation(ctx, sum.Admitted[0].Identity, workflow.Observation{Kind: workflow.ObservedSucceeded, Output: json.RawMessage(`{}`)}, now)
	require.NoError(t, err)
	assert.True(t, closed(ch), "ApplyObservation")

	ch = s.WorkArrived()
	require.NoError(t, s.PauseRun(ctx, "r", nil, now))
	assert.False(t, closed(ch), "pausing a run adds no work")
	require.NoError(t, s.ResumeRun(ctx, "r", nil, now))
	assert.True(t, closed(ch), "ResumeRun")
}

// failFirstOwner fails its first Dispatch call, then accepts.
type failFirstOwner struct {
	*testOwner
	failed atomic.Bool
}

func (o *failFirstOwner) Dispatch(ctx context.Context, p workflow.PreparedDispatch) (json.RawMessage, error) {
	if o.failed.CompareAndSwap(false, true) {
		return nil, errors.New("owner down")
	}
	return o.testOwner.Dispatch(ctx, p)
}

// A batch whose first owner call fails stops and releases the handoffs it
// never offered: they are not pending activations any more, so discovery
// never meets them again; the runner redispatches them by identity on its
// next pass instead of leaving them (and their run's concurrency places)
// until a restart.
func TestAttemptsABatchNeverOfferedAreRedispatchedOnTheNextPass(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	ctx := context.Background()
	s := newStore(t, clock, "r1")
	for _, a := range []string{"a", "b", "c"} {
		_, err := s.AddActivation(ctx, workflow.NewActivation{Key: key("r1", a), Input: json.RawMessage(`{}`)}, clock.Now())
		require.NoError(t, err)
	}
	o := &failFirstOwner{testOwner: &testOwner{clock: clock}}
	st := start(t, newRunner(t, s, o, clock, WithBatchSize(3)))
	clock.fire(clock.nextTimer(t)) // the first pass failed on the owner and backed off
	clock.nextTimer(t)
	attsPage, err := s.Attempts(ctx, workflow.AttemptQuery{RunID: "r1", Limit: 10})
	require.NoError(t, err)
	atts := attsPage.Items
	require.Len(t, atts, 3)
	for _, a := range atts {
		assert.Equal(t, workflow.AttemptAdmitted, a.Status, "%v admitted with its first identity", a.Key)
		assert.Equal(t, uint32(1), a.Key.Attempt)
	}
	_, err = st.stop(t)
	require.NoError(t, err)
}
