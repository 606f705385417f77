package conformance

import (
	"encoding/json"
	"sync"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/workflow"
)

// Retry rules: an explicit retry cap of zero, a retryable failure that meets
// an existing schedule, consumption after an abandoned mutation, a stuck
// schedule in a run, visible refusals, and racing next-due consumers.

func retryRuleCases() []testCase {
	return []testCase{
		{Name: "retry_rules_cap_zero_is_stored_and_never_retries", Run: caseRetryCapZero},
		{Name: "retry_rules_existing_schedule_settles_the_failure_and_reports_schedule_exists", Run: caseRetryExistingSchedule},
		{Name: "retry_rules_abandoned_mutation_is_retried_only_explicitly", Run: caseRetryAbandonedNotConsumed},
		{Name: "retry_rules_stuck_schedule_is_discarded_and_the_next_due_consumed", Run: caseRetryStuckSchedule},
		{Name: "retry_rules_refusal_to_schedule_is_returned_and_recorded", Run: caseRetryRefusalVisible},
		{Name: "retry_rules_racing_next_due_consumers_see_nothing_consumed", Run: caseRetryNextDueRace},
	}
}

func caseRetryCapZero(e *env) {
	s := store(e)
	_, err := s.CreateRun(e.Ctx, workflow.NewRun{ID: "zero", Limits: workflow.RunLimits{RetryCap: workflow.RetryCap(0)}}, ms(0))
	require.NoError(e.T, err)
	assert.Equal(e.T, int64(0), getRun(e, s, "zero").Limits.RetryCap, "an explicit retry cap of 0 is stored as 0")
	assert.Contains(e.T, payloadsOf(e, s, "zero", "run_created")[0], `"retry_cap":0`)
	_, err = s.CreateRun(e.Ctx, workflow.NewRun{ID: "unset"}, ms(0))
	require.NoError(e.T, err)
	assert.Equal(e.T, int64(workflow.DefaultRetryCap), getRun(e, s, "unset").Limits.RetryCap, "an unset retry cap takes the default")
	// The stored limits requested again are the identical run; unset is not 0.
	before := digest(e, "zero")
	exact, err := workflow.ExactLimits(getRun(e, s, "zero").Limits)
	require.NoError(e.T, err)
	created, err := s.CreateRun(e.Ctx, workflow.NewRun{ID: "zero", Limits: exact}, ms(1))
	require.NoError(e.T, err)
	// Limits no request can reproduce are refused, never defaulted.
	for _, bad := range []workflow.Limits{
		{NodeExecutionCap: 10, ConcurrencyCap: 1, CycleCap: 1, RetryCap: -1},
		{NodeExecutionCap: 10, ConcurrencyCap: 1, CycleCap: 1, RetryCap: 1 << 32},
		{NodeExecutionCap: 0, ConcurrencyCap: 1, CycleCap: 1, RetryCap: 1},
	} {
		_, err := workflow.ExactLimits(bad)
		requireIs(e.T, err, workflow.ErrInvalidInput, "ExactLimits(%+v)", bad)
	}
	assert.False(e.T, created)
	_, err = s.CreateRun(e.Ctx, workflow.NewRun{ID: "zero"}, ms(1))
	requireIs(e.T, err, workflow.ErrConflict, "unset retry cap against a stored 0")
	unchanged(e, before, "CreateRun again", "zero")

	// Never retry: no automatic schedule, with the decision's reason, and no
	// explicit retry; the first attempt is admitted as usual.
	k := key("zero", "n", "a")
	mkAct(e, s, k, withPolicy(retryPolicy(3, 100)), withEffect(workflow.ReadOnly, workflow.IdempotentReplay))
	admitOnly(e, s, newOwner(), ms(10), identity(k, 1))
	res := observe(e, s, identity(k, 1), obs(workflow.ObservedRetryableFailure), ms(20))
	assert.Equal(e.T, workflow.AttemptFailed, res.Status)
	assert.Nil(e.T, res.Schedule)
	require.NotNil(e.T, res.NotScheduled)
	assert.Equal(e.T, workflow.RetryRefusal{Reason: workflow.RefusedIneligible, Ineligible: workflow.ReasonInvalidLimit}, *res.NotScheduled)
	before = digest(e, "zero")
	_, err = s.RetryFailedNode(e.Ctx, k, 1, ms(30))
	requireIs(e.T, err, workflow.ErrIneligible, "explicit retry under retry cap 0")
	_, err = s.Engine().ScheduleRetryForFailedAttempt(e.Ctx, workflow.RetryRequest{Key: k, Effect: workflow.ReadOnly, Reconciliation: workflow.IdempotentReplay, MaxAttempts: 3, Backoff: 5 * time.Millisecond}, workflow.FailureOwnerUnavailableBeforeAcceptance, ms(30))
	requireIs(e.T, err, workflow.ErrIneligible, "direct schedule under retry cap 0")
	unchanged(e, before, "retries refused under retry cap 0", "zero")

	// Children: unset inherits the parent's value, 0 narrows any parent,
	// and nothing widens a parent's 0.
	mkRun(e, s, "p", workflow.Limits{RetryCap: 2}, nil)
	child := func(parent workflow.ActivationKey, l workflow.RunLimits) (string, error) {
		e.T.Helper()
		mkAct(e, s, parent)
		prep(e, s, parent, workflow.ReadOnly, ms(40))
		id, _, err := s.CreateChildRun(e.Ctx, workflow.NewChildRun{Parent: attemptKey(parent, 1), Target: json.RawMessage(`{}`), Limits: l}, ms(41))
		return id, err
	}
	inherit, err := child(key("p", "n", "inherit"), workflow.RunLimits{})
	require.NoError(e.T, err)
	assert.Equal(e.T, int64(2), getRun(e, s, inherit).Limits.RetryCap)
	never, err := child(key("p", "n", "never"), workflow.RunLimits{RetryCap: workflow.RetryCap(0)})
	require.NoError(e.T, err)
	assert.Equal(e.T, int64(0), getRun(e, s, never).Limits.RetryCap)
	grand, err := child(key(never, "n", "inherit"), workflow.RunLimits{})
	require.NoError(e.T, err)
	assert.Equal(e.T, int64(0), getRun(e, s, grand).Limits.RetryCap, "a parent's 0 is inherited")
	_, err = child(key(never, "n", "wider"), workflow.RunLimits{RetryCap: workflow.RetryCap(1)})
	requireIs(e.T, err, workflow.ErrInvalidInput, "1 widens a parent's 0")
	assert.Equal(e.T, workflow.AttemptPrepared, getAttempt(e, s, key(never, "n", "wider"), 1).Status, "the refused child changes nothing")
}

