package conformance

import (
	"encoding/json"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/workflow"
)

// Cancellation of composition trees and run completion.
func treeCases() []testCase {
	return []testCase{
		{Name: "tree_root_cancellation_waits_for_its_child_runs", Run: caseTreeRootWaitsForChildren},
		{Name: "tree_cancellation_reaches_every_descendant_once", Run: caseTreeCancelEveryDescendant},
		{Name: "tree_cancellation_finalises_the_parent_chain_with_the_last_child", Run: caseTreeParentChain},
		{Name: "tree_cancellation_stops_retries_of_failed_descendants_and_keeps_them_failed", Run: caseTreeFailedDescendant},
		{Name: "tree_run_completes_when_its_last_activation_completes", Run: caseTreeRunCompletes},
		{Name: "tree_run_completion_waits_for_retry_schedules_repairs_and_members", Run: caseTreeCompletionWaits},
	}
}

func parentOf(run, act string) string { return identity(key(run, "n", act), 1) }

func caseTreeRootWaitsForChildren(e *env) {
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{}, nil)
	child := spawn(e, s, "r", "a", 10)
	ck := key(child, "n", "c")
	mkAct(e, s, ck)
	o := newOwner()
	sum := dispatch(e, s, o, workflow.DispatchOptions{RunID: child}, ms(20))
	require.Equal(e.T, []string{identity(ck, 1)}, refIdentities(sum.Admitted))
	pid := parentOf("r", "a")

	st, err := s.RequestCancellation(e.Ctx, "r", nil, ms(30))
	require.NoError(e.T, err)
	assert.Equal(e.T, workflow.RunRunning, st)
	assert.Zero(e.T, msOf(getRun(e, s, child).CancelRequestedAt), "cancelling a root alone does not cancel its children")

	res := observe(e, s, pid, obs(workflow.ObservedRunning), ms(31))
	assert.Equal(e.T, workflow.AttemptCancelling, res.Status, "a child run's parent attempt observed running becomes cancelling")
	assert.Equal(e.T, workflow.AttemptCancelling, getAttempt(e, s, key("r", "n", "a"), 1).Status)
	assert.Equal(e.T, workflow.RunRunning, getRun(e, s, "r").Status, "the root waits for its child")
	assert.Equal(e.T, workflow.RunRunning, getRun(e, s, child).Status)
	before := digest(e, "r", child)
	res = observe(e, s, pid, obs(workflow.ObservedAdmitted), ms(32))
	assert.Equal(e.T, workflow.AttemptCancelling, res.Status, "admitted keeps it cancelling")
	unchanged(e, before, "a second running/admitted observation of a cancelling parent attempt", "r", child)

	// An ordinary attempt of a cancelling run is not made cancelling by a
	// running observation, even when its owner's receipt imitates a child
	// receipt; its owner's report of finished work settles it cancelled.
	mkRun(e, s, "plain", workflow.Limits{}, nil)
	pk := key("plain", "n", "a")
	mkAct(e, s, pk)
	o.receipt = func(p workflow.PreparedDispatch) json.RawMessage {
		return json.RawMessage(`{"owner":"wfstore.workflow-child/v1","child_run_id":"` + child + `","root_run_id":"r"}`)
	}
	admitOnly(e, s, o, ms(33), identity(pk, 1))
	o.receipt = nil
	_, err = s.RequestCancellation(e.Ctx, "plain", nil, ms(34))
	require.NoError(e.T, err)
	res = observe(e, s, identity(pk, 1), obs(workflow.ObservedRunning), ms(35))
	assert.Equal(e.T, workflow.AttemptRunning, res.Status, "an attempt that started no child run is not made cancelling")
	res = observe(e, s, identity(pk, 1), obs(workflow.ObservedSucceeded), ms(35))
	assert.Equal(e.T, workflow.AttemptCancelled, res.Status, "an attempt that started no child run is cancelled")
	assert.Equal(e.T, workflow.RunCancelled, getRun(e, s, "plain").Status)

	// The owner reports the parent attempt cancelled: the root still waits.
	res = observe(e, s, pid, obs(workflow.ObservedCancelled), ms(40))
	assert.Equal(e.T, workflow.AttemptCancelled, res.Status)
	assert.Equal(e.T, int64(0), rawRun(e, "r").ActiveCount)
	assert.Equal(e.T, workflow.RunRunning, getRun(e, s, "r").Status, "the root finalises only after its child runs settle")
	assert.Equal(e.T, 0, countType(eventTypes(e, s, "r"), "run_cancelled"))

	// The child settles: the root finalises in the same transaction.
	_, err = s.RequestCancellation(e.Ctx, child, nil, ms(50))
	require.NoError(e.T, err)
	res = observe(e, s, identity(ck, 1), obs(workflow.ObservedSucceeded), ms(51))
	assert.Equal(e.T, workflow.AttemptCancelled, res.Status)
	assert.Equal(e.T, workflow.RunCancelled, getRun(e, s, child).Status)
	assert.Equal(e.T, workflow.RunCancelled, getRun(e, s, "r").Status, "the child's finalisation finalises its parent")
	assert.Equal(e.T, []string{"run_cancelled"}, lastTypes(e, s, "r", 1))
	assert.Equal(e.T, 1, countType(eventTypes(e, s, "r"), "run_cancelled"))

	s = e.newStore(e.Reopen())
	assert.Equal(e.T, workflow.RunCancelled, getRun(e, s, "r").Status, "durably")
}

