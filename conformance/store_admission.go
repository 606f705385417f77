package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/event"
	"github.com/wfstore/wfstore/internal/faultseam"
	"github.com/wfstore/wfstore/workflow"
)

func admissionCases() []testCase {
	return []testCase{
		{Name: "admission_prepare_is_single_winner_across_instances", Run: caseSingleWinner},
		{Name: "admission_oversized_intent_rolls_back_without_writes", Run: caseOversizedIntent},
		{Name: "admission_run_scoped_dispatch_ignores_other_runs", Run: caseRunScoped},
		{Name: "admission_intent_and_handoff_commit_before_owner_call_receipt_after", Run: caseIntentBeforeCall},
		{Name: "admission_owner_failure_stays_prepared_and_is_not_redispatched", Run: caseOwnerFailure},
		{Name: "admission_unsupported_activation_stays_pending", Run: caseUnsupported},
		{Name: "admission_fault_boundaries_hold_across_reopen", Run: caseFaultMatrix},
		{Name: "admission_racing_dispatchers_admit_each_activation_once", Run: caseRacingDispatchers},
		{Name: "admission_second_handoff_of_one_identity_fails", Run: caseSecondHandoff},
		{Name: "admission_low_level_prepare_is_idempotent_only_for_identical_intent", Run: casePrepareAttemptIdempotent},
		{Name: "admission_low_level_prepare_never_gains_never_dispatched_proof", Run: casePrepareAttemptNoProof},
		{Name: "admission_discovery_order_is_bytewise", Run: caseBytewiseDiscovery},
		{Name: "admission_discovery_skips_a_run_without_capacity", Run: caseDiscoverySkipsFullRun},
		{Name: "admission_events_after_prepare_are_in_commit_order", Run: caseEventsOrder},
		{Name: "admission_succeeded_adds_successors_atomically", Run: caseSuccessors},
	}
}

func caseSingleWinner(e *env) {
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{}, nil)
	k := key("r", "n", "a")
	mkAct(e, s, k)
	other := s
	if e.Caps.MultiInstance {
		other = e.newStore(e.Open())
	}
	plan := workflow.Plan{SideEffect: workflow.Mutating, Intent: json.RawMessage(`{"x":1}`)}
	p, err := s.Engine().PreparePending(e.Ctx, k, plan, ms(10))
	require.NoError(e.T, err)
	require.NotNil(e.T, p)
	assert.Equal(e.T, identity(k, 1), p.Identity, "identity is the derived one")
	p2, err := other.Engine().PreparePending(e.Ctx, k, plan, ms(11))
	require.NoError(e.T, err)
	assert.Nil(e.T, p2, "second prepare must find nothing pending")
	atts := attemptsOf(e, s, "r")
	require.Len(e.T, atts, 1)
	assert.Equal(e.T, workflow.AttemptPrepared, atts[0].Status)
	assert.Equal(e.T, workflow.HandoffPending, atts[0].Handoff)
	assert.Equal(e.T, workflow.ActivationRunning, getAct(e, s, k).Status)
}

func caseOversizedIntent(e *env) {
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{}, nil)
	k := key("r", "n", "a")
	mkAct(e, s, k)
	before := digest(e, "r")
	big := json.RawMessage(`"` + strings.Repeat("x", workflow.MaxJSONBytes) + `"`)
	_, err := s.Engine().PreparePending(e.Ctx, k, workflow.Plan{SideEffect: workflow.ReadOnly, Intent: big}, ms(10))
	requireIs(e.T, err, workflow.ErrTooLarge)
	requireIs(e.T, err, workflow.ErrInvalidInput)
	assert.Equal(e.T, before, digest(e, "r"), "state unchanged")
	assert.Equal(e.T, workflow.ActivationPending, getAct(e, s, k).Status)
}

func caseRunScoped(e *env) {
	s := store(e)
	mkRun(e, s, "r1", workflow.Limits{}, nil)
	mkRun(e, s, "r2", workflow.Limits{}, nil)
	mkAct(e, s, key("r1", "n", "a"))
	mkAct(e, s, key("r2", "n", "a"))
	o := newOwner()
	sum := dispatch(e, s, o, workflow.DispatchOptions{RunID: "r1"}, ms(10))
	assert.Equal(e.T, []string{identity(key("r1", "n", "a"), 1)}, refIdentities(sum.Admitted))
	assert.Equal(e.T, workflow.ActivationPending, getAct(e, s, key("r2", "n", "a")).Status)
	assert.Empty(e.T, attemptsOf(e, s, "r2"))
}

