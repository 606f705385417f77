package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/event"
	"github.com/wfstore/wfstore/workflow"
)

// The operations beyond admission: the receipt-backed reconciliation pass,
// the fenced allowance increase, and the bounded inspection reads.

func opsCases() []testCase {
	return []testCase{
		{Name: "ops_receipt_pass_persists_terminal_success_after_restart", Run: caseReceiptPassSuccess},
		{Name: "ops_receipt_pass_deferred_mutation_remains_running", Run: caseReceiptPassDeferred},
		{Name: "ops_receipt_pass_unknown_mutation_becomes_repair_required", Run: caseReceiptPassUnknown},
		{Name: "ops_receipt_pass_cancelled_mutation_is_terminal_and_owner_asked", Run: caseReceiptPassCancelled},
		{Name: "ops_receipt_pass_run_scoped_ignores_unrelated_owner_failure", Run: caseReceiptPassScoped},
		{Name: "ops_receipt_pass_is_fenced_and_bounded", Run: caseReceiptPassFenced},
		{Name: "ops_allowance_increase_readmits_exhausted_activations_with_one_exhaustion_event", Run: caseIncreaseReadmits},
		{Name: "ops_allowance_increase_is_a_fenced_compare_and_set", Run: caseIncreaseCAS},
		{Name: "ops_allowance_increase_of_a_child_never_raises_the_root", Run: caseIncreaseChild},
		{Name: "ops_inspect_dispatch_intent_is_checksum_verified", Run: caseInspectIntent},
		{Name: "ops_inspect_dispatch_receipt_is_the_committed_one", Run: caseInspectReceipt},
		{Name: "ops_inspect_attempt_history_pages_in_both_orders", Run: caseInspectHistory},
		{Name: "ops_inspect_run_summary_counts_are_bounded", Run: caseInspectSummary},
	}
}

// observer is a scripted receipt-pass observer: it answers by identity
// (default Running) and records whom it was asked about.
type observer struct {
	mu     sync.Mutex
	answer map[string]workflow.Observation
	fail   map[string]bool
	asked  []string
	hook   func(ctx context.Context, a workflow.Attempt)
}

func newObserver() *observer {
	return &observer{answer: map[string]workflow.Observation{}, fail: map[string]bool{}}
}

func (o *observer) Observe(ctx context.Context, a workflow.Attempt) (workflow.Observation, error) {
	if o.hook != nil {
		o.hook(ctx, a)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.asked = append(o.asked, a.Identity)
	if o.fail[a.Identity] {
		return workflow.Observation{}, errInjected
	}
	if obs, ok := o.answer[a.Identity]; ok {
		return obs, nil
	}
	return workflow.Observation{Kind: workflow.ObservedRunning}, nil
}

func (o *observer) askedAbout() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.asked)
}

// admittedIn creates run with one activation per id and dispatches them all
// (effect), returning the admitted identities in activation order.
func admittedIn(e *env, s *workflow.Store, run string, effect workflow.Effect, auth *workflow.Authority, acts ...string) []string {
	e.T.Helper()
	mkRun(e, s, run, workflow.Limits{}, auth)
	for _, a := range acts {
		mkAct(e, s, key(run, "n", a))
	}
	o := newOwner()
	o.effect = effect
	sum := dispatch(e, s, o, workflow.DispatchOptions{RunID: run, Authority: auth}, ms(10))
	require.Len(e.T, sum.Admitted, len(acts))
	var out []string
	for _, a := range acts {
		out = append(out, identity(key(run, "n", a), 1))
	}
	return out
}

func receiptPass(e *env, s *workflow.Store, o workflow.Observer, opts workflow.ReceiptPassOptions, at int64) workflow.ReceiptPassSummary {
	e.T.Helper()
	if opts.Limit == 0 {
		opts.Limit = 100
	}
	sum, err := s.Engine().ReconcileReceiptBacked(e.Ctx, o, opts, ms(at))
	require.NoError(e.T, err)
	return sum
}

func outcomeOf(sum workflow.ReceiptPassSummary, id string) (workflow.ReceiptOutcome, bool) {
	for _, o := range sum.Attempts {
		if o.Attempt.Identity == id {
			return o, true
		}
	}
	return workflow.ReceiptOutcome{}, false
}

