package conformance

import (
	"encoding/json"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/workflow"
)

func receiptCases() []testCase {
	return []testCase{
		{Name: "receipt_identical_duplicate_is_noop_different_conflicts", Run: caseReceiptDuplicate},
		{Name: "receipt_requires_exact_derived_identity", Run: caseReceiptIdentity},
		{Name: "receipt_check_owner_admission_recovers_verifies_and_refuses", Run: caseCheckOwnerAdmission},
		{Name: "receipt_late_receipt_admits_repair_required_after_recorded_handoff", Run: caseLateReceipt},
	}
}

// prepared creates run r (optionally with authority) and one prepared,
// handed-off (when handoff) attempt of activation (r,n,a).
func prepared(e *env, s *workflow.Store, effect workflow.Effect, auth *workflow.Authority, handoff bool) *workflow.PreparedDispatch {
	e.T.Helper()
	mkRun(e, s, "r", workflow.Limits{}, auth)
	k := key("r", "n", "a")
	mkAct(e, s, k)
	p, err := s.Engine().PreparePending(e.Ctx, k, workflow.Plan{SideEffect: effect, Intent: json.RawMessage(`{"do":"a"}`)}, ms(10))
	require.NoError(e.T, err)
	require.NotNil(e.T, p)
	if handoff {
		require.NoError(e.T, s.Engine().Handoff(e.Ctx, p.Key(), auth, ms(11)))
	}
	return p
}

func caseReceiptDuplicate(e *env) {
	s := store(e)
	p := prepared(e, s, workflow.Mutating, nil, true)
	require.NoError(e.T, s.Engine().PersistReceipt(e.Ctx, workflow.OwnerReceipt{Key: p.Key(), Receipt: json.RawMessage(`{"b":1,"a":2}`), Authority: nil}, ms(12)))
	before := digest(e, "r")
	require.NoError(e.T, s.Engine().PersistReceipt(e.Ctx, workflow.OwnerReceipt{Key: p.Key(), Receipt: json.RawMessage(`{"a":2, "b":1}`), Authority: nil}, ms(13)), "canonically identical")
	assert.Equal(e.T, before, digest(e, "r"), "duplicate writes nothing")
	requireIs(e.T, s.Engine().PersistReceipt(e.Ctx, workflow.OwnerReceipt{Key: p.Key(), Receipt: json.RawMessage(`{"a":2,"b":1.0}`), Authority: nil}, ms(14)), workflow.ErrConflict)
	assert.Equal(e.T, before, digest(e, "r"))
	assert.Equal(e.T, 1, countType(eventTypes(e, s, "r"), "attempt_admitted"))
}

func caseReceiptIdentity(e *env) {
	s := store(e)
	p := prepared(e, s, workflow.ReadOnly, nil, true)
	before := digest(e, "r")
	requireIs(e.T, s.Engine().PersistReceipt(e.Ctx, workflow.OwnerReceipt{Key: attemptKey(key("r", "n", "a"), 2), Receipt: json.RawMessage(`{}`), Authority: nil}, ms(12)), workflow.ErrNotFound)
	assert.Equal(e.T, before, digest(e, "r"))
	require.NoError(e.T, s.Engine().PersistReceipt(e.Ctx, workflow.OwnerReceipt{Key: p.Key(), Receipt: json.RawMessage(`{}`), Authority: nil}, ms(12)))
	assert.Equal(e.T, workflow.AttemptAdmitted, getAttempt(e, s, p.Activation.Key, 1).Status)
}

func caseCheckOwnerAdmission(e *env) {
	s := store(e)
	a1 := authority(1, "one")
	p := prepared(e, s, workflow.Mutating, a1, true)
	req := workflow.OwnerAdmission{Key: p.Key(), Identity: p.Identity, Intent: json.RawMessage(`{ "do" : "a" }`)}
	r, err := s.Engine().CheckOwnerAdmission(e.Ctx, req, *a1)
	require.NoError(e.T, err)
	assert.Nil(e.T, r, "prepared and eligible: admission may proceed")
	bad := req
	bad.Intent = json.RawMessage(`{"do":"b"}`)
	_, err = s.Engine().CheckOwnerAdmission(e.Ctx, bad, *a1)
	requireIs(e.T, err, workflow.ErrConflict)
	_, err = s.Engine().CheckOwnerAdmission(e.Ctx, req, *authority(1, "other"))
	requireIs(e.T, err, workflow.ErrStaleAuthority)
	big := req
	big.Intent = json.RawMessage(`"` + string(make([]byte, 0)) + stringsRepeat("y", workflow.MaxJSONBytes) + `"`)
	_, err = s.Engine().CheckOwnerAdmission(e.Ctx, big, *a1)
	requireIs(e.T, err, workflow.ErrTooLarge)
	// Ineligible once cancellation is requested, until a receipt exists.
	_, err = s.RequestCancellation(e.Ctx, "r", a1, ms(12))
	require.NoError(e.T, err)
	_, err = s.Engine().CheckOwnerAdmission(e.Ctx, req, *a1)
	requireIs(e.T, err, workflow.ErrIneligible)
	require.NoError(e.T, s.Engine().PersistReceipt(e.Ctx, workflow.OwnerReceipt{Key: p.Key(), Receipt: json.RawMessage(`{"owner":"x"}`), Authority: a1}, ms(13)))
	r, err = s.Engine().CheckOwnerAdmission(e.Ctx, req, *a1)
	require.NoError(e.T, err, "a receipt is recovered whatever the run's state")
	assert.JSONEq(e.T, `{"owner":"x"}`, string(r))
}

func stringsRepeat(s string, n int) string {
	b := make([]byte, 0, len(s)*n)
	for range n {
		b = append(b, s...)
	}
	return string(b)
}

func caseLateReceipt(e *env) {
	s := store(e)
	p := prepared(e, s, workflow.Mutating, nil, true)
	sum, err := s.Engine().ReconcilePrepared(e.Ctx, workflow.ReconcileOptions{Limit: 10}, ms(20))
	require.NoError(e.T, err)
	require.Equal(e.T, []string{p.Identity}, refIdentities(sum.RepairRequired))
	assert.Equal(e.T, workflow.RunRepairRequired, getRun(e, s, "r").Status)
	require.NoError(e.T, s.Engine().PersistReceipt(e.Ctx, workflow.OwnerReceipt{Key: p.Key(), Receipt: json.RawMessage(`{"late":true}`), Authority: nil}, ms(21)))
	a := getAttempt(e, s, p.Activation.Key, 1)
	assert.Equal(e.T, workflow.AttemptAdmitted, a.Status, "the receipt is the proof")
	assert.Equal(e.T, workflow.RunRunning, getRun(e, s, "r").Status, "no repair left")
	// A repair_required attempt without a recorded handoff is not admitted by a receipt.
	_, err = s.Engine().PrepareAttempt(e.Ctx, workflow.AttemptIntent{Key: attemptKey(key("r", "n", "b"), 1), SideEffect: workflow.Mutating, Intent: json.RawMessage(`{}`)}, ms(22))
	requireIs(e.T, err, workflow.ErrNotFound, "activation b does not exist")
}
