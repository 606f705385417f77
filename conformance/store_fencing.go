package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/internal/faultseam"
	"github.com/wfstore/wfstore/workflow"
)

// Fencing: every path that writes on behalf of a run's execution authority
// (admission, redispatch, reconciliation, their receipts and the exhaustion
// record) is refused with ErrStaleAuthority, writing nothing, once the
// authority it works under is no longer the run's; and authorities are
// equal only when every field is.
func fencingCases() []testCase {
	return []testCase{
		{Name: "fencing_transfer_during_unowned_redispatch_owner_call_refuses_receipt", Run: caseFenceTransferRedispatch(false)},
		{Name: "fencing_transfer_during_owned_redispatch_owner_call_refuses_receipt", Run: caseFenceTransferRedispatch(true)},
		{Name: "fencing_transfer_during_unowned_receipt_lookup_refuses_recovered_receipt", Run: caseFenceTransferLookup(false)},
		{Name: "fencing_transfer_during_owned_receipt_lookup_refuses_recovered_receipt", Run: caseFenceTransferLookup(true)},
		{Name: "fencing_transfer_during_unowned_reconcile_refuses_repair_required", Run: caseFenceTransferRepair},
		{Name: "fencing_one_field_authority_difference_is_stale_at_verify", Run: caseFieldVerify},
		{Name: "fencing_one_field_authority_difference_is_stale_at_owned_prepare", Run: caseFieldPrepare(true)},
		{Name: "fencing_one_field_authority_change_is_stale_at_snapshot_prepare", Run: caseFieldPrepare(false)},
		{Name: "fencing_one_field_authority_difference_is_stale_at_owned_handoff", Run: caseFieldHandoff(true)},
		{Name: "fencing_one_field_authority_change_is_stale_at_snapshot_handoff", Run: caseFieldHandoff(false)},
		{Name: "fencing_one_field_authority_difference_is_stale_at_owned_receipt", Run: caseFieldReceipt(true)},
		{Name: "fencing_one_field_authority_change_is_stale_at_snapshot_receipt", Run: caseFieldReceipt(false)},
		{Name: "fencing_one_field_authority_difference_is_stale_at_owned_exhaustion_record", Run: caseFieldExhaustion(true)},
		{Name: "fencing_one_field_authority_change_is_stale_at_snapshot_exhaustion_record", Run: caseFieldExhaustion(false)},
		{Name: "fencing_one_field_authority_difference_is_stale_at_owned_redispatch", Run: caseFieldRedispatch(true)},
		{Name: "fencing_one_field_authority_change_is_stale_at_snapshot_redispatch", Run: caseFieldRedispatch(false)},
		{Name: "fencing_one_field_authority_difference_is_stale_at_owned_reconcile", Run: caseFieldReconcile(true)},
		{Name: "fencing_one_field_authority_change_is_stale_at_snapshot_reconcile", Run: caseFieldReconcile(false)},
		{Name: "fencing_one_field_authority_difference_is_stale_at_owner_admission_check", Run: caseFieldOwnerAdmission},
		{Name: "fencing_retirement_recorded_mid_admission_refuses_prepare_handoff_and_owner_admission", Run: caseFenceRetirement},
	}
}

// authVariant is an authority that differs from another in one field.
type authVariant struct {
	field string
	auth  workflow.Authority
}

// oneFieldVariants returns, for every field of Authority (found by
// reflection, so a field added later is covered too), a copy of a that
// differs from it in that field only.
func oneFieldVariants(a workflow.Authority) []authVariant {
	var out []authVariant
	t := reflect.TypeOf(a)
	for i := range t.NumField() {
		c := a
		f := reflect.ValueOf(&c).Elem().Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString(f.String() + "-x")
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			f.SetInt(f.Int() + 1)
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			f.SetUint(f.Uint() + 1)
		default:
			panic(fmt.Sprintf("conformance: no one-field variant for Authority.%s of kind %s", t.Field(i).Name, f.Kind()))
		}
		out = append(out, authVariant{field: t.Field(i).Name, auth: c})
	}
	return out
}

