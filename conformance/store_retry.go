package conformance

import (
	"errors"
	"sync"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/workflow"
)

func retryCases() []testCase {
	return []testCase{
		{Name: "retry_observation_schedules_in_the_failure_transaction_and_survives_restart", Run: caseRetryFromObservation},
		{Name: "retry_schedule_is_idempotent_only_for_an_identical_request", Run: caseRetryScheduleIdempotent},
		{Name: "retry_schedule_refuses_ineligible_mismatched_and_overflowing_requests", Run: caseRetryScheduleRefusals},
		{Name: "retry_from_observation_maps_kinds_to_nil_or_ineligible", Run: caseRetryObservationMapping},
		{Name: "retry_due_schedule_is_consumed_once_then_next_attempt_has_new_identity", Run: caseRetryConsume},
		{Name: "retry_concurrent_consumption_requeues_exactly_once", Run: caseRetryConsumeRace},
		{Name: "retry_explicit_requires_latest_failed_attempt_and_retry_cap", Run: caseRetryExplicitBounds},
		{Name: "retry_explicit_refused_after_downstream_activation", Run: caseRetryExplicitDownstream},
		{Name: "retry_explicit_refused_when_cancellation_requested", Run: caseRetryExplicitCancelled},
		{Name: "retry_explicit_supersedes_schedule_and_never_requeues_twice", Run: caseRetryExplicitSupersedes},
		{Name: "retry_scan_pages_failed_then_running_runs_with_their_earliest_schedule", Run: caseRetryScan},
	}
}

// retryable adds activation (run,"n",act) with a 3-attempt policy of the
// given backoff to a fresh run, admits it at 10 and fails it retryably at
// 20, returning its key and the observation result.
func retryable(e *env, s *workflow.Store, run string, backoff int64) (workflow.ActivationKey, workflow.ObservationResult) {
	e.T.Helper()
	mkRun(e, s, run, workflow.Limits{}, nil)
	k := key(run, "n", "a")
	mkAct(e, s, k, withPolicy(retryPolicy(3, backoff)), withEffect(workflow.ReadOnly, workflow.IdempotentReplay))
	admitOnly(e, s, newOwner(), ms(10), identity(k, 1))
	return k, observe(e, s, identity(k, 1), obs(workflow.ObservedRetryableFailure), ms(20))
}

func caseRetryFromObservation(e *env) {
	s := store(e)
	k, res := retryable(e, s, "r", 100)
	assert.Equal(e.T, workflow.AttemptFailed, res.Status)
	want := workflow.RetrySchedule{Key: k, FailedAttempt: 1, NextAttempt: 2, FailureKind: workflow.FailureOwnerReportedRetryable,
		Backoff: 100 * time.Millisecond, Due: ms(120), ScheduledAt: ms(20)}
	require.NotNil(e.T, res.Schedule, "the observation schedules the retry")
	assert.Equal(e.T, want, *res.Schedule)
	check := func(s *workflow.Store) {
		e.T.Helper()
		assert.Equal(e.T, workflow.AttemptFailed, getAttempt(e, s, k, 1).Status)
		assert.Equal(e.T, workflow.ActivationFailed, getAct(e, s, k).Status)
		assert.Equal(e.T, workflow.RunFailed, getRun(e, s, "r").Status)
		sc := getSchedule(e, s, k)
		require.NotNil(e.T, sc)
		assert.Equal(e.T, want, *sc)
		types := eventTypes(e, s, "r")
		assert.Equal(e.T, 1, countType(types, "automatic_retry_scheduled"))
		assert.Equal(e.T, 1, countType(types, "attempt_failed"))
		assert.Equal(e.T, 0, countType(types, "node_retry_requested"), "scheduling does not requeue")
	}
	check(s)
	// Applying the same failure again is a compatible no-op: no second schedule.
	before := digest(e, "r")
	observe(e, s, identity(k, 1), obs(workflow.ObservedRetryableFailure), ms(21))
	unchanged(e, before, "repeated retryable failure", "r")
	s = e.newStore(e.Reopen())
	check(s)
	rq, err := s.Engine().ConsumeNextDueRetry(e.Ctx, "r", ms(119))
	require.NoError(e.T, err)
	assert.Nil(e.T, rq, "not requeued by the restart")
	assert.Equal(e.T, workflow.ActivationFailed, getAct(e, s, k).Status)
}

