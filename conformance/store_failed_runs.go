package conformance

import (
	"encoding/json"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/event"
	"github.com/wfstore/wfstore/workflow"
)

// failedRunCases prove that a failed run can be ended and pruned: prune
// takes a failed run that nothing can restart any more, tree cancellation
// stops a failed run's automatic retries and keeps it failed, and
// RequestCancellation keeps refusing a failed run.
func failedRunCases() []testCase {
	return []testCase{
		{Name: "prune_accepts_a_failed_run_with_no_retry_schedule_and_no_active_attempt", Run: caseFailedRunPrunable},
		{Name: "tree_cancellation_of_a_failed_root_keeps_it_failed_deletes_its_retry_schedules_and_makes_it_prunable", Run: caseFailedRootTreeCancel},
	}
}

func caseFailedRunPrunable(e *env) {
	s := store(e)
	o := newOwner()
	// A failed run without a schedule and with nothing active.
	fk := failedPlain(e, s, "f", "a", workflow.Limits{})
	// A failed run with an automatic retry still to be consumed.
	mkRun(e, s, "sched", workflow.Limits{}, nil)
	sk := key("sched", "n", "a")
	mkAct(e, s, sk, withPolicy(retryPolicy(3, 100)), withEffect(workflow.ReadOnly, workflow.IdempotentReplay))
	// A failed run whose other activation is still running.
	mkRun(e, s, "active", workflow.Limits{}, nil)
	ak, bk := key("active", "n", "a"), key("active", "n", "b")
	mkAct(e, s, ak)
	mkAct(e, s, bk)
	admitOnly(e, s, o, ms(30), identity(ak, 1), identity(bk, 1), identity(sk, 1))
	require.NotNil(e.T, observe(e, s, identity(sk, 1), obs(workflow.ObservedRetryableFailure), ms(31)).Schedule)
	observe(e, s, identity(ak, 1), obs(workflow.ObservedFailed), ms(32))
	require.Equal(e.T, workflow.RunFailed, getRun(e, s, "sched").Status)
	require.Equal(e.T, workflow.RunFailed, getRun(e, s, "active").Status)

	all := []string{"f", "sched", "active"}
	before := digest(e, all...)
	for _, c := range []struct {
		what string
		run  string
	}{{"a failed run with a retry schedule", "sched"}, {"a failed run with an active attempt", "active"}} {
		for _, dry := range []bool{false, true} {
			_, err := s.Prune(e.Ctx, workflow.PruneOptions{Runs: []string{c.run}, DryRun: dry}, ms(100))
			requireIs(e.T, err, workflow.ErrIneligible, "%s (dry run %v)", c.what, dry)
		}
	}
	unchanged(e, before, "refused prunes of failed runs", all...)

	rep, err := s.Prune(e.Ctx, workflow.PruneOptions{Runs: []string{"f"}}, ms(101))
	require.NoError(e.T, err, "a failed run nothing can restart is pruned")
	require.Len(e.T, rep.Runs, 1)
	assert.Equal(e.T, workflow.RunFailed, rep.Runs[0].Status)
	assert.Equal(e.T, workflow.RunFailed, getRun(e, s, "f").Status, "it stays failed")
	assert.Equal(e.T, []string{string(event.RunPruned)}, eventTypes(e, s, "f"))
	assert.Equal(e.T, workflow.ActivationFailed, getAct(e, s, fk).Status)
	_, err = s.RetryFailedNode(e.Ctx, fk, 1, ms(102))
	require.Error(e.T, err, "a pruned failed run cannot be retried")

	// Once the other activation settles, the failed run is prunable too.
	observe(e, s, identity(bk, 1), obs(workflow.ObservedSucceeded), ms(110))
	require.Equal(e.T, workflow.RunFailed, getRun(e, s, "active").Status)
	_, err = s.Prune(e.Ctx, workflow.PruneOptions{Runs: []string{"active"}}, ms(111))
	require.NoError(e.T, err)

	// A tree whose child run failed and whose root completed is prunable:
	// AllFinished chooses the completed root, never the failed child, which
	// is pruned when named.
	mkRun(e, s, "t", workflow.Limits{}, nil)
	child := spawn(e, s, "t", "a", 200)
	ck := key(child, "n", "c")
	mkAct(e, s, ck)
	admitOnly(e, s, o, ms(201), identity(ck, 1))
	observe(e, s, identity(ck, 1), obs(workflow.ObservedFailed), ms(202))
	require.Equal(e.T, workflow.RunFailed, getRun(e, s, child).Status)
	observe(e, s, parentOf("t", "a"), obs(workflow.ObservedSucceeded), ms(203))
	require.Equal(e.T, workflow.RunCompleted, getRun(e, s, "t").Status)
	rep, err = s.Prune(e.Ctx, workflow.PruneOptions{AllFinished: true, FinishedBefore: ms(300), After: "s"}, ms(300))
	require.NoError(e.T, err)
	var got []string
	for _, r := range rep.Runs {
		got = append(got, r.RunID)
	}
	assert.Equal(e.T, []string{"t"}, got, "the completed root of a finished tree with a failed child")
	assert.Equal(e.T, workflow.RunFailed, getRun(e, s, child).Status)
	assert.NotEqual(e.T, []string{string(event.RunPruned)}, eventTypes(e, s, child), "the failed child is not chosen")
	_, err = s.Prune(e.Ctx, workflow.PruneOptions{Runs: []string{child}}, ms(301))
	require.NoError(e.T, err, "named, it is pruned")
	requireVerified(e, s, "after pruning failed runs")
}