// eachField runs fn once per field of Authority, on its own run (created by
// fn) named after the field, with the run's authority a1 and a variant v of
// it that differs in that field only.
func eachField(e *env, fn func(run, field string, a1, v workflow.Authority)) {
	e.T.Helper()
	a1 := *authority(1, "one")
	vs := oneFieldVariants(a1)
	require.GreaterOrEqual(e.T, len(vs), 4, "generation, daemon instance, fencing token and target artifact")
	for _, v := range vs {
		fn("r-"+strings.ToLower(v.field), v.field, a1, v.auth)
	}
}

// seedAuthority replaces the run's stored authority through the backend
// directly (a transfer always changes several fields; this does not).
func seedAuthority(e *env, runID string, a workflow.Authority) {
	e.T.Helper()
	err := e.B.Update(e.Ctx, func(tx backend.Tx) error {
		run, err := backend.GetRun(e.Ctx, tx, runID)
		if err != nil {
			return err
		}
		ba := backend.Authority(a)
		run.Authority = &ba
		return tx.Apply(e.Ctx, rep(run))
	})
	require.NoError(e.T, err, "seeding the authority of run %q", runID)
}

// ownedOr returns a when owned is set and nil otherwise.
func ownedOr(owned bool, a workflow.Authority) *workflow.Authority {
	if !owned {
		return nil
	}
	return &a
}

func dispatchOpts(run string, owned bool, a workflow.Authority) workflow.DispatchOptions {
	return workflow.DispatchOptions{RunID: run, Authority: ownedOr(owned, a), Limit: 10}
}

func passOpts(run string, owned bool, a workflow.Authority) workflow.ReconcileOptions {
	return workflow.ReconcileOptions{RunID: run, Authority: ownedOr(owned, a), Limit: 10}
}

// onceFn returns a function that runs fn the first time it is called only.
func onceFn(fn func()) func() {
	done := false
	return func() {
		if !done {
			done = true
			fn()
		}
	}
}

// hookedBackend runs before ahead of every Update of the wrapped backend and
// after once it returned (with its error). Hooks write through the wrapped
// backend (e.B), never through the hooked one.
type hookedBackend struct {
	backend.Backend
	before func()
	after  func(err error)
}

func (h *hookedBackend) Update(ctx context.Context, fn func(tx backend.Tx) error) error {
	if h.before != nil {
		h.before()
	}
	err := h.Backend.Update(ctx, fn)
	if h.after != nil {
		h.after(err)
	}
	return err
}

// lookupFunc is a ReceiptLookup made of a function.
type lookupFunc func(ctx context.Context, identity string) (json.RawMessage, bool, error)

func (f lookupFunc) LookupReceipt(ctx context.Context, identity string) (json.RawMessage, bool, error) {
	return f(ctx, identity)
}

// handedOff creates run with authority a and one mutating attempt of
// activation n/a whose handoff was recorded, and returns its key and identity.
func handedOff(e *env, s *workflow.Store, run string, a workflow.Authority) (workflow.AttemptKey, string) {
	e.T.Helper()
	k := preparedMutation(e, s, run, a)
	require.NoError(e.T, s.Engine().Handoff(e.Ctx, k, &a, ms(11)))
	return k, identity(k.ActivationKey, 1)
}

// preparedMutation creates run with authority a and one never-dispatched
// mutating attempt of activation n/a, and returns its key.
func preparedMutation(e *env, s *workflow.Store, run string, a workflow.Authority) workflow.AttemptKey {
	e.T.Helper()
	mkRun(e, s, run, workflow.Limits{}, &a)
	k := key(run, "n", "a")
	mkAct(e, s, k)
	p, err := s.Engine().PreparePending(e.Ctx, k, workflow.Plan{SideEffect: workflow.Mutating, Intent: json.RawMessage(`{"do":"a"}`)}, ms(10))
	require.NoError(e.T, err)
	require.NotNil(e.T, p)
	return p.Key()
}

