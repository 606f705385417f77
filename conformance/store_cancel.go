package conformance

import (
	"encoding/json"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/workflow"
)

func cancelCases() []testCase {
	return []testCase{
		{Name: "cancel_intent_is_durable_before_further_admission", Run: caseCancelIntentFirst},
		{Name: "cancel_run_without_active_attempt_is_cancelled_at_once", Run: caseCancelIdleRun},
		{Name: "cancel_prepared_attempt_holds_the_run_until_settled", Run: caseCancelPreparedHolds},
		{Name: "cancel_never_dispatched_only_with_pending_handoff", Run: caseCancelNeverDispatchedProof},
		{Name: "cancel_wins_over_late_success_and_retryable_failure", Run: caseCancelWinsLateSuccess},
		{Name: "cancel_orphaned_read_only_attempt_is_cancelled_and_finalises", Run: caseCancelOrphanReadOnly},
		{Name: "cancel_orphaned_mutation_requires_repair_unless_handoff_in_flight", Run: caseCancelOrphanMutation},
		{Name: "cancel_pause_and_resume_are_durable_idempotent_admission_gates", Run: caseCancelPauseResume},
		{Name: "cancel_signalled_attempt_is_cancelling_and_keeps_it_through_a_receipt", Run: caseCancelSignalled},
	}
}

func caseCancelIntentFirst(e *env) {
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{}, nil)
	a, b, c := key("r", "n", "a"), key("r", "n", "b"), key("r", "n", "c")
	mkAct(e, s, a)
	mkAct(e, s, b)
	mkAct(e, s, c)
	o := newOwner()
	sum := dispatch(e, s, o, workflow.DispatchOptions{Limit: 1}, ms(10))
	require.Equal(e.T, []string{identity(a, 1)}, refIdentities(sum.Admitted))
	st, err := s.RequestCancellation(e.Ctx, "r", nil, ms(20))
	require.NoError(e.T, err)
	assert.Equal(e.T, workflow.RunRunning, st, "an admitted attempt keeps the run from cancelling")
	run := getRun(e, s, "r")
	assert.Equal(e.T, ms(20).UnixMilli(), msOf(run.CancelRequestedAt))
	assert.Equal(e.T, workflow.ActivationCancelled, getAct(e, s, b).Status, "pending activations are cancelled")
	assert.Equal(e.T, workflow.ActivationCancelled, getAct(e, s, c).Status)
	assert.Equal(e.T, workflow.ActivationRunning, getAct(e, s, a).Status)
	assert.Equal(e.T, 1, countType(eventTypes(e, s, "r"), "cancellation_requested"))
	assert.Equal(e.T, 0, countType(eventTypes(e, s, "r"), "run_cancelled"))
	before := digest(e, "r")
	st, err = s.RequestCancellation(e.Ctx, "r", nil, ms(21))
	require.NoError(e.T, err, "requesting it again")
	assert.Equal(e.T, workflow.RunRunning, st)
	unchanged(e, before, "second request", "r")

	s = e.newStore(e.Reopen())
	assert.Equal(e.T, ms(20).UnixMilli(), msOf(getRun(e, s, "r").CancelRequestedAt), "the intent is durable")
	admitOnly(e, s, o, ms(30))
	assert.Equal(e.T, 1, o.totalCalls(), "nothing more reaches the owner")
	got, err := s.Engine().PreparePending(e.Ctx, b, workflow.Plan{SideEffect: workflow.ReadOnly, Intent: json.RawMessage(`{}`)}, ms(31))
	require.NoError(e.T, err)
	assert.Nil(e.T, got)
	_, err = s.AddActivation(e.Ctx, workflow.NewActivation{Key: key("r", "n", "d"), Input: json.RawMessage(`{}`)}, ms(32))
	requireIs(e.T, err, workflow.ErrIneligible, "no new work after cancellation")
	_, err = s.Engine().PrepareAttempt(e.Ctx, workflow.AttemptIntent{Key: attemptKey(b, 1), SideEffect: workflow.ReadOnly, Intent: json.RawMessage(`{}`)}, ms(33))
	requireIs(e.T, err, workflow.ErrIneligible, "not even the low-level prepare after cancellation")
	unchanged(e, before, "admission after cancellation", "r")
}

