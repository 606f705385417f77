package conformance

import (
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/workflow"
)

// retryVisibilityCases prove that a failed run whose automatic retry is
// still pending is told apart from a finally failed one: its summary names
// the retry due, and a wait-all fan-out does not record a member as failed
// while that member's retry may still make it succeed.
func retryVisibilityCases() []testCase {
	return []testCase{
		{Name: "run_summary_tells_a_failed_run_with_a_retry_due_from_a_finally_failed_one", Run: caseSummaryRetryDue},
		{Name: "wait_all_fanout_records_no_failure_for_a_member_whose_retry_is_pending", Run: caseWaitAllPendingRetry},
	}
}

func caseSummaryRetryDue(e *env) {
	s := store(e)
	o := newOwner()
	// A finally failed run has no retry due.
	failedPlain(e, s, "f", "a", workflow.Limits{})
	sum, err := s.RunSummary(e.Ctx, "f")
	require.NoError(e.T, err)
	assert.Equal(e.T, workflow.RunFailed, sum.Run.Status)
	assert.Nil(e.T, sum.NextRetry, "failed, no retry due")

	mkRun(e, s, "r", workflow.Limits{}, nil)
	x, y := key("r", "n", "x"), key("r", "n", "y")
	pol, eff := withEffect(workflow.ReadOnly, workflow.IdempotentReplay), withPolicy(retryPolicy(3, 100))
	mkAct(e, s, x, pol, eff)
	mkAct(e, s, y, pol, withPolicy(retryPolicy(3, 50)))
	admitOnly(e, s, o, ms(10), identity(x, 1), identity(y, 1))
	sum, err = s.RunSummary(e.Ctx, "r")
	require.NoError(e.T, err)
	assert.Nil(e.T, sum.NextRetry, "nothing failed yet")

	require.NotNil(e.T, observe(e, s, identity(x, 1), obs(workflow.ObservedRetryableFailure), ms(20)).Schedule)
	require.NotNil(e.T, observe(e, s, identity(y, 1), obs(workflow.ObservedRetryableFailure), ms(40)).Schedule)
	sum, err = s.RunSummary(e.Ctx, "r")
	require.NoError(e.T, err)
	assert.Equal(e.T, workflow.RunFailed, sum.Run.Status)
	require.NotNil(e.T, sum.NextRetry, "failed, with a retry due")
	assert.Equal(e.T, y, sum.NextRetry.Key, "the earliest due retry")
	assert.Equal(e.T, ms(90), sum.NextRetry.Due)

	_, err = s.Engine().ConsumeDueRetry(e.Ctx, y, ms(90))
	require.NoError(e.T, err)
	sum, err = s.RunSummary(e.Ctx, "r")
	require.NoError(e.T, err)
	require.NotNil(e.T, sum.NextRetry)
	assert.Equal(e.T, x, sum.NextRetry.Key, "then the next one")
	assert.Equal(e.T, ms(120), sum.NextRetry.Due)

}

func caseWaitAllPendingRetry(e *env) {
	s := store(e)
	o := fanOutOwner()
	mkRun(e, s, "r", workflow.Limits{}, nil)
	c := key("r", "ctl", "c")
	mkAct(e, s, c)
	_, err := s.AddFanOut(e.Ctx, workflow.NewFanOut{Controller: c, Members: memberInputs(2), MaxConcurrency: 2, OnFailure: workflow.WaitAll,
		Reconciliation: workflow.IdempotentReplay, RetryPolicy: retryPolicy(2, 5)}, ms(2))
	require.NoError(e.T, err)
	m := []workflow.ActivationKey{workflow.MemberKey(c, 0), workflow.MemberKey(c, 1)}
	admitOnly(e, s, o, ms(10), identity(m[0], 1), identity(m[1], 1))

	require.NotNil(e.T, observe(e, s, identity(m[0], 1), obs(workflow.ObservedRetryableFailure), ms(20)).Schedule)
	observe(e, s, identity(m[1], 1), obs(workflow.ObservedSucceeded), ms(21))
	assert.Empty(e.T, payloadsOf(e, s, "r", "fan_out_failed"), "member 0 may still succeed: its retry is pending")

	_, err = s.Engine().ConsumeDueRetry(e.Ctx, m[0], ms(25))
	require.NoError(e.T, err)
	admitOnly(e, s, o, ms(26), identity(m[0], 2))
	observe(e, s, identity(m[0], 2), obs(workflow.ObservedSucceeded), ms(27))
	assert.Empty(e.T, payloadsOf(e, s, "r", "fan_out_failed"), "every member succeeded in the end")
	assert.Equal(e.T, workflow.RunRunning, getRun(e, s, "r").Status, "the controller is still pending")

	// The same group whose member then fails for good records the failure
	// once, naming that member.
	mkRun(e, s, "q", workflow.Limits{}, nil)
	qc := key("q", "ctl", "c")
	mkAct(e, s, qc)
	_, err = s.AddFanOut(e.Ctx, workflow.NewFanOut{Controller: qc, Members: memberInputs(2), MaxConcurrency: 2, OnFailure: workflow.WaitAll,
		Reconciliation: workflow.IdempotentReplay, RetryPolicy: retryPolicy(2, 5)}, ms(2))
	require.NoError(e.T, err)
	qm := []workflow.ActivationKey{workflow.MemberKey(qc, 0), workflow.MemberKey(qc, 1)}
	admitOnly(e, s, o, ms(30), identity(qm[0], 1), identity(qm[1], 1))
	require.NotNil(e.T, observe(e, s, identity(qm[0], 1), obs(workflow.ObservedRetryableFailure), ms(31)).Schedule)
	observe(e, s, identity(qm[1], 1), obs(workflow.ObservedSucceeded), ms(32))
	assert.Empty(e.T, payloadsOf(e, s, "q", "fan_out_failed"))
	_, err = s.Engine().ConsumeDueRetry(e.Ctx, qm[0], ms(36))
	require.NoError(e.T, err)
	admitOnly(e, s, o, ms(37), identity(qm[0], 2))
	res := observe(e, s, identity(qm[0], 2), obs(workflow.ObservedRetryableFailure), ms(38))
	require.Nil(e.T, res.Schedule, "max_attempts reached")
	got := payloadsOf(e, s, "q", "fan_out_failed")
	require.Len(e.T, got, 1)
	assert.JSONEq(e.T, `{"controller_activation_id":"c","failed_members":[0],"policy":"wait_all"}`, got[0])
	assert.Equal(e.T, workflow.RunFailed, getRun(e, s, "q").Status)
}