func caseReceiptPassSuccess(e *env) {
	s := store(e)
	ids := admittedIn(e, s, "r", workflow.Mutating, nil, "a")
	s = e.newStore(e.Reopen())
	o := newObserver()
	o.answer[ids[0]] = workflow.Observation{Kind: workflow.ObservedSucceeded, Output: json.RawMessage(`{"done":true}`)}
	sum := receiptPass(e, s, o, workflow.ReceiptPassOptions{}, 20)
	assert.Equal(e.T, []string{ids[0]}, o.askedAbout())
	out, ok := outcomeOf(sum, ids[0])
	require.True(e.T, ok, "the summary lists the attempt")
	assert.Equal(e.T, workflow.AttemptSucceeded, out.Status)
	assert.Equal(e.T, workflow.ObservedSucceeded, out.Applied)
	s = e.newStore(e.Reopen())
	assert.Equal(e.T, workflow.AttemptSucceeded, getAttempt(e, s, key("r", "n", "a"), 1).Status, "persisted")
	act := getAct(e, s, key("r", "n", "a"))
	assert.Equal(e.T, workflow.ActivationCompleted, act.Status)
	assert.JSONEq(e.T, `{"done":true}`, string(act.Output))
	before := digest(e, "r")
	sum = receiptPass(e, s, o, workflow.ReceiptPassOptions{}, 21)
	assert.Empty(e.T, sum.Attempts, "a settled attempt is not selected again")
	assert.Len(e.T, o.askedAbout(), 1)
	assert.Equal(e.T, before, digest(e, "r"))
}

func caseReceiptPassDeferred(e *env) {
	s := store(e)
	ids := admittedIn(e, s, "r", workflow.Mutating, nil, "a")
	o := newObserver()
	sum := receiptPass(e, s, o, workflow.ReceiptPassOptions{RunID: "r"}, 20)
	out, _ := outcomeOf(sum, ids[0])
	assert.Equal(e.T, workflow.AttemptRunning, out.Status)
	assert.Equal(e.T, workflow.AttemptRunning, getAttempt(e, s, key("r", "n", "a"), 1).Status)
	before := digest(e, "r")
	o.answer[ids[0]] = workflow.Observation{Kind: workflow.ObservedDeferred}
	sum = receiptPass(e, s, o, workflow.ReceiptPassOptions{RunID: "r"}, 21)
	out, ok := outcomeOf(sum, ids[0])
	require.True(e.T, ok, "a running attempt with a receipt is selected")
	assert.Equal(e.T, workflow.AttemptRunning, out.Status, "deferred changes nothing")
	assert.Equal(e.T, before, digest(e, "r"), "deferred writes nothing")
	assert.Equal(e.T, []string{ids[0], ids[0]}, o.askedAbout())
}

func caseReceiptPassUnknown(e *env) {
	s := store(e)
	mut := admittedIn(e, s, "r", workflow.Mutating, nil, "a")
	ro := admittedIn(e, s, "q", workflow.ReadOnly, nil, "a")
	o := newObserver()
	o.answer[mut[0]] = workflow.Observation{Kind: workflow.ObservedUnknown}
	o.answer[ro[0]] = workflow.Observation{Kind: workflow.ObservedUnknown}
	beforeQ := digest(e, "q")
	sum := receiptPass(e, s, o, workflow.ReceiptPassOptions{}, 20)
	out, _ := outcomeOf(sum, mut[0])
	assert.Equal(e.T, workflow.AttemptRepairRequired, out.Status)
	assert.Equal(e.T, workflow.AttemptRepairRequired, getAttempt(e, s, key("r", "n", "a"), 1).Status)
	assert.Equal(e.T, workflow.RunRepairRequired, getRun(e, s, "r").Status)
	assert.Equal(e.T, 1, countType(eventTypes(e, s, "r"), "attempt_repair_required"))
	out, _ = outcomeOf(sum, ro[0])
	assert.True(e.T, out.Unresolved, "an unknown read-only outcome is listed unresolved")
	assert.Equal(e.T, workflow.AttemptAdmitted, out.Status)
	assert.Equal(e.T, beforeQ, digest(e, "q"), "and left unchanged")
}

