package conformance

import (
	"context"
	"encoding/json"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/internal/faultseam"
	"github.com/wfstore/wfstore/workflow"
)

func authorityCases() []testCase {
	return []testCase{
		{Name: "authority_transfer_is_generation_fenced", Run: caseTransferFenced},
		{Name: "authority_owned_dispatch_rejects_stale_authority_up_front", Run: caseOwnedStale},
		{Name: "authority_change_before_prepare_fails_batch_without_attempt", Run: caseAuthBeforePrepare},
		{Name: "authority_change_after_prepare_refuses_handoff_and_owner_call", Run: caseAuthBeforeHandoff},
		{Name: "authority_change_before_receipt_rejects_receipt", Run: caseAuthBeforeReceipt},
		{Name: "authority_owned_dispatch_admits_under_current_authority", Run: caseOwnedDispatch},
	}
}

func caseTransferFenced(e *env) {
	s := store(e)
	a1, a2 := authority(1, "one"), authority(2, "two")
	mkRun(e, s, "r", workflow.Limits{}, a1)
	require.NoError(e.T, s.VerifyAuthority(e.Ctx, "r", *a1))
	require.NoError(e.T, s.TransferAuthority(e.Ctx, workflow.AuthorityTransfer{RunID: "r", Expected: *a1, Replacement: *a2}, ms(5)))
	before := digest(e, "r")
	requireIs(e.T, s.TransferAuthority(e.Ctx, workflow.AuthorityTransfer{RunID: "r", Expected: *a1, Replacement: *a2}, ms(6)), workflow.ErrStaleAuthority, "a replayed transfer")
	assert.Equal(e.T, before, digest(e, "r"))
	requireIs(e.T, s.VerifyAuthority(e.Ctx, "r", *a1), workflow.ErrStaleAuthority, "the old authority")
	require.NoError(e.T, s.VerifyAuthority(e.Ctx, "r", *a2))
	// Replacement rules.
	bad := *authority(4, "four")
	requireIs(e.T, s.TransferAuthority(e.Ctx, workflow.AuthorityTransfer{RunID: "r", Expected: *a2, Replacement: bad}, ms(7)), workflow.ErrInvalidInput, "generation must be +1")
	same := *a2
	same.Generation = 3
	requireIs(e.T, s.TransferAuthority(e.Ctx, workflow.AuthorityTransfer{RunID: "r", Expected: *a2, Replacement: same}, ms(7)), workflow.ErrInvalidInput, "daemon and token must change")
	got, err := s.Authority(e.Ctx, "r")
	require.NoError(e.T, err)
	assert.Equal(e.T, a2, got)
	requireIs(e.T, s.VerifyAuthority(e.Ctx, "missing", *a2), workflow.ErrStaleAuthority, "missing run has no authority")
}

func caseOwnedStale(e *env) {
	s := store(e)
	a1, a2 := authority(1, "one"), authority(2, "two")
	mkRun(e, s, "r", workflow.Limits{}, a1)
	mkAct(e, s, key("r", "n", "a"))
	require.NoError(e.T, s.TransferAuthority(e.Ctx, workflow.AuthorityTransfer{RunID: "r", Expected: *a1, Replacement: *a2}, ms(5)))
	o := newOwner()
	planned := 0
	o.onPlan = func(context.Context, workflow.Activation) error { planned++; return nil }
	before := digest(e, "r")
	_, err := s.Dispatch(e.Ctx, o, workflow.DispatchOptions{RunID: "r", Authority: a1, Limit: 10}, ms(10))
	requireIs(e.T, err, workflow.ErrStaleAuthority)
	assert.Zero(e.T, planned, "rejected before discovery")
	assert.Equal(e.T, before, digest(e, "r"))
}

func caseAuthBeforePrepare(e *env) {
	s := store(e)
	a1, a2 := authority(1, "one"), authority(2, "two")
	mkRun(e, s, "r", workflow.Limits{}, a1)
	mkAct(e, s, key("r", "n", "a"))
	o := newOwner()
	o.onPlan = func(ctx context.Context, _ workflow.Activation) error {
		return s.TransferAuthority(ctx, workflow.AuthorityTransfer{RunID: "r", Expected: *a1, Replacement: *a2}, ms(9))
	}
	_, err := s.Dispatch(e.Ctx, o, workflow.DispatchOptions{Limit: 10}, ms(10))
	requireIs(e.T, err, workflow.ErrStaleAuthority, "preparation execution authority changed")
	assert.Empty(e.T, attemptsOf(e, s, "r"))
	assert.Equal(e.T, workflow.ActivationPending, getAct(e, s, key("r", "n", "a")).Status)
}