func caseFailedRootTreeCancel(e *env) {
	s := store(e)
	o := newOwner()
	mkRun(e, s, "r", workflow.Limits{}, nil)
	x, y, p := key("r", "n", "x"), key("r", "n", "y"), key("r", "n", "p")
	mkAct(e, s, x, withPolicy(retryPolicy(3, 100)), withEffect(workflow.ReadOnly, workflow.IdempotentReplay))
	mkAct(e, s, y)
	mkAct(e, s, p)
	o.unsupported["p"] = true // p stays pending
	admitOnly(e, s, o, ms(10), identity(x, 1), identity(y, 1))
	require.NotNil(e.T, observe(e, s, identity(x, 1), obs(workflow.ObservedRetryableFailure), ms(11)).Schedule)
	require.Equal(e.T, workflow.RunFailed, getRun(e, s, "r").Status)

	// RequestCancellation refuses a failed run, changing nothing.
	before := digest(e, "r")
	_, err := s.RequestCancellation(e.Ctx, "r", nil, ms(20))
	requireIs(e.T, err, workflow.ErrIneligible, "a failed run cannot be cancelled")
	unchanged(e, before, "cancelling a failed root", "r")

	// Tree cancellation records the intent, keeps it failed and deletes its
	// schedule in the same transaction.
	st, err := s.RequestTreeCancellation(e.Ctx, "r", nil, ms(21))
	require.NoError(e.T, err)
	assert.Equal(e.T, workflow.RunFailed, st)
	run := getRun(e, s, "r")
	assert.Equal(e.T, workflow.RunFailed, run.Status, "a failed run stays failed")
	assert.Equal(e.T, ms(21).UnixMilli(), msOf(run.CancelRequestedAt), "with the intent recorded")
	assert.Nil(e.T, getSchedule(e, s, x), "its retry schedule is deleted")
	assert.Equal(e.T, workflow.ActivationCancelled, getAct(e, s, p).Status, "its unstarted activation is cancelled")
	assert.Equal(e.T, workflow.ActivationFailed, getAct(e, s, x).Status)
	types := eventTypes(e, s, "r")
	assert.Equal(e.T, 1, countType(types, "cancellation_requested"))
	require.Equal(e.T, 1, countType(types, "automatic_retry_discarded"))
	var discarded struct{ Reason string }
	require.NoError(e.T, json.Unmarshal([]byte(payloadsOf(e, s, "r", "automatic_retry_discarded")[0]), &discarded))
	assert.Equal(e.T, "cancellation_requested", discarded.Reason)
	assert.Zero(e.T, countType(types, "run_cancelled"))

	before = digest(e, "r")
	_, err = s.RequestTreeCancellation(e.Ctx, "r", nil, ms(22))
	require.NoError(e.T, err, "again: a no-op")
	_, err = s.Engine().ConsumeDueRetry(e.Ctx, x, ms(200))
	requireIs(e.T, err, workflow.ErrNotFound, "no schedule is left to consume")
	_, err = s.RetryFailedNode(e.Ctx, x, 1, ms(201))
	requireIs(e.T, err, workflow.ErrIneligible, "no explicit retry after cancellation")
	_, err = s.Prune(e.Ctx, workflow.PruneOptions{Runs: []string{"r"}}, ms(202))
	requireIs(e.T, err, workflow.ErrIneligible, "y is still active")
	unchanged(e, before, "retries and prune of a cancelling failed run", "r")

	// y's late success counts as cancelled; the run stays failed and can be
	// pruned.
	res := observe(e, s, identity(y, 1), obs(workflow.ObservedSucceeded), ms(210))
	assert.Equal(e.T, workflow.AttemptCancelled, res.Status)
	assert.Equal(e.T, workflow.RunFailed, getRun(e, s, "r").Status)
	rep, err := s.Prune(e.Ctx, workflow.PruneOptions{Runs: []string{"r"}}, ms(211))
	require.NoError(e.T, err)
	assert.Equal(e.T, workflow.RunFailed, rep.Runs[0].Status)
	requireVerified(e, s, "after ending and pruning a failed root")
}
