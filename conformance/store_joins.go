package conformance

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/event"
	"github.com/wfstore/wfstore/workflow"
)

// joinCases: an activation added with WaitFor waits until every activation
// it names has completed, becomes pending in the transaction that
// completes the last of them, and is cancelled (join_cancelled) when one
// of them is cancelled or fails with no automatic retry pending.
func joinCases() []testCase {
	return []testCase{
		{Name: "join_is_released_by_its_last_predecessor_and_keeps_its_run_open", Run: caseJoinReleasedByLast},
		{Name: "join_is_released_once_under_racing_predecessor_observations", Run: caseJoinRacingPredecessors},
		{Name: "join_is_cancelled_when_a_predecessor_fails_with_no_retry_pending", Run: caseJoinFailedPredecessor},
		{Name: "join_waits_through_a_predecessor_retry_that_is_pending", Run: caseJoinRetriedPredecessor},
		{Name: "join_is_cancelled_when_a_predecessor_is_cancelled", Run: caseJoinCancelledPredecessor},
		{Name: "join_added_after_its_predecessors_settled_is_released_or_cancelled_at_once", Run: caseJoinAddedLate},
		{Name: "join_may_be_a_successor_whose_other_predecessors_are_open", Run: caseJoinAsSuccessor},
		{Name: "join_with_invalid_wait_for_is_refused_typed_and_changes_nothing", Run: caseJoinInvalid},
		{Name: "join_is_settled_by_a_repair_of_its_predecessor", Run: caseJoinRepairedPredecessor},
	}
}

func ref(k workflow.ActivationKey) workflow.NodeRef {
	return workflow.NodeRef{NodeID: k.NodeID, ActivationID: k.ActivationID}
}

func withWaitFor(ks ...workflow.ActivationKey) func(*workflow.NewActivation) {
	return func(na *workflow.NewActivation) {
		for _, k := range ks {
			na.WaitFor = append(na.WaitFor, ref(k))
		}
	}
}

// joinEvent is the payload a join event names j and pred with.
func joinReleased(j, pred workflow.ActivationKey) string {
	return fmt.Sprintf(`{"activation_id":%q,"node_id":%q,"predecessor_activation_id":%q,"predecessor_node_id":%q,"run_id":%q}`,
		j.ActivationID, j.NodeID, pred.ActivationID, pred.NodeID, j.RunID)
}

func joinCancelled(j, pred workflow.ActivationKey, st workflow.ActivationStatus) string {
	return fmt.Sprintf(`{"activation_id":%q,"node_id":%q,"predecessor_activation_id":%q,"predecessor_node_id":%q,"predecessor_status":%q,"run_id":%q}`,
		j.ActivationID, j.NodeID, pred.ActivationID, pred.NodeID, st, j.RunID)
}

