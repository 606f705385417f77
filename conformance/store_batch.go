package conformance

import (
	"context"
	"encoding/json"
	"sync/atomic"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/workflow"
)

// Batch parity: the store-batch tier runs these cases with Dispatch in
// batch mode, and each asserts the numbers one at a time gives (owner
// calls, attempts left to repair, what is reported), so that batch mode
// keeps every guarantee of one-at-a-time mode.
func batchParityCases() []testCase {
	return []testCase{
		{Name: "batch_owner_error_stops_further_owner_calls", Run: caseBatchOwnerErrorStops},
		{Name: "batch_plan_error_stops_the_pass", Run: caseBatchPlanErrorStops},
		{Name: "batch_stale_authority_at_planning_stops_the_pass_before_planning_more", Run: caseBatchStaleAtPlanning},
		{Name: "batch_stale_authority_at_preparation_stops_the_pass", Run: caseBatchStaleAtPreparation},
		{Name: "batch_stale_authority_at_handoff_stops_the_pass", Run: caseBatchStaleAtHandoff},
		{Name: "batch_stale_authority_at_receipt_stops_the_pass", Run: caseBatchStaleAtReceipt},
	}
}

// mutatingActs adds pending mutating activations (reconciliation
// repair_required) to run, one per id.
func mutatingActs(e *env, s *workflow.Store, run string, ids ...string) []workflow.ActivationKey {
	e.T.Helper()
	var out []workflow.ActivationKey
	for _, id := range ids {
		k := key(run, "n", id)
		mkAct(e, s, k, withEffect(workflow.Mutating, workflow.RepairRequired))
		out = append(out, k)
	}
	return out
}

// caseBatchOwnerErrorStops: the owner is down. One at a time, the first
// failed owner call stops the pass; batch mode makes no further owner
// call either, and no later batch is handed off.
func caseBatchOwnerErrorStops(e *env) {
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{}, nil)
	mutatingActs(e, s, "r", "a", "b", "c", "d", "e", "f")
	o := newOwner()
	o.effect = workflow.Mutating
	o.onDispatch = func(context.Context, workflow.PreparedDispatch) error { return errInjected }
	sum, err := s.Dispatch(e.Ctx, o, workflow.DispatchOptions{Limit: 10}, ms(10))
	requireIs(e.T, err, workflow.ErrOwner, "the owner's failure is the pass's error")
	requireIs(e.T, err, errInjected, "the owner's failure is the pass's error")
	assert.Equal(e.T, 1, o.totalCalls(), "one failed owner call stops the pass, as one at a time")
	assert.Empty(e.T, sum.Admitted)
	if e.batch > 1 {
		require.Len(e.T, sum.OwnerFailed, 1, "the failed attempt is reported")
		requireIs(e.T, sum.OwnerFailed[0].Err, workflow.ErrOwner)
	}
	handedOff := 0
	for _, a := range attemptsOf(e, s, "r") {
		if a.Handoff == workflow.HandoffRecorded {
			handedOff++
		}
	}
	assert.LessOrEqual(e.T, handedOff, max(e.batch, 1), "no batch after the failing one is handed off")
}