func caseRetryExistingSchedule(e *env) {
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{}, nil)
	k := key("r", "n", "a")
	mkAct(e, s, k, withPolicy(retryPolicy(3, 100)), withEffect(workflow.ReadOnly, workflow.IdempotentReplay))
	admitOnly(e, s, newOwner(), ms(10), identity(k, 1))
	// A schedule made for the attempt while it still runs (the facts read
	// from the store say one attempt completed), with its own backoff.
	old, err := s.Engine().ScheduleRetryForFailedAttempt(e.Ctx, workflow.RetryRequest{Key: k, Effect: workflow.ReadOnly, Reconciliation: workflow.IdempotentReplay, MaxAttempts: 3, Backoff: 7 * time.Millisecond}, workflow.FailureOwnerReportedRetryable, ms(15))
	require.NoError(e.T, err)
	res, err := s.ApplyObservation(e.Ctx, identity(k, 1), obs(workflow.ObservedRetryableFailure), ms(20))
	require.NoError(e.T, err, "the observation settles the attempt whatever schedule exists")
	assert.Equal(e.T, workflow.AttemptFailed, res.Status)
	assert.Equal(e.T, workflow.AttemptFailed, getAttempt(e, s, k, 1).Status)
	assert.Equal(e.T, workflow.ActivationFailed, getAct(e, s, k).Status)
	got := getSchedule(e, s, k)
	require.NotNil(e.T, got)
	assert.Equal(e.T, old, *got, "the existing schedule is kept as it was")
	assert.Nil(e.T, res.Schedule)
	require.NotNil(e.T, res.NotScheduled, "the refusal is returned")
	assert.Equal(e.T, workflow.RetryRefusal{Reason: workflow.RefusedScheduleExists, Existing: &old}, *res.NotScheduled)
	assert.Equal(e.T, 1, countType(eventTypes(e, s, "r"), "automatic_retry_scheduled"))
	assert.Equal(e.T, []string{`{"activation_id":"a","dispatch_identity":"` + identity(k, 1) +
		`","failed_attempt":1,"node_id":"n","reason":"schedule_exists","run_id":"r"}`},
		payloadsOf(e, s, "r", "automatic_retry_not_scheduled"))
	// The kept schedule is consumed once, as any other.
	rq, err := s.Engine().ConsumeNextDueRetry(e.Ctx, "r", ms(22))
	require.NoError(e.T, err)
	require.NotNil(e.T, rq)
	assert.Equal(e.T, workflow.RetryRequeue{Key: k, PreviousAttempt: 1, NextAttempt: 2}, *rq)

	// A schedule left for an earlier attempt can never be consumed: the
	// failure of the later attempt replaces it.
	mkRun(e, s, "p", workflow.Limits{}, nil)
	p := key("p", "n", "a")
	mkAct(e, s, p, withPolicy(retryPolicy(3, 100)), withEffect(workflow.ReadOnly, workflow.IdempotentReplay))
	admitIn := func(at int64, want string) {
		e.T.Helper()
		sum := dispatch(e, s, newOwner(), workflow.DispatchOptions{RunID: "p"}, ms(at))
		require.Equal(e.T, []string{want}, refIdentities(sum.Admitted))
	}
	admitIn(10, identity(p, 1))
	_, err = s.Engine().ScheduleRetryForFailedAttempt(e.Ctx, workflow.RetryRequest{Key: p, Effect: workflow.ReadOnly, Reconciliation: workflow.IdempotentReplay, MaxAttempts: 3, Backoff: 7 * time.Millisecond}, workflow.FailureOwnerReportedRetryable, ms(15))
	require.NoError(e.T, err)
	observe(e, s, identity(p, 1), obs(workflow.ObservedPaused), ms(16))
	require.NoError(e.T, s.ResumeRun(e.Ctx, "p", nil, ms(17)))
	admitIn(18, identity(p, 2))
	res = observe(e, s, identity(p, 2), obs(workflow.ObservedRetryableFailure), ms(20))
	want := workflow.RetrySchedule{Key: p, FailedAttempt: 2, NextAttempt: 3, FailureKind: workflow.FailureOwnerReportedRetryable,
		Backoff: 100 * time.Millisecond, Due: ms(120), ScheduledAt: ms(20)}
	require.NotNil(e.T, res.Schedule)
	assert.Equal(e.T, want, *res.Schedule)
	assert.Nil(e.T, res.NotScheduled)
	assert.Equal(e.T, &want, getSchedule(e, s, p))
	disc := payloadsOf(e, s, "p", "automatic_retry_discarded")
	require.Len(e.T, disc, 1)
	assert.Contains(e.T, disc[0], `"failed_attempt":1`)
	assert.Contains(e.T, disc[0], `"reason":"attempt_moved_on"`)
}

