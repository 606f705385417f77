package conformance

import (
	"encoding/json"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/workflow"
)

// Cancellation reaching the work: once a run's cancellation is requested,
// the owner's word decides about the attempts it holds (work still running
// stays active; work that finished anyway is settled cancelled with what
// the owner observed on record), and an attempt is settled without an
// observation only by an explicit call that says how.

func cancelSignalCases() []testCase {
	return []testCase{
		{Name: "cancel_an_owner_still_running_the_work_keeps_the_attempt_active", Run: caseCancelStillRunning},
		{Name: "cancel_work_finished_anyway_is_settled_cancelled_with_the_owners_observation", Run: caseCancelFinishedAnyway},
		{Name: "cancel_receipt_pass_asks_the_observer_about_a_cancelled_runs_attempts", Run: caseCancelReceiptPassAsks},
		{Name: "cancel_settled_unobserved_says_whether_the_owner_was_signalled", Run: caseCancelUnobserved},
		{Name: "cancel_scan_pages_the_cancelled_runs_with_the_work_left_to_act_on", Run: caseCancelScan},
	}
}

func caseCancelStillRunning(e *env) {
	s := store(e)
	ids := admittedIn(e, s, "r", workflow.Mutating, nil, "a", "b")
	_, err := s.RequestCancellation(e.Ctx, "r", nil, ms(15))
	require.NoError(e.T, err)
	require.NoError(e.T, s.Engine().MarkCancellationSignalled(e.Ctx, ids[1], ms(16)))
	res := observe(e, s, ids[0], obs(workflow.ObservedRunning), ms(17))
	assert.Equal(e.T, workflow.AttemptRunning, res.Status, "an unsignalled attempt still running is running")
	for _, k := range []workflow.ObservationKind{workflow.ObservedRunning, workflow.ObservedAdmitted, workflow.ObservedDeferred} {
		res = observe(e, s, ids[1], obs(k), ms(18))
		assert.Equal(e.T, workflow.AttemptCancelling, res.Status, "a signalled attempt the owner reports %s stays cancelling", k)
	}
	s = e.newStore(e.Reopen())
	assert.Equal(e.T, workflow.AttemptRunning, getAttempt(e, s, key("r", "n", "a"), 1).Status)
	assert.Equal(e.T, workflow.AttemptCancelling, getAttempt(e, s, key("r", "n", "b"), 1).Status)
	assert.Equal(e.T, int64(2), rawRun(e, "r").ActiveCount, "both still hold their places and leases")
	assert.Equal(e.T, workflow.RunRunning, getRun(e, s, "r").Status, "the run waits for its owner's work")
	assert.Zero(e.T, countType(eventTypes(e, s, "r"), "attempt_cancelled"))
}

func caseCancelFinishedAnyway(e *env) {
	s := store(e)
	ids := admittedIn(e, s, "r", workflow.Mutating, nil, "a", "b", "c")
	_, err := s.RequestCancellation(e.Ctx, "r", nil, ms(15))
	require.NoError(e.T, err)
	require.NoError(e.T, s.Engine().MarkCancellationSignalled(e.Ctx, ids[0], ms(16)))
	res := observe(e, s, ids[0], workflow.Observation{Kind: workflow.ObservedSucceeded, Output: json.RawMessage(`{"shipped": 5}`)}, ms(17))
	assert.Equal(e.T, workflow.AttemptCancelled, res.Status, "a cancelled run's finished attempt settles cancelled")
	observe(e, s, ids[1], obs(workflow.ObservedFailed), ms(18))
	observe(e, s, ids[2], obs(workflow.ObservedCancelled), ms(19))
	s = e.newStore(e.Reopen())
	for _, a := range []string{"a", "b", "c"} {
		assert.Equal(e.T, workflow.AttemptCancelled, getAttempt(e, s, key("r", "n", a), 1).Status)
		act := getAct(e, s, key("r", "n", a))
		assert.Equal(e.T, workflow.ActivationCancelled, act.Status)
		assert.Nil(e.T, act.Output, "the output is not the activation's")
	}
	assert.Equal(e.T, []string{
		attemptEvent(key("r", "n", "a"), 1, `{"observed":"succeeded","output":{"shipped":5}}`),
		attemptEvent(key("r", "n", "b"), 1, `{"observed":"failed"}`),
		attemptEvent(key("r", "n", "c"), 1, `{"observed":"cancelled"}`),
	}, payloadsOf(e, s, "r", "attempt_cancelled"), "each event records what the owner observed")
	assert.Equal(e.T, workflow.RunCancelled, getRun(e, s, "r").Status)
}