func caseAuthBeforeHandoff(e *env) {
	s := store(e)
	a1, a2 := authority(1, "one"), authority(2, "two")
	mkRun(e, s, "r", workflow.Limits{}, a1)
	k := key("r", "n", "a")
	mkAct(e, s, k)
	o := newOwner()
	fault := func(ctx context.Context, b faultseam.Boundary, _ workflow.PreparedDispatch) error {
		if b == faultseam.IntentCommitted {
			return s.TransferAuthority(ctx, workflow.AuthorityTransfer{RunID: "r", Expected: *a1, Replacement: *a2}, ms(11))
		}
		return nil
	}
	_, err := s.Dispatch(faultseam.With(e.Ctx, fault), o, workflow.DispatchOptions{Limit: 10}, ms(10))
	requireIs(e.T, err, workflow.ErrStaleAuthority, "dispatch handoff execution authority changed")
	a := getAttempt(e, s, k, 1)
	assert.Equal(e.T, workflow.HandoffPending, a.Handoff)
	assert.Equal(e.T, workflow.AttemptPrepared, a.Status)
	assert.Zero(e.T, o.totalCalls(), "owner never called")
	// The owned handoff under the old authority is refused too.
	requireIs(e.T, s.Engine().Handoff(e.Ctx, a.Key, a1, ms(12)), workflow.ErrStaleAuthority)
}

func caseAuthBeforeReceipt(e *env) {
	s := store(e)
	a1, a2 := authority(1, "one"), authority(2, "two")
	mkRun(e, s, "r", workflow.Limits{}, a1)
	k := key("r", "n", "a")
	mkAct(e, s, k)
	o := newOwner()
	o.onDispatch = func(ctx context.Context, _ workflow.PreparedDispatch) error {
		return s.TransferAuthority(ctx, workflow.AuthorityTransfer{RunID: "r", Expected: *a1, Replacement: *a2}, ms(11))
	}
	_, err := s.Dispatch(e.Ctx, o, workflow.DispatchOptions{Limit: 10}, ms(10))
	requireIs(e.T, err, workflow.ErrStaleAuthority, "receipt execution authority changed")
	a := getAttempt(e, s, k, 1)
	assert.Equal(e.T, workflow.AttemptPrepared, a.Status)
	assert.Nil(e.T, a.Receipt)
	assert.Equal(e.T, 1, o.totalCalls())
	// The new authority may persist it.
	require.NoError(e.T, s.Engine().PersistReceipt(e.Ctx, workflow.OwnerReceipt{Key: a.Key, Receipt: o.receipts[a.Identity], Authority: a2}, ms(12)))
	assert.Equal(e.T, workflow.AttemptAdmitted, getAttempt(e, s, k, 1).Status)
}

func caseOwnedDispatch(e *env) {
	s := store(e)
	a1 := authority(1, "one")
	mkRun(e, s, "r", workflow.Limits{}, a1)
	k := key("r", "n", "a")
	mkAct(e, s, k)
	o := newOwner()
	sum := dispatch(e, s, o, workflow.DispatchOptions{RunID: "r", Authority: a1}, ms(10))
	assert.Equal(e.T, []string{identity(k, 1)}, refIdentities(sum.Admitted))
	_, err := s.Dispatch(e.Ctx, o, workflow.DispatchOptions{Authority: a1, Limit: 10}, ms(10))
	requireIs(e.T, err, workflow.ErrInvalidInput, "owned dispatch needs a run")
	// CheckOwnerAdmission returns the stored receipt.
	r, err := s.Engine().CheckOwnerAdmission(e.Ctx, workflow.OwnerAdmission{Key: attemptKey(k, 1), Identity: identity(k, 1),
		Intent: json.RawMessage(`{"do":"a"}`)}, *a1)
	require.NoError(e.T, err)
	assert.JSONEq(e.T, string(o.receipts[identity(k, 1)]), string(r))
}
