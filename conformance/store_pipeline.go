package conformance

import (
	"encoding/json"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/event"
	"github.com/wfstore/wfstore/workflow"
)

// Pipelines: a join that waits for a fan-in group's controller, the
// shape of "reserve, ship every item in parallel, then invoice".
func pipelineCases() []testCase {
	return []testCase{
		{Name: "pipeline_join_on_a_fan_in_controller_is_released_with_its_last_member", Run: casePipelineJoinReleasedByFanIn},
		{Name: "pipeline_join_on_a_fan_in_controller_is_cancelled_when_the_group_fails", Run: casePipelineJoinCancelledByFanIn},
	}
}

// pipelineRun observes "reserve" succeeded with a fan-in group of n
// members (policy pol) and an invoice join waiting for its controller, all
// in one transaction. It returns the controller, the members and the
// invoice, the members admitted.
func pipelineRun(e *env, s *workflow.Store, n int, pol workflow.FanOutFailure) (workflow.ActivationKey, []workflow.ActivationKey, workflow.ActivationKey) {
	e.T.Helper()
	id := admittedIn(e, s, "r", workflow.ReadOnly, nil, "reserve")[0]
	na, nf := shipFanOut("r", n, int64(n), pol)
	inv := key("r", "invoice", "1")
	o := obs(workflow.ObservedSucceeded)
	o.Successors = []workflow.NewActivation{na, {Key: inv, Input: json.RawMessage(`{}`), WaitFor: []workflow.NodeRef{ref(nf.Controller)}}}
	o.FanOuts = []workflow.NewFanOut{nf}
	observe(e, s, id, o, ms(20))
	got := getAct(e, s, inv)
	require.Equal(e.T, workflow.ActivationWaiting, got.Status, "the invoice waits for the shipments")
	require.Equal(e.T, int64(1), got.OpenWaits)
	m := make([]workflow.ActivationKey, n)
	ids := make([]string, n)
	for i := range m {
		m[i] = workflow.MemberKey(nf.Controller, int64(i))
		ids[i] = identity(m[i], 1)
	}
	admitOnly(e, s, newOwner(), ms(30), ids...)
	return nf.Controller, m, inv
}

// The controller completes in the last member's transaction, and so does
// the join's release: no owner polls, nothing is dispatched in between.
func casePipelineJoinReleasedByFanIn(e *env) {
	s := store(e)
	c, m, inv := pipelineRun(e, s, 3, workflow.WaitAll)
	for i, k := range m[:2] {
		observe(e, s, identity(k, 1), obs(workflow.ObservedSucceeded), ms(int64(40+i)))
		assert.Equal(e.T, workflow.ActivationWaiting, getAct(e, s, inv).Status, "after member %d", i)
	}
	observe(e, s, identity(m[2], 1), obs(workflow.ObservedSucceeded), ms(50))
	assert.Equal(e.T, workflow.ActivationCompleted, getAct(e, s, c).Status)
	got := getAct(e, s, inv)
	assert.Equal(e.T, workflow.ActivationPending, got.Status, "the controller's completion releases the join")
	assert.True(e.T, got.Admissible)
	assert.Equal(e.T, []string{joinReleased(inv, c)}, payloadsOf(e, s, "r", string(event.JoinReleased)))
	for _, ev := range eventsOf(e, s, "r") {
		if ev.Type == event.JoinReleased || ev.Type == event.FanInSettled {
			assert.True(e.T, ev.CreatedAt.Equal(ms(50)), "%s in the last member's transaction", ev.Type)
		}
	}
	assert.Equal(e.T, workflow.RunRunning, getRun(e, s, "r").Status, "the invoice is still open")
	admitOnly(e, s, newOwner(), ms(60), identity(inv, 1))
}

// A fail-fast group's first terminal failure fails its controller, and
// the join waiting for it is cancelled in that transaction: the order is
// never invoiced.
func casePipelineJoinCancelledByFanIn(e *env) {
	s := store(e)
	c, m, inv := pipelineRun(e, s, 3, workflow.FailFast)
	observe(e, s, identity(m[1], 1), obs(workflow.ObservedFailed), ms(40))
	assert.Equal(e.T, workflow.ActivationFailed, getAct(e, s, c).Status)
	assert.Equal(e.T, workflow.ActivationCancelled, getAct(e, s, inv).Status, "no invoice for a failed shipment")
	assert.Equal(e.T, []string{joinCancelled(inv, c, workflow.ActivationFailed)}, payloadsOf(e, s, "r", string(event.JoinCancelled)))
}