// tree builds r → c (from r/n/a#1) → g (from c/n/x#1) and r → d (from
// r/n/b#1), with a pending activation in each run.
func tree(e *env, s *workflow.Store, r string) (c, d, g string) {
	e.T.Helper()
	mkRun(e, s, r, workflow.Limits{}, nil)
	c = spawn(e, s, r, "a", 10)
	d = spawn(e, s, r, "b", 12)
	g = spawn(e, s, c, "x", 14)
	for _, k := range []workflow.ActivationKey{key(r, "n", "p"), key(c, "n", "y"), key(d, "n", "z"), key(g, "n", "w")} {
		mkAct(e, s, k)
	}
	return c, d, g
}

func caseTreeCancelEveryDescendant(e *env) {
	s := store(e)
	c, d, g := tree(e, s, "r")
	all := []string{"r", c, d, g}

	st, err := s.RequestTreeCancellation(e.Ctx, "r", nil, ms(20))
	require.NoError(e.T, err)
	assert.Equal(e.T, workflow.RunRunning, st, "the root's parent attempts are active")
	for _, id := range all {
		run := getRun(e, s, id)
		assert.Equal(e.T, ms(20).UnixMilli(), msOf(run.CancelRequestedAt), "run %s has its cancellation requested", id)
		assert.Equal(e.T, 1, countType(eventTypes(e, s, id), "cancellation_requested"), "one cancellation_requested event in %s", id)
	}
	for _, k := range []workflow.ActivationKey{key("r", "n", "p"), key(c, "n", "y"), key(d, "n", "z"), key(g, "n", "w")} {
		assert.Equal(e.T, workflow.ActivationCancelled, getAct(e, s, k).Status, "unstarted %v is cancelled", k)
	}
	assert.Equal(e.T, workflow.RunCancelled, getRun(e, s, d).Status, "a quiescent child is cancelled at once")
	assert.Equal(e.T, workflow.RunCancelled, getRun(e, s, g).Status, "a quiescent grandchild is cancelled at once")
	assert.Equal(e.T, []string{"cancellation_requested", "run_cancelled"}, lastTypes(e, s, g, 2))
	assert.Equal(e.T, workflow.RunRunning, getRun(e, s, c).Status, "a child with an active attempt waits")
	assert.Equal(e.T, workflow.RunRunning, getRun(e, s, "r").Status)

	before := digest(e, all...)
	st, err = s.RequestTreeCancellation(e.Ctx, "r", nil, ms(21))
	require.NoError(e.T, err, "a second tree cancellation")
	assert.Equal(e.T, workflow.RunRunning, st)
	unchanged(e, before, "a second tree cancellation", all...)
	_, err = s.RequestCancellation(e.Ctx, c, nil, ms(22))
	require.NoError(e.T, err)
	unchanged(e, before, "cancelling a child of a cancelled tree", all...)

	// Nothing in the tree is admitted, handed off or started any more.
	o := newOwner()
	admitOnly(e, s, o, ms(30))
	assert.Equal(e.T, 0, o.totalCalls())
	_, err = s.AddActivation(e.Ctx, workflow.NewActivation{Key: key(c, "n", "new"), Input: json.RawMessage(`{}`)}, ms(31))
	requireIs(e.T, err, workflow.ErrIneligible, "no new work in a cancelled tree")
	unchanged(e, before, "admission in a cancelled tree", all...)

	// Refusals change nothing.
	_, err = s.RequestTreeCancellation(e.Ctx, c, nil, ms(32))
	requireIs(e.T, err, workflow.ErrIneligible, "only a composition root")
	_, err = s.RequestTreeCancellation(e.Ctx, "r", authority(1, "x"), ms(33))
	requireIs(e.T, err, workflow.ErrStaleAuthority)
	_, err = s.RequestTreeCancellation(e.Ctx, "missing", nil, ms(34))
	requireIs(e.T, err, workflow.ErrNotFound)
	_, err = s.RequestTreeCancellation(e.Ctx, "", nil, ms(34))
	requireIs(e.T, err, workflow.ErrInvalidInput)
	unchanged(e, before, "refused tree cancellations", all...)

	s = e.newStore(e.Reopen())
	for _, id := range all {
		assert.Equal(e.T, ms(20).UnixMilli(), msOf(getRun(e, s, id).CancelRequestedAt), "durably: %s", id)
	}

	// The parent attempts settle; each run finalises once its own attempts
	// and child runs have.
	observe(e, s, parentOf(c, "x"), obs(workflow.ObservedCancelled), ms(40))
	assert.Equal(e.T, workflow.RunCancelled, getRun(e, s, c).Status)
	observe(e, s, parentOf("r", "b"), obs(workflow.ObservedCancelled), ms(41))
	assert.Equal(e.T, workflow.RunRunning, getRun(e, s, "r").Status)
	observe(e, s, parentOf("r", "a"), obs(workflow.ObservedCancelled), ms(42))
	assert.Equal(e.T, workflow.RunCancelled, getRun(e, s, "r").Status)
	assert.Equal(e.T, []string{"attempt_cancelled", "run_cancelled"}, lastTypes(e, s, "r", 2))

	// A completed root cannot be tree-cancelled.
	mkRun(e, s, "done", workflow.Limits{}, nil)
	dk := key("done", "n", "a")
	mkAct(e, s, dk)
	admitOnly(e, s, o, ms(50), identity(dk, 1))
	observe(e, s, identity(dk, 1), obs(workflow.ObservedSucceeded), ms(51))
	before = digest(e, "done")
	_, err = s.RequestTreeCancellation(e.Ctx, "done", nil, ms(52))
	requireIs(e.T, err, workflow.ErrIneligible, "a completed root")
	unchanged(e, before, "tree-cancelling a completed root", "done")
}