// A join waits, out of the admissible index, while any of its WaitFor
// activations is open; each completion counts one down, the last makes it
// pending and admissible with one join_released naming that activation,
// and the run stays running until the join itself settles.
func caseJoinReleasedByLast(e *env) {
	s := store(e)
	o := newOwner()
	mkRun(e, s, "r", workflow.Limits{}, nil)
	a, b, c, j := key("r", "a", "1"), key("r", "b", "1"), key("r", "c", "1"), key("r", "join", "1")
	mkAct(e, s, a)
	mkAct(e, s, b)
	mkAct(e, s, c)
	mkAct(e, s, j, withWaitFor(c, a, b), withPreds(ref(a)))
	got := getAct(e, s, j)
	assert.Equal(e.T, workflow.ActivationWaiting, got.Status)
	assert.False(e.T, got.Admissible)
	assert.Equal(e.T, int64(3), got.OpenWaits)
	assert.Equal(e.T, []workflow.NodeRef{ref(a), ref(b), ref(c)}, got.WaitFor, "sorted")
	assert.Equal(e.T, []workflow.NodeRef{ref(j)}, getAct(e, s, a).Joins)
	assert.True(e.T, getAct(e, s, a).HasSuccessors, "a predecessor and a WaitFor activation at once")
	admitOnly(e, s, o, ms(10), identity(a, 1), identity(b, 1), identity(c, 1))
	observe(e, s, identity(b, 1), obs(workflow.ObservedSucceeded), ms(11))
	observe(e, s, identity(a, 1), obs(workflow.ObservedSucceeded), ms(12))
	got = getAct(e, s, j)
	assert.Equal(e.T, workflow.ActivationWaiting, got.Status, "one predecessor is still open")
	assert.Equal(e.T, int64(1), got.OpenWaits)
	assert.Empty(e.T, payloadsOf(e, s, "r", string(event.JoinReleased)))
	admitOnly(e, s, o, ms(13))
	observe(e, s, identity(c, 1), obs(workflow.ObservedSucceeded), ms(14))
	got = getAct(e, s, j)
	assert.Equal(e.T, workflow.ActivationPending, got.Status)
	assert.True(e.T, got.Admissible)
	assert.Zero(e.T, got.OpenWaits)
	assert.Equal(e.T, []string{joinReleased(j, c)}, payloadsOf(e, s, "r", string(event.JoinReleased)))
	assert.Equal(e.T, workflow.RunRunning, getRun(e, s, "r").Status, "the released join keeps its run open")
	admitOnly(e, s, o, ms(15), identity(j, 1))
	observe(e, s, identity(j, 1), obs(workflow.ObservedSucceeded), ms(16))
	assert.Equal(e.T, workflow.RunCompleted, getRun(e, s, "r").Status)
}

// Observations of a join's predecessors racing from several goroutines
// release it exactly once: pending, admissible, one join_released.
func caseJoinRacingPredecessors(e *env) {
	s := store(e)
	o := newOwner()
	mkRun(e, s, "r", workflow.Limits{}, nil)
	const n = 6
	var preds []workflow.ActivationKey
	var ids []string
	for i := range n {
		k := key("r", "p", fmt.Sprint(i))
		mkAct(e, s, k)
		preds = append(preds, k)
		ids = append(ids, identity(k, 1))
	}
	j := key("r", "join", "1")
	mkAct(e, s, j, withWaitFor(preds...))
	admitOnly(e, s, o, ms(10), ids...)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.ApplyObservation(e.Ctx, id, obs(workflow.ObservedSucceeded), ms(20))
		}()
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(e.T, err, "observation of %s", ids[i])
	}
	got := getAct(e, s, j)
	assert.Equal(e.T, workflow.ActivationPending, got.Status)
	assert.True(e.T, got.Admissible)
	assert.Zero(e.T, got.OpenWaits)
	assert.Len(e.T, payloadsOf(e, s, "r", string(event.JoinReleased)), 1, "released exactly once")
	admitOnly(e, s, o, ms(30), identity(j, 1))
}

// A predecessor that fails with no automatic retry pending cancels the
// waiting join in the same transaction (join_cancelled naming it); the
// failed predecessor can then not be retried explicitly, and that refusal
// changes nothing.
func caseJoinFailedPredecessor(e *env) {
	s := store(e)
	o := newOwner()
	mkRun(e, s, "r", workflow.Limits{}, nil)
	a, b, j := key("r", "a", "1"), key("r", "b", "1"), key("r", "join", "1")
	mkAct(e, s, a)
	mkAct(e, s, b)
	mkAct(e, s, j, withWaitFor(a, b))
	admitOnly(e, s, o, ms(10), identity(a, 1), identity(b, 1))
	observe(e, s, identity(a, 1), obs(workflow.ObservedFailed), ms(11))
	assert.Equal(e.T, workflow.ActivationCancelled, getAct(e, s, j).Status)
	assert.False(e.T, getAct(e, s, j).Admissible)
	assert.Equal(e.T, []string{joinCancelled(j, a, workflow.ActivationFailed)}, payloadsOf(e, s, "r", string(event.JoinCancelled)))
	before := digest(e, "r")
	_, err := s.RetryFailedNode(e.Ctx, a, 1, ms(12))
	requireIs(e.T, err, workflow.ErrIneligible, "retry of a predecessor a join waited for")
	assert.Equal(e.T, before, digest(e, "r"), "the refusal changes nothing")
	observe(e, s, identity(b, 1), obs(workflow.ObservedSucceeded), ms(13))
	assert.Equal(e.T, workflow.ActivationCancelled, getAct(e, s, j).Status, "a settled join stays settled")
	assert.Empty(e.T, payloadsOf(e, s, "r", string(event.JoinReleased)))
}