func caseCancelReceiptPassAsks(e *env) {
	s := store(e)
	ids := admittedIn(e, s, "r", workflow.Mutating, nil, "a", "b")
	_, err := s.RequestCancellation(e.Ctx, "r", nil, ms(15))
	require.NoError(e.T, err)
	require.NoError(e.T, s.Engine().MarkCancellationSignalled(e.Ctx, ids[0], ms(16)))
	o := newObserver() // b: still running
	o.answer[ids[0]] = workflow.Observation{Kind: workflow.ObservedSucceeded, Output: json.RawMessage(`7`)}
	sum := receiptPass(e, s, o, workflow.ReceiptPassOptions{}, 20)
	assert.ElementsMatch(e.T, ids, o.askedAbout(), "signalled or not, the observer is asked")
	out, _ := outcomeOf(sum, ids[0])
	assert.Equal(e.T, workflow.ObservedSucceeded, out.Applied)
	assert.Equal(e.T, workflow.AttemptCancelled, out.Status)
	out, _ = outcomeOf(sum, ids[1])
	assert.Equal(e.T, workflow.AttemptRunning, out.Status, "work still running is not settled")
	assert.Equal(e.T, []string{attemptEvent(key("r", "n", "a"), 1, `{"observed":"succeeded","output":7}`)},
		payloadsOf(e, s, "r", "attempt_cancelled"))
	assert.Equal(e.T, workflow.RunRunning, getRun(e, s, "r").Status)
	o.answer[ids[1]] = obs(workflow.ObservedCancelled)
	receiptPass(e, s, o, workflow.ReceiptPassOptions{}, 21)
	assert.Equal(e.T, workflow.AttemptCancelled, getAttempt(e, s, key("r", "n", "b"), 1).Status)
	assert.Equal(e.T, workflow.RunCancelled, getRun(e, s, "r").Status)
}

func caseCancelUnobserved(e *env) {
	s := store(e)
	a1 := authority(1, "one")
	ids := admittedIn(e, s, "r", workflow.Mutating, a1, "a", "b", "c")
	other := admittedIn(e, s, "q", workflow.Mutating, nil, "a")
	before := digest(e, "r", "q")
	_, err := s.Engine().SettleCancelledUnobserved(e.Ctx, workflow.UnobservedCancellation{Identity: other[0], How: workflow.SignalledNotObserved, Authority: nil}, ms(14))
	requireIs(e.T, err, workflow.ErrIneligible, "no cancellation requested")
	_, err = s.Engine().SettleCancelledUnobserved(e.Ctx, workflow.UnobservedCancellation{Identity: other[0], How: "guessed", Authority: nil}, ms(14))
	requireIs(e.T, err, workflow.ErrInvalidInput, "an unknown settlement")
	unchanged(e, before, "refused settlements", "r", "q")

	_, err = s.RequestCancellation(e.Ctx, "r", a1, ms(15))
	require.NoError(e.T, err)
	require.NoError(e.T, s.Engine().MarkCancellationSignalled(e.Ctx, ids[0], ms(16)))
	before = digest(e, "r")
	_, err = s.Engine().SettleCancelledUnobserved(e.Ctx, workflow.UnobservedCancellation{Identity: ids[0], How: workflow.SignalledNotObserved, Authority: authority(1, "other")}, ms(17))
	requireIs(e.T, err, workflow.ErrStaleAuthority)
	_, err = s.Engine().SettleCancelledUnobserved(e.Ctx, workflow.UnobservedCancellation{Identity: ids[1], How: workflow.SignalledNotObserved, Authority: a1}, ms(17))
	requireIs(e.T, err, workflow.ErrIneligible, "no signal recorded")
	unchanged(e, before, "refused settlements", "r")

	done, err := s.Engine().SettleCancelledUnobserved(e.Ctx, workflow.UnobservedCancellation{Identity: ids[0], How: workflow.SignalledNotObserved, Authority: a1}, ms(18))
	require.NoError(e.T, err)
	assert.True(e.T, done)
	done, err = s.Engine().SettleCancelledUnobserved(e.Ctx, workflow.UnobservedCancellation{Identity: ids[1], How: workflow.NeitherSignalledNorObserved, Authority: nil}, ms(19))
	require.NoError(e.T, err)
	assert.True(e.T, done)
	done, err = s.Engine().SettleCancelledUnobserved(e.Ctx, workflow.UnobservedCancellation{Identity: ids[1], How: workflow.NeitherSignalledNorObserved, Authority: nil}, ms(20))
	require.NoError(e.T, err)
	assert.False(e.T, done, "a settled attempt is left alone")
	s = e.newStore(e.Reopen())
	assert.Equal(e.T, []string{
		attemptEvent(key("r", "n", "a"), 1, `{"reason":"signalled_not_observed"}`),
		attemptEvent(key("r", "n", "b"), 1, `{"reason":"not_signalled_not_observed"}`),
	}, payloadsOf(e, s, "r", "attempt_cancelled"))
	assert.Equal(e.T, workflow.RunRunning, getRun(e, s, "r").Status, "c is still active")
	done, err = s.Engine().SettleCancelledUnobserved(e.Ctx, workflow.UnobservedCancellation{Identity: ids[2], How: workflow.NeitherSignalledNorObserved, Authority: nil}, ms(21))
	require.NoError(e.T, err)
	assert.True(e.T, done)
	assert.Equal(e.T, workflow.RunCancelled, getRun(e, s, "r").Status, "the run finalises")
	assert.Equal(e.T, workflow.AttemptAdmitted, getAttempt(e, s, key("q", "n", "a"), 1).Status)
}