// failedPlain admits (run,"n",act) without a policy and fails it at 20.
func failedPlain(e *env, s *workflow.Store, run, act string, l workflow.Limits, mod ...func(*workflow.NewActivation)) workflow.ActivationKey {
	e.T.Helper()
	mkRun(e, s, run, l, nil)
	k := key(run, "n", act)
	mkAct(e, s, k, mod...)
	admitOnly(e, s, newOwner(), ms(10), identity(k, 1))
	res := observe(e, s, identity(k, 1), obs(workflow.ObservedFailed), ms(20))
	require.Equal(e.T, workflow.AttemptFailed, res.Status)
	require.Nil(e.T, res.Schedule)
	return k
}

func eligibility() workflow.RetryEligibility {
	return workflow.RetryEligibility{Version: workflow.RetryPolicyVersion, Effect: workflow.ReadOnly,
		Reconciliation: workflow.IdempotentReplay, Failure: workflow.FailureOwnerReportedRetryable,
		AttemptsCompleted: 1, MaxAttempts: 3, RetryCap: 3}
}

func caseRetryScheduleIdempotent(e *env) {
	s := store(e)
	k := failedPlain(e, s, "r", "a", workflow.Limits{})
	sc, err := s.ScheduleRetry(e.Ctx, workflow.RetrySchedulingRequest{Eligibility: eligibility(), Key: k, Backoff: 100 * time.Millisecond}, ms(20))
	require.NoError(e.T, err)
	want := workflow.RetrySchedule{Key: k, FailedAttempt: 1, NextAttempt: 2, FailureKind: "owner_reported_retryable",
		Backoff: 100 * time.Millisecond, Due: ms(120), ScheduledAt: ms(20)}
	assert.Equal(e.T, want, sc)
	assert.Equal(e.T, 1, countType(eventTypes(e, s, "r"), "automatic_retry_scheduled"))
	before := digest(e, "r")
	again, err := s.ScheduleRetry(e.Ctx, workflow.RetrySchedulingRequest{Eligibility: eligibility(), Key: k, Backoff: 100 * time.Millisecond}, ms(20))
	require.NoError(e.T, err, "identical re-request")
	assert.Equal(e.T, want, again)
	unchanged(e, before, "identical re-request (no second event)", "r")
	_, err = s.ScheduleRetry(e.Ctx, workflow.RetrySchedulingRequest{Eligibility: eligibility(), Key: k, Backoff: 200 * time.Millisecond}, ms(20))
	requireIs(e.T, err, workflow.ErrConflict, "different backoff")
	unchanged(e, before, "different backoff", "r")
	_, err = s.ScheduleRetry(e.Ctx, workflow.RetrySchedulingRequest{Eligibility: eligibility(), Key: k, Backoff: 100 * time.Millisecond}, ms(21))
	requireIs(e.T, err, workflow.ErrConflict, "different scheduling time")
	unchanged(e, before, "different scheduling time", "r")
	s = e.newStore(e.Reopen())
	got := getSchedule(e, s, k)
	require.NotNil(e.T, got, "the schedule survives restart")
	assert.Equal(e.T, want, *got)
	again, err = s.Engine().ScheduleRetryForFailedAttempt(e.Ctx, workflow.RetryRequest{Key: k, Effect: workflow.ReadOnly, Reconciliation: workflow.IdempotentReplay, MaxAttempts: 3, Backoff: 100 * time.Millisecond}, workflow.FailureOwnerReportedRetryable, ms(20))
	require.NoError(e.T, err, "the same facts read from the store are the identical request")
	assert.Equal(e.T, want, again)
	unchanged(e, before, "identical request after restart", "r")
	assert.Equal(e.T, workflow.ActivationFailed, getAct(e, s, k).Status, "scheduling never requeues")
}