// caseBatchPlanErrorStops: the owner's Plan fails for one activation (or
// returns an invalid plan). One at a time, the activations before it are
// admitted and the pass stops there; batch mode does the same.
func caseBatchPlanErrorStops(e *env) {
	for _, invalidPlan := range []bool{false, true} {
		run := "r"
		if invalidPlan {
			run = "r-invalid"
		}
		s := store(e)
		mkRun(e, s, run, workflow.Limits{}, nil)
		ks := mutatingActs(e, s, run, "a", "b", "c", "d", "e", "f")
		o := newOwner()
		var plans atomic.Int32
		o.onPlan = func(_ context.Context, a workflow.Activation) error {
			plans.Add(1)
			if !invalidPlan && a.Key.ActivationID == "b" {
				return errInjected
			}
			return nil
		}
		if invalidPlan {
			o.intent = func(a workflow.Activation) json.RawMessage {
				if a.Key.ActivationID == "b" {
					return json.RawMessage(`{"do":`) // not JSON
				}
				return json.RawMessage(`{"do":"` + a.Key.ActivationID + `"}`)
			}
		}
		sum, err := s.Dispatch(e.Ctx, o, workflow.DispatchOptions{RunID: run, Limit: 10}, ms(10))
		if invalidPlan {
			requireIs(e.T, err, workflow.ErrInvalidInput, "an invalid plan stops the pass")
		} else {
			requireIs(e.T, err, workflow.ErrOwner, "a plan error stops the pass")
			requireIs(e.T, err, errInjected, "a plan error stops the pass")
		}
		assert.Equal(e.T, []string{identity(ks[0], 1)}, refIdentities(sum.Admitted), "invalid plan %v: what was planned before is admitted", invalidPlan)
		assert.Equal(e.T, 1, o.totalCalls(), "invalid plan %v: no owner call after the plan error", invalidPlan)
		assert.EqualValues(e.T, 2, plans.Load(), "invalid plan %v: no plan after the plan error", invalidPlan)
		assert.Len(e.T, attemptsOf(e, s, run), 1, "invalid plan %v: nothing prepared after the plan error", invalidPlan)
	}
}

// caseBatchStaleAtPlanning: an owned pass whose authority is transferred
// while the owner plans the first activation. One at a time, the pass
// verifies the authority before every plan, plans once and stops at the
// preparation; batch mode plans no more either, and reports the stale
// activation.
func caseBatchStaleAtPlanning(e *env) {
	s := store(e)
	a1, a2 := authority(1, "a"), authority(2, "b")
	mkRun(e, s, "r", workflow.Limits{}, a1)
	ks := mutatingActs(e, s, "r", "a", "b", "c", "d")
	o := newOwner()
	var plans atomic.Int32
	transfer := onceFn(func() {
		require.NoError(e.T, s.TransferAuthority(e.Ctx, workflow.AuthorityTransfer{RunID: "r", Expected: *a1, Replacement: *a2}, ms(9)))
	})
	o.onPlan = func(context.Context, workflow.Activation) error {
		plans.Add(1)
		transfer()
		return nil
	}
	sum, err := s.Dispatch(e.Ctx, o, workflow.DispatchOptions{RunID: "r", Authority: a1, Limit: 10}, ms(10))
	requireIs(e.T, err, workflow.ErrStaleAuthority)
	assert.EqualValues(e.T, 1, plans.Load(), "no plan under a stale authority")
	assert.Equal(e.T, []workflow.ActivationKey{ks[0]}, sum.Stale, "the stale activation is reported")
	assert.Zero(e.T, o.totalCalls())
	assert.Empty(e.T, attemptsOf(e, s, "r"), "nothing prepared under a stale authority")
}

// staleRuns makes run "ra" (one activation, with authority a1) and the
// healthy run "rb" (ids), which discovery meets after "ra".
func staleRuns(e *env, s *workflow.Store, ids ...string) (workflow.ActivationKey, []workflow.ActivationKey) {
	e.T.Helper()
	mkRun(e, s, "ra", workflow.Limits{}, authority(1, "a"))
	mkRun(e, s, "rb", workflow.Limits{}, nil)
	ka := mutatingActs(e, s, "ra", "a")[0]
	return ka, mutatingActs(e, s, "rb", ids...)
}

func transferRA(e *env, s *workflow.Store) func() {
	return onceFn(func() {
		require.NoError(e.T, s.TransferAuthority(e.Ctx, workflow.AuthorityTransfer{RunID: "ra", Expected: *authority(1, "a"), Replacement: *authority(2, "b")}, ms(9)))
	})
}