func caseIntentBeforeCall(e *env) {
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{}, nil)
	k := key("r", "n", "a")
	mkAct(e, s, k)
	o := newOwner()
	o.effect = workflow.Mutating
	var seen workflow.Attempt
	o.onDispatch = func(ctx context.Context, p workflow.PreparedDispatch) error {
		a, err := s.GetAttempt(ctx, p.Identity)
		seen = a
		return err
	}
	sum := dispatch(e, s, o, workflow.DispatchOptions{}, ms(10))
	require.Len(e.T, sum.Admitted, 1)
	assert.Equal(e.T, workflow.AttemptPrepared, seen.Status, "inside the owner call the attempt is prepared")
	assert.Equal(e.T, workflow.HandoffRecorded, seen.Handoff, "and its handoff is recorded")
	assert.Nil(e.T, seen.Receipt)
	after := getAttempt(e, s, k, 1)
	assert.Equal(e.T, workflow.AttemptAdmitted, after.Status)
	assert.JSONEq(e.T, fmt.Sprintf(`{"accepted":%q}`, after.Identity), string(after.Receipt))
	assert.Equal(e.T, 1, o.callCount(after.Identity))
}

func caseOwnerFailure(e *env) {
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{}, nil)
	k := key("r", "n", "a")
	mkAct(e, s, k)
	o := newOwner()
	o.onDispatch = func(context.Context, workflow.PreparedDispatch) error { return errInjected }
	_, err := s.Dispatch(e.Ctx, o, workflow.DispatchOptions{Limit: 10}, ms(10))
	requireIs(e.T, err, workflow.ErrOwner)
	requireIs(e.T, err, errInjected)
	a := getAttempt(e, s, k, 1)
	assert.Equal(e.T, workflow.AttemptPrepared, a.Status)
	assert.Equal(e.T, workflow.HandoffRecorded, a.Handoff)
	o.onDispatch = nil
	sum := dispatch(e, s, o, workflow.DispatchOptions{}, ms(20))
	assert.Empty(e.T, sum.Admitted)
	assert.Equal(e.T, 1, o.totalCalls(), "a rescan calls the owner no more")
}

func caseUnsupported(e *env) {
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{}, nil)
	mkAct(e, s, key("r", "n", "a"))
	mkAct(e, s, key("r", "n", "b"))
	o := newOwner()
	o.unsupported["a"] = true
	sum := dispatch(e, s, o, workflow.DispatchOptions{}, ms(10))
	assert.Equal(e.T, []workflow.ActivationKey{key("r", "n", "a")}, sum.Unsupported)
	assert.Len(e.T, sum.Admitted, 1)
	assert.Equal(e.T, workflow.ActivationPending, getAct(e, s, key("r", "n", "a")).Status)
}

func caseFaultMatrix(e *env) {
	rows := []struct {
		at       faultseam.Boundary
		calls    int
		status   workflow.AttemptStatus
		receipt  bool
		handoff  workflow.Handoff
		actState workflow.ActivationStatus
	}{
		{faultseam.IntentCommitted, 0, workflow.AttemptPrepared, false, workflow.HandoffPending, workflow.ActivationRunning},
		{faultseam.OwnerAccepted, 1, workflow.AttemptPrepared, false, workflow.HandoffRecorded, workflow.ActivationRunning},
		{faultseam.ReceiptCommitted, 1, workflow.AttemptAdmitted, true, workflow.HandoffRecorded, workflow.ActivationRunning},
	}
	s := store(e)
	o := newOwner()
	for i, row := range rows {
		run := fmt.Sprintf("r%d", i)
		mkRun(e, s, run, workflow.Limits{}, nil)
		mkAct(e, s, key(run, "n", "a"))
		fault := func(_ context.Context, b faultseam.Boundary, _ workflow.PreparedDispatch) error {
			if b == row.at {
				return errInjected
			}
			return nil
		}
		_, err := s.Dispatch(faultseam.With(e.Ctx, fault), o, workflow.DispatchOptions{RunID: run, Limit: 10}, ms(10))
		requireIs(e.T, err, errInjected, "fault at %s", row.at)
	}
	s = e.newStore(e.Reopen())
	for i, row := range rows {
		k := key(fmt.Sprintf("r%d", i), "n", "a")
		a := getAttempt(e, s, k, 1)
		assert.Equal(e.T, row.calls, o.callCount(a.Identity), "%s: owner calls", row.at)
		assert.Equal(e.T, row.status, a.Status, "%s: status", row.at)
		assert.Equal(e.T, row.receipt, a.Receipt != nil, "%s: receipt", row.at)
		assert.Equal(e.T, row.handoff, a.Handoff, "%s: handoff", row.at)
		assert.Equal(e.T, row.actState, getAct(e, s, k).Status, "%s: activation", row.at)
	}
	// Nothing is rediscovered as pending after reopen.
	sum := dispatch(e, s, o, workflow.DispatchOptions{}, ms(20))
	assert.Empty(e.T, sum.Admitted)
	assert.Equal(e.T, 2, o.totalCalls())
}