func caseReceiptPassCancelled(e *env) {
	s := store(e)
	ids := admittedIn(e, s, "r", workflow.Mutating, nil, "a", "b")
	_, err := s.RequestCancellation(e.Ctx, "r", nil, ms(15))
	require.NoError(e.T, err)
	o := newObserver()
	for _, id := range ids {
		o.answer[id] = workflow.Observation{Kind: workflow.ObservedUnknown}
	}
	sum := receiptPass(e, s, o, workflow.ReceiptPassOptions{}, 20)
	assert.ElementsMatch(e.T, ids, o.askedAbout(), "the owner is asked about a run whose cancellation is requested")
	require.Len(e.T, sum.Attempts, 2)
	for _, out := range sum.Attempts {
		assert.Equal(e.T, workflow.ObservedUnknown, out.Applied, "%s", out.Attempt.Identity)
		assert.Equal(e.T, workflow.AttemptCancelled, out.Status, "terminal, not repair_required")
	}
	for _, a := range []string{"a", "b"} {
		assert.Equal(e.T, workflow.AttemptCancelled, getAttempt(e, s, key("r", "n", a), 1).Status)
	}
	assert.Equal(e.T, workflow.RunCancelled, getRun(e, s, "r").Status, "cancellation finalised")
	assert.Zero(e.T, countType(eventTypes(e, s, "r"), "attempt_repair_required"))
	// Cancellation requested after the owner was asked: its Unknown is
	// applied as Cancelled all the same.
	late := admittedIn(e, s, "late", workflow.Mutating, nil, "a")
	o.answer[late[0]] = workflow.Observation{Kind: workflow.ObservedUnknown}
	o.hook = func(ctx context.Context, _ workflow.Attempt) {
		o.hook = nil
		_, err := s.RequestCancellation(ctx, "late", nil, ms(21))
		require.NoError(e.T, err)
	}
	o.asked = nil
	sum = receiptPass(e, s, o, workflow.ReceiptPassOptions{RunID: "late"}, 22)
	assert.Equal(e.T, []string{late[0]}, o.askedAbout())
	out, _ := outcomeOf(sum, late[0])
	assert.Equal(e.T, workflow.AttemptCancelled, out.Status, "terminal, not repair_required")
	assert.Equal(e.T, workflow.RunCancelled, getRun(e, s, "late").Status)
}

func caseReceiptPassScoped(e *env) {
	s := store(e)
	a := admittedIn(e, s, "ra", workflow.Mutating, nil, "a")
	b := admittedIn(e, s, "rb", workflow.Mutating, nil, "a")
	o := newObserver()
	o.fail[b[0]] = true
	o.answer[a[0]] = workflow.Observation{Kind: workflow.ObservedSucceeded, Output: json.RawMessage(`1`)}
	before := digest(e, "rb")
	sum := receiptPass(e, s, o, workflow.ReceiptPassOptions{RunID: "ra"}, 20)
	assert.Equal(e.T, []string{a[0]}, o.askedAbout(), "only the run's attempts are observed")
	out, _ := outcomeOf(sum, a[0])
	assert.Equal(e.T, workflow.AttemptSucceeded, out.Status)
	assert.NoError(e.T, out.Err)
	assert.Equal(e.T, workflow.AttemptAdmitted, getAttempt(e, s, key("rb", "n", "a"), 1).Status)
	assert.Equal(e.T, before, digest(e, "rb"), "the other run is left alone")
	// An unscoped pass meets the failing owner: the error is reported for
	// that attempt, which is left as it was.
	sum = receiptPass(e, s, o, workflow.ReceiptPassOptions{}, 21)
	out, _ = outcomeOf(sum, b[0])
	requireIs(e.T, out.Err, workflow.ErrOwner)
	assert.Equal(e.T, before, digest(e, "rb"), "nothing applied to the failing attempt")
}