// abandoned leaves (run,"n","a") mutating with its attempt 1 abandoned
// after an unknown outcome, and a schedule for it made from
// owner_unavailable_before_acceptance (eligible for any effect).
func abandoned(e *env, s *workflow.Store, run string) workflow.ActivationKey {
	e.T.Helper()
	mkRun(e, s, run, workflow.Limits{}, nil)
	k := key(run, "n", "a")
	mkAct(e, s, k, withEffect(workflow.Mutating, workflow.RepairRequired))
	o := newOwner()
	o.effect = workflow.Mutating
	admitOnly(e, s, o, ms(10), identity(k, 1))
	observe(e, s, identity(k, 1), obs(workflow.ObservedUnknown), ms(20))
	require.NoError(e.T, s.Repair(e.Ctx, workflow.RepairRequest{Identity: identity(k, 1), Action: workflow.RepairAbandon}, ms(30)))
	require.Equal(e.T, workflow.AttemptAbandoned, getAttempt(e, s, k, 1).Status)
	_, err := s.Engine().ScheduleRetryForFailedAttempt(e.Ctx, workflow.RetryRequest{Key: k, Effect: workflow.Mutating, Reconciliation: workflow.RepairRequired, MaxAttempts: 3, Backoff: 5 * time.Millisecond}, workflow.FailureOwnerUnavailableBeforeAcceptance, ms(40))
	require.NoError(e.T, err, "scheduling reads no attempt status; consumption decides")
	return k
}

