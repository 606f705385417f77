package conformance

import (
	"context"
	"encoding/json"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/internal/faultseam"
	"github.com/wfstore/wfstore/workflow"
)

func reconcileCases() []testCase {
	return []testCase{
		{Name: "reconcile_never_dispatched_mutation_is_kept_and_redispatched_once", Run: caseNeverDispatched},
		{Name: "reconcile_ambiguous_mutation_becomes_repair_required", Run: caseAmbiguousMutation},
		{Name: "reconcile_receipt_lookup_recovers_ambiguous_attempt", Run: caseReceiptLookup},
		{Name: "reconcile_ambiguous_read_only_is_redispatched_with_same_identity", Run: caseReadOnlyRedispatch},
		{Name: "reconcile_redispatch_never_selects_ambiguous_mutation", Run: caseNoBlindRedispatch},
		{Name: "reconcile_explicit_repair_requires_repair_required_and_never_dispatches", Run: caseRepair},
		{Name: "reconcile_abandon_then_explicit_retry_creates_next_attempt", Run: caseAbandonRetry},
		{Name: "reconcile_observations_map_to_attempt_statuses", Run: caseObservationMapping},
		{Name: "reconcile_observation_conflicting_with_settled_attempt_fails", Run: caseObservationConflict},
	}
}

func caseNeverDispatched(e *env) {
	s := store(e)
	p := prepared(e, s, workflow.Mutating, nil, false)
	s = e.newStore(e.Reopen())
	sum, err := s.Engine().ReconcilePrepared(e.Ctx, workflow.ReconcileOptions{Limit: 10}, ms(20))
	require.NoError(e.T, err)
	assert.Equal(e.T, []string{p.Identity}, refIdentities(sum.NeverDispatched))
	assert.Empty(e.T, sum.RepairRequired, "a provably never-dispatched mutation is not ambiguous")
	assert.Equal(e.T, workflow.AttemptPrepared, getAttempt(e, s, p.Activation.Key, 1).Status)
	o := newOwner()
	rs, err := s.Engine().Redispatch(e.Ctx, o, workflow.ReconcileOptions{Limit: 10}, ms(21))
	require.NoError(e.T, err)
	assert.Equal(e.T, []string{p.Identity}, refIdentities(rs.Admitted), "same identity")
	a := getAttempt(e, s, p.Activation.Key, 1)
	assert.Equal(e.T, workflow.AttemptAdmitted, a.Status)
	assert.JSONEq(e.T, `{"do":"a"}`, string(a.Intent), "same intent")
	rs, err = s.Engine().Redispatch(e.Ctx, o, workflow.ReconcileOptions{Limit: 10}, ms(22))
	require.NoError(e.T, err)
	assert.Empty(e.T, rs.Admitted)
	assert.Equal(e.T, 1, o.callCount(p.Identity))
}

func caseAmbiguousMutation(e *env) {
	s := store(e)
	p := prepared(e, s, workflow.Mutating, nil, true)
	s = e.newStore(e.Reopen())
	sum, err := s.Engine().ReconcilePrepared(e.Ctx, workflow.ReconcileOptions{RunID: "r", Limit: 10}, ms(20))
	require.NoError(e.T, err)
	assert.Equal(e.T, []string{p.Identity}, refIdentities(sum.RepairRequired))
	assert.Equal(e.T, workflow.AttemptRepairRequired, getAttempt(e, s, p.Activation.Key, 1).Status)
	assert.Equal(e.T, workflow.RunRepairRequired, getRun(e, s, "r").Status)
	assert.Equal(e.T, 1, countType(eventTypes(e, s, "r"), "attempt_repair_required"))
	_, err = s.Engine().ReconcilePrepared(e.Ctx, workflow.ReconcileOptions{Limit: -1}, ms(21))
	requireIs(e.T, err, workflow.ErrInvalidInput, "a negative limit is rejected")
}

func caseReceiptLookup(e *env) {
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{}, nil)
	k := key("r", "n", "a")
	mkAct(e, s, k)
	o := newOwner()
	o.effect = workflow.Mutating
	fault := func(_ context.Context, b faultseam.Boundary, _ workflow.PreparedDispatch) error {
		if b == faultseam.OwnerAccepted {
			return errInjected // the process "dies" after the owner accepted
		}
		return nil
	}
	_, err := s.Dispatch(faultseam.With(e.Ctx, fault), o, workflow.DispatchOptions{Limit: 10}, ms(10))
	requireIs(e.T, err, errInjected)
	s = e.newStore(e.Reopen())
	o.lookupErr = errInjected
	_, err = s.Engine().ReconcilePrepared(e.Ctx, workflow.ReconcileOptions{Limit: 10, Lookup: o}, ms(20))
	requireIs(e.T, err, workflow.ErrOwner, "a failing lookup stops the pass")
	assert.Equal(e.T, workflow.AttemptPrepared, getAttempt(e, s, k, 1).Status)
	o.lookupErr = nil
	sum, err := s.Engine().ReconcilePrepared(e.Ctx, workflow.ReconcileOptions{Limit: 10, Lookup: o}, ms(21))
	require.NoError(e.T, err)
	assert.Equal(e.T, []string{identity(k, 1)}, refIdentities(sum.Recovered))
	a := getAttempt(e, s, k, 1)
	assert.Equal(e.T, workflow.AttemptAdmitted, a.Status)
	assert.Equal(e.T, 1, o.callCount(a.Identity))
}

