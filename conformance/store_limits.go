package conformance

import (
	"encoding/json"
	"fmt"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/workflow"
)

func limitsCases() []testCase {
	return []testCase{
		{Name: "limits_node_execution_cap_exhausts_the_second_attempt_with_one_event", Run: caseLimitsNodeCap},
		{Name: "limits_root_tree_allowance_exhausts_a_child_run", Run: caseLimitsRootTree},
		{Name: "limits_concurrency_cap_is_reported_raced", Run: caseLimitsConcurrency},
		{Name: "limits_cycle_cap_blocks_generation_at_or_above_it", Run: caseLimitsCycleCap},
		{Name: "limits_elapsed_deadline_rejects_without_blocking_other_runs", Run: caseLimitsDeadline},
		{Name: "limits_two_write_claims_admit_one_and_race_one", Run: caseLimitsWriteClaims},
		{Name: "limits_readers_share_a_resource_and_a_writer_excludes", Run: caseLimitsReadersWriter},
		{Name: "limits_leases_released_on_every_settled_status_and_reacquired_on_retry", Run: caseLimitsLeaseRelease},
		{Name: "limits_leases_kept_on_repair_required", Run: caseLimitsLeaseRepair},
		{Name: "limits_allowance_observation_count_boundaries", Run: caseLimitsAllowanceCounts},
		{Name: "limits_allowance_observation_more_than_1000_children_is_unknown", Run: caseLimitsAllowanceChildren},
		{Name: "limits_allowance_exhausted_is_three_valued", Run: caseLimitsExhaustedTable},
	}
}

func caseLimitsNodeCap(e *env) {
	s := store(e)
	k := failedPlain(e, s, "r", "a", workflow.Limits{NodeExecutionCap: 1})
	_, err := s.RetryFailedNode(e.Ctx, k, 1, ms(30))
	require.NoError(e.T, err, "the retry cap allows attempt 2")
	// Two more pending activations are discovered in the same pass as a,
	// so the exhaustion is met three times before discovery stops.
	b, c := key("r", "n", "b"), key("r", "n", "c")
	mkAct(e, s, b)
	mkAct(e, s, c)
	before := digest(e, "r")
	_, err = s.Engine().PreparePending(e.Ctx, k, workflow.Plan{SideEffect: workflow.ReadOnly, Intent: json.RawMessage(`{}`)}, ms(35))
	requireIs(e.T, err, workflow.ErrNodeAllowanceExhausted, "direct prepare")
	unchanged(e, before, "exhausted prepare", "r")
	o := newOwner()
	sum := dispatch(e, s, o, workflow.DispatchOptions{}, ms(40))
	assert.Empty(e.T, sum.Admitted)
	assert.Empty(e.T, sum.Raced, "exhaustion is not a race")
	assert.Equal(e.T, []workflow.ActivationKey{k, b, c}, sum.Exhausted)
	for i := range 3 {
		sum = dispatch(e, s, o, workflow.DispatchOptions{}, ms(50+int64(i)))
		assert.Empty(e.T, sum.Admitted)
		assert.Empty(e.T, sum.Raced)
	}
	assert.Zero(e.T, o.totalCalls(), "the owner is never called")
	assert.Equal(e.T, []string{`{"additional_work_admitted":false,"version":1}`}, payloadsOf(e, s, "r", "execution_allowance_exhausted"),
		"exactly one exhaustion event over repeated passes")
	assert.Len(e.T, attemptsOf(e, s, "r"), 1, "no second attempt")
	_, err = s.GetAttempt(e.Ctx, identity(k, 2))
	requireIs(e.T, err, workflow.ErrNotFound)
	for _, x := range []workflow.ActivationKey{k, b, c} {
		assert.Equal(e.T, workflow.ActivationPending, getAct(e, s, x).Status, "exhausted activations stay pending")
	}
	al, err := s.Engine().AllowanceObservation(e.Ctx, "r")
	require.NoError(e.T, err)
	assert.Equal(e.T, workflow.Allowance{RunCap: 1, RunConsumed: i64(1), RootCap: 1, RootConsumed: i64(1)}, al)
	ex, known := al.Exhausted()
	assert.True(e.T, ex)
	assert.True(e.T, known)
}