func caseRetryAbandonedNotConsumed(e *env) {
	s := store(e)
	k := abandoned(e, s, "r")
	before := digest(e, "r")
	_, err := s.Engine().ConsumeDueRetry(e.Ctx, k, ms(100))
	requireIs(e.T, err, workflow.ErrConflict, "exact consumption of a schedule for an abandoned attempt")
	unchanged(e, before, "exact consumption refused", "r")
	rq, err := s.Engine().ConsumeNextDueRetry(e.Ctx, "r", ms(100))
	require.NoError(e.T, err)
	assert.Nil(e.T, rq, "an abandoned mutation is not retried automatically")
	assert.Nil(e.T, getSchedule(e, s, k), "the schedule that can never be consumed is discarded")
	assert.Equal(e.T, workflow.ActivationFailed, getAct(e, s, k).Status)
	types := eventTypes(e, s, "r")
	assert.Equal(e.T, 0, countType(types, "node_retry_requested"))
	assert.Equal(e.T, 0, countType(types, "automatic_retry_consumed"))
	require.Len(e.T, payloadsOf(e, s, "r", "automatic_retry_discarded"), 1)
	assert.Contains(e.T, payloadsOf(e, s, "r", "automatic_retry_discarded")[0], `"reason":"latest_attempt_not_failed"`)
	admitOnly(e, s, newOwner(), ms(110))
	assert.Len(e.T, attemptsOf(e, s, "r"), 1, "no attempt 2 without an explicit retry")
	// The explicit retry is the way on.
	rq2, err := s.RetryFailedNode(e.Ctx, k, 1, ms(120))
	require.NoError(e.T, err)
	assert.Equal(e.T, workflow.RetryRequeue{Key: k, PreviousAttempt: 1, NextAttempt: 2}, rq2)
	o := newOwner()
	o.effect = workflow.Mutating
	admitOnly(e, s, o, ms(130), identity(k, 2))
}