func caseCancelIdleRun(e *env) {
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{}, nil)
	a := key("r", "n", "a")
	mkAct(e, s, a)
	st, err := s.RequestCancellation(e.Ctx, "r", nil, ms(10))
	require.NoError(e.T, err)
	assert.Equal(e.T, workflow.RunCancelled, st)
	assert.Equal(e.T, workflow.RunCancelled, getRun(e, s, "r").Status)
	assert.Equal(e.T, workflow.ActivationCancelled, getAct(e, s, a).Status)
	assert.Equal(e.T, []string{"cancellation_requested", "run_cancelled"}, lastTypes(e, s, "r", 2))
	before := digest(e, "r")
	st, err = s.RequestCancellation(e.Ctx, "r", nil, ms(11))
	require.NoError(e.T, err)
	assert.Equal(e.T, workflow.RunCancelled, st)
	unchanged(e, before, "cancelling a cancelled run", "r")

	k := failedPlain(e, s, "f", "a", workflow.Limits{})
	require.Equal(e.T, workflow.RunFailed, getRun(e, s, k.RunID).Status)
	before = digest(e, "f")
	_, err = s.RequestCancellation(e.Ctx, "f", nil, ms(30))
	requireIs(e.T, err, workflow.ErrIneligible, "a failed run cannot be cancelled")
	unchanged(e, before, "cancelling a failed run", "f")
	_, err = s.RequestCancellation(e.Ctx, "missing", nil, ms(30))
	requireIs(e.T, err, workflow.ErrNotFound)
}

func caseCancelPreparedHolds(e *env) {
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{}, nil)
	a := key("r", "n", "a")
	mkAct(e, s, a)
	p := prep(e, s, a, workflow.Mutating, ms(10))
	st, err := s.RequestCancellation(e.Ctx, "r", nil, ms(20))
	require.NoError(e.T, err)
	assert.Equal(e.T, workflow.RunRunning, st, "a prepared attempt blocks finalisation")
	activePage, err := s.Engine().ActiveAttempts(e.Ctx, workflow.ActiveAttemptQuery{RunID: "r", Limit: 10})
	require.NoError(e.T, err)
	active := activePage.Items
	require.Len(e.T, active, 1)
	assert.Equal(e.T, p.Identity, active[0].Identity)
	before := digest(e, "r")
	requireIs(e.T, s.Engine().Handoff(e.Ctx, p.Key(), nil, ms(21)), workflow.ErrIneligible, "no handoff after cancellation")
	unchanged(e, before, "handoff after cancellation", "r")
	ok, err := s.Engine().CancelNeverDispatched(e.Ctx, p.Identity, nil, ms(30))
	require.NoError(e.T, err)
	assert.True(e.T, ok)
	assert.Equal(e.T, workflow.AttemptCancelled, getAttempt(e, s, a, 1).Status)
	assert.Equal(e.T, workflow.ActivationCancelled, getAct(e, s, a).Status)
	assert.Equal(e.T, workflow.RunCancelled, getRun(e, s, "r").Status, "settling the last attempt finalises the run")
	assert.Equal(e.T, []string{"attempt_cancelled", "run_cancelled"}, lastTypes(e, s, "r", 2))
	assert.Equal(e.T, attemptEvent(a, 1, `{"reason":"never_dispatched"}`), payloadsOf(e, s, "r", "attempt_cancelled")[0])
	before = digest(e, "r")
	ok, err = s.Engine().CancelNeverDispatched(e.Ctx, p.Identity, nil, ms(31))
	require.NoError(e.T, err)
	assert.False(e.T, ok, "already cancelled")
	unchanged(e, before, "second cancel", "r")
}