// A predecessor that fails with an automatic retry scheduled leaves the
// join waiting; its retry's success then counts as its completion.
func caseJoinRetriedPredecessor(e *env) {
	s := store(e)
	o := newOwner()
	mkRun(e, s, "r", workflow.Limits{}, nil)
	a, j := key("r", "a", "1"), key("r", "join", "1")
	mkAct(e, s, a, withPolicy(retryPolicy(3, 5)), withEffect(workflow.ReadOnly, workflow.IdempotentReplay))
	mkAct(e, s, j, withWaitFor(a))
	admitOnly(e, s, o, ms(10), identity(a, 1))
	res := observe(e, s, identity(a, 1), obs(workflow.ObservedRetryableFailure), ms(11))
	require.NotNil(e.T, res.Schedule)
	assert.Equal(e.T, workflow.ActivationWaiting, getAct(e, s, j).Status, "a retry is pending")
	assert.Empty(e.T, payloadsOf(e, s, "r", string(event.JoinCancelled)))
	_, err := s.Engine().ConsumeNextDueRetry(e.Ctx, "r", ms(100))
	require.NoError(e.T, err)
	admitOnly(e, s, o, ms(101), identity(a, 2))
	observe(e, s, identity(a, 2), obs(workflow.ObservedSucceeded), ms(102))
	assert.Equal(e.T, workflow.ActivationPending, getAct(e, s, j).Status)
	assert.Equal(e.T, []string{joinReleased(j, a)}, payloadsOf(e, s, "r", string(event.JoinReleased)))
}

// A predecessor its owner reports cancelled cancels the waiting join
// (join_cancelled naming it); with nothing else open the run then
// completes.
func caseJoinCancelledPredecessor(e *env) {
	s := store(e)
	o := newOwner()
	mkRun(e, s, "r", workflow.Limits{}, nil)
	a, b, j := key("r", "a", "1"), key("r", "b", "1"), key("r", "join", "1")
	mkAct(e, s, a)
	mkAct(e, s, b)
	mkAct(e, s, j, withWaitFor(a, b))
	admitOnly(e, s, o, ms(10), identity(a, 1), identity(b, 1))
	observe(e, s, identity(b, 1), obs(workflow.ObservedSucceeded), ms(11))
	assert.Equal(e.T, workflow.RunRunning, getRun(e, s, "r").Status, "a waiting join keeps its run open")
	observe(e, s, identity(a, 1), obs(workflow.ObservedCancelled), ms(12))
	assert.Equal(e.T, workflow.ActivationCancelled, getAct(e, s, j).Status)
	assert.Equal(e.T, []string{joinCancelled(j, a, workflow.ActivationCancelled)}, payloadsOf(e, s, "r", string(event.JoinCancelled)))
	assert.Equal(e.T, workflow.RunCompleted, getRun(e, s, "r").Status)
}