func caseReceiptPassFenced(e *env) {
	s := store(e)
	a1 := authority(1, "one")
	ids := admittedIn(e, s, "r", workflow.Mutating, a1, "a", "b")
	o := newObserver()
	before := digest(e, "r")
	_, err := s.Engine().ReconcileReceiptBacked(e.Ctx, o, workflow.ReceiptPassOptions{RunID: "r", Authority: authority(1, "other"), Limit: 10}, ms(20))
	requireIs(e.T, err, workflow.ErrStaleAuthority)
	_, err = s.Engine().ReconcileReceiptBacked(e.Ctx, o, workflow.ReceiptPassOptions{Authority: a1, Limit: 10}, ms(20))
	requireIs(e.T, err, workflow.ErrInvalidInput, "an authority needs a run id")
	for _, limit := range []int{-1, workflow.MaxPageLimit + 1} {
		_, err = s.Engine().ReconcileReceiptBacked(e.Ctx, o, workflow.ReceiptPassOptions{Limit: limit}, ms(20))
		requireIs(e.T, err, workflow.ErrInvalidInput, "limit %d", limit)
	}
	_, err = s.Engine().ReconcileReceiptBacked(e.Ctx, nil, workflow.ReceiptPassOptions{Limit: 10}, ms(20))
	requireIs(e.T, err, workflow.ErrInvalidInput, "an observer is required")
	assert.Empty(e.T, o.askedAbout())
	assert.Equal(e.T, before, digest(e, "r"))
	// An authority transfer between the read and the apply fails the pass.
	a2 := authority(2, "two")
	o.hook = func(ctx context.Context, _ workflow.Attempt) {
		o.hook = nil
		require.NoError(e.T, s.TransferAuthority(ctx, workflow.AuthorityTransfer{RunID: "r", Expected: *a1, Replacement: *a2}, ms(21)))
	}
	o.answer[ids[0]] = workflow.Observation{Kind: workflow.ObservedFailed}
	mid := digest(e, "r")
	_, err = s.Engine().ReconcileReceiptBacked(e.Ctx, o, workflow.ReceiptPassOptions{Limit: 10}, ms(22))
	requireIs(e.T, err, workflow.ErrStaleAuthority)
	assert.NotEqual(e.T, mid, digest(e, "r"), "the transfer committed")
	assert.Equal(e.T, workflow.AttemptAdmitted, getAttempt(e, s, key("r", "n", "a"), 1).Status, "nothing applied")
	// Owned, with the current authority, and bounded by the limit.
	o.asked = nil
	sum := receiptPass(e, s, o, workflow.ReceiptPassOptions{RunID: "r", Authority: a2, Limit: 1}, 23)
	require.Len(e.T, sum.Attempts, 1)
	assert.Len(e.T, o.askedAbout(), 1)
}

// exhaustedEvents counts the run's execution_allowance_exhausted events.
func exhaustedEvents(e *env, s *workflow.Store, run string) int {
	return countType(eventTypes(e, s, run), "execution_allowance_exhausted")
}