func caseCancelNeverDispatchedProof(e *env) {
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{}, nil)
	a, b := key("r", "n", "a"), key("r", "n", "b")
	mkAct(e, s, a)
	mkAct(e, s, b)
	pa := prep(e, s, a, workflow.Mutating, ms(10))
	require.NoError(e.T, s.Engine().Handoff(e.Ctx, pa.Key(), nil, ms(11)))
	pb := prep(e, s, b, workflow.Mutating, ms(12))
	// Without cancellation requested the proof is not enough.
	before := digest(e, "r")
	_, err := s.Engine().CancelNeverDispatched(e.Ctx, pb.Identity, nil, ms(13))
	requireIs(e.T, err, workflow.ErrIneligible, "no cancellation requested")
	unchanged(e, before, "cancel without cancellation", "r")
	_, err = s.RequestCancellation(e.Ctx, "r", nil, ms(20))
	require.NoError(e.T, err)
	before = digest(e, "r")
	ok, err := s.Engine().CancelNeverDispatched(e.Ctx, pa.Identity, nil, ms(21))
	require.NoError(e.T, err)
	assert.False(e.T, ok, "a recorded handoff has no never-dispatched proof")
	unchanged(e, before, "cancel after a recorded handoff", "r")
	assert.Equal(e.T, workflow.AttemptPrepared, getAttempt(e, s, a, 1).Status)
	ok, err = s.Engine().CancelNeverDispatched(e.Ctx, pb.Identity, nil, ms(22))
	require.NoError(e.T, err)
	assert.True(e.T, ok)
	assert.Equal(e.T, workflow.RunRunning, getRun(e, s, "r").Status, "the ambiguous attempt still blocks finalisation")
	_, err = s.Engine().CancelNeverDispatched(e.Ctx, identity(key("r", "n", "zz"), 1), nil, ms(23))
	requireIs(e.T, err, workflow.ErrNotFound)
}

func caseCancelWinsLateSuccess(e *env) {
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{}, nil)
	a, b := key("r", "n", "a"), key("r", "n", "b")
	mkAct(e, s, a)
	mkAct(e, s, b, withPolicy(retryPolicy(3, 100)), withEffect(workflow.ReadOnly, workflow.IdempotentReplay))
	admitOnly(e, s, newOwner(), ms(10), identity(a, 1), identity(b, 1))
	_, err := s.RequestCancellation(e.Ctx, "r", nil, ms(20))
	require.NoError(e.T, err)
	res := observe(e, s, identity(a, 1), obs(workflow.ObservedSucceeded), ms(30))
	assert.Equal(e.T, workflow.AttemptCancelled, res.Status, "cancellation wins over a late success")
	act := getAct(e, s, a)
	assert.Equal(e.T, workflow.ActivationCancelled, act.Status)
	assert.Nil(e.T, act.Output, "no output is persisted")
	assert.Equal(e.T, workflow.RunRunning, getRun(e, s, "r").Status, "b is still active")
	res = observe(e, s, identity(b, 1), obs(workflow.ObservedRetryableFailure), ms(40))
	assert.Equal(e.T, workflow.AttemptCancelled, res.Status)
	assert.Nil(e.T, res.Schedule, "no retry is scheduled for a cancelled run")
	assert.Nil(e.T, getSchedule(e, s, b))
	assert.Equal(e.T, workflow.RunCancelled, getRun(e, s, "r").Status)
	types := eventTypes(e, s, "r")
	assert.Equal(e.T, 0, countType(types, "attempt_succeeded"))
	assert.Equal(e.T, 0, countType(types, "attempt_failed"))
	assert.Equal(e.T, 2, countType(types, "attempt_cancelled"))
	assert.Equal(e.T, 1, countType(types, "run_cancelled"))
	assert.Equal(e.T, "run_cancelled", types[len(types)-1])
	before := digest(e, "r")
	_, err = s.ApplyObservation(e.Ctx, identity(a, 1), obs(workflow.ObservedSucceeded), ms(50))
	requireIs(e.T, err, workflow.ErrConflict, "success contradicts the cancelled attempt")
	unchanged(e, before, "late success after settlement", "r")
}