func caseTreeParentChain(e *env) {
	s := store(e)
	c, d, g := tree(e, s, "r")
	gk := key(g, "n", "w")
	o := newOwner()
	sum := dispatch(e, s, o, workflow.DispatchOptions{RunID: g}, ms(15))
	require.Equal(e.T, []string{identity(gk, 1)}, refIdentities(sum.Admitted))

	_, err := s.RequestTreeCancellation(e.Ctx, "r", nil, ms(20))
	require.NoError(e.T, err)
	assert.Equal(e.T, workflow.RunCancelled, getRun(e, s, d).Status)
	assert.Equal(e.T, workflow.RunRunning, getRun(e, s, g).Status, "g has an admitted attempt")

	for _, pid := range []string{parentOf("r", "a"), parentOf("r", "b"), parentOf(c, "x")} {
		res := observe(e, s, pid, obs(workflow.ObservedCancelled), ms(30))
		assert.Equal(e.T, workflow.AttemptCancelled, res.Status)
	}
	assert.Equal(e.T, workflow.RunRunning, getRun(e, s, c).Status, "c waits for g")
	assert.Equal(e.T, workflow.RunRunning, getRun(e, s, "r").Status, "r waits for c")

	// g's last attempt settles: g, c and r finalise in that one transaction.
	res := observe(e, s, identity(gk, 1), obs(workflow.ObservedSucceeded), ms(40))
	assert.Equal(e.T, workflow.AttemptCancelled, res.Status)
	for _, id := range []string{g, c, "r"} {
		assert.Equal(e.T, workflow.RunCancelled, getRun(e, s, id).Status, "%s is cancelled", id)
		assert.Equal(e.T, []string{"run_cancelled"}, lastTypes(e, s, id, 1), "%s", id)
		assert.Equal(e.T, 1, countType(eventTypes(e, s, id), "run_cancelled"))
	}

	// A tree that is quiescent when cancelled finalises at once, children
	// first.
	mkRun(e, s, "q", workflow.Limits{}, nil)
	qc := spawn(e, s, "q", "a", 60)
	mkAct(e, s, key("q", "n", "keep"))
	observe(e, s, parentOf("q", "a"), obs(workflow.ObservedSucceeded), ms(61))
	require.Equal(e.T, workflow.RunRunning, getRun(e, s, "q").Status)
	st, err := s.RequestTreeCancellation(e.Ctx, "q", nil, ms(62))
	require.NoError(e.T, err)
	assert.Equal(e.T, workflow.RunCancelled, st)
	assert.Equal(e.T, workflow.RunCancelled, getRun(e, s, qc).Status)
	assert.Equal(e.T, []string{"cancellation_requested", "run_cancelled"}, lastTypes(e, s, "q", 2))
}

