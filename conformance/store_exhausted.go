package conformance

import (
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/workflow"
)

// Exhausted work is visible: every activation an exhaustion blocks is
// reported Exhausted by a pass, including work added after the exhaustion
// was recorded.
func exhaustedWorkCases() []testCase {
	return []testCase{
		{Name: "exhaustion_work_added_to_an_exhausted_run_is_reported_by_the_next_pass", Run: caseExhaustedWorkAddedIsReported},
	}
}

// caseExhaustedWorkAddedIsReported: run r's allowance is used up and its
// exhaustion recorded; an activation added afterwards is reported
// Exhausted by the next pass over all runs, and one added after that by
// the next pass restricted to r; once reported, each stays pending, and an
// allowance increase admits them.
func caseExhaustedWorkAddedIsReported(e *env) {
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{NodeExecutionCap: 1}, nil)
	ka, kb, kc, kd := key("r", "n", "a"), key("r", "n", "b"), key("r", "n", "c"), key("r", "n", "d")
	o := newOwner()
	mkAct(e, s, ka)
	admitOnly(e, s, o, ms(10), identity(ka, 1))
	mkAct(e, s, kb)
	sum := dispatch(e, s, o, workflow.DispatchOptions{}, ms(20))
	assert.Equal(e.T, []workflow.ActivationKey{kb}, sum.Exhausted, "the pass that meets the exhaustion reports it")

	mkAct(e, s, kc)
	sum = dispatch(e, s, o, workflow.DispatchOptions{}, ms(30))
	assert.Equal(e.T, []workflow.ActivationKey{kc}, sum.Exhausted, "work added to an exhausted run: a pass over all runs reports it")
	mkAct(e, s, kd)
	sum = dispatch(e, s, o, workflow.DispatchOptions{RunID: "r"}, ms(40))
	assert.Equal(e.T, []workflow.ActivationKey{kd}, sum.Exhausted, "work added to an exhausted run: a pass over the run reports it")
	assert.Equal(e.T, 1, countType(eventTypes(e, s, "r"), "execution_allowance_exhausted"), "one exhaustion event, ever")
	assert.Equal(e.T, 1, o.totalCalls(), "nothing beyond the allowance reaches the owner")
	for _, k := range []workflow.ActivationKey{kb, kc, kd} {
		a, err := s.GetActivation(e.Ctx, k)
		require.NoError(e.T, err)
		assert.Equal(e.T, workflow.ActivationPending, a.Status, "%v stays pending", k)
	}

	require.NoError(e.T, s.IncreaseAllowance(e.Ctx, workflow.AllowanceIncrease{RunID: "r", ExpectedCap: 1, TargetCap: 3}, ms(50)))
	sum = dispatch(e, s, o, workflow.DispatchOptions{}, ms(60))
	assert.Equal(e.T, []string{identity(kb, 1), identity(kc, 1)}, refIdentities(sum.Admitted), "the increase admits them up to the new cap")
	assert.Equal(e.T, []workflow.ActivationKey{kd}, sum.Exhausted)
}