func caseCancelOrphanReadOnly(e *env) {
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{}, nil)
	a := key("r", "n", "a")
	mkAct(e, s, a)
	admitOnly(e, s, newOwner(), ms(10), identity(a, 1))
	before := digest(e, "r")
	_, err := s.Engine().SettleOrphanedCancellation(e.Ctx, identity(a, 1), ms(15))
	requireIs(e.T, err, workflow.ErrIneligible, "no cancellation requested")
	unchanged(e, before, "settling without cancellation", "r")
	_, err = s.RequestCancellation(e.Ctx, "r", nil, ms(20))
	require.NoError(e.T, err)
	st, err := s.Engine().SettleOrphanedCancellation(e.Ctx, identity(a, 1), ms(30))
	require.NoError(e.T, err)
	assert.Equal(e.T, workflow.RunCancelled, st)
	assert.Equal(e.T, workflow.AttemptCancelled, getAttempt(e, s, a, 1).Status)
	assert.Equal(e.T, workflow.ActivationCancelled, getAct(e, s, a).Status)
	assert.Equal(e.T, []string{"attempt_cancelled", "run_cancelled"}, lastTypes(e, s, "r", 2))
	before = digest(e, "r")
	st, err = s.Engine().SettleOrphanedCancellation(e.Ctx, identity(a, 1), ms(31))
	require.NoError(e.T, err)
	assert.Equal(e.T, workflow.RunCancelled, st, "a settled attempt is left alone")
	unchanged(e, before, "settling a settled attempt", "r")
}

func caseCancelOrphanMutation(e *env) {
	s := store(e)
	// r1: receipt-less, handoff pending → repair_required.
	// r2: receipt-less, handoff recorded → unchanged (admission in flight).
	// r3: receipt-backed → repair_required.
	for _, r := range []string{"r1", "r2", "r3"} {
		mkRun(e, s, r, workflow.Limits{}, nil)
		mkAct(e, s, key(r, "n", "a"))
	}
	p1 := prep(e, s, key("r1", "n", "a"), workflow.Mutating, ms(10))
	p2 := prep(e, s, key("r2", "n", "a"), workflow.Mutating, ms(10))
	require.NoError(e.T, s.Engine().Handoff(e.Ctx, p2.Key(), nil, ms(11)))
	o := newOwner()
	o.effect = workflow.Mutating
	sum := dispatch(e, s, o, workflow.DispatchOptions{RunID: "r3"}, ms(10))
	require.Equal(e.T, []string{identity(key("r3", "n", "a"), 1)}, refIdentities(sum.Admitted))
	for _, r := range []string{"r1", "r2", "r3"} {
		st, err := s.RequestCancellation(e.Ctx, r, nil, ms(20))
		require.NoError(e.T, err)
		require.Equal(e.T, workflow.RunRunning, st)
	}
	st, err := s.Engine().SettleOrphanedCancellation(e.Ctx, p1.Identity, ms(30))
	require.NoError(e.T, err)
	assert.Equal(e.T, workflow.RunRepairRequired, st, "receipt-less mutation with pending handoff")
	assert.Equal(e.T, workflow.AttemptRepairRequired, getAttempt(e, s, p1.Key().ActivationKey, 1).Status)
	assert.Equal(e.T, workflow.RunRepairRequired, getRun(e, s, "r1").Status)
	assert.Equal(e.T, 1, countType(eventTypes(e, s, "r1"), "attempt_repair_required"))

	before := digest(e, "r2")
	st, err = s.Engine().SettleOrphanedCancellation(e.Ctx, p2.Identity, ms(30))
	require.NoError(e.T, err)
	assert.Equal(e.T, workflow.RunRunning, st, "handoff recorded without receipt is left unchanged")
	unchanged(e, before, "settling an in-flight admission", "r2")
	assert.Equal(e.T, workflow.AttemptPrepared, getAttempt(e, s, p2.Key().ActivationKey, 1).Status)

	st, err = s.Engine().SettleOrphanedCancellation(e.Ctx, sum.Admitted[0].Identity, ms(30))
	require.NoError(e.T, err)
	assert.Equal(e.T, workflow.RunRepairRequired, st, "receipt-backed mutation")
	assert.Equal(e.T, workflow.AttemptRepairRequired, getAttempt(e, s, key("r3", "n", "a"), 1).Status)
}