func caseIncreaseReadmits(e *env) {
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{NodeExecutionCap: 1}, nil)
	for _, a := range []string{"a", "b", "c"} {
		mkAct(e, s, key("r", "n", a))
	}
	o := newOwner()
	sum := dispatch(e, s, o, workflow.DispatchOptions{}, ms(10))
	assert.Equal(e.T, []string{identity(key("r", "n", "a"), 1)}, refIdentities(sum.Admitted))
	assert.Equal(e.T, []workflow.ActivationKey{key("r", "n", "b"), key("r", "n", "c")}, sum.Exhausted)
	assert.Equal(e.T, 1, exhaustedEvents(e, s, "r"))
	sum = dispatch(e, s, o, workflow.DispatchOptions{}, ms(11))
	assert.Empty(e.T, sum.Exhausted, "an exhausted run's activations are not discovered")
	require.NoError(e.T, s.IncreaseAllowance(e.Ctx, workflow.AllowanceIncrease{RunID: "r", ExpectedCap: 1, TargetCap: 2}, ms(12)))
	evsPage, err := s.Events(e.Ctx, workflow.EventQuery{RunID: "r", Limit: workflow.MaxPageLimit})
	require.NoError(e.T, err)
	evs := evsPage.Items
	last := evs[len(evs)-1]
	assert.Equal(e.T, event.ExecutionAllowanceIncreased, last.Type)
	assert.JSONEq(e.T, `{"previous_cap":1,"target_cap":2}`, string(last.Payload))
	assert.Equal(e.T, int64(2), getRun(e, s, "r").Limits.NodeExecutionCap)
	assert.True(e.T, rawAct(e, key("r", "n", "b")).Admissible, "discoverable again")
	// Admitted up to the new cap; the second exhaustion parks again and
	// writes no second event.
	sum = dispatch(e, s, o, workflow.DispatchOptions{}, ms(13))
	assert.Equal(e.T, []string{identity(key("r", "n", "b"), 1)}, refIdentities(sum.Admitted), "admitted up to the new cap")
	assert.Equal(e.T, []workflow.ActivationKey{key("r", "n", "c")}, sum.Exhausted)
	assert.Equal(e.T, 1, exhaustedEvents(e, s, "r"), "one exhaustion event per run, ever")
	assert.False(e.T, rawAct(e, key("r", "n", "c")).Admissible, "parked again")
	// New work of an exhausted run is discoverable until the next pass
	// reports it exhausted and parks it.
	mkAct(e, s, key("r", "n", "d"))
	assert.True(e.T, rawAct(e, key("r", "n", "d")).Admissible, "new work of an exhausted run is discoverable")
	sum = dispatch(e, s, o, workflow.DispatchOptions{}, ms(15))
	assert.Equal(e.T, []workflow.ActivationKey{key("r", "n", "d")}, sum.Exhausted, "new work of an exhausted run is reported")
	assert.Empty(e.T, sum.Admitted)
	assert.False(e.T, rawAct(e, key("r", "n", "d")).Admissible, "and parked")
	assert.Equal(e.T, 1, exhaustedEvents(e, s, "r"), "one exhaustion event per run, ever")
	al, err := s.Engine().AllowanceObservation(e.Ctx, "r")
	require.NoError(e.T, err)
	assert.Equal(e.T, int64(2), al.RunCap)
	ex, known := al.Exhausted()
	assert.True(e.T, ex && known)
}

func caseIncreaseCAS(e *env) {
	s := store(e)
	a1 := authority(1, "one")
	mkRun(e, s, "r", workflow.Limits{NodeExecutionCap: 3}, a1)
	mkRun(e, s, "free", workflow.Limits{NodeExecutionCap: 3}, nil)
	before := digest(e, "r", "free")
	requireIs(e.T, s.IncreaseAllowance(e.Ctx, workflow.AllowanceIncrease{RunID: "r", ExpectedCap: 2, TargetCap: 5, Authority: a1}, ms(10)), workflow.ErrConflict, "expected cap differs")
	requireIs(e.T, s.IncreaseAllowance(e.Ctx, workflow.AllowanceIncrease{RunID: "r", ExpectedCap: 3, TargetCap: 3, Authority: a1}, ms(10)), workflow.ErrInvalidInput, "target must exceed expected")
	requireIs(e.T, s.IncreaseAllowance(e.Ctx, workflow.AllowanceIncrease{RunID: "r", ExpectedCap: 0, TargetCap: 3, Authority: a1}, ms(10)), workflow.ErrInvalidInput, "expected must be positive")
	requireIs(e.T, s.IncreaseAllowance(e.Ctx, workflow.AllowanceIncrease{RunID: "r", ExpectedCap: 3, TargetCap: 5, Authority: authority(1, "other")}, ms(10)), workflow.ErrStaleAuthority)
	requireIs(e.T, s.IncreaseAllowance(e.Ctx, workflow.AllowanceIncrease{RunID: "r", ExpectedCap: 3, TargetCap: 5}, ms(10)), workflow.ErrStaleAuthority, "a fenced run needs its authority")
	requireIs(e.T, s.IncreaseAllowance(e.Ctx, workflow.AllowanceIncrease{RunID: "free", ExpectedCap: 3, TargetCap: 5, Authority: a1}, ms(10)), workflow.ErrStaleAuthority, "a run without authority has none to match")
	requireIs(e.T, s.IncreaseAllowance(e.Ctx, workflow.AllowanceIncrease{RunID: "nope", ExpectedCap: 3, TargetCap: 5}, ms(10)), workflow.ErrNotFound)
	requireIs(e.T, s.IncreaseAllowance(e.Ctx, workflow.AllowanceIncrease{RunID: " ", ExpectedCap: 3, TargetCap: 5}, ms(10)), workflow.ErrInvalidInput)
	assert.Equal(e.T, before, digest(e, "r", "free"), "refusals write nothing")
	require.NoError(e.T, s.IncreaseAllowance(e.Ctx, workflow.AllowanceIncrease{RunID: "r", ExpectedCap: 3, TargetCap: 5, Authority: a1}, ms(11)))
	require.NoError(e.T, s.IncreaseAllowance(e.Ctx, workflow.AllowanceIncrease{RunID: "free", ExpectedCap: 3, TargetCap: 4}, ms(11)))
	mid := digest(e, "r", "free")
	requireIs(e.T, s.IncreaseAllowance(e.Ctx, workflow.AllowanceIncrease{RunID: "r", ExpectedCap: 3, TargetCap: 5, Authority: a1}, ms(12)), workflow.ErrConflict, "a replayed increase conflicts")
	assert.Equal(e.T, mid, digest(e, "r", "free"))
	assert.Equal(e.T, int64(5), getRun(e, s, "r").Limits.NodeExecutionCap)
	_, err := s.RequestCancellation(e.Ctx, "free", nil, ms(13))
	require.NoError(e.T, err)
	mid = digest(e, "free")
	requireIs(e.T, s.IncreaseAllowance(e.Ctx, workflow.AllowanceIncrease{RunID: "free", ExpectedCap: 4, TargetCap: 6}, ms(14)), workflow.ErrIneligible, "cancellation requested")
	assert.Equal(e.T, mid, digest(e, "free"))
}