// caseRacingDispatchers: ≥8 goroutines × 2 Stores, released together, on
// the same 200 activations. The second Store is over a separately opened
// instance, or over the same instance when the adapter lacks MultiInstance:
// a Store spreads its own concurrent passes over different work, so racing
// between Stores is what reaches the prepare transaction's guard.
//
// Whether two passes meet at that guard is up to the scheduler: with few
// CPUs, or a fast adapter, every pass can finish before another takes the
// same candidates. So the race runs on a fresh run of 200 activations
// until one round has raced, at most racingRounds rounds; every round must
// admit each of its activations exactly once.
func caseRacingDispatchers(e *env) {
	s := store(e)
	stores := []*workflow.Store{s}
	if e.Caps.MultiInstance {
		stores = append(stores, e.newStore(e.Open()))
	} else {
		e.T.Logf("capability MultiInstance=false: %s races two Stores of 8 goroutines each on one instance", e.H.Name)
		stores = append(stores, e.newStore(e.B))
	}
	var raced int64
	for round := 0; round < racingRounds && raced == 0; round++ {
		runID := "race"
		if round > 0 {
			runID = fmt.Sprintf("race%d", round)
		}
		raced = racingRound(e, stores, runID)
	}
	assert.Positive(e.T, raced, "racing must actually have happened (in %d rounds)", racingRounds)
}

// racingRounds bounds caseRacingDispatchers' rounds: with one CPU up to 1
// round in 14 did not race on an in-memory adapter, so 8 rounds without
// one mean that passes never meet.
const racingRounds = 8

// racingRound races 8 goroutines of each Store over a fresh run runID of
// 200 activations, asserts that each was admitted once, its owner called
// once, and returns how many candidates the passes lost to another.
func racingRound(e *env, stores []*workflow.Store, runID string) int64 {
	const acts, workers = 200, 8
	s := stores[0]
	mkRun(e, s, runID, workflow.Limits{ConcurrencyCap: 1000, NodeExecutionCap: 1000}, nil)
	for i := range acts {
		mkAct(e, s, key(runID, "n", fmt.Sprintf("a%03d", i)))
	}
	o := newOwner()
	var (
		wg       sync.WaitGroup
		start    = make(chan struct{})
		mu       sync.Mutex
		admitted = map[string]int{}
		raced    atomic.Int64
		errs     []error
	)
	for _, st := range stores {
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for {
					sum, err := st.Dispatch(e.Ctx, o, workflow.DispatchOptions{Limit: 10}, ms(10))
					mu.Lock()
					if err != nil {
						errs = append(errs, err)
					}
					for _, ref := range sum.Admitted {
						admitted[ref.Identity]++
					}
					mu.Unlock()
					raced.Add(int64(len(sum.Raced)))
					if err != nil || len(sum.Admitted)+len(sum.Raced) == 0 {
						return
					}
				}
			}()
		}
	}
	close(start)
	wg.Wait()
	require.Empty(e.T, errs)
	assert.Len(e.T, admitted, acts, "every activation admitted")
	for id, n := range admitted {
		assert.Equal(e.T, 1, n, "admitted once: %s", id)
		assert.Equal(e.T, 1, o.callCount(id), "owner called once: %s", id)
	}
	assert.Equal(e.T, acts, o.totalCalls())
	atts := attemptsOf(e, s, runID)
	assert.Len(e.T, atts, acts)
	for _, a := range atts {
		assert.Equal(e.T, workflow.AttemptAdmitted, a.Status)
		assert.Equal(e.T, workflow.HandoffRecorded, a.Handoff, "no attempt without its handoff state")
	}
	return raced.Load()
}