func caseLimitsRootTree(e *env) {
	s := store(e)
	mkRun(e, s, "p", workflow.Limits{NodeExecutionCap: 2}, nil)
	pa, pb := key("p", "n", "a"), key("p", "n", "b")
	mkAct(e, s, pa)
	mkAct(e, s, pb)
	prep(e, s, pa, workflow.ReadOnly, ms(10))
	child, created, err := s.CreateChildRun(e.Ctx, workflow.NewChildRun{Parent: attemptKey(pa, 1), Target: json.RawMessage(`{"t":1}`)}, ms(11))
	require.NoError(e.T, err)
	require.True(e.T, created)
	c1, c2 := key(child, "n", "c1"), key(child, "n", "c2")
	mkAct(e, s, c1)
	mkAct(e, s, c2)
	o := newOwner()
	sum := dispatch(e, s, o, workflow.DispatchOptions{RunID: child}, ms(20))
	assert.Equal(e.T, []string{identity(c1, 1)}, refIdentities(sum.Admitted))
	assert.Equal(e.T, []workflow.ActivationKey{c2}, sum.Exhausted, "the root's tree-wide cap is used up")
	assert.Empty(e.T, sum.Raced)
	assert.Equal(e.T, 1, countType(eventTypes(e, s, child), "execution_allowance_exhausted"))
	assert.Equal(e.T, workflow.ActivationPending, getAct(e, s, c2).Status)
	before := digest(e, "p", child)
	_, err = s.Engine().PreparePending(e.Ctx, c2, workflow.Plan{SideEffect: workflow.ReadOnly, Intent: json.RawMessage(`{}`)}, ms(21))
	requireIs(e.T, err, workflow.ErrRootAllowanceExhausted, "child prepare")
	_, err = s.Engine().PreparePending(e.Ctx, pb, workflow.Plan{SideEffect: workflow.ReadOnly, Intent: json.RawMessage(`{}`)}, ms(21))
	requireIs(e.T, err, workflow.ErrRootAllowanceExhausted, "root prepare: its own count (1) is below the cap, the tree's is not")
	unchanged(e, before, "exhausted prepares", "p", child)
	al, err := s.Engine().AllowanceObservation(e.Ctx, child)
	require.NoError(e.T, err)
	assert.Equal(e.T, workflow.Allowance{RunCap: 2, RunConsumed: i64(1), RootCap: 2, RootConsumed: i64(2)}, al)
	ex, known := al.Exhausted()
	assert.True(e.T, ex && known)
	al, err = s.Engine().AllowanceObservation(e.Ctx, "p")
	require.NoError(e.T, err)
	assert.Equal(e.T, workflow.Allowance{RunCap: 2, RunConsumed: i64(1), RootCap: 2, RootConsumed: i64(2)}, al, "a root's run count is its own")
}

func caseLimitsConcurrency(e *env) {
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{ConcurrencyCap: 1}, nil)
	a, b := key("r", "n", "a"), key("r", "n", "b")
	mkAct(e, s, a)
	mkAct(e, s, b)
	o := newOwner()
	sum := admitOnly(e, s, o, ms(10), identity(a, 1))
	assert.Equal(e.T, []workflow.ActivationKey{b}, sum.Raced)
	assert.Empty(e.T, sum.Exhausted)
	before := digest(e, "r")
	_, err := s.Engine().PreparePending(e.Ctx, b, workflow.Plan{SideEffect: workflow.ReadOnly, Intent: json.RawMessage(`{}`)}, ms(11))
	requireIs(e.T, err, workflow.ErrConcurrencyCapacity)
	unchanged(e, before, "prepare at capacity", "r")
	assert.Equal(e.T, workflow.ActivationPending, getAct(e, s, b).Status)
	observe(e, s, identity(a, 1), obs(workflow.ObservedSucceeded), ms(20))
	admitOnly(e, s, o, ms(30), identity(b, 1))
	assert.Empty(e.T, payloadsOf(e, s, "r", "execution_allowance_exhausted"))
}