func caseRetryScheduleRefusals(e *env) {
	s := store(e)
	k := failedPlain(e, s, "r", "a", workflow.Limits{})
	type row struct {
		name    string
		mod     func(*workflow.RetryEligibility)
		backoff time.Duration
		want    error
	}
	rows := []row{
		{"mutating+repair_required is unsafe", func(x *workflow.RetryEligibility) {
			x.Effect, x.Reconciliation = workflow.Mutating, workflow.RepairRequired
		}, 100 * time.Millisecond, workflow.ErrIneligible},
		{"read_only+repair_required is unsafe", func(x *workflow.RetryEligibility) { x.Reconciliation = workflow.RepairRequired }, 100 * time.Millisecond, workflow.ErrIneligible},
		{"attempts exhausted", func(x *workflow.RetryEligibility) { x.AttemptsCompleted = 3 }, 100 * time.Millisecond, workflow.ErrIneligible},
		{"retry cap below max", func(x *workflow.RetryEligibility) { x.RetryCap = 1 }, 100 * time.Millisecond, workflow.ErrIneligible},
		{"unsupported version", func(x *workflow.RetryEligibility) { x.Version = 2 }, 100 * time.Millisecond, workflow.ErrIneligible},
		{"max attempts zero", func(x *workflow.RetryEligibility) { x.MaxAttempts = 0 }, 100 * time.Millisecond, workflow.ErrIneligible},
		{"negative backoff", nil, -time.Millisecond, workflow.ErrInvalidInput},
		// The stored form is milliseconds: no value is truncated into it.
		{"a backoff of -1ns", nil, -time.Nanosecond, workflow.ErrInvalidInput},
		{"a backoff below a millisecond", nil, 500 * time.Microsecond, workflow.ErrInvalidInput},
		{"a backoff of a fractional millisecond", nil, 1500 * time.Microsecond, workflow.ErrInvalidInput},
	}
	for _, kind := range []workflow.FailureKind{workflow.FailureCancellation, workflow.FailureTerminalTimeout, workflow.FailureApprovalDenied,
		workflow.FailureSchemaFailure, workflow.FailureAmbiguousMutation, workflow.FailureTerminalFailure} {
		kind := kind
		rows = append(rows, row{"terminal kind " + string(kind), func(x *workflow.RetryEligibility) { x.Failure = kind }, 100 * time.Millisecond, workflow.ErrIneligible})
	}
	before := digest(e, "r")
	for _, r := range rows {
		el := eligibility()
		if r.mod != nil {
			r.mod(&el)
		}
		_, err := s.ScheduleRetry(e.Ctx, workflow.RetrySchedulingRequest{Eligibility: el, Key: k, Backoff: r.backoff}, ms(20))
		requireIs(e.T, err, r.want, r.name)
		unchanged(e, before, r.name, "r")
	}
	assert.Nil(e.T, getSchedule(e, s, k))
	// The refusals are not vacuous: owner_unavailable_before_acceptance is
	// eligible whatever the effect, and schedules.
	el := eligibility()
	el.Effect, el.Reconciliation, el.Failure = workflow.Mutating, workflow.RepairRequired, workflow.FailureOwnerUnavailableBeforeAcceptance
	sc, err := s.ScheduleRetry(e.Ctx, workflow.RetrySchedulingRequest{Eligibility: el, Key: k, Backoff: 5 * time.Millisecond}, ms(20))
	require.NoError(e.T, err)
	assert.Equal(e.T, uint32(2), sc.NextAttempt)
	assert.Equal(e.T, ms(25).UnixMilli(), msOf(sc.Due))
}

func caseRetryObservationMapping(e *env) {
	s := store(e)
	k := failedPlain(e, s, "r", "a", workflow.Limits{})
	before := digest(e, "r")
	for _, kind := range []workflow.ObservationKind{workflow.ObservedSucceeded, workflow.ObservedRunning, workflow.ObservedAdmitted, workflow.ObservedDeferred} {
		sc, err := s.Engine().ScheduleRetryFromObservation(e.Ctx, workflow.RetryRequest{Key: k, Effect: workflow.ReadOnly, Reconciliation: workflow.IdempotentReplay, MaxAttempts: 3, Backoff: 100 * time.Millisecond}, obs(kind), ms(20))
		require.NoError(e.T, err, "%s", kind)
		assert.Nil(e.T, sc, "%s is not a failure", kind)
		unchanged(e, before, string(kind), "r")
	}
	refused := []struct {
		o    workflow.Observation
		kind workflow.FailureKind
	}{
		{obs(workflow.ObservedFailed), workflow.FailureTerminalFailure},
		{workflow.Observation{Kind: workflow.ObservedPaused, PauseReason: workflow.PauseIdleTimeout}, workflow.FailureTerminalTimeout},
		{workflow.Observation{Kind: workflow.ObservedPaused, PauseReason: "operator"}, workflow.FailureTerminalFailure},
		{obs(workflow.ObservedUnknown), workflow.FailureAmbiguousMutation},
		{obs(workflow.ObservedCancelled), workflow.FailureCancellation},
	}
	for _, r := range refused {
		got, ok := workflow.FailureKindOf(r.o)
		assert.True(e.T, ok)
		assert.Equal(e.T, r.kind, got, "failure kind of %s/%s", r.o.Kind, r.o.PauseReason)
		sc, err := s.Engine().ScheduleRetryFromObservation(e.Ctx, workflow.RetryRequest{Key: k, Effect: workflow.ReadOnly, Reconciliation: workflow.IdempotentReplay, MaxAttempts: 3, Backoff: 100 * time.Millisecond}, r.o, ms(20))
		requireIs(e.T, err, workflow.ErrIneligible, "%s/%s", r.o.Kind, r.o.PauseReason)
		assert.Nil(e.T, sc)
		unchanged(e, before, string(r.o.Kind), "r")
	}
	sc, err := s.Engine().ScheduleRetryFromObservation(e.Ctx, workflow.RetryRequest{Key: k, Effect: workflow.ReadOnly, Reconciliation: workflow.IdempotentReplay, MaxAttempts: 3, Backoff: 100 * time.Millisecond}, obs(workflow.ObservedRetryableFailure), ms(20))
	require.NoError(e.T, err)
	require.NotNil(e.T, sc)
	assert.Equal(e.T, workflow.RetrySchedule{Key: k, FailedAttempt: 1, NextAttempt: 2, FailureKind: "owner_reported_retryable",
		Backoff: 100 * time.Millisecond, Due: ms(120), ScheduledAt: ms(20)}, *sc)
}

