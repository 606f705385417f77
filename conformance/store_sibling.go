package conformance

import (
	"encoding/json"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/workflow"
)

// siblingCases: an attempt stopped by a fail-fast sibling's failure
// follows its owner's word, as an attempt of a cancelled run does.
func siblingCases() []testCase {
	return []testCase{
		{Name: "sibling_cancelling_attempt_stays_active_while_its_owner_reports_it_running", Run: caseSiblingCancellingStaysActive},
	}
}

// A sibling_cancelling attempt takes a recorded cancellation signal and
// keeps its status. One whose owner reports it admitted, running or
// deferred stays sibling_cancelling, active (its concurrency place and
// leases held while the work runs); a finished report settles it as
// cancelled, its attempt_cancelled event recording what the owner
// observed (and a success's output).
func caseSiblingCancellingStaysActive(e *env) {
	s := store(e)
	o := fanOutOwner()
	_, m := fanOutWith(e, s, "r", 2, 2, workflow.FailFast)
	admitOnly(e, s, o, ms(10), identity(m[0], 1), identity(m[1], 1))
	observe(e, s, identity(m[0], 1), obs(workflow.ObservedFailed), ms(11))
	require.Equal(e.T, workflow.AttemptSiblingCancelling, getAttempt(e, s, m[1], 1).Status)
	// The engine tells the owner and records the signal; the status stays.
	require.NoError(e.T, s.Engine().MarkCancellationSignalled(e.Ctx, identity(m[1], 1), ms(12)))
	assert.Equal(e.T, workflow.AttemptSiblingCancelling, getAttempt(e, s, m[1], 1).Status, "signalled")
	assert.Len(e.T, payloadsOf(e, s, "r", "attempt_cancellation_signalled"), 1)
	for i, k := range []workflow.ObservationKind{workflow.ObservedRunning, workflow.ObservedAdmitted, workflow.ObservedDeferred} {
		res := observe(e, s, identity(m[1], 1), obs(k), ms(int64(12+i)))
		assert.Equal(e.T, workflow.AttemptSiblingCancelling, res.Status, "%s leaves the stopped sibling active", k)
		assert.Equal(e.T, workflow.AttemptSiblingCancelling, getAttempt(e, s, m[1], 1).Status, "after %s", k)
		assert.Equal(e.T, int64(1), rawRun(e, "r").ActiveCount, "the work still runs after %s", k)
	}
	assert.Empty(e.T, payloadsOf(e, s, "r", "attempt_cancelled"), "nothing settled while the work runs")
	res := observe(e, s, identity(m[1], 1), workflow.Observation{Kind: workflow.ObservedSucceeded, Output: json.RawMessage(`{"shipped":1}`)}, ms(20))
	assert.Equal(e.T, workflow.AttemptCancelled, res.Status, "finished work of a stopped sibling settles as cancelled")
	assert.Zero(e.T, rawRun(e, "r").ActiveCount)
	assert.Equal(e.T, []string{attemptEvent(m[1], 1, `{"observed":"succeeded","output":{"shipped":1}}`)},
		payloadsOf(e, s, "r", "attempt_cancelled"), "the event records what the owner observed")
	assert.Equal(e.T, workflow.RunFailed, getRun(e, s, "r").Status)
}