// requireReceiptless fails unless the attempt is still prepared, without a
// receipt, with the given handoff state.
func requireReceiptless(e *env, s *workflow.Store, k workflow.AttemptKey, h workflow.Handoff, what string) {
	e.T.Helper()
	a := getAttempt(e, s, k.ActivationKey, k.Attempt)
	assert.Equal(e.T, workflow.AttemptPrepared, a.Status, "%s: attempt still prepared", what)
	assert.Nil(e.T, a.Receipt, "%s: no receipt persisted", what)
	assert.Equal(e.T, h, a.Handoff, "%s: handoff state", what)
}

// requireRecovered runs a reconciliation pass under a with the owner's
// receipts and requires it to recover exactly id.
func requireRecovered(e *env, s *workflow.Store, o *owner, run string, a *workflow.Authority, id string, at int64, what string) {
	e.T.Helper()
	sum, err := s.Engine().ReconcilePrepared(e.Ctx, workflow.ReconcileOptions{RunID: run, Authority: a, Limit: 10, Lookup: o}, ms(at))
	require.NoError(e.T, err, "%s: the current authority recovers the attempt", what)
	assert.Equal(e.T, []string{id}, refIdentities(sum.Recovered), "%s", what)
	att, err := s.GetAttempt(e.Ctx, id)
	require.NoError(e.T, err)
	assert.Equal(e.T, workflow.AttemptAdmitted, att.Status, "%s", what)
}

// --- A transfer during the owner call of a recovery path ---

func caseFenceTransferRedispatch(owned bool) func(*env) {
	return func(e *env) {
		s := store(e)
		a1, a2 := *authority(1, "one"), *authority(2, "two")
		k := preparedMutation(e, s, "r", a1)
		id := identity(k.ActivationKey, 1)
		o := newOwner()
		var after string
		o.onDispatch = func(ctx context.Context, _ workflow.PreparedDispatch) error {
			require.NoError(e.T, s.TransferAuthority(ctx, workflow.AuthorityTransfer{RunID: "r", Expected: a1, Replacement: a2}, ms(15)))
			after = digest(e, "r")
			return nil
		}
		_, err := s.Engine().Redispatch(e.Ctx, o, passOpts("r", owned, a1), ms(20))
		requireIs(e.T, err, workflow.ErrStaleAuthority, "the receipt of a redispatch whose authority moved")
		assert.Equal(e.T, 1, o.callCount(id))
		assert.Equal(e.T, after, digest(e, "r"), "nothing written after the transfer")
		requireReceiptless(e, s, k, workflow.HandoffRecorded, "redispatch")
		o.onDispatch = nil
		requireRecovered(e, s, o, "r", ownedOr(owned, a2), id, 30, "after the refused redispatch")
		assert.Equal(e.T, 1, o.callCount(id), "recovery calls the owner no more")
	}
}

func caseFenceTransferLookup(owned bool) func(*env) {
	return func(e *env) {
		s := store(e)
		a1, a2 := *authority(1, "one"), *authority(2, "two")
		_, id := handedOff(e, s, "r", a1)
		k := attemptKey(key("r", "n", "a"), 1)
		o := newOwner()
		o.receipts[id] = json.RawMessage(`{"held":true}`)
		var after string
		lk := lookupFunc(func(ctx context.Context, identity string) (json.RawMessage, bool, error) {
			require.NoError(e.T, s.TransferAuthority(ctx, workflow.AuthorityTransfer{RunID: "r", Expected: a1, Replacement: a2}, ms(15)))
			after = digest(e, "r")
			return o.LookupReceipt(ctx, identity)
		})
		opts := passOpts("r", owned, a1)
		opts.Lookup = lk
		_, err := s.Engine().ReconcilePrepared(e.Ctx, opts, ms(20))
		requireIs(e.T, err, workflow.ErrStaleAuthority, "the receipt found by a lookup whose authority moved")
		assert.Equal(e.T, after, digest(e, "r"), "nothing written after the transfer")
		requireReceiptless(e, s, k, workflow.HandoffRecorded, "receipt lookup")
		requireRecovered(e, s, o, "r", ownedOr(owned, a2), id, 30, "after the refused lookup")
	}
}