// A join added when all its WaitFor activations have completed is pending
// and admissible at once (no join_released: it never waited); one added
// when one of them is already cancelled is created and cancelled in the
// same transaction, with join_cancelled.
func caseJoinAddedLate(e *env) {
	s := store(e)
	o := newOwner()
	mkRun(e, s, "r", workflow.Limits{}, nil)
	a, b, c, hold := key("r", "a", "1"), key("r", "b", "1"), key("r", "c", "1"), key("r", "hold", "1")
	mkAct(e, s, a)
	mkAct(e, s, b)
	mkAct(e, s, c)
	mkAct(e, s, hold)
	admitOnly(e, s, o, ms(10), identity(a, 1), identity(b, 1), identity(c, 1), identity(hold, 1))
	observe(e, s, identity(a, 1), obs(workflow.ObservedSucceeded), ms(11))
	observe(e, s, identity(b, 1), obs(workflow.ObservedSucceeded), ms(12))
	observe(e, s, identity(c, 1), obs(workflow.ObservedCancelled), ms(13))
	j1, j2 := key("r", "join", "1"), key("r", "join", "2")
	mkAct(e, s, j1, withWaitFor(a, b))
	got := getAct(e, s, j1)
	assert.Equal(e.T, workflow.ActivationPending, got.Status)
	assert.True(e.T, got.Admissible)
	assert.Zero(e.T, got.OpenWaits)
	assert.Empty(e.T, payloadsOf(e, s, "r", string(event.JoinReleased)))
	mkAct(e, s, j2, withWaitFor(a, c))
	assert.Equal(e.T, workflow.ActivationCancelled, getAct(e, s, j2).Status)
	assert.Equal(e.T, []string{joinCancelled(j2, c, workflow.ActivationCancelled)}, payloadsOf(e, s, "r", string(event.JoinCancelled)))
	admitOnly(e, s, o, ms(14), identity(j1, 1))
}

// A Succeeded observation may carry a join as a successor: the completing
// activation counts as complete, the join waits for its other open
// predecessors, and their completion releases it.
func caseJoinAsSuccessor(e *env) {
	s := store(e)
	o := newOwner()
	mkRun(e, s, "r", workflow.Limits{}, nil)
	a, b, j, k := key("r", "a", "1"), key("r", "b", "1"), key("r", "join", "1"), key("r", "join", "2")
	mkAct(e, s, a)
	mkAct(e, s, b)
	admitOnly(e, s, o, ms(10), identity(a, 1), identity(b, 1))
	succ := obs(workflow.ObservedSucceeded)
	succ.Successors = []workflow.NewActivation{
		{Key: j, Input: json.RawMessage(`{}`), WaitFor: []workflow.NodeRef{ref(a), ref(b)}},
		{Key: k, Input: json.RawMessage(`{}`), WaitFor: []workflow.NodeRef{ref(a)}},
	}
	observe(e, s, identity(a, 1), succ, ms(11))
	got := getAct(e, s, j)
	assert.Equal(e.T, workflow.ActivationWaiting, got.Status)
	assert.Equal(e.T, int64(1), got.OpenWaits, "the completing activation counts as complete")
	assert.Equal(e.T, workflow.ActivationPending, getAct(e, s, k).Status, "all its predecessors are complete")
	observe(e, s, identity(b, 1), obs(workflow.ObservedSucceeded), ms(12))
	assert.Equal(e.T, workflow.ActivationPending, getAct(e, s, j).Status)
	assert.Equal(e.T, []string{joinReleased(j, b)}, payloadsOf(e, s, "r", string(event.JoinReleased)))
	admitOnly(e, s, o, ms(13), identity(j, 1), identity(k, 1))
}