func caseLimitsCycleCap(e *env) {
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{CycleCap: 2}, nil)
	mkAct(e, s, key("r", "n", "g1"), withGeneration(1))
	before := digest(e, "r")
	for _, g := range []int64{2, 3, 1000} {
		_, err := s.AddActivation(e.Ctx, workflow.NewActivation{Key: key("r", "n", fmt.Sprintf("g%d", g)), Generation: g, Input: json.RawMessage(`{}`)}, ms(5))
		requireIs(e.T, err, workflow.ErrIneligible, "generation %d with cycle cap 2", g)
		unchanged(e, before, "cycle cap", "r")
	}
	_, err := s.AddActivation(e.Ctx, workflow.NewActivation{Key: key("r", "n", "neg"), Generation: -1, Input: json.RawMessage(`{}`)}, ms(5))
	requireIs(e.T, err, workflow.ErrInvalidInput, "negative generation")
	mkRun(e, s, "one", workflow.Limits{CycleCap: 1}, nil)
	mkAct(e, s, key("one", "n", "g0"))
	_, err = s.AddActivation(e.Ctx, workflow.NewActivation{Key: key("one", "n", "g1"), Generation: 1, Input: json.RawMessage(`{}`)}, ms(5))
	requireIs(e.T, err, workflow.ErrIneligible, "cycle cap 1 blocks generation 1")
}

func caseLimitsDeadline(e *env) {
	s := store(e)
	_, err := s.CreateRun(e.Ctx, workflow.NewRun{ID: "a-late", Deadline: ms(50)}, ms(0))
	require.NoError(e.T, err)
	mkRun(e, s, "b-ok", workflow.Limits{}, nil)
	x, y, z := key("a-late", "n", "x"), key("a-late", "n", "y"), key("b-ok", "n", "z")
	mkAct(e, s, x)
	mkAct(e, s, y)
	mkAct(e, s, z)
	o := newOwner()
	sum := admitOnly(e, s, o, ms(60), identity(z, 1))
	require.Len(e.T, sum.Rejected, 2)
	for i, want := range []workflow.ActivationKey{x, y} {
		assert.Equal(e.T, want, sum.Rejected[i].Key)
		requireIs(e.T, sum.Rejected[i].Err, workflow.ErrIneligible, "rejection of %v", want)
	}
	assert.Empty(e.T, attemptsOf(e, s, "a-late"))
	assert.Equal(e.T, workflow.ActivationPending, getAct(e, s, x).Status)
	before := digest(e, "a-late")
	sum = admitOnly(e, s, o, ms(70))
	assert.Empty(e.T, sum.Rejected, "a rejected activation is not rediscovered")
	assert.Equal(e.T, 1, o.totalCalls())
	_, err = s.AddActivation(e.Ctx, workflow.NewActivation{Key: key("a-late", "n", "w"), Input: json.RawMessage(`{}`)}, ms(70))
	requireIs(e.T, err, workflow.ErrIneligible, "no new work after the deadline")
	_, err = s.Engine().PreparePending(e.Ctx, x, workflow.Plan{SideEffect: workflow.ReadOnly, Intent: json.RawMessage(`{}`)}, ms(70))
	requireIs(e.T, err, workflow.ErrIneligible, "direct prepare after the deadline")
	unchanged(e, before, "work after the deadline", "a-late")
	_, err = s.Engine().PreparePending(e.Ctx, x, workflow.Plan{SideEffect: workflow.ReadOnly, Intent: json.RawMessage(`{}`)}, ms(49))
	require.NoError(e.T, err, "before the deadline the activation is admissible")
}