func caseCancelScan(e *env) {
	s := store(e)
	a := admittedIn(e, s, "ra", workflow.Mutating, nil, "a")
	admittedIn(e, s, "rb", workflow.Mutating, nil, "a") // not cancelled
	mkRun(e, s, "rc", workflow.Limits{}, nil)
	mkAct(e, s, key("rc", "n", "a"))
	pc := prep(e, s, key("rc", "n", "a"), workflow.Mutating, ms(10))
	mkRun(e, s, "rd", workflow.Limits{}, nil) // quiescent: cancelled at once
	p := admittedIn(e, s, "re", workflow.ReadOnly, nil, "a")
	require.NoError(e.T, s.PauseRun(e.Ctx, "re", nil, ms(12)))
	for _, id := range []string{"ra", "rc", "rd", "re"} {
		_, err := s.RequestCancellation(e.Ctx, id, nil, ms(13))
		require.NoError(e.T, err)
	}
	require.NoError(e.T, s.Engine().MarkCancellationSignalled(e.Ctx, a[0], ms(14)))
	require.Equal(e.T, workflow.RunCancelled, getRun(e, s, "rd").Status)

	got := map[string][]string{}
	var order []string
	q := workflow.CancellationQuery{Limit: 1}
	for pages := 0; ; pages++ {
		require.Less(e.T, pages, 10, "the scan ends")
		page, err := s.Engine().Cancellations(e.Ctx, q)
		require.NoError(e.T, err)
		assert.LessOrEqual(e.T, len(page.Items), 1, "a page reads at most Limit runs")
		for _, rc := range page.Items {
			order = append(order, rc.RunID)
			for _, at := range rc.Attempts {
				got[rc.RunID] = append(got[rc.RunID], at.Identity+" "+string(at.Status))
			}
		}
		if page.Next == "" {
			break
		}
		q.After = page.Next
	}
	assert.Equal(e.T, []string{"ra", "rc", "re"}, order, "running runs, then paused ones; only those with cancellation requested and not cancelled")
	assert.Equal(e.T, map[string][]string{
		"ra": {a[0] + " cancelling"},
		"rc": {pc.Identity + " prepared"},
		"re": {p[0] + " admitted"},
	}, got)
	page, err := s.Engine().Cancellations(e.Ctx, workflow.CancellationQuery{RunID: "rc"})
	require.NoError(e.T, err)
	assert.Empty(e.T, page.Next, "a one-run listing is one page")
	require.Len(e.T, page.Items, 1)
	assert.Equal(e.T, pc.Identity, page.Items[0].Attempts[0].Identity)
	assert.Equal(e.T, workflow.HandoffPending, page.Items[0].Attempts[0].Handoff)
	page, err = s.Engine().Cancellations(e.Ctx, workflow.CancellationQuery{RunID: "rb"})
	require.NoError(e.T, err)
	assert.Empty(e.T, page.Items, "a run without cancellation requested is not listed")
	_, err = s.Engine().Cancellations(e.Ctx, workflow.CancellationQuery{RunID: "nope"})
	requireIs(e.T, err, workflow.ErrNotFound)
	_, err = s.Engine().Cancellations(e.Ctx, workflow.CancellationQuery{Limit: -1})
	requireIs(e.T, err, workflow.ErrInvalidInput)
}
