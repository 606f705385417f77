package conformance

import (
	"context"
	"encoding/json"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/internal/faultseam"
	"github.com/wfstore/wfstore/workflow"
)

// seedDepartureCases pin the behaviour the Store chose where it departs from
// its upstream, or where its own documentation once said otherwise; each
// choice and its reason is in the workflow package doc ("Decisions beyond
// upstream").
func seedDepartureCases() []testCase {
	return []testCase{
		{Name: "explicit_retry_accepts_a_running_run_whose_sibling_retry_requeued_it", Run: caseRetryRunningRun},
		{Name: "cancellation_of_a_repair_required_run_is_recorded_and_the_repair_finalises_it", Run: caseCancelRepairRequired},
		{Name: "a_run_paused_or_retiring_at_prepare_is_raced_and_at_handoff_rejected", Run: casePausedAtPrepareRaced},
		{Name: "handoff_of_a_mutating_attempt_without_handoff_state_is_refused", Run: caseHandoffUnknownMutating},
	}
}

// caseRetryRunningRun: upstream retries only a failed run; here a run that a
// sibling's retry made running again still lets its other failed
// activation be retried, explicitly or by its schedule.
func caseRetryRunningRun(e *env) {
	s := store(e)
	o := newOwner()
	mkRun(e, s, "r", workflow.Limits{}, nil)
	x, z := key("r", "n", "x"), key("r", "n", "z")
	pol, eff := withPolicy(retryPolicy(3, 100)), withEffect(workflow.ReadOnly, workflow.IdempotentReplay)
	mkAct(e, s, x, pol, eff)
	mkAct(e, s, z, pol, eff)
	admitOnly(e, s, o, ms(10), identity(x, 1), identity(z, 1))
	require.NotNil(e.T, observe(e, s, identity(x, 1), obs(workflow.ObservedRetryableFailure), ms(20)).Schedule)
	require.NotNil(e.T, observe(e, s, identity(z, 1), obs(workflow.ObservedRetryableFailure), ms(21)).Schedule)
	_, err := s.Engine().ConsumeDueRetry(e.Ctx, z, ms(121))
	require.NoError(e.T, err)
	require.Equal(e.T, workflow.RunRunning, getRun(e, s, "r").Status)

	rq, err := s.RetryFailedNode(e.Ctx, x, 1, ms(122))
	require.NoError(e.T, err, "the run is running, not failed: accepted all the same")
	assert.Equal(e.T, uint32(2), rq.NextAttempt)
	assert.Equal(e.T, workflow.ActivationPending, getAct(e, s, x).Status)
	assert.Nil(e.T, getSchedule(e, s, x), "the explicit retry superseded the schedule")
	admitOnly(e, s, o, ms(123), identity(x, 2), identity(z, 2))

}

// caseCancelRepairRequired: upstream cancels only a running or paused run;
// here a repair_required run takes the intent too (nothing more is
// admitted), and the repair that resolves it finalises the run.
func caseCancelRepairRequired(e *env) {
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{}, nil)
	a, b := key("r", "n", "a"), key("r", "n", "b")
	mkAct(e, s, a, withEffect(workflow.Mutating, workflow.RepairRequired))
	o := newOwner()
	o.effect = workflow.Mutating
	admitOnly(e, s, o, ms(10), identity(a, 1))
	mkAct(e, s, b)
	observe(e, s, identity(a, 1), obs(workflow.ObservedUnknown), ms(20))
	require.Equal(e.T, workflow.RunRepairRequired, getRun(e, s, "r").Status)

	st, err := s.RequestCancellation(e.Ctx, "r", nil, ms(30))
	require.NoError(e.T, err, "a repair_required run takes the cancellation intent")
	assert.Equal(e.T, workflow.RunRepairRequired, st, "it waits for its repair")
	assert.Equal(e.T, ms(30).UnixMilli(), msOf(getRun(e, s, "r").CancelRequestedAt))
	assert.Equal(e.T, workflow.ActivationCancelled, getAct(e, s, b).Status, "its unstarted work is cancelled")
	require.NoError(e.T, s.Repair(e.Ctx, workflow.RepairRequest{Identity: identity(a, 1), Action: workflow.RepairConfirmSucceeded, Output: json.RawMessage(`{}`)}, ms(40)))
	assert.Equal(e.T, workflow.RunCancelled, getRun(e, s, "r").Status, "the repair finalises the cancelling run")
	assert.Equal(e.T, []string{"attempt_repaired", "run_cancelled"}, lastTypes(e, s, "r", 2))
}