func caseLimitsWriteClaims(e *env) {
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{}, nil)
	a, b := key("r", "n", "a"), key("r", "n", "b")
	mkAct(e, s, a, withClaims(claim("res", workflow.LeaseWrite)))
	mkAct(e, s, b, withClaims(claim("res", workflow.LeaseWrite)))
	sum := admitOnly(e, s, newOwner(), ms(10), identity(a, 1))
	assert.Equal(e.T, []workflow.ActivationKey{b}, sum.Raced)
	ls := activeLeases(e, s, "r")
	require.Len(e.T, ls, 1)
	assert.Equal(e.T, workflow.LeaseKey{AttemptKey: attemptKey(a, 1), Resource: "res", Mode: workflow.LeaseWrite}, ls[0].Key)
	assert.Equal(e.T, ms(10).UnixMilli(), msOf(ls[0].AcquiredAt))
	assert.Len(e.T, attemptsOf(e, s, "r"), 1)
	assert.Equal(e.T, workflow.ActivationPending, getAct(e, s, b).Status)
	before := digest(e, "r")
	_, err := s.Engine().PreparePending(e.Ctx, b, workflow.Plan{SideEffect: workflow.ReadOnly, Intent: json.RawMessage(`{}`)}, ms(11))
	requireIs(e.T, err, workflow.ErrResourceConflict)
	unchanged(e, before, "conflicting claim", "r")
}

func caseLimitsReadersWriter(e *env) {
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{}, nil)
	r1, r2, w := key("r", "n", "r1"), key("r", "n", "r2"), key("r", "n", "w")
	mkAct(e, s, r1, withClaims(claim("res", workflow.LeaseRead)))
	mkAct(e, s, r2, withClaims(claim("res", workflow.LeaseRead)))
	mkAct(e, s, w, withClaims(claim("res", workflow.LeaseWrite)))
	o := newOwner()
	sum := admitOnly(e, s, o, ms(10), identity(r1, 1), identity(r2, 1))
	assert.Equal(e.T, []workflow.ActivationKey{w}, sum.Raced, "readers exclude a writer")
	assert.Len(e.T, activeLeases(e, s, "r"), 2)
	observe(e, s, identity(r1, 1), obs(workflow.ObservedSucceeded), ms(20))
	sum = admitOnly(e, s, o, ms(21))
	assert.Equal(e.T, []workflow.ActivationKey{w}, sum.Raced, "one reader left still excludes")
	observe(e, s, identity(r2, 1), obs(workflow.ObservedSucceeded), ms(22))
	admitOnly(e, s, o, ms(23), identity(w, 1))
	mkAct(e, s, key("r", "n", "r3"), withClaims(claim("res", workflow.LeaseRead)))
	sum = admitOnly(e, s, o, ms(24))
	assert.Equal(e.T, []workflow.ActivationKey{key("r", "n", "r3")}, sum.Raced, "a writer excludes readers")
	ls := activeLeases(e, s, "r")
	require.Len(e.T, ls, 1)
	assert.Equal(e.T, workflow.LeaseWrite, ls[0].Key.Mode)
	// Claims on other resources are independent.
	mkAct(e, s, key("r", "n", "other"), withClaims(claim("res2", workflow.LeaseWrite)))
	admitOnly(e, s, o, ms(25), identity(key("r", "n", "other"), 1))
}