// WaitFor naming an unknown activation or one of another run
// (ErrNotFound), the join itself, one activation twice or more than
// MaxPageLimit activations (ErrInvalidInput) is refused, directly or as a
// successor, and changes nothing.
func caseJoinInvalid(e *env) {
	s := store(e)
	o := newOwner()
	mkRun(e, s, "r", workflow.Limits{}, nil)
	mkRun(e, s, "r2", workflow.Limits{}, nil)
	a, other, j := key("r", "a", "1"), key("r2", "x", "1"), key("r", "join", "1")
	mkAct(e, s, a)
	mkAct(e, s, other)
	admitOnly(e, s, o, ms(10), identity(a, 1), identity(other, 1))
	many := make([]workflow.NodeRef, workflow.MaxPageLimit+1)
	for i := range many {
		many[i] = workflow.NodeRef{NodeID: "a", ActivationID: fmt.Sprint(i)}
	}
	for _, c := range []struct {
		name    string
		waitFor []workflow.NodeRef
		want    error
	}{
		{"unknown", []workflow.NodeRef{ref(a), {NodeID: "nope", ActivationID: "1"}}, workflow.ErrNotFound},
		{"other run", []workflow.NodeRef{ref(other)}, workflow.ErrNotFound},
		{"self", []workflow.NodeRef{ref(a), ref(j)}, workflow.ErrInvalidInput},
		{"duplicate", []workflow.NodeRef{ref(a), ref(a)}, workflow.ErrInvalidInput},
		{"too many", many, workflow.ErrInvalidInput},
	} {
		before := digest(e, "r", "r2")
		na := workflow.NewActivation{Key: j, Input: json.RawMessage(`{}`), WaitFor: c.waitFor}
		_, err := s.AddActivation(e.Ctx, na, ms(11))
		requireIs(e.T, err, c.want, c.name)
		succ := obs(workflow.ObservedSucceeded)
		succ.Successors = []workflow.NewActivation{na}
		_, err = s.ApplyObservation(e.Ctx, identity(a, 1), succ, ms(12))
		requireIs(e.T, err, c.want, "%s as a successor", c.name)
		assert.Equal(e.T, before, digest(e, "r", "r2"), "%s changes nothing", c.name)
	}
	assert.Equal(e.T, workflow.ActivationRunning, getAct(e, s, a).Status)
}

// A repair settles a predecessor as an observation would: confirming
// success releases the join, confirming failure cancels the other join.
func caseJoinRepairedPredecessor(e *env) {
	s := store(e)
	o := newOwner()
	o.effect = workflow.Mutating
	mkRun(e, s, "r", workflow.Limits{}, nil)
	a, b := key("r", "a", "1"), key("r", "b", "1")
	mut := withEffect(workflow.Mutating, workflow.RepairRequired)
	mkAct(e, s, a, mut)
	mkAct(e, s, b, mut)
	ja, jb := key("r", "join", "a"), key("r", "join", "b")
	mkAct(e, s, ja, withWaitFor(a))
	mkAct(e, s, jb, withWaitFor(b))
	admitOnly(e, s, o, ms(10), identity(a, 1), identity(b, 1))
	observe(e, s, identity(a, 1), obs(workflow.ObservedUnknown), ms(11))
	observe(e, s, identity(b, 1), obs(workflow.ObservedUnknown), ms(12))
	require.NoError(e.T, s.Repair(e.Ctx, workflow.RepairRequest{Identity: identity(a, 1), Action: workflow.RepairConfirmSucceeded,
		Output: json.RawMessage(`{"ok":true}`)}, ms(13)))
	assert.Equal(e.T, workflow.ActivationPending, getAct(e, s, ja).Status)
	assert.Equal(e.T, []string{joinReleased(ja, a)}, payloadsOf(e, s, "r", string(event.JoinReleased)))
	require.NoError(e.T, s.Repair(e.Ctx, workflow.RepairRequest{Identity: identity(b, 1), Action: workflow.RepairConfirmFailed}, ms(14)))
	assert.Equal(e.T, workflow.ActivationCancelled, getAct(e, s, jb).Status)
	assert.Equal(e.T, []string{joinCancelled(jb, b, workflow.ActivationFailed)}, payloadsOf(e, s, "r", string(event.JoinCancelled)))
}