// casePausedAtPrepareRaced: as upstream, a prepare that finds the run paused
// (or cancelling, or the member's group retiring) creates nothing and the
// pass lists the activation as raced, since the single-winner gate cannot
// tell that from another dispatcher's win; a run paused after prepare is
// refused at handoff and listed as rejected.
func casePausedAtPrepareRaced(e *env) {
	s := store(e)
	mkRun(e, s, "p", workflow.Limits{}, nil)
	pk := key("p", "n", "a")
	mkAct(e, s, pk)
	o := newOwner()
	o.onPlan = func(ctx context.Context, a workflow.Activation) error {
		if a.Key == pk {
			return s.PauseRun(ctx, "p", nil, ms(11))
		}
		return nil
	}
	sum := dispatch(e, s, o, workflow.DispatchOptions{RunID: "p"}, ms(10))
	assert.Equal(e.T, []workflow.ActivationKey{pk}, sum.Raced, "paused between discovery and prepare")
	assert.Empty(e.T, sum.Rejected)
	assert.Zero(e.T, o.totalCalls())
	assert.Equal(e.T, workflow.ActivationPending, getAct(e, s, pk).Status, "nothing was prepared")
	assert.Empty(e.T, attemptsOf(e, s, "p"))

	// A fan-out member whose group starts retiring during Plan.
	c, m := fanOut(e, s, "f", nil, 1, 1)
	fo := fanOutOwner()
	fo.onPlan = func(ctx context.Context, a workflow.Activation) error {
		if a.Key == m[0] {
			return s.RetireFanOut(ctx, c, ms(21))
		}
		return nil
	}
	sum = dispatch(e, s, fo, workflow.DispatchOptions{RunID: "f"}, ms(20))
	assert.Contains(e.T, sum.Raced, m[0], "retiring between discovery and prepare")
	assert.Empty(e.T, sum.Rejected)
	assert.Empty(e.T, attemptsOf(e, s, "f"))

	// Paused after prepare: refused at handoff, rejected, never dispatched.
	mkRun(e, s, "h", workflow.Limits{}, nil)
	hk := key("h", "n", "a")
	mkAct(e, s, hk)
	ho := newOwner()
	pause := func(ctx context.Context, b faultseam.Boundary, p workflow.PreparedDispatch) error {
		if b == faultseam.IntentCommitted {
			return s.PauseRun(ctx, "h", nil, ms(31))
		}
		return nil
	}
	sum = dispatchCtx(faultseam.With(e.Ctx, pause), e, s, ho, workflow.DispatchOptions{RunID: "h"}, ms(30))
	require.Len(e.T, sum.Rejected, 1)
	assert.Equal(e.T, hk, sum.Rejected[0].Key)
	requireIs(e.T, sum.Rejected[0].Err, workflow.ErrIneligible)
	assert.Empty(e.T, sum.Raced)
	assert.Zero(e.T, ho.totalCalls())
	assert.Equal(e.T, workflow.HandoffPending, getAttempt(e, s, hk, 1).Handoff, "provably never dispatched")
}

// caseHandoffUnknownMutating: upstream records a handoff for an attempt
// without handoff state by updating nothing, and so lets a mutating one go;
// here Handoff refuses it, since with nothing to flip it could not
// guarantee a single owner call. A read-only one is let through, unchanged.
func caseHandoffUnknownMutating(e *env) {
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{}, nil)
	m, r := key("r", "n", "m"), key("r", "n", "ro")
	mkAct(e, s, m)
	mkAct(e, s, r)
	for _, c := range []struct {
		k   workflow.ActivationKey
		eff workflow.Effect
	}{{m, workflow.Mutating}, {r, workflow.ReadOnly}} {
		// The pending gate takes attempt 1 (the activation runs); the
		// low-level prepare records attempt 2 without handoff state.
		prep(e, s, c.k, c.eff, ms(5))
		_, err := s.Engine().PrepareAttempt(e.Ctx, workflow.AttemptIntent{Key: attemptKey(c.k, 2), SideEffect: c.eff, Intent: json.RawMessage(`{}`)}, ms(10))
		require.NoError(e.T, err)
		require.Equal(e.T, workflow.HandoffUnknown, getAttempt(e, s, c.k, 2).Handoff)
		require.Equal(e.T, workflow.ActivationRunning, getAct(e, s, c.k).Status)
	}
	before := digest(e, "r")
	err := s.Engine().Handoff(e.Ctx, attemptKey(m, 2), nil, ms(20))
	requireIs(e.T, err, workflow.ErrIneligible, "a mutating attempt without handoff state")
	assert.Contains(e.T, err.Error(), "no handoff state")
	require.NoError(e.T, s.Engine().Handoff(e.Ctx, attemptKey(r, 2), nil, ms(21)), "a read-only one goes")
	require.NoError(e.T, s.Engine().Handoff(e.Ctx, attemptKey(r, 2), nil, ms(22)), "as often as asked: it is read-only")
	unchanged(e, before, "handoffs of attempts without handoff state", "r")
}