func caseLimitsLeaseRelease(e *env) {
	s := store(e)
	for _, kind := range []workflow.ObservationKind{workflow.ObservedSucceeded, workflow.ObservedFailed, workflow.ObservedPaused, workflow.ObservedCancelled} {
		run := "r-" + string(kind)
		mkRun(e, s, run, workflow.Limits{}, nil)
		k := key(run, "n", "a")
		mkAct(e, s, k, withClaims(claim("res", workflow.LeaseWrite), claim("ro", workflow.LeaseRead)))
		sum := dispatch(e, s, newOwner(), workflow.DispatchOptions{RunID: run}, ms(10))
		require.Equal(e.T, []string{identity(k, 1)}, refIdentities(sum.Admitted))
		require.Len(e.T, activeLeases(e, s, run), 2)
		observe(e, s, identity(k, 1), obs(kind), ms(20))
		assert.Empty(e.T, activeLeases(e, s, run), "%s releases the leases", kind)
		for _, lk := range []backend.LeaseKey{
			{AttemptKey: battkey(attemptKey(k, 1)), Resource: "res", Mode: backend.LeaseWrite},
			{AttemptKey: battkey(attemptKey(k, 1)), Resource: "ro", Mode: backend.LeaseRead},
		} {
			l, ok := e.load(e.B, backend.Lookup{Leases: []backend.LeaseKey{lk}}).Leases[lk]
			require.True(e.T, ok, "the released lease is kept as a record")
			assert.Equal(e.T, ms(20).UnixMilli(), l.ReleasedMS, "%s: released at settlement", kind)
		}
	}
	// A failed attempt retried: attempt 2 re-acquires under its own key.
	k := key("r-failed", "n", "a")
	_, err := s.RetryFailedNode(e.Ctx, k, 1, ms(30))
	require.NoError(e.T, err)
	admitOnly(e, s, newOwner(), ms(40), identity(k, 2))
	ls := activeLeases(e, s, "r-failed")
	require.Len(e.T, ls, 2)
	for _, l := range ls {
		assert.Equal(e.T, uint32(2), l.Key.Attempt)
		assert.Equal(e.T, ms(40).UnixMilli(), msOf(l.AcquiredAt))
	}
	// A paused attempt resumed: the next attempt re-acquires as well.
	p := key("r-paused", "n", "a")
	require.Equal(e.T, workflow.RunPaused, getRun(e, s, "r-paused").Status)
	require.NoError(e.T, s.ResumeRun(e.Ctx, "r-paused", nil, ms(50)))
	admitOnly(e, s, newOwner(), ms(51), identity(p, 2))
	assert.Len(e.T, activeLeases(e, s, "r-paused"), 2)
}

func caseLimitsLeaseRepair(e *env) {
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{}, nil)
	k := key("r", "n", "a")
	mkAct(e, s, k, withClaims(claim("res", workflow.LeaseWrite)))
	o := newOwner()
	o.effect = workflow.Mutating
	admitOnly(e, s, o, ms(10), identity(k, 1))
	res := observe(e, s, identity(k, 1), obs(workflow.ObservedUnknown), ms(20))
	require.Equal(e.T, workflow.AttemptRepairRequired, res.Status)
	ls := activeLeases(e, s, "r")
	require.Len(e.T, ls, 1, "repair_required keeps its lease")
	assert.Equal(e.T, attemptKey(k, 1), ls[0].Key.AttemptKey)
	require.NoError(e.T, s.Repair(e.Ctx, workflow.RepairRequest{Identity: identity(k, 1), Action: workflow.RepairAbandon}, ms(30)))
	assert.Empty(e.T, activeLeases(e, s, "r"), "abandoning releases it")
}