// caseBatchStaleAtPreparation: run ra's authority moves after discovery
// snapshotted it, before its activation is prepared. One at a time the
// pass stops there, and the healthy run rb after it is not admitted; batch
// mode stops there too.
func caseBatchStaleAtPreparation(e *env) {
	s := store(e)
	ka, _ := staleRuns(e, s, "a", "b")
	o := newOwner()
	transfer := transferRA(e, s)
	o.onPlan = func(context.Context, workflow.Activation) error { transfer(); return nil }
	sum, err := s.Dispatch(e.Ctx, o, workflow.DispatchOptions{Limit: 10}, ms(10))
	requireIs(e.T, err, workflow.ErrStaleAuthority)
	assert.Equal(e.T, []workflow.ActivationKey{ka}, sum.Stale, "the stale activation is reported")
	assert.Zero(e.T, o.totalCalls(), "nothing after the stale activation reaches the owner")
	assert.Empty(e.T, sum.Admitted)
	assert.Empty(e.T, attemptsOf(e, s, "ra"))
	assert.Empty(e.T, attemptsOf(e, s, "rb"), "nothing after the stale activation is prepared")
}

// caseBatchStaleAtHandoff: run ra's authority moves once its intent
// committed. One at a time the handoff is refused and the pass stops, and
// nothing reaches the owner; batch mode hands off nothing after it either,
// and every attempt it prepared stays provably never dispatched.
func caseBatchStaleAtHandoff(e *env) {
	s := store(e)
	ka, _ := staleRuns(e, s, "a", "b")
	o := newOwner()
	o.effect = workflow.Mutating
	transfer := transferRA(e, s)
	opts := workflow.DispatchOptions{Limit: 10, Fault: func(_ context.Context, b workflow.Boundary, _ workflow.PreparedDispatch) error {
		if b == workflow.IntentCommitted {
			transfer()
		}
		return nil
	}}
	sum, err := s.Dispatch(e.Ctx, o, opts, ms(10))
	requireIs(e.T, err, workflow.ErrStaleAuthority)
	assert.Equal(e.T, []workflow.ActivationKey{ka}, sum.Stale, "the stale activation is reported")
	assert.Zero(e.T, o.totalCalls(), "nothing reaches the owner")
	assert.Empty(e.T, sum.Admitted)
	for _, run := range []string{"ra", "rb"} {
		for _, a := range attemptsOf(e, s, run) {
			requireReceiptless(e, s, a.Key, workflow.HandoffPending, "an attempt of the stopped pass")
		}
	}
	unoffered := 0
	for _, r := range sum.Unoffered {
		if r.Key.RunID == "rb" {
			unoffered++
		}
	}
	assert.Len(e.T, attemptsOf(e, s, "rb"), unoffered, "every attempt prepared and not handed off is reported unoffered")
}

// caseBatchStaleAtReceipt: run ra's authority moves while the owner
// accepts its attempt. One at a time its receipt is refused and the pass
// stops; batch mode records the receipts the owner returned for the rest
// of that batch and starts no other.
func caseBatchStaleAtReceipt(e *env) {
	s := store(e)
	ka, _ := staleRuns(e, s, "a", "b", "c", "d", "e")
	o := newOwner()
	transfer := transferRA(e, s)
	o.onDispatch = func(_ context.Context, p workflow.PreparedDispatch) error {
		if p.Activation.Key.RunID == "ra" {
			transfer()
		}
		return nil
	}
	sum, err := s.Dispatch(e.Ctx, o, workflow.DispatchOptions{Limit: 10}, ms(10))
	requireIs(e.T, err, workflow.ErrStaleAuthority)
	assert.Equal(e.T, []workflow.ActivationKey{ka}, sum.Stale, "the stale activation is reported")
	if e.batch > 1 {
		require.Len(e.T, sum.OwnerFailed, 1, "the attempt refused at its receipt is reported")
		assert.Equal(e.T, identity(ka, 1), sum.OwnerFailed[0].Attempt.Identity)
	}
	requireReceiptless(e, s, attemptKey(ka, 1), workflow.HandoffRecorded, "the attempt refused at its receipt")
	rb := attemptsOf(e, s, "rb")
	assert.Len(e.T, sum.Admitted, len(rb), "every receipt of the batch the owner accepted is recorded")
	assert.LessOrEqual(e.T, len(rb), max(e.batch, 1)-1, "no batch after the stale one")
}