func caseCancelPauseResume(e *env) {
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{}, nil)
	a, b := key("r", "n", "a"), key("r", "n", "b")
	mkAct(e, s, a)
	require.NoError(e.T, s.PauseRun(e.Ctx, "r", nil, ms(10)))
	assert.Equal(e.T, workflow.RunPaused, getRun(e, s, "r").Status)
	before := digest(e, "r")
	require.NoError(e.T, s.PauseRun(e.Ctx, "r", nil, ms(11)), "pausing a paused run")
	unchanged(e, before, "second pause", "r")
	s = e.newStore(e.Reopen())
	o := newOwner()
	admitOnly(e, s, o, ms(12))
	assert.Zero(e.T, o.totalCalls(), "a paused run admits nothing")
	got, err := s.Engine().PreparePending(e.Ctx, a, workflow.Plan{SideEffect: workflow.ReadOnly, Intent: json.RawMessage(`{}`)}, ms(13))
	require.NoError(e.T, err)
	assert.Nil(e.T, got)
	_, err = s.AddActivation(e.Ctx, workflow.NewActivation{Key: b, Input: json.RawMessage(`{}`)}, ms(14))
	requireIs(e.T, err, workflow.ErrIneligible, "a paused run takes no new work")
	unchanged(e, before, "admission while paused", "r")
	require.NoError(e.T, s.ResumeRun(e.Ctx, "r", nil, ms(20)))
	assert.Equal(e.T, workflow.RunRunning, getRun(e, s, "r").Status)
	before = digest(e, "r")
	require.NoError(e.T, s.ResumeRun(e.Ctx, "r", nil, ms(21)), "resuming a running run")
	unchanged(e, before, "second resume", "r")
	types := eventTypes(e, s, "r")
	assert.Equal(e.T, 1, countType(types, "run_paused"))
	assert.Equal(e.T, 1, countType(types, "run_resumed"))
	admitOnly(e, s, o, ms(22), identity(a, 1))

	require.NoError(e.T, s.PauseRun(e.Ctx, "r", nil, ms(30)))
	st, err := s.RequestCancellation(e.Ctx, "r", nil, ms(31))
	require.NoError(e.T, err)
	assert.Equal(e.T, workflow.RunPaused, st, "the admitted attempt keeps the run from cancelling")
	before = digest(e, "r")
	requireIs(e.T, s.ResumeRun(e.Ctx, "r", nil, ms(32)), workflow.ErrIneligible, "resume after cancellation")
	unchanged(e, before, "resume after cancellation", "r")

	k := failedPlain(e, s, "f", "a", workflow.Limits{})
	before = digest(e, k.RunID)
	requireIs(e.T, s.PauseRun(e.Ctx, "f", nil, ms(40)), workflow.ErrIneligible, "pausing a failed run")
	requireIs(e.T, s.ResumeRun(e.Ctx, "f", nil, ms(40)), workflow.ErrIneligible, "resuming a failed run")
	unchanged(e, before, "gates on a failed run", "f")
}