func caseTreeFailedDescendant(e *env) {
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{}, nil)
	mkAct(e, s, key("r", "n", "keep"))
	f := spawn(e, s, "r", "a", 10)
	fk := key(f, "n", "x")
	mkAct(e, s, fk, withPolicy(retryPolicy(3, 100)), withEffect(workflow.ReadOnly, workflow.IdempotentReplay))
	o := newOwner()
	admitOnly(e, s, o, ms(20), identity(key("r", "n", "keep"), 1), identity(fk, 1))
	require.NotNil(e.T, observe(e, s, identity(fk, 1), obs(workflow.ObservedRetryableFailure), ms(21)).Schedule)
	require.Equal(e.T, workflow.RunFailed, getRun(e, s, f).Status)

	_, err := s.RequestTreeCancellation(e.Ctx, "r", nil, ms(30))
	require.NoError(e.T, err)
	run := getRun(e, s, f)
	assert.Equal(e.T, ms(30).UnixMilli(), msOf(run.CancelRequestedAt), "a failed descendant gets the intent too")
	assert.Equal(e.T, workflow.RunFailed, run.Status, "and stays failed")
	assert.Nil(e.T, getSchedule(e, s, fk), "its retry schedule is deleted in the same transaction")
	assert.Equal(e.T, 1, countType(eventTypes(e, s, f), "automatic_retry_discarded"))
	assert.Equal(e.T, workflow.ActivationFailed, getAct(e, s, fk).Status, "its failed activation stays failed")
	before := digest(e, "r", f)
	_, err = s.Engine().ConsumeDueRetry(e.Ctx, fk, ms(200))
	requireIs(e.T, err, workflow.ErrNotFound, "no automatic retry in a cancelled tree: the schedule is gone")
	_, err = s.RetryFailedNode(e.Ctx, fk, 1, ms(201))
	requireIs(e.T, err, workflow.ErrIneligible, "no explicit retry in a cancelled tree")
	admitOnly(e, s, o, ms(202))
	unchanged(e, before, "retries in a cancelled tree", "r", f)
}