func caseRetryConsume(e *env) {
	s := store(e)
	k, _ := retryable(e, s, "r", 100)
	before := digest(e, "r")
	rq, err := s.Engine().ConsumeNextDueRetry(e.Ctx, "r", ms(119))
	require.NoError(e.T, err)
	assert.Nil(e.T, rq, "not due at 119")
	_, err = s.Engine().ConsumeDueRetry(e.Ctx, k, ms(119))
	requireIs(e.T, err, workflow.ErrIneligible, "not due at 119")
	unchanged(e, before, "consumption before due", "r")
	rq, err = s.Engine().ConsumeNextDueRetry(e.Ctx, "r", ms(120))
	require.NoError(e.T, err)
	require.NotNil(e.T, rq, "due at 120")
	assert.Equal(e.T, workflow.RetryRequeue{Key: k, PreviousAttempt: 1, NextAttempt: 2}, *rq)
	assert.Nil(e.T, getSchedule(e, s, k), "the schedule is gone")
	assert.Equal(e.T, workflow.ActivationPending, getAct(e, s, k).Status)
	assert.Equal(e.T, workflow.RunRunning, getRun(e, s, "r").Status)
	assert.Equal(e.T, []string{"node_retry_requested", "automatic_retry_consumed"}, lastTypes(e, s, "r", 2))
	after := digest(e, "r")
	rq, err = s.Engine().ConsumeNextDueRetry(e.Ctx, "r", ms(121))
	require.NoError(e.T, err)
	assert.Nil(e.T, rq, "a second consumption finds nothing")
	_, err = s.Engine().ConsumeDueRetry(e.Ctx, k, ms(121))
	requireIs(e.T, err, workflow.ErrNotFound, "a second consumption")
	unchanged(e, after, "second consumption", "r")
	assert.Len(e.T, attemptsOf(e, s, "r"), 1, "consumption creates no attempt")
	o := newOwner()
	admitOnly(e, s, o, ms(130), identity(k, 2))
	assert.NotEqual(e.T, identity(k, 1), identity(k, 2))
	assert.Equal(e.T, workflow.AttemptFailed, getAttempt(e, s, k, 1).Status, "attempt 1 keeps its outcome")
	assert.Equal(e.T, workflow.AttemptAdmitted, getAttempt(e, s, k, 2).Status)
	assert.Len(e.T, attemptsOf(e, s, "r"), 2)
	assert.Equal(e.T, 1, o.totalCalls())
	again, err := s.Engine().PreparePending(e.Ctx, k, workflow.Plan{SideEffect: workflow.ReadOnly, Intent: []byte(`{}`)}, ms(131))
	require.NoError(e.T, err)
	assert.Nil(e.T, again, "the requeued activation is running again, not pending")
}

