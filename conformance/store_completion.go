package conformance

import (
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/workflow"
)

// completionCases prove that every run finishes: completion is evaluated on
// every settlement, not only after a success, so a run's final status never
// depends on the order in which its activations settle.
func completionCases() []testCase {
	return []testCase{
		{Name: "run_completes_whatever_the_order_of_success_and_cancellation", Run: caseCompletionOrder},
		{Name: "repair_confirming_cancellation_of_the_last_open_activation_completes_the_run", Run: caseCompletionRepairCancelled},
		{Name: "fanout_member_cancellation_that_leaves_nothing_open_completes_the_run", Run: caseCompletionFanOutMember},
		{Name: "run_with_a_pending_retry_schedule_does_not_complete", Run: caseCompletionPendingSchedule},
		{Name: "run_with_an_activation_failed_for_good_fails_whatever_the_order", Run: caseCompletionFailedForGood},
	}
}

// caseCompletionOrder: a succeeds and b is observed cancelled by its owner,
// in either order: the run completes both times, with one run_completed.
func caseCompletionOrder(e *env) {
	s := store(e)
	o := newOwner()
	for _, tc := range []struct {
		run         string
		cancelFirst bool
	}{{"succeed-then-cancel", false}, {"cancel-then-succeed", true}} {
		mkRun(e, s, tc.run, workflow.Limits{}, nil)
		a, b := key(tc.run, "n", "a"), key(tc.run, "n", "b")
		mkAct(e, s, a)
		mkAct(e, s, b)
		admitOnly(e, s, o, ms(10), identity(a, 1), identity(b, 1))
		first, second := func() { observe(e, s, identity(a, 1), obs(workflow.ObservedSucceeded), ms(20)) },
			func() { observe(e, s, identity(b, 1), obs(workflow.ObservedCancelled), ms(21)) }
		if tc.cancelFirst {
			first, second = second, first
		}
		first()
		assert.Equal(e.T, workflow.RunRunning, getRun(e, s, tc.run).Status, "%s: one activation is still running", tc.run)
		second()
		assert.Equal(e.T, workflow.RunCompleted, getRun(e, s, tc.run).Status, "%s: nothing of the run is open", tc.run)
		types := eventTypes(e, s, tc.run)
		assert.Equal(e.T, 1, countType(types, "run_completed"), tc.run)
		assert.Equal(e.T, "run_completed", types[len(types)-1], tc.run)
	}
	s = e.newStore(e.Reopen())
	assert.Equal(e.T, workflow.RunCompleted, getRun(e, s, "succeed-then-cancel").Status, "durably")

	// A run whose only activation its owner cancelled finishes too.
	mkRun(e, s, "only", workflow.Limits{}, nil)
	k := key("only", "n", "a")
	mkAct(e, s, k)
	admitOnly(e, s, o, ms(30), identity(k, 1))
	observe(e, s, identity(k, 1), obs(workflow.ObservedCancelled), ms(31))
	assert.Equal(e.T, workflow.RunCompleted, getRun(e, s, "only").Status, "nothing is left open")
	assert.Equal(e.T, []string{"attempt_cancelled", "run_completed"}, lastTypes(e, s, "only", 2))
}

// caseCompletionRepairCancelled: a succeeded, b's mutation is of unknown
// outcome; the operator confirms b was cancelled, and the run completes in
// the repair's transaction.
func caseCompletionRepairCancelled(e *env) {
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{}, nil)
	a, b := key("r", "n", "a"), key("r", "n", "b")
	mkAct(e, s, a)
	mkAct(e, s, b, withEffect(workflow.Mutating, workflow.RepairRequired))
	o := newOwner()
	o.effect = workflow.Mutating
	admitOnly(e, s, o, ms(10), identity(a, 1), identity(b, 1))
	observe(e, s, identity(a, 1), obs(workflow.ObservedSucceeded), ms(20))
	observe(e, s, identity(b, 1), obs(workflow.ObservedUnknown), ms(21))
	require.Equal(e.T, workflow.RunRepairRequired, getRun(e, s, "r").Status)
	require.NoError(e.T, s.Repair(e.Ctx, workflow.RepairRequest{Identity: identity(b, 1), Action: workflow.RepairConfirmCancelled}, ms(30)))
	assert.Equal(e.T, workflow.ActivationCancelled, getAct(e, s, b).Status)
	assert.Equal(e.T, workflow.RunCompleted, getRun(e, s, "r").Status, "the repaired activation was the last open one")
	assert.Equal(e.T, []string{"attempt_repaired", "run_completed"}, lastTypes(e, s, "r", 2))
}