func caseIncreaseChild(e *env) {
	s := store(e)
	mkRun(e, s, "root", workflow.Limits{NodeExecutionCap: 2}, nil)
	mkAct(e, s, key("root", "n", "p"))
	p, err := s.Engine().PreparePending(e.Ctx, key("root", "n", "p"), workflow.Plan{SideEffect: workflow.ReadOnly, Intent: json.RawMessage(`{}`)}, ms(2))
	require.NoError(e.T, err)
	require.NotNil(e.T, p)
	child, _, err := s.CreateChildRun(e.Ctx, workflow.NewChildRun{Parent: p.Key(), Target: json.RawMessage(`{"t":1}`),
		Limits: workflow.RunLimits{NodeExecutionCap: 1}}, ms(3))
	require.NoError(e.T, err)
	mkAct(e, s, key(child, "n", "a"))
	mkAct(e, s, key(child, "n", "b"))
	o := newOwner()
	sum := dispatch(e, s, o, workflow.DispatchOptions{RunID: child}, ms(10))
	require.Len(e.T, sum.Admitted, 1)
	assert.Equal(e.T, []workflow.ActivationKey{key(child, "n", "b")}, sum.Exhausted)
	require.NoError(e.T, s.IncreaseAllowance(e.Ctx, workflow.AllowanceIncrease{RunID: child, ExpectedCap: 1, TargetCap: 5}, ms(11)))
	assert.Equal(e.T, int64(2), getRun(e, s, "root").Limits.NodeExecutionCap, "the root's cap is unchanged")
	al, err := s.Engine().AllowanceObservation(e.Ctx, child)
	require.NoError(e.T, err)
	assert.Equal(e.T, int64(5), al.RunCap)
	assert.Equal(e.T, int64(2), al.RootCap, "the root's allowance is not raised")
	sum = dispatch(e, s, o, workflow.DispatchOptions{RunID: child}, ms(12))
	assert.Empty(e.T, sum.Admitted, "the root's tree-wide cap still binds")
	assert.Equal(e.T, []workflow.ActivationKey{key(child, "n", "b")}, sum.Exhausted)
	assert.Equal(e.T, 1, exhaustedEvents(e, s, child))
	sum = dispatch(e, s, o, workflow.DispatchOptions{RunID: child}, ms(13))
	assert.Empty(e.T, sum.Exhausted, "parked again")
	require.NoError(e.T, s.IncreaseAllowance(e.Ctx, workflow.AllowanceIncrease{RunID: "root", ExpectedCap: 2, TargetCap: 3}, ms(14)))
	sum = dispatch(e, s, o, workflow.DispatchOptions{RunID: child}, ms(15))
	assert.Equal(e.T, []string{identity(key(child, "n", "b"), 1)}, refIdentities(sum.Admitted), "the root's increase readmits the child's work")
}