func caseSecondHandoff(e *env) {
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{}, nil)
	k := key("r", "n", "a")
	mkAct(e, s, k)
	p, err := s.Engine().PreparePending(e.Ctx, k, workflow.Plan{SideEffect: workflow.Mutating, Intent: json.RawMessage(`{}`)}, ms(10))
	require.NoError(e.T, err)
	require.NoError(e.T, s.Engine().Handoff(e.Ctx, p.Key(), nil, ms(11)))
	before := digest(e, "r")
	requireIs(e.T, s.Engine().Handoff(e.Ctx, p.Key(), nil, ms(12)), workflow.ErrConflict)
	assert.Equal(e.T, before, digest(e, "r"))
}

func casePrepareAttemptIdempotent(e *env) {
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{}, nil)
	k := key("r", "n", "a")
	mkAct(e, s, k)
	ai := workflow.AttemptIntent{Key: attemptKey(k, 1), SideEffect: workflow.ReadOnly, Intent: json.RawMessage(`{"b":2, "a":1}`)}
	id, err := s.Engine().PrepareAttempt(e.Ctx, ai, ms(10))
	require.NoError(e.T, err)
	assert.Equal(e.T, identity(k, 1), id)
	before := digest(e, "r")
	ai.Intent = json.RawMessage(`{"a":1,"b":2}`) // canonically identical
	id2, err := s.Engine().PrepareAttempt(e.Ctx, ai, ms(11))
	require.NoError(e.T, err)
	assert.Equal(e.T, id, id2)
	assert.Equal(e.T, before, digest(e, "r"), "identical re-prepare writes nothing")
	ai.Intent = json.RawMessage(`{"a":1.0,"b":2}`)
	_, err = s.Engine().PrepareAttempt(e.Ctx, ai, ms(12))
	requireIs(e.T, err, workflow.ErrConflict, "1.0 is not 1")
	ai.Intent = json.RawMessage(`{"a":1,"b":2}`)
	ai.SideEffect = workflow.Mutating
	_, err = s.Engine().PrepareAttempt(e.Ctx, ai, ms(13))
	requireIs(e.T, err, workflow.ErrConflict, "different side effect")
	assert.Equal(e.T, before, digest(e, "r"))
}

func casePrepareAttemptNoProof(e *env) {
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{}, nil)
	k := key("r", "n", "a")
	mkAct(e, s, k)
	_, err := s.Engine().PrepareAttempt(e.Ctx, workflow.AttemptIntent{Key: attemptKey(k, 1), SideEffect: workflow.Mutating, Intent: json.RawMessage(`{}`)}, ms(10))
	require.NoError(e.T, err)
	a := getAttempt(e, s, k, 1)
	assert.Equal(e.T, workflow.HandoffUnknown, a.Handoff)
	assert.Equal(e.T, workflow.ActivationPending, getAct(e, s, k).Status, "low-level prepare does not take the pending gate")
	sum, err := s.Engine().ReconcilePrepared(e.Ctx, workflow.ReconcileOptions{Limit: 10}, ms(20))
	require.NoError(e.T, err)
	assert.Empty(e.T, sum.NeverDispatched, "no proof for an unknown handoff")
	assert.Equal(e.T, []string{a.Identity}, refIdentities(sum.RepairRequired))
}

func caseBytewiseDiscovery(e *env) {
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{ConcurrencyCap: 100}, nil)
	ids := []string{"é", "Z", "a", "z", "B", "ß", "A"}
	for _, id := range ids {
		mkAct(e, s, key("r", "n", id))
	}
	o := newOwner()
	sum := dispatch(e, s, o, workflow.DispatchOptions{}, ms(10))
	require.Len(e.T, sum.Admitted, len(ids))
	var got []string
	for _, id := range o.order {
		a, err := s.GetAttempt(e.Ctx, id)
		require.NoError(e.T, err)
		got = append(got, a.Key.ActivationID)
	}
	assert.Equal(e.T, []string{"A", "B", "Z", "a", "z", "ß", "é"}, got, "bytewise order")
}

