package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/internal/faultseam"
	"github.com/wfstore/wfstore/workflow"
)

// Batch parity: the store-batch tier runs these cases with Dispatch in
// batch mode, and each asserts the numbers one at a time gives (owner
// calls, attempts left to repair, what is reported), so that batch mode
// keeps every guarantee of one-at-a-time mode. Cases about what only
// batch mode does are in the store-batch tier alone.
func batchParityCases(batch bool) []testCase {
	cases := []testCase{
		{Name: "batch_owner_error_stops_further_owner_calls", Run: caseBatchOwnerErrorStops},
		{Name: "batch_plan_error_stops_the_pass", Run: caseBatchPlanErrorStops},
		{Name: "batch_stale_authority_at_planning_stops_the_pass_before_planning_more", Run: caseBatchStaleAtPlanning},
		{Name: "batch_stale_authority_at_preparation_stops_the_pass", Run: caseBatchStaleAtPreparation},
		{Name: "batch_stale_authority_at_handoff_stops_the_pass", Run: caseBatchStaleAtHandoff},
		{Name: "batch_stale_authority_at_receipt_stops_the_pass", Run: caseBatchStaleAtReceipt},
		{Name: "batch_release_leaves_unoffered_attempts_provably_never_dispatched", Run: caseBatchReleaseUnoffered},
		{Name: "batch_owner_dispatch_batch_offers_every_attempt_it_is_given", Run: caseBatchOwnerOffersAll},
		{Name: "handoff_every_write_stores_a_fresh_holder_token", Run: caseHandoffFreshToken},
	}
	if batch {
		// One at a time records no handoff it does not offer.
		cases = append(cases, testCase{Name: "batch_release_that_lost_the_handoff_to_a_recovery_pass_changes_nothing", Run: caseBatchReleaseLost},
			testCase{Name: "batch_handoff_of_an_attempt_changed_since_prepare_is_refused_alone", Run: caseBatchHandoffAttemptChanged})
	}
	return cases
}

// rawToken is the holder token stored with attempt k.
func rawToken(e *env, k workflow.AttemptKey) string {
	e.T.Helper()
	f := e.load(e.B, backend.Lookup{Attempts: []backend.AttemptKey{battkey(k)}})
	a, ok := f.Attempts[battkey(k)]
	require.True(e.T, ok, "attempt %v", k)
	return a.HandoffToken
}

// caseHandoffFreshToken: every handoff write (Dispatch, the public
// Handoff, Redispatch's re-verify of a recorded read-only handoff) stores
// a fresh holder token of 128 random bits, hex encoded.
func caseHandoffFreshToken(e *env) {
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{}, nil)
	ka, kb := key("r", "n", "a"), key("r", "n", "b")
	mkAct(e, s, ka)
	o := newOwner()
	admitOnly(e, s, o, ms(10), identity(ka, 1))
	ta := rawToken(e, attemptKey(ka, 1))
	assert.Regexp(e.T, `^[0-9a-f]{32}$`, ta, "Dispatch's handoff token: 128 bits, hex")

	mkAct(e, s, kb)
	p := prep(e, s, kb, workflow.ReadOnly, ms(20))
	assert.Empty(e.T, rawToken(e, p.Key()), "no token while the handoff is pending")
	require.NoError(e.T, s.Engine().Handoff(e.Ctx, p.Key(), nil, ms(21)))
	t1 := rawToken(e, p.Key())
	assert.Regexp(e.T, `^[0-9a-f]{32}$`, t1, "Handoff's token")
	assert.NotEqual(e.T, ta, t1, "never reused")
	// A recorded read-only handoff re-verified by a redispatch: a new token.
	fail := newOwner()
	fail.onDispatch = func(context.Context, workflow.PreparedDispatch) error { return errInjected }
	_, err := s.Engine().Redispatch(e.Ctx, fail, workflow.ReconcileOptions{RunID: "r"}, ms(22))
	requireIs(e.T, err, errInjected)
	t2 := rawToken(e, p.Key())
	assert.Regexp(e.T, `^[0-9a-f]{32}$`, t2, "the re-verify's token")
	assert.NotEqual(e.T, t1, t2, "the re-verify replaces the token")
}

// batchOf presents a test owner as a BatchOwner: one call per batch, one
// result per attempt.
type batchOf struct{ *owner }

func (o batchOf) DispatchBatch(ctx context.Context, ps []workflow.PreparedDispatch) ([]workflow.DispatchResult, error) {
	out := make([]workflow.DispatchResult, len(ps))
	for i, p := range ps {
		out[i].Receipt, out[i].Err = o.Dispatch(ctx, p)
	}
	return out, nil
}

// requireNeverCalledPending checks the never-dispatched proof of run r:
// every prepared attempt the owner was never called for has its handoff
// pending, and returns how many attempts are prepared with their handoff
// recorded (maybe dispatched).
func requireNeverCalledPending(e *env, s *workflow.Store, o *owner, run string) (maybe int) {
	e.T.Helper()
	for _, a := range attemptsOf(e, s, run) {
		if a.Status != workflow.AttemptPrepared {
			continue
		}
		if o.callCount(a.Identity) == 0 {
			assert.Equal(e.T, workflow.HandoffPending, a.Handoff, "%s: the owner was never called for it: its handoff is pending", a.Identity)
		}
		if a.Handoff == workflow.HandoffRecorded {
			maybe++
		}
	}
	return maybe
}