// caseCompletionFanOutMember: the last member of a fan-out is cancelled by
// its owner after its sibling and controller succeeded; and a retirement
// that cancels the last unstarted member completes the run too.
func caseCompletionFanOutMember(e *env) {
	s := store(e)
	o := newOwner()
	c, m := fanOut(e, s, "f", nil, 2, 2)
	admitOnly(e, s, o, ms(10), identity(c, 1), identity(m[0], 1), identity(m[1], 1))
	observe(e, s, identity(c, 1), obs(workflow.ObservedSucceeded), ms(11))
	observe(e, s, identity(m[0], 1), obs(workflow.ObservedSucceeded), ms(12))
	require.Equal(e.T, workflow.RunRunning, getRun(e, s, "f").Status)
	observe(e, s, identity(m[1], 1), obs(workflow.ObservedCancelled), ms(13))
	assert.Equal(e.T, workflow.RunCompleted, getRun(e, s, "f").Status, "the member's cancellation left nothing open")
	assert.Equal(e.T, 1, countType(eventTypes(e, s, "f"), "run_completed"))

	// Retirement: member 1 never started; settling the retirement cancels
	// it, and with it the run's last open activation.
	c, m = fanOut(e, s, "g", nil, 2, 1)
	admitOnly(e, s, o, ms(20), identity(c, 1), identity(m[0], 1))
	observe(e, s, identity(c, 1), obs(workflow.ObservedSucceeded), ms(21))
	require.NoError(e.T, s.RetireFanOut(e.Ctx, c, ms(22)))
	observe(e, s, identity(m[0], 1), obs(workflow.ObservedSucceeded), ms(23))
	require.Equal(e.T, workflow.RunRunning, getRun(e, s, "g").Status, "member 1 is still pending")
	require.NoError(e.T, s.Engine().SettleFanOutRetirement(e.Ctx, c, ms(24)))
	assert.Equal(e.T, workflow.ActivationCancelled, getAct(e, s, m[1]).Status)
	assert.Equal(e.T, workflow.RunCompleted, getRun(e, s, "g").Status, "the retirement cancelled the last open member")
}

// caseCompletionPendingSchedule: a run that a sibling's retry made running
// again does not complete while another activation's retry schedule is
// still to be consumed, whichever settlement leaves nothing else open.
func caseCompletionPendingSchedule(e *env) {
	s := store(e)
	o := newOwner()
	mkRun(e, s, "q", workflow.Limits{}, nil)
	x, y, z := key("q", "n", "x"), key("q", "n", "y"), key("q", "n", "z")
	pol := withPolicy(retryPolicy(3, 100))
	retryable := withEffect(workflow.ReadOnly, workflow.IdempotentReplay)
	mkAct(e, s, x, pol, retryable)
	mkAct(e, s, y)
	mkAct(e, s, z, pol, retryable)
	admitOnly(e, s, o, ms(10), identity(x, 1), identity(y, 1), identity(z, 1))
	require.NotNil(e.T, observe(e, s, identity(x, 1), obs(workflow.ObservedRetryableFailure), ms(20)).Schedule)
	require.NotNil(e.T, observe(e, s, identity(z, 1), obs(workflow.ObservedRetryableFailure), ms(21)).Schedule)
	_, err := s.Engine().ConsumeDueRetry(e.Ctx, z, ms(121))
	require.NoError(e.T, err)
	admitOnly(e, s, o, ms(122), identity(z, 2))
	observe(e, s, identity(z, 2), obs(workflow.ObservedSucceeded), ms(123))
	require.Equal(e.T, workflow.RunRunning, getRun(e, s, "q").Status)
	observe(e, s, identity(y, 1), obs(workflow.ObservedCancelled), ms(124))
	assert.Equal(e.T, workflow.RunRunning, getRun(e, s, "q").Status, "x's retry schedule is still to be consumed")
	assert.Zero(e.T, countType(eventTypes(e, s, "q"), "run_completed"))
	_, err = s.Engine().ConsumeDueRetry(e.Ctx, x, ms(130))
	require.NoError(e.T, err)
	admitOnly(e, s, o, ms(131), identity(x, 2))
	observe(e, s, identity(x, 2), obs(workflow.ObservedSucceeded), ms(132))
	assert.Equal(e.T, workflow.RunCompleted, getRun(e, s, "q").Status)

}

// caseCompletionFailedForGood: x fails with a retry scheduled and y fails
// for good; x's retry makes the run running again and then succeeds. The
// run ends failed, as it does when y fails last: with nothing open, an
// activation failed for good fails the run instead of completing it.
func caseCompletionFailedForGood(e *env) {
	s := store(e)
	o := newOwner()
	pol, eff := withPolicy(retryPolicy(3, 100)), withEffect(workflow.ReadOnly, workflow.IdempotentReplay)
	for _, tc := range []struct {
		run       string
		failFirst bool
	}{{"y-fails-first", true}, {"y-fails-last", false}} {
		mkRun(e, s, tc.run, workflow.Limits{}, nil)
		x, y := key(tc.run, "n", "x"), key(tc.run, "n", "y")
		mkAct(e, s, x, pol, eff)
		mkAct(e, s, y)
		admitOnly(e, s, o, ms(10), identity(x, 1), identity(y, 1))
		require.NotNil(e.T, observe(e, s, identity(x, 1), obs(workflow.ObservedRetryableFailure), ms(20)).Schedule)
		if tc.failFirst {
			observe(e, s, identity(y, 1), obs(workflow.ObservedFailed), ms(21))
		}
		_, err := s.Engine().ConsumeDueRetry(e.Ctx, x, ms(120))
		require.NoError(e.T, err)
		require.Equal(e.T, workflow.RunRunning, getRun(e, s, tc.run).Status, "%s: x's retry requeued the run", tc.run)
		admitOnly(e, s, o, ms(121), identity(x, 2))
		observe(e, s, identity(x, 2), obs(workflow.ObservedSucceeded), ms(122))
		if !tc.failFirst {
			require.Equal(e.T, workflow.RunRunning, getRun(e, s, tc.run).Status, "%s: y is still running", tc.run)
			observe(e, s, identity(y, 1), obs(workflow.ObservedFailed), ms(123))
		}
		assert.Equal(e.T, workflow.RunFailed, getRun(e, s, tc.run).Status, "%s: y failed for good", tc.run)
		assert.Zero(e.T, countType(eventTypes(e, s, tc.run), "run_completed"), tc.run)
	}
}