func caseFenceTransferRepair(e *env) {
	s := store(e)
	a1, a2 := *authority(1, "one"), *authority(2, "two")
	k, id := handedOff(e, s, "r", a1)
	var after string
	lk := lookupFunc(func(ctx context.Context, _ string) (json.RawMessage, bool, error) {
		require.NoError(e.T, s.TransferAuthority(ctx, workflow.AuthorityTransfer{RunID: "r", Expected: a1, Replacement: a2}, ms(15)))
		after = digest(e, "r")
		return nil, false, nil
	})
	_, err := s.Engine().ReconcilePrepared(e.Ctx, workflow.ReconcileOptions{RunID: "r", Limit: 10, Lookup: lk}, ms(20))
	requireIs(e.T, err, workflow.ErrStaleAuthority, "repair_required under an authority that moved")
	assert.Equal(e.T, after, digest(e, "r"), "nothing written after the transfer")
	requireReceiptless(e, s, k, workflow.HandoffRecorded, "reconcile")
	assert.Equal(e.T, workflow.RunRunning, getRun(e, s, "r").Status)
	sum, err := s.Engine().ReconcilePrepared(e.Ctx, workflow.ReconcileOptions{RunID: "r", Authority: &a2, Limit: 10}, ms(30))
	require.NoError(e.T, err)
	assert.Equal(e.T, []string{id}, refIdentities(sum.RepairRequired), "the new authority reconciles it")
}

// --- An authority differing in exactly one field, at every boundary ---

func caseFieldVerify(e *env) {
	s := store(e)
	eachField(e, func(run, field string, a1, v workflow.Authority) {
		mkRun(e, s, run, workflow.Limits{}, &a1)
		requireIs(e.T, s.VerifyAuthority(e.Ctx, run, v), workflow.ErrStaleAuthority, "presented authority differs in %s", field)
		seedAuthority(e, run, v)
		requireIs(e.T, s.VerifyAuthority(e.Ctx, run, a1), workflow.ErrStaleAuthority, "stored authority differs in %s", field)
		require.NoError(e.T, s.VerifyAuthority(e.Ctx, run, v), "%s", field)
	})
}

// caseFieldPrepare changes the stored authority in one field while the
// owner plans: preparation is refused and creates no attempt.
func caseFieldPrepare(owned bool) func(*env) {
	return func(e *env) {
		s := store(e)
		eachField(e, func(run, field string, a1, v workflow.Authority) {
			mkRun(e, s, run, workflow.Limits{}, &a1)
			k := key(run, "n", "a")
			mkAct(e, s, k)
			o := newOwner()
			var after string
			seed := onceFn(func() { seedAuthority(e, run, v); after = digest(e, run) })
			o.onPlan = func(context.Context, workflow.Activation) error { seed(); return nil }
			_, err := s.Dispatch(e.Ctx, o, dispatchOpts(run, owned, a1), ms(10))
			requireIs(e.T, err, workflow.ErrStaleAuthority, "prepare under an authority differing in %s", field)
			assert.Equal(e.T, after, digest(e, run), "%s: prepare writes nothing", field)
			assert.Empty(e.T, attemptsOf(e, s, run), "%s: no attempt", field)
			assert.Zero(e.T, o.totalCalls(), "%s: owner never called", field)
			sum := dispatch(e, s, o, dispatchOpts(run, owned, v), ms(20))
			assert.Equal(e.T, []string{identity(k, 1)}, refIdentities(sum.Admitted), "%s: the stored authority admits it", field)
		})
	}
}