func caseReadOnlyRedispatch(e *env) {
	s := store(e)
	p := prepared(e, s, workflow.ReadOnly, nil, true)
	sum, err := s.Engine().ReconcilePrepared(e.Ctx, workflow.ReconcileOptions{Limit: 10}, ms(20))
	require.NoError(e.T, err)
	assert.Equal(e.T, []string{p.Identity}, refIdentities(sum.SafeReadOnly))
	o := newOwner()
	rs, err := s.Engine().Redispatch(e.Ctx, o, workflow.ReconcileOptions{Limit: 10}, ms(21))
	require.NoError(e.T, err)
	assert.Equal(e.T, []string{p.Identity}, refIdentities(rs.Admitted))
	assert.Equal(e.T, 1, o.callCount(p.Identity))
	assert.Equal(e.T, workflow.AttemptAdmitted, getAttempt(e, s, p.Activation.Key, 1).Status)
}

func caseNoBlindRedispatch(e *env) {
	s := store(e)
	p := prepared(e, s, workflow.Mutating, nil, true)
	o := newOwner()
	before := digest(e, "r")
	rs, err := s.Engine().Redispatch(e.Ctx, o, workflow.ReconcileOptions{Limit: 10}, ms(21))
	require.NoError(e.T, err)
	assert.Empty(e.T, rs.Admitted)
	assert.Equal(e.T, []string{p.Identity}, refIdentities(rs.Skipped))
	assert.Zero(e.T, o.totalCalls())
	assert.Equal(e.T, before, digest(e, "r"))
}

func caseRepair(e *env) {
	s := store(e)
	p := prepared(e, s, workflow.Mutating, nil, true)
	before := digest(e, "r")
	requireIs(e.T, s.Repair(e.Ctx, workflow.RepairRequest{Identity: p.Identity, Action: workflow.RepairConfirmSucceeded, Output: json.RawMessage(`{}`)}, ms(19)), workflow.ErrIneligible, "not repair_required yet")
	assert.Equal(e.T, before, digest(e, "r"))
	_, err := s.Engine().ReconcilePrepared(e.Ctx, workflow.ReconcileOptions{Limit: 10}, ms(20))
	require.NoError(e.T, err)
	requireIs(e.T, s.Repair(e.Ctx, workflow.RepairRequest{Identity: p.Identity, Action: workflow.RepairConfirmSucceeded}, ms(21)), workflow.ErrInvalidInput, "output required")
	require.NoError(e.T, s.Repair(e.Ctx, workflow.RepairRequest{Identity: p.Identity, Action: workflow.RepairConfirmSucceeded, Output: json.RawMessage(`{"done":1}`)}, ms(22)))
	assert.Equal(e.T, workflow.AttemptSucceeded, getAttempt(e, s, p.Activation.Key, 1).Status)
	act := getAct(e, s, p.Activation.Key)
	assert.Equal(e.T, workflow.ActivationCompleted, act.Status)
	assert.Equal(e.T, workflow.RunCompleted, getRun(e, s, "r").Status, "the repaired activation was the run's last")
	o := newOwner()
	sum := dispatch(e, s, o, workflow.DispatchOptions{}, ms(23))
	assert.Empty(e.T, sum.Admitted)
	assert.Zero(e.T, o.totalCalls(), "repair never dispatches")
}

func caseAbandonRetry(e *env) {
	s := store(e)
	p := prepared(e, s, workflow.Mutating, nil, true)
	k := p.Activation.Key
	_, err := s.Engine().ReconcilePrepared(e.Ctx, workflow.ReconcileOptions{Limit: 10}, ms(20))
	require.NoError(e.T, err)
	_, err = s.RetryFailedNode(e.Ctx, k, 1, ms(21))
	requireIs(e.T, err, workflow.ErrIneligible, "explicit abandonment is required before retrying an ambiguous mutation")
	require.NoError(e.T, s.Repair(e.Ctx, workflow.RepairRequest{Identity: p.Identity, Action: workflow.RepairAbandon}, ms(22)))
	assert.Equal(e.T, workflow.AttemptAbandoned, getAttempt(e, s, k, 1).Status)
	assert.Equal(e.T, workflow.RunFailed, getRun(e, s, "r").Status)
	rq, err := s.RetryFailedNode(e.Ctx, k, 1, ms(23))
	require.NoError(e.T, err)
	assert.Equal(e.T, uint32(2), rq.NextAttempt)
	o := newOwner()
	sum := dispatch(e, s, o, workflow.DispatchOptions{}, ms(24))
	assert.Equal(e.T, []string{identity(k, 2)}, refIdentities(sum.Admitted), "a new, higher-numbered identity")
}

