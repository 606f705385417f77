package conformance

import (
	"context"
	"encoding/json"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/workflow"
)

// The receipt-backed pass: which attempts it selects (every status an
// attempt can wait in for its owner's word), how one attempt's failing
// observation is kept to that attempt, and how concurrent passes of one
// Store share the work.

func receiptPassCases() []testCase {
	return []testCase{
		{Name: "receipt_pass_observes_admitted_attempts", Run: caseReceiptPassAdmitted},
		{Name: "receipt_pass_observes_running_attempts", Run: caseReceiptPassRunning},
		{Name: "receipt_pass_observes_cancelling_attempts", Run: caseReceiptPassCancelling},
		{Name: "receipt_pass_observes_sibling_cancelling_attempts", Run: caseReceiptPassSiblingCancelling},
		{Name: "receipt_pass_one_failing_observation_leaves_the_others_applied", Run: caseReceiptPassIsolatesErrors},
		{Name: "receipt_pass_concurrent_passes_of_one_store_ask_about_each_attempt_once", Run: caseReceiptPassSpreads},
	}
}

// passSettles runs an unscoped pass whose observer reports every attempt
// succeeded, and requires it to have selected id, found in status was,
// and settled it as want.
func passSettles(e *env, s *workflow.Store, id string, was, want workflow.AttemptStatus, at int64) workflow.ReceiptOutcome {
	e.T.Helper()
	o := newObserver()
	o.answer[id] = workflow.Observation{Kind: workflow.ObservedSucceeded, Output: json.RawMessage(`{"done":1}`)}
	sum := receiptPass(e, s, o, workflow.ReceiptPassOptions{}, at)
	out, ok := outcomeOf(sum, id)
	require.True(e.T, ok, "the pass selects a %s attempt with a receipt", was)
	assert.Equal(e.T, want, out.Status)
	assert.NoError(e.T, out.Err)
	return out
}

func caseReceiptPassAdmitted(e *env) {
	s := store(e)
	ids := admittedIn(e, s, "r", workflow.Mutating, nil, "a")
	require.Equal(e.T, workflow.AttemptAdmitted, getAttempt(e, s, key("r", "n", "a"), 1).Status)
	passSettles(e, s, ids[0], workflow.AttemptAdmitted, workflow.AttemptSucceeded, 20)
	assert.Equal(e.T, workflow.AttemptSucceeded, getAttempt(e, s, key("r", "n", "a"), 1).Status)
}

func caseReceiptPassRunning(e *env) {
	s := store(e)
	ids := admittedIn(e, s, "r", workflow.Mutating, nil, "a")
	observe(e, s, ids[0], obs(workflow.ObservedRunning), ms(15))
	require.Equal(e.T, workflow.AttemptRunning, getAttempt(e, s, key("r", "n", "a"), 1).Status)
	passSettles(e, s, ids[0], workflow.AttemptRunning, workflow.AttemptSucceeded, 20)
	assert.Equal(e.T, workflow.AttemptSucceeded, getAttempt(e, s, key("r", "n", "a"), 1).Status)
}

func caseReceiptPassCancelling(e *env) {
	s := store(e)
	ids := admittedIn(e, s, "r", workflow.Mutating, nil, "a")
	_, err := s.RequestCancellation(e.Ctx, "r", nil, ms(15))
	require.NoError(e.T, err)
	require.NoError(e.T, s.Engine().MarkCancellationSignalled(e.Ctx, ids[0], ms(16)))
	require.Equal(e.T, workflow.AttemptCancelling, getAttempt(e, s, key("r", "n", "a"), 1).Status)
	passSettles(e, s, ids[0], workflow.AttemptCancelling, workflow.AttemptCancelled, 20)
	assert.Equal(e.T, workflow.AttemptCancelled, getAttempt(e, s, key("r", "n", "a"), 1).Status)
	assert.Equal(e.T, workflow.RunCancelled, getRun(e, s, "r").Status, "the run finalises")
}

func caseReceiptPassSiblingCancelling(e *env) {
	s := store(e)
	o := fanOutOwner()
	_, m := fanOutWith(e, s, "r", 2, 2, workflow.FailFast)
	admitOnly(e, s, o, ms(10), identity(m[0], 1), identity(m[1], 1))
	observe(e, s, identity(m[0], 1), obs(workflow.ObservedFailed), ms(11))
	require.Equal(e.T, workflow.AttemptSiblingCancelling, getAttempt(e, s, m[1], 1).Status)
	passSettles(e, s, identity(m[1], 1), workflow.AttemptSiblingCancelling, workflow.AttemptCancelled, 20)
	assert.Equal(e.T, workflow.AttemptCancelled, getAttempt(e, s, m[1], 1).Status)
}