func caseInspectIntent(e *env) {
	s := store(e)
	p := prepared(e, s, workflow.Mutating, nil, true)
	in, err := s.Engine().DispatchIntent(e.Ctx, p.Identity)
	require.NoError(e.T, err)
	assert.Equal(e.T, p.Key(), in.Key)
	assert.Equal(e.T, p.Identity, in.Identity)
	assert.Equal(e.T, workflow.Mutating, in.SideEffect)
	assert.Equal(e.T, `{"do":"a"}`, string(in.Intent))
	assert.Equal(e.T, workflow.Checksum(in.Intent), in.Checksum)
	assert.True(e.T, in.PreparedAt.Equal(ms(10)))
	_, err = s.Engine().DispatchIntent(e.Ctx, identity(key("r", "n", "zz"), 1))
	requireIs(e.T, err, workflow.ErrNotFound)
	_, err = s.Engine().DispatchIntent(e.Ctx, "")
	requireIs(e.T, err, workflow.ErrInvalidInput)
	// A stored intent that no longer matches its checksum is refused.
	a := e.load(e.B, backend.Lookup{Attempts: []backend.AttemptKey{battkey(p.Key())}}).Attempts[battkey(p.Key())]
	a.Intent = []byte(`{"do":"b"}`)
	e.apply(e.B, rep(a))
	before := digest(e, "r")
	_, err = s.Engine().DispatchIntent(e.Ctx, p.Identity)
	requireIs(e.T, err, workflow.ErrCorrupt)
	assert.Equal(e.T, before, digest(e, "r"))
}

func caseInspectReceipt(e *env) {
	s := store(e)
	p := prepared(e, s, workflow.Mutating, nil, true)
	r, err := s.Engine().DispatchReceipt(e.Ctx, p.Identity)
	requireIs(e.T, err, workflow.ErrNotFound, "no receipt committed yet")
	assert.Nil(e.T, r)
	require.NoError(e.T, s.Engine().PersistReceipt(e.Ctx, workflow.OwnerReceipt{Key: p.Key(), Receipt: json.RawMessage(`{"b":1, "a":2}`), Authority: nil}, ms(12)))
	r, err = s.Engine().DispatchReceipt(e.Ctx, p.Identity)
	require.NoError(e.T, err)
	assert.Equal(e.T, `{"a":2,"b":1}`, string(r), "the committed canonical bytes")
	_, err = s.Engine().DispatchReceipt(e.Ctx, identity(key("r", "n", "zz"), 1))
	requireIs(e.T, err, workflow.ErrNotFound)
	_, err = s.Engine().DispatchReceipt(e.Ctx, " ")
	requireIs(e.T, err, workflow.ErrInvalidInput)
}

func caseInspectHistory(e *env) {
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{}, nil)
	mkRun(e, s, "other", workflow.Limits{}, nil)
	o := newOwner()
	for i := range 5 {
		mkAct(e, s, key("r", "n", fmt.Sprintf("a%d", i)))
		mkAct(e, s, key("other", "n", fmt.Sprintf("a%d", i)))
		dispatch(e, s, o, workflow.DispatchOptions{}, ms(int64(10+i/2))) // ties in prepared time
	}
	all := attemptsOf(e, s, "r")
	require.Len(e.T, all, 5)
	asc := identitiesOf(all)
	desc := slices.Clone(asc)
	slices.Reverse(desc)
	for _, order := range []struct {
		desc bool
		want []string
	}{{false, asc}, {true, desc}} {
		var got []string
		p := workflow.AttemptQuery{RunID: "r", Descending: order.desc, Limit: 2}
		pages := 0
		for ; pages < 10; pages++ {
			page, err := s.Attempts(e.Ctx, p)
			require.NoError(e.T, err)
			got = append(got, identitiesOf(page.Items)...)
			if page.Next == "" {
				break
			}
			p.After = page.Next
		}
		assert.Equal(e.T, order.want, got, "descending=%v", order.desc)
		assert.Equal(e.T, 2, pages, "5 attempts in pages of 2: the third is the last, descending=%v", order.desc)
	}
	for _, limit := range []int{-1, workflow.MaxPageLimit + 1} {
		_, err := s.Attempts(e.Ctx, workflow.AttemptQuery{RunID: "r", Descending: true, Limit: limit})
		requireIs(e.T, err, workflow.ErrInvalidInput)
	}
}