func caseTreeRunCompletes(e *env) {
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{}, nil)
	a, b, c := key("r", "n", "a"), key("r", "n", "b"), key("r", "n", "c")
	mkAct(e, s, a)
	mkAct(e, s, b)
	o := newOwner()
	admitOnly(e, s, o, ms(10), identity(a, 1), identity(b, 1))
	observe(e, s, identity(a, 1), obs(workflow.ObservedSucceeded), ms(20))
	assert.Equal(e.T, workflow.RunRunning, getRun(e, s, "r").Status, "b is still running")
	succ := obs(workflow.ObservedSucceeded)
	succ.Successors = []workflow.NewActivation{{Key: c, Input: json.RawMessage(`{}`)}}
	observe(e, s, identity(b, 1), succ, ms(21))
	assert.Equal(e.T, workflow.RunRunning, getRun(e, s, "r").Status, "its successor is pending")
	assert.Equal(e.T, 0, countType(eventTypes(e, s, "r"), "run_completed"))
	admitOnly(e, s, o, ms(30), identity(c, 1))
	observe(e, s, identity(c, 1), obs(workflow.ObservedSucceeded), ms(31))
	assert.Equal(e.T, workflow.RunCompleted, getRun(e, s, "r").Status, "nothing is left open")
	assert.Equal(e.T, []string{"attempt_succeeded", "run_completed"}, lastTypes(e, s, "r", 2))
	assert.JSONEq(e.T, `{"run_id":"r"}`, payloadsOf(e, s, "r", "run_completed")[0])

	before := digest(e, "r")
	_, err := s.AddActivation(e.Ctx, workflow.NewActivation{Key: key("r", "n", "late"), Input: json.RawMessage(`{}`)}, ms(40))
	requireIs(e.T, err, workflow.ErrIneligible, "a completed run accepts no new work")
	_, err = s.RequestCancellation(e.Ctx, "r", nil, ms(41))
	requireIs(e.T, err, workflow.ErrIneligible, "a completed run cannot be cancelled")
	observe(e, s, identity(c, 1), obs(workflow.ObservedSucceeded), ms(42))
	unchanged(e, before, "work offered to a completed run", "r")

	s = e.newStore(e.Reopen())
	assert.Equal(e.T, workflow.RunCompleted, getRun(e, s, "r").Status, "durably")

	// A run paused while its last activation runs completes all the same.
	mkRun(e, s, "z", workflow.Limits{}, nil)
	zk := key("z", "n", "a")
	mkAct(e, s, zk)
	admitOnly(e, s, o, ms(45), identity(zk, 1))
	require.NoError(e.T, s.PauseRun(e.Ctx, "z", nil, ms(46)))
	observe(e, s, identity(zk, 1), obs(workflow.ObservedSucceeded), ms(47))
	assert.Equal(e.T, workflow.RunCompleted, getRun(e, s, "z").Status, "a paused run with nothing open completes")
	requireIs(e.T, s.ResumeRun(e.Ctx, "z", nil, ms(48)), workflow.ErrIneligible, "a completed run does not resume")

	// A completed child run is terminal for its cancelling parent.
	mkRun(e, s, "p", workflow.Limits{}, nil)
	child := spawn(e, s, "p", "a", 50)
	ck := key(child, "n", "c")
	mkAct(e, s, ck)
	admitOnly(e, s, o, ms(51), identity(ck, 1))
	_, err = s.RequestCancellation(e.Ctx, "p", nil, ms(52))
	require.NoError(e.T, err)
	observe(e, s, parentOf("p", "a"), obs(workflow.ObservedCancelled), ms(53))
	assert.Equal(e.T, workflow.RunRunning, getRun(e, s, "p").Status)
	observe(e, s, identity(ck, 1), obs(workflow.ObservedSucceeded), ms(54))
	assert.Equal(e.T, workflow.RunCompleted, getRun(e, s, child).Status)
	assert.Equal(e.T, workflow.RunCancelled, getRun(e, s, "p").Status, "the child's completion finalises its cancelling parent")
}