func caseReceiptPassIsolatesErrors(e *env) {
	s := store(e)
	ids := admittedIn(e, s, "r", workflow.ReadOnly, nil, "a", "b", "c", "d")
	o := newObserver()
	o.answer[ids[0]] = workflow.Observation{Kind: workflow.ObservedSucceeded, Output: json.RawMessage(`1`)}
	o.fail[ids[1]] = true
	o.answer[ids[2]] = workflow.Observation{Kind: workflow.ObservationKind("bogus")} // an unknown kind: invalid
	o.answer[ids[3]] = workflow.Observation{Kind: workflow.ObservedSucceeded, Output: json.RawMessage(`4`)}
	sum, err := s.Engine().ReconcileReceiptBacked(e.Ctx, o, workflow.ReceiptPassOptions{Limit: 10}, ms(20))
	require.NoError(e.T, err, "one attempt's failing observation does not fail the pass")
	assert.ElementsMatch(e.T, ids, o.askedAbout(), "every attempt is asked about")
	require.Len(e.T, sum.Attempts, 4)
	for _, i := range []int{0, 3} {
		out, _ := outcomeOf(sum, ids[i])
		assert.NoError(e.T, out.Err)
		assert.Equal(e.T, workflow.AttemptSucceeded, out.Status, "%s is applied", ids[i])
	}
	out, _ := outcomeOf(sum, ids[1])
	requireIs(e.T, out.Err, workflow.ErrOwner, "the observer's error is reported for its attempt")
	assert.Equal(e.T, workflow.AttemptAdmitted, out.Status)
	out, _ = outcomeOf(sum, ids[2])
	requireIs(e.T, out.Err, workflow.ErrOwner, "an invalid observation is reported for its attempt")
	requireIs(e.T, out.Err, workflow.ErrInvalidInput)
	assert.Equal(e.T, workflow.AttemptAdmitted, out.Status)
	s = e.newStore(e.Reopen())
	for i, want := range []workflow.AttemptStatus{workflow.AttemptSucceeded, workflow.AttemptAdmitted, workflow.AttemptAdmitted, workflow.AttemptSucceeded} {
		assert.Equal(e.T, want, getAttempt(e, s, key("r", "n", string(rune('a'+i))), 1).Status, "persisted")
	}
	// The next pass asks about the two left, and settles them.
	o = newObserver()
	o.answer[ids[1]] = workflow.Observation{Kind: workflow.ObservedSucceeded, Output: json.RawMessage(`2`)}
	o.answer[ids[2]] = workflow.Observation{Kind: workflow.ObservedSucceeded, Output: json.RawMessage(`3`)}
	sum = receiptPass(e, s, o, workflow.ReceiptPassOptions{}, 21)
	assert.Equal(e.T, []string{ids[1], ids[2]}, o.askedAbout())
	assert.Len(e.T, sum.Attempts, 2)
	assert.Equal(e.T, workflow.RunCompleted, getRun(e, s, "r").Status)
}

func caseReceiptPassSpreads(e *env) {
	s := store(e)
	ids := admittedIn(e, s, "r", workflow.Mutating, nil, "a", "b", "c")
	first, second := newObserver(), newObserver()
	var inner workflow.ReceiptPassSummary
	first.hook = func(ctx context.Context, _ workflow.Attempt) {
		first.hook = nil
		// A second pass of the same Store while the first is asking its
		// owner: it passes over the attempts the first one holds.
		var err error
		inner, err = s.Engine().ReconcileReceiptBacked(ctx, second, workflow.ReceiptPassOptions{Limit: 2}, ms(21))
		require.NoError(e.T, err)
	}
	sum := receiptPass(e, s, first, workflow.ReceiptPassOptions{Limit: 2}, 20)
	assert.Len(e.T, first.askedAbout(), 2)
	assert.Len(e.T, sum.Attempts, 2)
	assert.Len(e.T, second.askedAbout(), 1, "the concurrent pass takes only the attempt the first one did not")
	assert.ElementsMatch(e.T, ids, append(first.askedAbout(), second.askedAbout()...), "each attempt is asked about once")
	assert.Len(e.T, inner.Attempts, 1)
	// Once the passes are over, every attempt can be asked about again.
	third := newObserver()
	receiptPass(e, s, third, workflow.ReceiptPassOptions{}, 22)
	assert.ElementsMatch(e.T, ids, third.askedAbout())
}