func caseDiscoverySkipsFullRun(e *env) {
	s := store(e)
	mkRun(e, s, "a-busy", workflow.Limits{ConcurrencyCap: 1}, nil)
	mkRun(e, s, "b-idle", workflow.Limits{}, nil)
	for i := range 5 {
		mkAct(e, s, key("a-busy", "n", fmt.Sprintf("x%d", i)))
	}
	mkAct(e, s, key("b-idle", "n", "y"))
	o := newOwner()
	sum := dispatch(e, s, o, workflow.DispatchOptions{Limit: 2}, ms(10))
	assert.Contains(e.T, refIdentities(sum.Admitted), identity(key("a-busy", "n", "x0"), 1))
	assert.Contains(e.T, refIdentities(sum.Admitted), identity(key("b-idle", "n", "y"), 1), "the idle run is reached past the busy one")
	assert.Equal(e.T, []workflow.ActivationKey{key("a-busy", "n", "x1")}, sum.Raced, "capacity is reported as raced")
}

func caseEventsOrder(e *env) {
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{}, nil)
	k := key("r", "n", "a")
	mkAct(e, s, k)
	_, err := s.Engine().PreparePending(e.Ctx, k, workflow.Plan{SideEffect: workflow.ReadOnly, Intent: json.RawMessage(`{}`)}, ms(10))
	require.NoError(e.T, err)
	assert.Equal(e.T, []string{"run_created", "activation_created", "attempt_prepared"}, eventTypes(e, s, "r"))
	evsPage, err := s.Events(e.Ctx, workflow.EventQuery{RunID: "r", Limit: 10})
	require.NoError(e.T, err)
	evs := evsPage.Items
	for i := 1; i < len(evs); i++ {
		assert.Greater(e.T, evs[i].Seq, evs[i-1].Seq)
	}
	page, err := s.Events(e.Ctx, workflow.EventQuery{RunID: "r", After: workflow.EventCursor(evs[0].Seq), Limit: 1})
	require.NoError(e.T, err)
	require.Len(e.T, page.Items, 1)
	assert.Equal(e.T, event.ActivationCreated, page.Items[0].Type)
	_, err = s.Events(e.Ctx, workflow.EventQuery{RunID: "r", Limit: 1001})
	requireIs(e.T, err, workflow.ErrInvalidInput, "limit 1001")
	_, err = s.Events(e.Ctx, workflow.EventQuery{RunID: "r", Limit: -1})
	requireIs(e.T, err, workflow.ErrInvalidInput, "limit -1")
}

func caseSuccessors(e *env) {
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{}, nil)
	k := key("r", "n", "a")
	mkAct(e, s, k)
	sum := dispatch(e, s, newOwner(), workflow.DispatchOptions{}, ms(10))
	require.Len(e.T, sum.Admitted, 1)
	next := workflow.NewActivation{Key: key("r", "m", "b"), Input: json.RawMessage(`{"from":"a"}`),
		Predecessors: []workflow.NodeRef{{NodeID: "n", ActivationID: "a"}}}
	bad := workflow.NewActivation{Key: key("r", "m", "c"), Input: json.RawMessage(`{}`), Generation: 1000}
	before := digest(e, "r")
	_, err := s.ApplyObservation(e.Ctx, sum.Admitted[0].Identity, workflow.Observation{Kind: workflow.ObservedSucceeded,
		Output: json.RawMessage(`{"ok":true}`), Successors: []workflow.NewActivation{next, bad}}, ms(20))
	requireIs(e.T, err, workflow.ErrIneligible, "cycle cap of the second successor")
	assert.Equal(e.T, before, digest(e, "r"), "completion and successors are one transaction")
	res, err := s.ApplyObservation(e.Ctx, sum.Admitted[0].Identity, workflow.Observation{Kind: workflow.ObservedSucceeded,
		Output: json.RawMessage(`{"ok":true}`), Successors: []workflow.NewActivation{next}}, ms(21))
	require.NoError(e.T, err)
	assert.Equal(e.T, workflow.AttemptSucceeded, res.Status)
	a := getAct(e, s, k)
	assert.Equal(e.T, workflow.ActivationCompleted, a.Status)
	assert.JSONEq(e.T, `{"ok":true}`, string(a.Output))
	assert.True(e.T, rawAct(e, k).HasSuccessors)
	assert.Equal(e.T, workflow.ActivationPending, getAct(e, s, key("r", "m", "b")).Status)
}