// caseFieldHandoff changes the stored authority in one field once the
// intent committed: the handoff is refused and the owner never called.
func caseFieldHandoff(owned bool) func(*env) {
	return func(e *env) {
		s := store(e)
		eachField(e, func(run, field string, a1, v workflow.Authority) {
			mkRun(e, s, run, workflow.Limits{}, &a1)
			k := key(run, "n", "a")
			mkAct(e, s, k)
			o := newOwner()
			o.effect = workflow.Mutating
			var after string
			seed := onceFn(func() { seedAuthority(e, run, v); after = digest(e, run) })
			opts := dispatchOpts(run, owned, a1)
			fault := func(_ context.Context, b faultseam.Boundary, _ workflow.PreparedDispatch) error {
				if b == faultseam.IntentCommitted {
					seed()
				}
				return nil
			}
			_, err := s.Dispatch(faultseam.With(e.Ctx, fault), o, opts, ms(10))
			requireIs(e.T, err, workflow.ErrStaleAuthority, "handoff under an authority differing in %s", field)
			assert.Equal(e.T, after, digest(e, run), "%s: handoff writes nothing", field)
			ak := attemptKey(k, 1)
			requireReceiptless(e, s, ak, workflow.HandoffPending, field)
			assert.Zero(e.T, o.totalCalls(), "%s: owner never called", field)
			requireIs(e.T, s.Engine().Handoff(e.Ctx, ak, &a1, ms(11)), workflow.ErrStaleAuthority, "%s: owned handoff", field)
			assert.Equal(e.T, after, digest(e, run), "%s: owned handoff writes nothing", field)
			rs, err := s.Engine().Redispatch(e.Ctx, o, passOpts(run, owned, v), ms(12))
			require.NoError(e.T, err, "%s", field)
			assert.Equal(e.T, []string{identity(k, 1)}, refIdentities(rs.Admitted), "%s: the stored authority redispatches it", field)
			assert.Equal(e.T, 1, o.totalCalls(), "%s", field)
		})
	}
}

// caseFieldReceipt changes the stored authority in one field during the
// owner call: the receipt is refused and left for the stored authority.
func caseFieldReceipt(owned bool) func(*env) {
	return func(e *env) {
		s := store(e)
		eachField(e, func(run, field string, a1, v workflow.Authority) {
			mkRun(e, s, run, workflow.Limits{}, &a1)
			k := key(run, "n", "a")
			mkAct(e, s, k)
			o := newOwner()
			o.effect = workflow.Mutating
			var after string
			seed := onceFn(func() { seedAuthority(e, run, v); after = digest(e, run) })
			o.onDispatch = func(context.Context, workflow.PreparedDispatch) error { seed(); return nil }
			_, err := s.Dispatch(e.Ctx, o, dispatchOpts(run, owned, a1), ms(10))
			requireIs(e.T, err, workflow.ErrStaleAuthority, "receipt under an authority differing in %s", field)
			assert.Equal(e.T, after, digest(e, run), "%s: receipt writes nothing", field)
			ak, id := attemptKey(k, 1), identity(k, 1)
			requireReceiptless(e, s, ak, workflow.HandoffRecorded, field)
			requireIs(e.T, s.Engine().PersistReceipt(e.Ctx, workflow.OwnerReceipt{Key: ak, Receipt: o.receipts[id], Authority: &a1}, ms(11)), workflow.ErrStaleAuthority, "%s: owned receipt", field)
			assert.Equal(e.T, after, digest(e, run), "%s: owned receipt writes nothing", field)
			require.NoError(e.T, s.Engine().PersistReceipt(e.Ctx, workflow.OwnerReceipt{Key: ak, Receipt: o.receipts[id], Authority: &v}, ms(12)), "%s: the stored authority persists it", field)
			assert.Equal(e.T, workflow.AttemptAdmitted, getAttempt(e, s, k, 1).Status, "%s", field)
		})
	}
}