func caseObservationMapping(e *env) {
	rows := []struct {
		obs    workflow.Observation
		effect workflow.Effect
		status workflow.AttemptStatus
		act    workflow.ActivationStatus
		run    workflow.RunStatus
	}{
		{workflow.Observation{Kind: workflow.ObservedRunning}, workflow.Mutating, workflow.AttemptRunning, workflow.ActivationRunning, workflow.RunRunning},
		{workflow.Observation{Kind: workflow.ObservedDeferred}, workflow.Mutating, workflow.AttemptAdmitted, workflow.ActivationRunning, workflow.RunRunning},
		{workflow.Observation{Kind: workflow.ObservedSucceeded, Output: json.RawMessage(`1`)}, workflow.Mutating, workflow.AttemptSucceeded, workflow.ActivationCompleted, workflow.RunCompleted},
		{workflow.Observation{Kind: workflow.ObservedFailed}, workflow.Mutating, workflow.AttemptFailed, workflow.ActivationFailed, workflow.RunFailed},
		{workflow.Observation{Kind: workflow.ObservedPaused}, workflow.Mutating, workflow.AttemptPaused, workflow.ActivationPending, workflow.RunPaused},
		{workflow.Observation{Kind: workflow.ObservedCancelled}, workflow.Mutating, workflow.AttemptCancelled, workflow.ActivationCancelled, workflow.RunCompleted}, // nothing else is open
		{workflow.Observation{Kind: workflow.ObservedUnknown}, workflow.Mutating, workflow.AttemptRepairRequired, workflow.ActivationRunning, workflow.RunRepairRequired},
		{workflow.Observation{Kind: workflow.ObservedUnknown}, workflow.ReadOnly, workflow.AttemptAdmitted, workflow.ActivationRunning, workflow.RunRunning},
	}
	s := store(e)
	for i, row := range rows {
		run := "obs" + string(rune('a'+i))
		mkRun(e, s, run, workflow.Limits{}, nil)
		k := key(run, "n", "a")
		mkAct(e, s, k)
		o := newOwner()
		o.effect = row.effect
		sum := dispatch(e, s, o, workflow.DispatchOptions{RunID: run}, ms(10))
		require.Len(e.T, sum.Admitted, 1)
		res, err := s.ApplyObservation(e.Ctx, sum.Admitted[0].Identity, row.obs, ms(20))
		require.NoError(e.T, err, "%s", row.obs.Kind)
		assert.Equal(e.T, row.status, res.Status, "%s/%s: result", row.obs.Kind, row.effect)
		assert.Equal(e.T, row.status, getAttempt(e, s, k, 1).Status, "%s/%s: attempt", row.obs.Kind, row.effect)
		assert.Equal(e.T, row.act, getAct(e, s, k).Status, "%s/%s: activation", row.obs.Kind, row.effect)
		assert.Equal(e.T, row.run, getRun(e, s, run).Status, "%s/%s: run", row.obs.Kind, row.effect)
		assert.Equal(e.T, row.obs.Kind == workflow.ObservedUnknown && row.effect == workflow.ReadOnly, res.Unresolved)
	}
}

func caseObservationConflict(e *env) {
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{}, nil)
	mkAct(e, s, key("r", "n", "a"))
	sum := dispatch(e, s, newOwner(), workflow.DispatchOptions{}, ms(10))
	id := sum.Admitted[0].Identity
	_, err := s.ApplyObservation(e.Ctx, id, workflow.Observation{Kind: workflow.ObservedFailed}, ms(20))
	require.NoError(e.T, err)
	before := digest(e, "r")
	_, err = s.ApplyObservation(e.Ctx, id, workflow.Observation{Kind: workflow.ObservedRetryableFailure}, ms(21))
	require.NoError(e.T, err, "RetryableFailure matches failed")
	_, err = s.ApplyObservation(e.Ctx, id, workflow.Observation{Kind: workflow.ObservedRunning}, ms(21))
	require.NoError(e.T, err, "Running is compatible")
	assert.Equal(e.T, before, digest(e, "r"))
	_, err = s.ApplyObservation(e.Ctx, id, workflow.Observation{Kind: workflow.ObservedSucceeded, Output: json.RawMessage(`1`)}, ms(22))
	requireIs(e.T, err, workflow.ErrConflict)
	assert.Equal(e.T, before, digest(e, "r"))
	_, err = s.ApplyObservation(e.Ctx, identity(key("r", "n", "zz"), 1), workflow.Observation{Kind: workflow.ObservedFailed}, ms(22))
	requireIs(e.T, err, workflow.ErrNotFound)
}