func caseRetryConsumeRace(e *env) {
	const workers = 8
	s := store(e)
	k, _ := retryable(e, s, "r", 100)
	stores := []*workflow.Store{s}
	if e.Caps.MultiInstance {
		stores = append(stores, e.newStore(e.Open()))
	} else {
		e.T.Logf("capability MultiInstance=false: %s races %d goroutines on one instance", e.H.Name, workers)
	}
	var (
		wg      sync.WaitGroup
		start   = make(chan struct{})
		mu      sync.Mutex
		won     []workflow.RetryRequeue
		lost    int
		badErrs []error
	)
	for _, st := range stores {
		for i := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				var rq *workflow.RetryRequeue
				var err error
				if i%2 == 0 {
					rq, err = st.Engine().ConsumeNextDueRetry(e.Ctx, "r", ms(200))
				} else {
					var v workflow.RetryRequeue
					if v, err = st.Engine().ConsumeDueRetry(e.Ctx, k, ms(200)); err == nil {
						rq = &v
					}
				}
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil && rq != nil:
					won = append(won, *rq)
				case err == nil, errors.Is(err, workflow.ErrNotFound):
					lost++
				default:
					badErrs = append(badErrs, err)
				}
			}()
		}
	}
	close(start)
	wg.Wait()
	require.Empty(e.T, badErrs)
	require.Len(e.T, won, 1, "exactly one requeue")
	assert.Equal(e.T, workflow.RetryRequeue{Key: k, PreviousAttempt: 1, NextAttempt: 2}, won[0])
	assert.Equal(e.T, workers*len(stores)-1, lost)
	types := eventTypes(e, s, "r")
	assert.Equal(e.T, 1, countType(types, "node_retry_requested"))
	assert.Equal(e.T, 1, countType(types, "automatic_retry_consumed"))
	o := newOwner()
	admitOnly(e, s, o, ms(210), identity(k, 2))
	admitOnly(e, s, o, ms(211))
	assert.Len(e.T, attemptsOf(e, s, "r"), 2)
}

func caseRetryExplicitBounds(e *env) {
	s := store(e)
	k := failedPlain(e, s, "r", "a", workflow.Limits{RetryCap: 1})
	before := digest(e, "r")
	_, err := s.RetryFailedNode(e.Ctx, k, 0, ms(30))
	requireIs(e.T, err, workflow.ErrInvalidInput, "attempt 0")
	_, err = s.RetryFailedNode(e.Ctx, k, 2, ms(30))
	requireIs(e.T, err, workflow.ErrIneligible, "attempt 2 is not the latest failed attempt")
	_, err = s.RetryFailedNode(e.Ctx, key("r", "n", "missing"), 1, ms(30))
	requireIs(e.T, err, workflow.ErrNotFound, "unknown activation")
	unchanged(e, before, "refused retries", "r")
	rq, err := s.RetryFailedNode(e.Ctx, k, 1, ms(30))
	require.NoError(e.T, err)
	assert.Equal(e.T, workflow.RetryRequeue{Key: k, PreviousAttempt: 1, NextAttempt: 2}, rq)
	assert.Equal(e.T, "node_retry_requested", lastTypes(e, s, "r", 1)[0])
	assert.Equal(e.T, workflow.RunRunning, getRun(e, s, "r").Status)
	again := digest(e, "r")
	_, err = s.RetryFailedNode(e.Ctx, k, 1, ms(31))
	requireIs(e.T, err, workflow.ErrIneligible, "a requeued activation is not failed")
	unchanged(e, again, "repeated retry", "r")
	admitOnly(e, s, newOwner(), ms(40), identity(k, 2))
	observe(e, s, identity(k, 2), obs(workflow.ObservedFailed), ms(50))
	before = digest(e, "r")
	_, err = s.RetryFailedNode(e.Ctx, k, 1, ms(60))
	requireIs(e.T, err, workflow.ErrIneligible, "stale failed attempt 1")
	_, err = s.RetryFailedNode(e.Ctx, k, 2, ms(60))
	requireIs(e.T, err, workflow.ErrIneligible, "attempt 3 exceeds retry_cap+1 = 2")
	unchanged(e, before, "retry past the cap", "r")
}

func caseRetryExplicitDownstream(e *env) {
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{}, nil)
	a := key("r", "n", "a")
	mkAct(e, s, a)
	mkAct(e, s, key("r", "m", "b"), withPreds(workflow.NodeRef{NodeID: "n", ActivationID: "a"}))
	assert.True(e.T, rawAct(e, a).HasSuccessors)
	o := newOwner()
	o.unsupported["b"] = true
	admitOnly(e, s, o, ms(10), identity(a, 1))
	observe(e, s, identity(a, 1), obs(workflow.ObservedFailed), ms(20))
	require.Equal(e.T, workflow.RunFailed, getRun(e, s, "r").Status)
	before := digest(e, "r")
	_, err := s.RetryFailedNode(e.Ctx, a, 1, ms(30))
	requireIs(e.T, err, workflow.ErrIneligible, "unsafe after downstream activation")
	unchanged(e, before, "retry after downstream activation", "r")
	// The same failure without a successor is retryable (the refusal is not vacuous).
	k := failedPlain(e, s, "r2", "a", workflow.Limits{})
	_, err = s.RetryFailedNode(e.Ctx, k, 1, ms(30))
	require.NoError(e.T, err)
}