func caseTreeCompletionWaits(e *env) {
	s := store(e)
	o := newOwner()

	// A pending retry schedule keeps a running run open.
	mkRun(e, s, "q", workflow.Limits{}, nil)
	x, z := key("q", "n", "x"), key("q", "n", "z")
	pol := withPolicy(retryPolicy(3, 100))
	retryable := withEffect(workflow.ReadOnly, workflow.IdempotentReplay)
	mkAct(e, s, x, pol, retryable)
	mkAct(e, s, z, pol, retryable)
	admitOnly(e, s, o, ms(10), identity(x, 1), identity(z, 1))
	require.NotNil(e.T, observe(e, s, identity(x, 1), obs(workflow.ObservedRetryableFailure), ms(20)).Schedule)
	require.NotNil(e.T, observe(e, s, identity(z, 1), obs(workflow.ObservedRetryableFailure), ms(21)).Schedule)
	_, err := s.Engine().ConsumeDueRetry(e.Ctx, z, ms(121))
	require.NoError(e.T, err)
	admitOnly(e, s, o, ms(122), identity(z, 2))
	observe(e, s, identity(z, 2), obs(workflow.ObservedSucceeded), ms(123))
	assert.Equal(e.T, workflow.RunRunning, getRun(e, s, "q").Status, "x's retry schedule is still due")
	_, err = s.Engine().ConsumeDueRetry(e.Ctx, x, ms(130))
	require.NoError(e.T, err)
	admitOnly(e, s, o, ms(131), identity(x, 2))
	observe(e, s, identity(x, 2), obs(workflow.ObservedSucceeded), ms(132))
	assert.Equal(e.T, workflow.RunCompleted, getRun(e, s, "q").Status)

	// A repair that confirms success completes the run.
	mkRun(e, s, "m", workflow.Limits{}, nil)
	mk := key("m", "n", "a")
	mkAct(e, s, mk, withEffect(workflow.Mutating, workflow.RepairRequired))
	mo := newOwner()
	mo.effect = workflow.Mutating
	admitOnly(e, s, mo, ms(200), identity(mk, 1))
	observe(e, s, identity(mk, 1), obs(workflow.ObservedUnknown), ms(201))
	require.Equal(e.T, workflow.RunRepairRequired, getRun(e, s, "m").Status)
	require.NoError(e.T, s.Repair(e.Ctx, workflow.RepairRequest{Identity: identity(mk, 1), Action: workflow.RepairConfirmSucceeded, Output: json.RawMessage(`{"done":true}`)}, ms(202)))
	assert.Equal(e.T, workflow.RunCompleted, getRun(e, s, "m").Status, "the repaired activation was the last one")
	assert.Equal(e.T, []string{"attempt_repaired", "run_completed"}, lastTypes(e, s, "m", 2))

	// Fan-out: members still waiting keep the run open; the last member's
	// completion completes it.
	c, m := fanOut(e, s, "f", nil, 2, 1)
	admitOnly(e, s, o, ms(300), identity(c, 1), identity(m[0], 1))
	observe(e, s, identity(c, 1), obs(workflow.ObservedSucceeded), ms(301))
	observe(e, s, identity(m[0], 1), obs(workflow.ObservedSucceeded), ms(302))
	assert.Equal(e.T, workflow.RunRunning, getRun(e, s, "f").Status, "member 1 was promoted")
	admitOnly(e, s, o, ms(303), identity(m[1], 1))
	observe(e, s, identity(m[1], 1), obs(workflow.ObservedSucceeded), ms(304))
	assert.Equal(e.T, workflow.RunCompleted, getRun(e, s, "f").Status)
}