// caseFieldExhaustion changes the stored authority in one field between the
// refused preparation (allowance exhausted) and the exhaustion record: the
// record is refused and no exhaustion event is appended.
func caseFieldExhaustion(owned bool) func(*env) {
	return func(e *env) {
		eachField(e, func(run, field string, a1, v workflow.Authority) {
			s := store(e)
			mkRun(e, s, run, workflow.Limits{NodeExecutionCap: 1}, &a1)
			ka, kb := key(run, "n", "a"), key(run, "n", "b")
			mkAct(e, s, ka)
			mkAct(e, s, kb)
			var after string
			seed := onceFn(func() { seedAuthority(e, run, v); after = digest(e, run) })
			hb := &hookedBackend{Backend: e.B, after: func(err error) {
				if errors.Is(err, workflow.ErrNodeAllowanceExhausted) {
					seed()
				}
			}}
			if e.batch > 1 {
				// Batch mode refuses kb inside the batch's prepare
				// transaction (the first Update, which commits ka) and
				// records the exhaustion in the next one, before ka's
				// handoff: the stale authority stops the pass there.
				updates := 0
				hb.after, hb.before = nil, func() {
					if updates++; updates == 2 {
						seed()
					}
				}
			}
			o := newOwner()
			sum, err := e.newStore(hb).Dispatch(e.Ctx, o, dispatchOpts(run, owned, a1), ms(10))
			requireIs(e.T, err, workflow.ErrStaleAuthority, "exhaustion record under an authority differing in %s", field)
			if e.batch > 1 {
				assert.Empty(e.T, sum.Admitted, "%s", field)
			} else {
				assert.Equal(e.T, []string{identity(ka, 1)}, refIdentities(sum.Admitted), "%s", field)
			}
			assert.NotEmpty(e.T, after, "%s: the allowance was met", field)
			assert.Equal(e.T, after, digest(e, run), "%s: the exhaustion record writes nothing", field)
			assert.Zero(e.T, countType(eventTypes(e, s, run), "execution_allowance_exhausted"), "%s", field)
			sum = dispatch(e, s, o, dispatchOpts(run, owned, v), ms(20))
			assert.Equal(e.T, []workflow.ActivationKey{kb}, sum.Exhausted, "%s", field)
			assert.Equal(e.T, 1, countType(eventTypes(e, s, run), "execution_allowance_exhausted"), "%s: the stored authority records it", field)
		})
	}
}

// caseFieldRedispatch presents (owned) or meets (stored, mid-pass) an
// authority differing in one field at redispatch's start, handoff and
// receipt.
func caseFieldRedispatch(owned bool) func(*env) {
	return func(e *env) {
		s := store(e)
		eachField(e, func(run, field string, a1, v workflow.Authority) {
			k := preparedMutation(e, s, run, a1)
			id := identity(k.ActivationKey, 1)
			o := newOwner()
			if owned {
				before := digest(e, run)
				_, err := s.Engine().Redispatch(e.Ctx, o, passOpts(run, true, v), ms(11))
				requireIs(e.T, err, workflow.ErrStaleAuthority, "owned redispatch presenting an authority differing in %s", field)
				assert.Equal(e.T, before, digest(e, run), "%s", field)
				assert.Zero(e.T, o.totalCalls(), "%s", field)
			}
			// At the handoff: the stored authority changes before it.
			var after string
			hb := &hookedBackend{Backend: e.B}
			hb.before = onceFn(func() { seedAuthority(e, run, v); after = digest(e, run) })
			_, err := e.newStore(hb).Engine().Redispatch(e.Ctx, o, passOpts(run, owned, a1), ms(12))
			requireIs(e.T, err, workflow.ErrStaleAuthority, "redispatch handoff under an authority differing in %s", field)
			assert.Equal(e.T, after, digest(e, run), "%s: redispatch handoff writes nothing", field)
			requireReceiptless(e, s, k, workflow.HandoffPending, field)
			assert.Zero(e.T, o.totalCalls(), "%s: owner never called", field)
			// At the receipt: the stored authority (now v) changes back to
			// a1, which differs from v in the same one field.
			seed := onceFn(func() { seedAuthority(e, run, a1); after = digest(e, run) })
			o.onDispatch = func(context.Context, workflow.PreparedDispatch) error { seed(); return nil }
			_, err = s.Engine().Redispatch(e.Ctx, o, passOpts(run, owned, v), ms(13))
			requireIs(e.T, err, workflow.ErrStaleAuthority, "redispatch receipt under an authority differing in %s", field)
			assert.Equal(e.T, after, digest(e, run), "%s: redispatch receipt writes nothing", field)
			requireReceiptless(e, s, k, workflow.HandoffRecorded, field)
			assert.Equal(e.T, 1, o.callCount(id), "%s", field)
			requireRecovered(e, s, o, run, ownedOr(owned, a1), id, 14, field)
		})
	}
}