func caseLimitsAllowanceCounts(e *env) {
	s := store(e)
	rows := []struct {
		run      string
		cap      int64
		attempts int
		consumed *int64
		ex, kn   bool
	}{
		{"zero", 5000, 0, i64(0), false, true},
		{"below-cap", 3, 2, i64(2), false, true},
		{"at-small-cap", 3, 3, i64(3), true, true},
		{"exactly-1000", 5000, 1000, i64(1000), false, true},
		{"1000-at-cap", 1000, 1000, i64(1000), true, true},
		{"1001-unknown", 5000, 1001, nil, false, false},
		{"1001-at-cap", 1001, 1001, i64(1001), true, true},
		{"1002-saturates-at-1001", 1001, 1002, i64(1001), true, true},
	}
	for _, r := range rows {
		mkRun(e, s, r.run, workflow.Limits{NodeExecutionCap: r.cap}, nil)
		k := key(r.run, "n", "a")
		mkAct(e, s, k)
		seedAttempts(e, k, r.attempts)
		al, err := s.Engine().AllowanceObservation(e.Ctx, r.run)
		require.NoError(e.T, err, r.run)
		assert.Equal(e.T, workflow.Allowance{RunCap: r.cap, RunConsumed: r.consumed, RootCap: r.cap, RootConsumed: r.consumed}, al, r.run)
		ex, kn := al.Exhausted()
		assert.Equal(e.T, r.ex, ex, "%s: exhausted", r.run)
		assert.Equal(e.T, r.kn, kn, "%s: known", r.run)
	}
	_, err := s.Engine().AllowanceObservation(e.Ctx, "missing")
	requireIs(e.T, err, workflow.ErrNotFound)
	_, err = s.Engine().AllowanceObservation(e.Ctx, "")
	requireIs(e.T, err, workflow.ErrInvalidInput)
}

func caseLimitsAllowanceChildren(e *env) {
	s := store(e)
	for _, r := range []struct {
		run   string
		links int
		root  *int64
	}{{"thousand", 1000, i64(2)}, {"thousand-and-one", 1001, nil}} {
		mkRun(e, s, r.run, workflow.Limits{}, nil)
		k := key(r.run, "n", "a")
		mkAct(e, s, k)
		seedAttempts(e, k, 2)
		seedLinks(e, r.run, attemptKey(k, 1), r.links)
		al, err := s.Engine().AllowanceObservation(e.Ctx, r.run)
		require.NoError(e.T, err)
		assert.Equal(e.T, workflow.Allowance{RunCap: 1000, RunConsumed: i64(2), RootCap: 1000, RootConsumed: r.root}, al, "%d children", r.links)
		ex, kn := al.Exhausted()
		assert.False(e.T, ex)
		assert.Equal(e.T, r.root != nil, kn, "%d children: known", r.links)
	}
}

func caseLimitsExhaustedTable(e *env) {
	rows := []struct {
		name   string
		a      workflow.Allowance
		ex, kn bool
	}{
		{"both below", workflow.Allowance{RunCap: 5, RunConsumed: i64(1), RootCap: 5, RootConsumed: i64(4)}, false, true},
		{"run at cap", workflow.Allowance{RunCap: 5, RunConsumed: i64(5), RootCap: 9, RootConsumed: i64(5)}, true, true},
		{"root at cap, run unknown", workflow.Allowance{RunCap: 5000, RootCap: 9, RootConsumed: i64(9)}, true, true},
		{"run unknown, root below", workflow.Allowance{RunCap: 5000, RootCap: 5000, RootConsumed: i64(9)}, false, false},
		{"both unknown", workflow.Allowance{RunCap: 5000, RootCap: 5000}, false, false},
		{"consumed above cap is inconsistent", workflow.Allowance{RunCap: 2, RunConsumed: i64(3), RootCap: 9, RootConsumed: i64(3)}, false, false},
		{"cap zero is inconsistent", workflow.Allowance{RunCap: 0, RunConsumed: i64(0), RootCap: 9, RootConsumed: i64(0)}, false, false},
		{"inconsistent run but root at cap", workflow.Allowance{RunCap: 2, RunConsumed: i64(3), RootCap: 3, RootConsumed: i64(3)}, true, true},
	}
	for _, r := range rows {
		ex, kn := r.a.Exhausted()
		assert.Equal(e.T, r.ex, ex, "%s: exhausted", r.name)
		assert.Equal(e.T, r.kn, kn, "%s: known", r.name)
	}
}