func caseRetryExplicitCancelled(e *env) {
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{}, nil)
	a, b := key("r", "n", "a"), key("r", "n", "b")
	mkAct(e, s, a)
	mkAct(e, s, b)
	o := newOwner()
	o.effect = workflow.Mutating
	admitOnly(e, s, o, ms(10), identity(a, 1), identity(b, 1))
	observe(e, s, identity(b, 1), obs(workflow.ObservedUnknown), ms(20))
	require.Equal(e.T, workflow.RunRepairRequired, getRun(e, s, "r").Status)
	st, err := s.RequestCancellation(e.Ctx, "r", nil, ms(30))
	require.NoError(e.T, err)
	assert.Equal(e.T, workflow.RunRepairRequired, st)
	require.NoError(e.T, s.Repair(e.Ctx, workflow.RepairRequest{Identity: identity(b, 1), Action: workflow.RepairConfirmFailed}, ms(40)))
	run := getRun(e, s, "r")
	require.Equal(e.T, workflow.RunFailed, run.Status, "a confirmed failure fails the run (a is still active)")
	require.NotZero(e.T, msOf(run.CancelRequestedAt))
	require.Equal(e.T, workflow.ActivationFailed, getAct(e, s, b).Status)
	before := digest(e, "r")
	_, err = s.RetryFailedNode(e.Ctx, b, 1, ms(50))
	requireIs(e.T, err, workflow.ErrIneligible, "cancellation requested")
	unchanged(e, before, "retry with cancellation requested", "r")
	// Scheduling checks no run state, but consumption is cancellation-safe.
	el := eligibility()
	el.Effect, el.Reconciliation = workflow.Mutating, workflow.ReceiptStatus
	_, err = s.ScheduleRetry(e.Ctx, workflow.RetrySchedulingRequest{Eligibility: el, Key: b, Backoff: 10 * time.Millisecond}, ms(60))
	require.NoError(e.T, err)
	before = digest(e, "r")
	_, err = s.Engine().ConsumeDueRetry(e.Ctx, b, ms(100))
	requireIs(e.T, err, workflow.ErrIneligible, "consumption with cancellation requested")
	_, err = s.Engine().ConsumeNextDueRetry(e.Ctx, "r", ms(100))
	requireIs(e.T, err, workflow.ErrIneligible, "consumption with cancellation requested")
	unchanged(e, before, "consumption with cancellation requested", "r")
	assert.Equal(e.T, workflow.ActivationFailed, getAct(e, s, b).Status)
}

func caseRetryExplicitSupersedes(e *env) {
	s := store(e)
	k, res := retryable(e, s, "r", 100)
	require.NotNil(e.T, res.Schedule)
	rq, err := s.RetryFailedNode(e.Ctx, k, 1, ms(30))
	require.NoError(e.T, err)
	assert.Equal(e.T, workflow.RetryRequeue{Key: k, PreviousAttempt: 1, NextAttempt: 2}, rq)
	assert.Nil(e.T, getSchedule(e, s, k), "the explicit retry removes the schedule")
	before := digest(e, "r")
	got, err := s.Engine().ConsumeNextDueRetry(e.Ctx, "r", ms(500))
	require.NoError(e.T, err)
	assert.Nil(e.T, got, "the superseded schedule never requeues")
	_, err = s.Engine().ConsumeDueRetry(e.Ctx, k, ms(500))
	requireIs(e.T, err, workflow.ErrNotFound)
	unchanged(e, before, "consuming a superseded schedule", "r")
	types := eventTypes(e, s, "r")
	assert.Equal(e.T, 1, countType(types, "node_retry_requested"))
	assert.Equal(e.T, 0, countType(types, "automatic_retry_consumed"))
	o := newOwner()
	admitOnly(e, s, o, ms(510), identity(k, 2))
	admitOnly(e, s, o, ms(511))
	assert.Len(e.T, attemptsOf(e, s, "r"), 2)
}