// caseFieldReconcile presents (owned) or meets (stored, during the owner's
// receipt lookup) an authority differing in one field: neither the found
// receipt nor repair_required is written.
func caseFieldReconcile(owned bool) func(*env) {
	return func(e *env) {
		s := store(e)
		eachField(e, func(run, field string, a1, v workflow.Authority) {
			k, id := handedOff(e, s, run, a1)
			o := newOwner()
			o.receipts[id] = json.RawMessage(`{"held":true}`)
			if owned {
				before := digest(e, run)
				_, err := s.Engine().ReconcilePrepared(e.Ctx, workflow.ReconcileOptions{RunID: run, Authority: &v, Limit: 10, Lookup: o}, ms(19))
				requireIs(e.T, err, workflow.ErrStaleAuthority, "owned reconcile presenting an authority differing in %s", field)
				assert.Equal(e.T, before, digest(e, run), "%s", field)
			}
			// The receipt found by the lookup.
			var after string
			seed := onceFn(func() { seedAuthority(e, run, v); after = digest(e, run) })
			opts := passOpts(run, owned, a1)
			opts.Lookup = lookupFunc(func(ctx context.Context, identity string) (json.RawMessage, bool, error) {
				seed()
				return o.LookupReceipt(ctx, identity)
			})
			_, err := s.Engine().ReconcilePrepared(e.Ctx, opts, ms(20))
			requireIs(e.T, err, workflow.ErrStaleAuthority, "recovered receipt under an authority differing in %s", field)
			assert.Equal(e.T, after, digest(e, run), "%s: the recovered receipt is not written", field)
			requireReceiptless(e, s, k, workflow.HandoffRecorded, field)
			// repair_required after a lookup that found nothing.
			seed = onceFn(func() { seedAuthority(e, run, a1); after = digest(e, run) })
			opts = passOpts(run, owned, v)
			opts.Lookup = lookupFunc(func(context.Context, string) (json.RawMessage, bool, error) {
				seed()
				return nil, false, nil
			})
			_, err = s.Engine().ReconcilePrepared(e.Ctx, opts, ms(21))
			requireIs(e.T, err, workflow.ErrStaleAuthority, "repair_required under an authority differing in %s", field)
			assert.Equal(e.T, after, digest(e, run), "%s: repair_required is not written", field)
			requireReceiptless(e, s, k, workflow.HandoffRecorded, field)
			assert.Equal(e.T, workflow.RunRunning, getRun(e, s, run).Status, "%s", field)
			requireRecovered(e, s, o, run, ownedOr(owned, a1), id, 22, field)
		})
	}
}

func caseFieldOwnerAdmission(e *env) {
	s := store(e)
	eachField(e, func(run, field string, a1, v workflow.Authority) {
		k, id := handedOff(e, s, run, a1)
		req := workflow.OwnerAdmission{Key: k, Identity: id, Intent: json.RawMessage(`{"do":"a"}`)}
		r, err := s.Engine().CheckOwnerAdmission(e.Ctx, req, a1)
		require.NoError(e.T, err, "%s", field)
		assert.Nil(e.T, r)
		_, err = s.Engine().CheckOwnerAdmission(e.Ctx, req, v)
		requireIs(e.T, err, workflow.ErrStaleAuthority, "owner admission presenting an authority differing in %s", field)
		require.NoError(e.T, s.Engine().PersistReceipt(e.Ctx, workflow.OwnerReceipt{Key: k, Receipt: json.RawMessage(`{"owner":"x"}`), Authority: &a1}, ms(12)))
		r, err = s.Engine().CheckOwnerAdmission(e.Ctx, req, v)
		requireIs(e.T, err, workflow.ErrStaleAuthority, "%s: no receipt recovery under a foreign authority", field)
		assert.Nil(e.T, r, "%s", field)
	})
}