func caseCancelSignalled(e *env) {
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{}, nil)
	a, b := key("r", "n", "a"), key("r", "n", "b")
	mkAct(e, s, a)
	mkAct(e, s, b)
	o := newOwner()
	o.effect = workflow.Mutating
	sum := dispatch(e, s, o, workflow.DispatchOptions{Limit: 1}, ms(10))
	require.Equal(e.T, []string{identity(a, 1)}, refIdentities(sum.Admitted))
	pb := prep(e, s, b, workflow.Mutating, ms(11))
	require.NoError(e.T, s.Engine().Handoff(e.Ctx, pb.Key(), nil, ms(12)), "the owner may now hold b")
	before := digest(e, "r")
	requireIs(e.T, s.Engine().MarkCancellationSignalled(e.Ctx, identity(a, 1), ms(15)), workflow.ErrIneligible, "no cancellation requested")
	unchanged(e, before, "signal without cancellation", "r")

	_, err := s.RequestCancellation(e.Ctx, "r", nil, ms(20))
	require.NoError(e.T, err)
	activePage, err := s.Engine().ActiveAttempts(e.Ctx, workflow.ActiveAttemptQuery{RunID: "r", Limit: 10})
	require.NoError(e.T, err)
	active := activePage.Items
	assert.Len(e.T, active, 2, "both attempts are work to signal")
	for _, id := range []string{identity(a, 1), pb.Identity} {
		require.NoError(e.T, s.Engine().MarkCancellationSignalled(e.Ctx, id, ms(21)), "signal %s", id)
		got, err := s.GetAttempt(e.Ctx, id)
		require.NoError(e.T, err)
		assert.Equal(e.T, workflow.AttemptCancelling, got.Status)
	}
	assert.Equal(e.T, 2, countType(eventTypes(e, s, "r"), "attempt_cancellation_signalled"))
	before = digest(e, "r")
	require.NoError(e.T, s.Engine().MarkCancellationSignalled(e.Ctx, identity(a, 1), ms(22)), "signalling twice")
	unchanged(e, before, "second signal", "r")

	// The in-flight admission's receipt arrives: stored, still cancelling.
	rc := json.RawMessage(`{"accepted":"late"}`)
	require.NoError(e.T, s.Engine().PersistReceipt(e.Ctx, workflow.OwnerReceipt{Key: pb.Key(), Receipt: rc, Authority: nil}, ms(30)))
	got := getAttempt(e, s, b, 1)
	assert.Equal(e.T, workflow.AttemptCancelling, got.Status, "a receipt keeps cancelling")
	assert.JSONEq(e.T, string(rc), string(got.Receipt))
	assert.Equal(e.T, "attempt_cancellation_receipt_recorded", lastTypes(e, s, "r", 1)[0])
	before = digest(e, "r")
	require.NoError(e.T, s.Engine().PersistReceipt(e.Ctx, workflow.OwnerReceipt{Key: pb.Key(), Receipt: rc, Authority: nil}, ms(31)), "identical duplicate")
	requireIs(e.T, s.Engine().PersistReceipt(e.Ctx, workflow.OwnerReceipt{Key: pb.Key(), Receipt: json.RawMessage(`{"accepted":"other"}`), Authority: nil}, ms(31)),
		workflow.ErrConflict, "different receipt")
	unchanged(e, before, "duplicate and conflicting receipts", "r")
	assert.Equal(e.T, workflow.RunRunning, getRun(e, s, "r").Status)

	observe(e, s, identity(a, 1), obs(workflow.ObservedRunning), ms(40))
	assert.Equal(e.T, workflow.AttemptCancelling, getAttempt(e, s, a, 1).Status, "work the owner reports still running stays cancelling")
	observe(e, s, identity(a, 1), obs(workflow.ObservedSucceeded), ms(40))
	assert.Equal(e.T, workflow.AttemptCancelled, getAttempt(e, s, a, 1).Status, "a finished attempt of a cancelled run settles as cancelled")
	observe(e, s, pb.Identity, obs(workflow.ObservedCancelled), ms(41))
	assert.Equal(e.T, workflow.RunCancelled, getRun(e, s, "r").Status)
	// A settled attempt is never signalled back to cancelling.
	before = digest(e, "r")
	requireIs(e.T, s.Engine().MarkCancellationSignalled(e.Ctx, identity(a, 1), ms(42)), workflow.ErrIneligible, "signalling a settled attempt")
	unchanged(e, before, "signal of a settled attempt", "r")
}