func caseRetryStuckSchedule(e *env) {
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{}, nil)
	a, b, c := key("r", "n", "a"), key("r", "n", "b"), key("r", "n", "c")
	mkAct(e, s, a)
	mkAct(e, s, key("r", "m", "succ"), withPreds(workflow.NodeRef{NodeID: "n", ActivationID: "a"}))
	mkAct(e, s, b)
	mkAct(e, s, c)
	o := newOwner()
	o.unsupported["succ"] = true
	admitOnly(e, s, o, ms(10), identity(a, 1), identity(b, 1), identity(c, 1))
	observe(e, s, identity(a, 1), obs(workflow.ObservedFailed), ms(20))
	observe(e, s, identity(b, 1), obs(workflow.ObservedFailed), ms(20))
	sched := func(k workflow.ActivationKey, backoff int64) {
		e.T.Helper()
		_, err := s.Engine().ScheduleRetryForFailedAttempt(e.Ctx, workflow.RetryRequest{Key: k, Effect: workflow.ReadOnly, Reconciliation: workflow.IdempotentReplay, MaxAttempts: 3, Backoff: time.Duration(backoff) * time.Millisecond}, workflow.FailureOwnerReportedRetryable, ms(20))
		require.NoError(e.T, err)
	}
	sched(a, 5)  // due 25: a has a successor, so it can never be consumed
	sched(c, 6)  // due 26: c's attempt 1 is still admitted; it may fail yet
	sched(b, 10) // due 30
	rq, err := s.Engine().ConsumeNextDueRetry(e.Ctx, "r", ms(100))
	require.NoError(e.T, err, "a stuck schedule does not block the run")
	require.NotNil(e.T, rq)
	assert.Equal(e.T, workflow.RetryRequeue{Key: b, PreviousAttempt: 1, NextAttempt: 2}, *rq)
	assert.Nil(e.T, getSchedule(e, s, a), "the unconsumable schedule is discarded")
	assert.NotNil(e.T, getSchedule(e, s, c), "a schedule whose attempt has not settled is kept")
	assert.Nil(e.T, getSchedule(e, s, b))
	disc := payloadsOf(e, s, "r", "automatic_retry_discarded")
	require.Len(e.T, disc, 1)
	assert.Contains(e.T, disc[0], `"reason":"successors_exist"`)
	assert.Contains(e.T, disc[0], `"activation_id":"a"`)
	assert.Equal(e.T, []string{"node_retry_requested", "automatic_retry_consumed"}, lastTypes(e, s, "r", 2))
	assert.Equal(e.T, workflow.ActivationFailed, getAct(e, s, a).Status)
	// Nothing else is consumable now; c's schedule waits for its attempt.
	before := digest(e, "r")
	rq, err = s.Engine().ConsumeNextDueRetry(e.Ctx, "r", ms(101))
	require.NoError(e.T, err)
	assert.Nil(e.T, rq)
	unchanged(e, before, "a pass with only a waiting schedule", "r")
	observe(e, s, identity(c, 1), obs(workflow.ObservedFailed), ms(102))
	rq, err = s.Engine().ConsumeNextDueRetry(e.Ctx, "r", ms(103))
	require.NoError(e.T, err)
	require.NotNil(e.T, rq)
	assert.Equal(e.T, workflow.RetryRequeue{Key: c, PreviousAttempt: 1, NextAttempt: 2}, *rq)
	types := eventTypes(e, s, "r")
	assert.Equal(e.T, 2, countType(types, "automatic_retry_consumed"))
	assert.Equal(e.T, 1, countType(types, "automatic_retry_discarded"))
	admitOnly(e, s, o, ms(110), identity(b, 2), identity(c, 2))
}