// caseBatchReleaseUnoffered: the owner fails the first attempt of a batch,
// after the authority moved (an owned pass) or after the pass's ctx ended
// (shutdown). The batch's other attempts were handed off and never offered:
// they are released back to pending in every case, so reconciliation finds
// exactly one maybe-dispatched attempt, as one at a time, and Redispatch
// admits the others with the same identity.
func caseBatchReleaseUnoffered(e *env) {
	for _, shutdown := range []bool{false, true} {
		run := "stale"
		if shutdown {
			run = "shutdown"
		}
		s := store(e)
		a1, a2 := authority(1, "a"), authority(2, "b")
		mkRun(e, s, run, workflow.Limits{}, a1)
		mutatingActs(e, s, run, "a", "b", "c", "d")
		o := newOwner()
		o.effect = workflow.Mutating
		ctx, cancel := context.WithCancel(e.Ctx)
		first := onceFn(func() {
			if shutdown {
				cancel()
				return
			}
			require.NoError(e.T, s.TransferAuthority(e.Ctx, workflow.AuthorityTransfer{RunID: run, Expected: *a1, Replacement: *a2}, ms(9)))
		})
		o.onDispatch = func(context.Context, workflow.PreparedDispatch) error {
			first()
			return errInjected
		}
		sum, err := s.Dispatch(ctx, o, workflow.DispatchOptions{RunID: run, Authority: a1, Limit: 10}, ms(10))
		cancel()
		requireIs(e.T, err, workflow.ErrOwner, "%s", run)
		assert.Equal(e.T, 1, o.totalCalls(), "%s: one owner call", run)
		assert.Equal(e.T, 1, requireNeverCalledPending(e, s, o, run), "%s: one maybe-dispatched attempt, as one at a time", run)
		assert.Len(e.T, sum.Unoffered, len(attemptsOf(e, s, run))-1, "%s: every other attempt is reported unoffered", run)
		for _, r := range sum.Unoffered {
			requireReceiptless(e, s, r.Key, workflow.HandoffPending, run+": released")
			assert.Empty(e.T, rawToken(e, r.Key), "%s: a released handoff has no holder", run)
			assert.Contains(e.T, payloadsOf(e, s, run, "dispatch_handoff_released"), attemptEvent(r.Key.ActivationKey, r.Key.Attempt, `{}`))
		}
		rep, err := s.Verify(e.Ctx, workflow.VerifyOptions{})
		require.NoError(e.T, err)
		assert.Empty(e.T, rep.Violations, "%s: the store verifies after the release", run)
		auth := a1
		if !shutdown {
			auth = a2
		}
		o.onDispatch = nil
		ds, err := s.Engine().Redispatch(e.Ctx, o, workflow.ReconcileOptions{RunID: run, Authority: auth}, ms(20))
		require.NoError(e.T, err)
		assert.ElementsMatch(e.T, refIdentities(sum.Unoffered), refIdentities(ds.Admitted), "%s: Redispatch admits them with the same identity", run)
		for _, r := range sum.Unoffered {
			assert.Equal(e.T, 1, o.callCount(r.Identity), "%s: %s reaches the owner once", run, r.Identity)
		}
		rs, err := s.Engine().ReconcilePrepared(e.Ctx, workflow.ReconcileOptions{RunID: run, Authority: auth}, ms(30))
		require.NoError(e.T, err)
		assert.Len(e.T, rs.RepairRequired, 1, "%s: one attempt to repair, as one at a time", run)
		assert.Empty(e.T, rs.NeverDispatched, run)
	}
}

// caseBatchReleaseLost: while the owner holds the first attempt of a
// batch, a recovery pass of another Store re-dispatches the batch's
// read-only attempts (which replaces their holder token) and its owner
// fails one of them, b. The batch then stops on its own owner's failure:
// releasing b would claim that b was never dispatched although the
// recovery pass's owner got it, so the release, fenced by the token,
// leaves b's recorded handoff as it is.
func caseBatchReleaseLost(e *env) {
	require.Greater(e.T, e.batch, 1, "a store-batch tier case")
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{}, nil)
	ka, kb := key("r", "n", "a"), key("r", "n", "b")
	mkAct(e, s, ka)
	mkAct(e, s, kb)
	other := newOwner()
	other.onDispatch = func(_ context.Context, p workflow.PreparedDispatch) error {
		if p.Activation.Key == kb {
			return errInjected
		}
		return nil
	}
	o := newOwner()
	recover := onceFn(func() {
		_, err := e.newStore(e.B).Engine().Redispatch(e.Ctx, other, workflow.ReconcileOptions{RunID: "r"}, ms(15))
		requireIs(e.T, err, errInjected, "the recovery pass's owner fails b")
	})
	o.onDispatch = func(context.Context, workflow.PreparedDispatch) error {
		recover()
		return errInjected
	}
	sum, err := s.Dispatch(e.Ctx, o, workflow.DispatchOptions{RunID: "r", Limit: 10}, ms(10))
	requireIs(e.T, err, workflow.ErrOwner)
	require.Equal(e.T, 1, o.totalCalls(), "this pass called its owner once")
	require.Equal(e.T, 1, other.callCount(identity(kb, 1)), "the recovery pass's owner got b")
	assert.NotContains(e.T, refIdentities(sum.Unoffered), identity(kb, 1), "b is not reported released")
	requireReceiptless(e, s, attemptKey(kb, 1), workflow.HandoffRecorded, "b, re-dispatched by the recovery pass")
	assert.NotContains(e.T, payloadsOf(e, s, "r", "dispatch_handoff_released"), attemptEvent(kb, 1, `{}`))
}