func identitiesOf(as []workflow.Attempt) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.Identity
	}
	return out
}

func caseInspectSummary(e *env) {
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{NodeExecutionCap: 10}, nil)
	claim := func(na *workflow.NewActivation) {
		na.Claims = []workflow.ResourceClaim{{Resource: "res-" + na.Key.ActivationID, Mode: workflow.LeaseWrite}}
	}
	for _, a := range []string{"a", "b", "c", "d"} {
		mkAct(e, s, key("r", "n", a), claim)
	}
	o := newOwner()
	o.unsupported["d"] = true
	sum := dispatch(e, s, o, workflow.DispatchOptions{}, ms(10))
	require.Len(e.T, sum.Admitted, 3)
	_, err := s.ApplyObservation(e.Ctx, sum.Admitted[0].Identity, workflow.Observation{Kind: workflow.ObservedSucceeded, Output: json.RawMessage(`1`)}, ms(11))
	require.NoError(e.T, err)
	_, err = s.ApplyObservation(e.Ctx, sum.Admitted[1].Identity, workflow.Observation{Kind: workflow.ObservedRunning}, ms(11))
	require.NoError(e.T, err)
	before := digest(e, "r")
	rs, err := s.RunSummary(e.Ctx, "r")
	require.NoError(e.T, err)
	assert.Equal(e.T, "r", rs.Run.ID)
	assert.Equal(e.T, map[workflow.ActivationStatus]int{workflow.ActivationCompleted: 1, workflow.ActivationRunning: 2, workflow.ActivationPending: 1}, rs.Activations)
	assert.True(e.T, rs.ActivationsComplete)
	assert.Equal(e.T, map[workflow.AttemptStatus]int{workflow.AttemptSucceeded: 1, workflow.AttemptRunning: 1, workflow.AttemptAdmitted: 1}, rs.Attempts)
	assert.True(e.T, rs.AttemptsComplete)
	require.Len(e.T, rs.Leases, 2, "the settled attempt released its lease")
	assert.True(e.T, rs.LeasesComplete)
	assert.Equal(e.T, int64(10), rs.Allowance.RunCap)
	require.NotNil(e.T, rs.Allowance.RunConsumed)
	assert.Equal(e.T, int64(3), *rs.Allowance.RunConsumed)
	assert.Equal(e.T, before, digest(e, "r"), "a summary writes nothing")
	_, err = s.RunSummary(e.Ctx, "nope")
	requireIs(e.T, err, workflow.ErrNotFound)
	_, err = s.RunSummary(e.Ctx, "")
	requireIs(e.T, err, workflow.ErrInvalidInput)
	// Past the read budget a count is reported incomplete, not estimated.
	var writes backend.Changes
	for i := range workflow.SummaryReadBudget {
		writes.Insert.Activations = append(writes.Insert.Activations, backend.Activation{Key: bkey(key("r", "bulk", fmt.Sprintf("%05d", i))),
			Status: backend.ActivationCompleted, Input: []byte(`{}`), Effect: backend.ReadOnly, Reconciliation: backend.RepairRequired,
			CreatedMS: ms(12).UnixMilli(), UpdatedMS: ms(12).UnixMilli()})
	}
	e.apply(e.B, writes)
	rs, err = s.RunSummary(e.Ctx, "r")
	require.NoError(e.T, err)
	assert.False(e.T, rs.ActivationsComplete)
	n := 0
	for _, c := range rs.Activations {
		n += c
	}
	assert.Equal(e.T, workflow.SummaryReadBudget, n, "counts cover exactly the budget")
	assert.True(e.T, rs.AttemptsComplete)
}