// --- Fan-out retirement recorded mid-admission ---

func caseFenceRetirement(e *env) {
	s := store(e)
	a1 := *authority(1, "one")
	// Recorded while the owner plans a member: no member is prepared.
	c, _ := fanOut(e, s, "r", &a1, 2, 2)
	o := fanOutOwner()
	var after string
	retire := onceFn(func() {
		require.NoError(e.T, s.RetireFanOut(e.Ctx, c, ms(9)))
		after = digest(e, "r")
	})
	o.onPlan = func(_ context.Context, a workflow.Activation) error {
		if a.Key != c {
			retire()
		}
		return nil
	}
	sum, err := s.Dispatch(e.Ctx, o, workflow.DispatchOptions{RunID: "r", Authority: &a1, Limit: 10}, ms(10))
	require.NoError(e.T, err)
	assert.Empty(e.T, sum.Admitted)
	assert.NotEmpty(e.T, after, "retirement recorded during planning")
	assert.Equal(e.T, after, digest(e, "r"), "no member prepared once retirement is pending")
	assert.Empty(e.T, attemptsOf(e, s, "r"))
	assert.Zero(e.T, o.totalCalls())

	// Recorded once a member's intent committed: no handoff, no owner call,
	// and the owner's admission check refuses it.
	c2, _ := fanOut(e, s, "r2", &a1, 2, 2)
	o2 := fanOutOwner()
	retire2 := onceFn(func() {
		require.NoError(e.T, s.RetireFanOut(e.Ctx, c2, ms(19)))
		after = digest(e, "r2")
	})
	var member workflow.ActivationKey
	fault := func(_ context.Context, b faultseam.Boundary, pd workflow.PreparedDispatch) error {
		if b == faultseam.IntentCommitted {
			member = pd.Activation.Key
			retire2()
		}
		return nil
	}
	opts := workflow.DispatchOptions{RunID: "r2", Limit: 10}
	sum2, err := s.Dispatch(faultseam.With(e.Ctx, fault), o2, opts, ms(20))
	require.NoError(e.T, err, "a refused handoff is rejected and the batch goes on")
	// One at a time, the second member is not prepared once retirement is
	// pending; in batch mode both intents committed in one transaction
	// before the hook ran, and both handoffs are refused.
	rejected := 1
	if e.batch > 1 {
		rejected = 2
	}
	require.Len(e.T, sum2.Rejected, rejected, "handoff while retirement is pending")
	assert.Equal(e.T, member, sum2.Rejected[rejected-1].Key)
	for _, r := range sum2.Rejected {
		requireIs(e.T, r.Err, workflow.ErrIneligible, "handoff while retirement is pending")
		requireReceiptless(e, s, workflow.AttemptKey{ActivationKey: r.Key, Attempt: 1}, workflow.HandoffPending, "retiring member")
	}
	assert.Equal(e.T, after, digest(e, "r2"), "the refused handoff writes nothing")
	p := getAttempt(e, s, member, 1)
	requireReceiptless(e, s, p.Key, workflow.HandoffPending, "retiring member")
	assert.Zero(e.T, o2.totalCalls(), "the owner is never called for a retiring member")
	_, err = s.Engine().CheckOwnerAdmission(e.Ctx, workflow.OwnerAdmission{Key: p.Key, Identity: p.Identity, Intent: p.Intent}, a1)
	requireIs(e.T, err, workflow.ErrIneligible, "owner admission while retirement is pending")
	rs, err := s.Engine().Redispatch(e.Ctx, o2, workflow.ReconcileOptions{RunID: "r2", Limit: 10}, ms(21))
	require.NoError(e.T, err)
	var skipped []string
	for _, r := range sum2.Rejected {
		skipped = append(skipped, identity(r.Key, 1))
	}
	assert.ElementsMatch(e.T, skipped, refIdentities(rs.Skipped), "redispatch skips every retiring member")
	assert.Zero(e.T, o2.totalCalls())
	assert.Equal(e.T, after, digest(e, "r2"))
}