// caseBatchOwnerOffersAll: a BatchOwner's DispatchBatch is offered the
// whole batch, so a failing batch leaves every attempt of it handed off
// (maybe dispatched) and none released; the pass still starts no other
// batch.
func caseBatchOwnerOffersAll(e *env) {
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{}, nil)
	mutatingActs(e, s, "r", "a", "b", "c", "d", "e", "f")
	o := newOwner()
	o.effect = workflow.Mutating
	o.onDispatch = func(context.Context, workflow.PreparedDispatch) error { return errInjected }
	sum, err := s.Dispatch(e.Ctx, batchOf{o}, workflow.DispatchOptions{Limit: 10}, ms(10))
	requireIs(e.T, err, workflow.ErrOwner)
	n := max(e.batch, 1)
	assert.Equal(e.T, n, o.totalCalls(), "every attempt of the first batch is offered, and no other batch starts")
	assert.Equal(e.T, n, requireNeverCalledPending(e, s, o, "r"), "every offered attempt is maybe dispatched")
	assert.Empty(e.T, sum.Unoffered, "nothing offered is released")
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
	rs, err := s.Engine().ReconcilePrepared(e.Ctx, workflow.ReconcileOptions{RunID: "r"}, ms(20))
	require.NoError(e.T, err)
	assert.Len(e.T, rs.RepairRequired, 1, "one attempt to repair, as one at a time")
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
	fault := func(_ context.Context, b faultseam.Boundary, _ workflow.PreparedDispatch) error {
		if b == faultseam.IntentCommitted {
			transfer()
		}
		return nil
	}
	sum, err := s.Dispatch(faultseam.With(e.Ctx, fault), o, workflow.DispatchOptions{Limit: 10}, ms(10))
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

// caseBatchHandoffAttemptChanged: between a batch's prepare and its
// handoff, another writer records a handoff of one of its attempts, b,
// under its own token and touches nothing else (not the run, not the
// activation). The batch hands off the other two and calls the owner for
// them only; b is reported raced, keeps the other writer's handoff and is
// never offered by this pass. (On an adapter with per-row compare-and-set
// the handoff's swap of b reports it unchanged; otherwise the expectation
// of b fails and the batch is decided again on read records.)
func caseBatchHandoffAttemptChanged(e *env) {
	require.Greater(e.T, e.batch, 2, "a store-batch tier case of three attempts")
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{}, nil)
	ka, kb, kc := key("r", "n", "a"), key("r", "n", "b"), key("r", "n", "c")
	for _, k := range []workflow.ActivationKey{ka, kb, kc} {
		mkAct(e, s, k)
	}
	const theirs = "another writer's handoff token"
	steal := onceFn(func() {
		k := battkey(attemptKey(kb, 1))
		e.update(e.B, func(tx backend.Tx) error {
			f, err := tx.Load(e.Ctx, backend.Lookup{Attempts: []backend.AttemptKey{k}})
			if err != nil {
				return err
			}
			a, ok := f.Attempts[k]
			if !ok {
				return fmt.Errorf("attempt %v is not prepared", k)
			}
			a.Handoff, a.HandoffToken = backend.HandoffRecorded, theirs
			return tx.Apply(e.Ctx, backend.Changes{Replace: backend.Replaces{Attempts: []backend.Attempt{a}}})
		})
	})
	fault := func(_ context.Context, b faultseam.Boundary, _ workflow.PreparedDispatch) error {
		if b == faultseam.IntentCommitted {
			steal()
		}
		return nil
	}
	o := newOwner()
	sum, err := s.Dispatch(faultseam.With(e.Ctx, fault), o, workflow.DispatchOptions{RunID: "r", Limit: 3}, ms(10))
	require.NoError(e.T, err)
	assert.Equal(e.T, []workflow.ActivationKey{kb}, sum.Raced, "b, handed off by another writer, is raced")
	assert.ElementsMatch(e.T, []string{identity(ka, 1), identity(kc, 1)}, refIdentities(sum.Admitted))
	assert.Equal(e.T, 0, o.callCount(identity(kb, 1)), "the owner is never called for b")
	assert.Equal(e.T, 2, o.totalCalls())
	assert.Equal(e.T, theirs, rawToken(e, attemptKey(kb, 1)), "b keeps the other writer's handoff")
}