func caseRetryRefusalVisible(e *env) {
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{}, nil)
	unavailableOnly := retryPolicy(3, 100)
	unavailableOnly.EligibleFailures = []workflow.FailureKind{workflow.FailureOwnerUnavailableBeforeAcceptance}
	safe := withEffect(workflow.ReadOnly, workflow.IdempotentReplay)
	rows := []struct {
		act  string
		mod  []func(*workflow.NewActivation)
		want workflow.RetryRefusal
	}{
		// A newcomer's activation: a policy, default effect and reconciliation.
		{"newcomer", []func(*workflow.NewActivation){withPolicy(retryPolicy(3, 100))},
			workflow.RetryRefusal{Reason: workflow.RefusedIneligible, Ineligible: workflow.ReasonUnsafeEffectOrReconciliation}},
		{"nopolicy", []func(*workflow.NewActivation){safe}, workflow.RetryRefusal{Reason: workflow.RefusedNoPolicy}},
		{"single", []func(*workflow.NewActivation){safe, withPolicy(retryPolicy(1, 100))},
			workflow.RetryRefusal{Reason: workflow.RefusedIneligible, Ineligible: workflow.ReasonAttemptsExhausted}},
		{"unavailable", []func(*workflow.NewActivation){safe, withPolicy(unavailableOnly)}, workflow.RetryRefusal{Reason: workflow.RefusedKindNotAdmitted}},
	}
	var ids []string
	for _, r := range rows {
		k := key("r", "n", r.act)
		mkAct(e, s, k, r.mod...)
		ids = append(ids, identity(k, 1))
	}
	admitOnly(e, s, newOwner(), ms(10), ids...)
	for _, r := range rows {
		k := key("r", "n", r.act)
		res := observe(e, s, identity(k, 1), obs(workflow.ObservedRetryableFailure), ms(20))
		assert.Equal(e.T, workflow.AttemptFailed, res.Status, r.act)
		assert.Nil(e.T, res.Schedule, r.act)
		require.NotNil(e.T, res.NotScheduled, "%s: the refusal is returned", r.act)
		assert.Equal(e.T, r.want, *res.NotScheduled, r.act)
		assert.Nil(e.T, getSchedule(e, s, k), r.act)
		assert.Equal(e.T, workflow.ActivationFailed, getAct(e, s, k).Status, r.act)
	}
	got := payloadsOf(e, s, "r", "automatic_retry_not_scheduled")
	require.Len(e.T, got, len(rows), "one event per refusal")
	assert.Equal(e.T, `{"activation_id":"newcomer","dispatch_identity":"`+ids[0]+
		`","failed_attempt":1,"ineligible_reason":"unsafe_effect_or_reconciliation","node_id":"n","reason":"ineligible","run_id":"r"}`, got[0])
	assert.Equal(e.T, `{"activation_id":"nopolicy","dispatch_identity":"`+ids[1]+
		`","failed_attempt":1,"node_id":"n","reason":"no_policy","run_id":"r"}`, got[1])
	assert.Contains(e.T, got[2], `"ineligible_reason":"attempts_exhausted"`)
	assert.Contains(e.T, got[3], `"reason":"failure_kind_not_admitted"`)
	// A terminal failure does not ask for a retry: nothing to refuse.
	mkRun(e, s, "t", workflow.Limits{}, nil)
	k, ok := key("t", "n", "terminal"), key("t", "n", "allowed")
	mkAct(e, s, k, safe, withPolicy(retryPolicy(3, 100)))
	mkAct(e, s, ok, safe, withPolicy(retryPolicy(3, 100)))
	admitOnly(e, s, newOwner(), ms(30), identity(ok, 1), identity(k, 1))
	res := observe(e, s, identity(k, 1), obs(workflow.ObservedFailed), ms(40))
	assert.Nil(e.T, res.Schedule)
	assert.Nil(e.T, res.NotScheduled)
	assert.Empty(e.T, payloadsOf(e, s, "t", "automatic_retry_not_scheduled"))
	// The class that allows it schedules, with no refusal.
	res = observe(e, s, identity(ok, 1), obs(workflow.ObservedRetryableFailure), ms(40))
	assert.NotNil(e.T, res.Schedule)
	assert.Nil(e.T, res.NotScheduled)
}

func caseRetryNextDueRace(e *env) {
	const workers = 8
	s := store(e)
	k, res := retryable(e, s, "r", 100)
	require.NotNil(e.T, res.Schedule)
	stores := []*workflow.Store{s}
	if e.Caps.MultiInstance {
		stores = append(stores, e.newStore(e.Open()))
	}
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		mu    sync.Mutex
		won   []workflow.RetryRequeue
		none  int
		errs  []error
	)
	for _, st := range stores {
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				rq, err := st.Engine().ConsumeNextDueRetry(e.Ctx, "r", ms(200))
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err != nil:
					errs = append(errs, err)
				case rq != nil:
					won = append(won, *rq)
				default:
					none++
				}
			}()
		}
	}
	close(start)
	wg.Wait()
	require.Empty(e.T, errs, "a racing consumer that finds nothing sees nil, not an error")
	require.Len(e.T, won, 1, "exactly one consumes")
	assert.Equal(e.T, workflow.RetryRequeue{Key: k, PreviousAttempt: 1, NextAttempt: 2}, won[0])
	assert.Equal(e.T, workers*len(stores)-1, none)
	assert.Equal(e.T, 1, countType(eventTypes(e, s, "r"), "automatic_retry_consumed"))
}
