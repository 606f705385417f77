package conformance

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/internal/faultseam"
	"github.com/wfstore/wfstore/workflow"
)

// Dispatch isolation and discovery bounds: a run-state refusal at any
// boundary is one Rejected entry, never a batch failure; the "run full"
// short-cut of discovery keeps the check order of preparation; and
// discovery reads a bounded number of rows whatever the store holds, while
// repeated passes still reach every run.
func discoveryCases() []testCase {
	return []testCase{
		{Name: "discovery_handoff_refusal_is_rejected_and_the_batch_goes_on", Run: caseDiscoveryHandoffRefusal},
		{Name: "discovery_allowance_and_deadline_precede_the_capacity_shortcut", Run: caseDiscoveryCheckOrder},
		{Name: "discovery_reads_are_bounded_by_the_limit_and_reach_every_run", Run: caseDiscoveryBounded},
		{Name: "discovery_passes_over_all_runs_resume_and_wrap", Run: caseDiscoveryResume},
	}
}

// caseDiscoveryHandoffRefusal changes each of three runs between prepare and
// handoff (paused, cancellation requested, failed by a sibling): each
// handoff is refused, reported Rejected, leaves the prepared attempt as
// recovery expects it, and a healthy run later in the same batch is
// admitted by the same call.
func caseDiscoveryHandoffRefusal(e *env) {
	s := store(e)
	paused, cancelling, failed, taken, ok := "a-paused", "b-cancelling", "c-failed", "c2-taken", "d-ok"
	for _, id := range []string{paused, cancelling, failed, taken, ok} {
		mkRun(e, s, id, workflow.Limits{}, nil)
	}
	sib := key(failed, "n", "s")
	mkAct(e, s, sib)
	admitOnly(e, s, newOwner(), ms(5), identity(sib, 1))
	ax, bx, cx, tz, dy := key(paused, "n", "x"), key(cancelling, "n", "x"), key(failed, "n", "x"), key(taken, "n", "z"), key(ok, "n", "y")
	for _, k := range []workflow.ActivationKey{ax, bx, cx, tz, dy} {
		mkAct(e, s, k)
	}
	after := map[string]string{} // run → digest right after the change
	fault := func(ctx context.Context, b faultseam.Boundary, p workflow.PreparedDispatch) error {
		if b != faultseam.IntentCommitted {
			return nil
		}
		run := p.Activation.Key.RunID
		var err error
		switch run {
		case paused:
			err = s.PauseRun(ctx, run, nil, ms(11))
		case cancelling:
			_, err = s.RequestCancellation(ctx, run, nil, ms(11))
		case failed:
			_, err = s.ApplyObservation(ctx, identity(sib, 1), obs(workflow.ObservedFailed), ms(11))
		case taken:
			// Another caller hands the attempt off first: a race.
			err = s.Engine().Handoff(ctx, p.Key(), nil, ms(11))
		default:
			return nil
		}
		if err != nil {
			return err
		}
		after[run] = digest(e, run)
		return nil
	}
	o := newOwner()
	sum, err := s.Dispatch(faultseam.With(e.Ctx, fault), o, workflow.DispatchOptions{}, ms(10))
	require.NoError(e.T, err, "a run-state refusal at handoff does not stop the batch")
	assert.Equal(e.T, []string{identity(dy, 1)}, refIdentities(sum.Admitted), "the healthy run later in the batch is admitted in the same call")
	require.Len(e.T, sum.Rejected, 3)
	for i, want := range []workflow.ActivationKey{ax, bx, cx} {
		assert.Equal(e.T, want, sum.Rejected[i].Key)
		requireIs(e.T, sum.Rejected[i].Err, workflow.ErrIneligible, "rejection of %v", want)
	}
	assert.Equal(e.T, []workflow.ActivationKey{tz}, sum.Raced, "a handoff another caller recorded first is a race")
	assert.Empty(e.T, sum.Exhausted)
	assert.Equal(e.T, 1, o.totalCalls(), "the owner is called for the healthy run only")
	unchanged(e, after[taken], "a handoff recorded by another caller", taken)
	assert.Contains(e.T, payloadsOf(e, s, failed, "dispatch_handed_off"), attemptEvent(sib, 1, `{}`))
	for _, k := range []workflow.ActivationKey{ax, bx, cx} {
		unchanged(e, after[k.RunID], "a refused handoff", k.RunID)
		att := getAttempt(e, s, k, 1)
		assert.Equal(e.T, workflow.AttemptPrepared, att.Status, "%v stays prepared", k)
		assert.Equal(e.T, workflow.HandoffPending, att.Handoff, "%v: the never-dispatched proof holds", k)
		assert.Nil(e.T, att.Receipt)
		assert.NotContains(e.T, payloadsOf(e, s, k.RunID, "dispatch_handed_off"), attemptEvent(k, 1, `{}`))
		rs, err := s.Engine().ReconcilePrepared(e.Ctx, workflow.ReconcileOptions{RunID: k.RunID, Limit: 10}, ms(20))
		require.NoError(e.T, err)
		assert.Equal(e.T, workflow.ReconcileSummary{NeverDispatched: []workflow.AttemptRef{{Key: attemptKey(k, 1), Identity: identity(k, 1)}}}, rs, "reconciliation of %s", k.RunID)
	}
	// Recovery works on what was left: the cancelled run's attempt is
	// cancelled as never dispatched, the paused one is redispatched with
	// the same identity once resumed.
	done, err := s.Engine().CancelNeverDispatched(e.Ctx, identity(bx, 1), nil, ms(30))
	require.NoError(e.T, err)
	assert.True(e.T, done, "the refused attempt of the cancelling run is provably never dispatched")
	assert.Equal(e.T, workflow.RunCancelled, getRun(e, s, cancelling).Status)
	require.NoError(e.T, s.ResumeRun(e.Ctx, paused, nil, ms(31)))
	rd, err := s.Engine().Redispatch(e.Ctx, o, workflow.ReconcileOptions{RunID: paused, Limit: 10}, ms(32))
	require.NoError(e.T, err)
	assert.Equal(e.T, []string{identity(ax, 1)}, refIdentities(rd.Admitted))
	assert.Equal(e.T, 1, o.callCount(identity(ax, 1)), "one owner call for the recovered attempt")
}

// caseDiscoveryCheckOrder: a run without concurrency room whose next
// activation is refused by an earlier check (node allowance, root
// allowance, deadline) reports that refusal, not a race.
func caseDiscoveryCheckOrder(e *env) {
	s := store(e)
	plan := workflow.Plan{SideEffect: workflow.ReadOnly, Intent: json.RawMessage(`{}`)}
	exhaustedOnce := func(run string) {
		e.T.Helper()
		assert.Equal(e.T, []string{`{"additional_work_admitted":false,"version":1}`}, payloadsOf(e, s, run, "execution_allowance_exhausted"),
			"%s: the run's one exhaustion event", run)
	}

	// Node allowance, the run full from an earlier admission.
	mkRun(e, s, "node", workflow.Limits{NodeExecutionCap: 1, ConcurrencyCap: 1}, nil)
	na, nb := key("node", "n", "a"), key("node", "n", "b")
	mkAct(e, s, na)
	mkAct(e, s, nb)
	prep(e, s, na, workflow.ReadOnly, ms(10))
	before := digest(e, "node")
	_, err := s.Engine().PreparePending(e.Ctx, nb, plan, ms(11))
	requireIs(e.T, err, workflow.ErrNodeAllowanceExhausted, "direct prepare of a full, exhausted run")
	unchanged(e, before, "exhausted prepare", "node")
	o := newOwner()
	sum := dispatch(e, s, o, workflow.DispatchOptions{RunID: "node"}, ms(12))
	assert.Empty(e.T, sum.Raced, "node: allowance comes before capacity")
	assert.Equal(e.T, []workflow.ActivationKey{nb}, sum.Exhausted)
	exhaustedOnce("node")
	assert.Equal(e.T, workflow.ActivationPending, getAct(e, s, nb).Status)

	// Node allowance used up within the pass that fills the run.
	mkRun(e, s, "same", workflow.Limits{NodeExecutionCap: 1, ConcurrencyCap: 1}, nil)
	sa, sb := key("same", "n", "a"), key("same", "n", "b")
	mkAct(e, s, sa)
	mkAct(e, s, sb)
	sum = dispatch(e, s, o, workflow.DispatchOptions{RunID: "same"}, ms(20))
	assert.Equal(e.T, []string{identity(sa, 1)}, refIdentities(sum.Admitted))
	assert.Empty(e.T, sum.Raced, "same pass: allowance comes before capacity")
	assert.Equal(e.T, []workflow.ActivationKey{sb}, sum.Exhausted)
	exhaustedOnce("same")

	// Root allowance: a full child run of a root whose tree cap is used up.
	mkRun(e, s, "p", workflow.Limits{NodeExecutionCap: 2}, nil)
	pa := key("p", "n", "a")
	mkAct(e, s, pa)
	prep(e, s, pa, workflow.ReadOnly, ms(30))
	child, created, err := s.CreateChildRun(e.Ctx, workflow.NewChildRun{Parent: attemptKey(pa, 1), Target: json.RawMessage(`{"t":1}`),
		Limits: workflow.RunLimits{ConcurrencyCap: 1}}, ms(31))
	require.NoError(e.T, err)
	require.True(e.T, created)
	c1, c2 := key(child, "n", "c1"), key(child, "n", "c2")
	mkAct(e, s, c1)
	mkAct(e, s, c2)
	prep(e, s, c1, workflow.ReadOnly, ms(32))
	before = digest(e, "p", child)
	_, err = s.Engine().PreparePending(e.Ctx, c2, plan, ms(33))
	requireIs(e.T, err, workflow.ErrRootAllowanceExhausted, "direct prepare of a full child of an exhausted root")
	unchanged(e, before, "exhausted prepare", "p", child)
	sum = dispatch(e, s, o, workflow.DispatchOptions{}, ms(34))
	assert.Empty(e.T, sum.Raced, "root: allowance comes before capacity")
	assert.Equal(e.T, []workflow.ActivationKey{c2}, sum.Exhausted)
	exhaustedOnce(child)

	// Deadline: a full run past its deadline rejects.
	_, err = s.CreateRun(e.Ctx, workflow.NewRun{ID: "late", Deadline: ms(50), Limits: workflow.RunLimits{ConcurrencyCap: 1}}, ms(0))
	require.NoError(e.T, err)
	la, lb := key("late", "n", "a"), key("late", "n", "b")
	mkAct(e, s, la)
	mkAct(e, s, lb)
	prep(e, s, la, workflow.ReadOnly, ms(40))
	sum = dispatch(e, s, o, workflow.DispatchOptions{RunID: "late"}, ms(60))
	assert.Empty(e.T, sum.Raced, "deadline comes before capacity")
	require.Len(e.T, sum.Rejected, 1)
	assert.Equal(e.T, lb, sum.Rejected[0].Key)
	requireIs(e.T, sum.Rejected[0].Err, workflow.ErrIneligible)

	// Capacity alone is still a race, and the owner was never called.
	mkRun(e, s, "busy", workflow.Limits{ConcurrencyCap: 1}, nil)
	ba, bb := key("busy", "n", "a"), key("busy", "n", "b")
	mkAct(e, s, ba)
	mkAct(e, s, bb)
	prep(e, s, ba, workflow.ReadOnly, ms(70))
	sum = dispatch(e, s, o, workflow.DispatchOptions{RunID: "busy"}, ms(71))
	assert.Equal(e.T, []workflow.ActivationKey{bb}, sum.Raced)
	assert.Empty(e.T, sum.Exhausted)
	assert.Empty(e.T, payloadsOf(e, s, "busy", "execution_allowance_exhausted"))
	assert.Equal(e.T, 1, o.totalCalls(), "only the same-pass admission reached the owner")
}

// caseDiscoveryBounded fills the store with runs that have no concurrency
// room (every tenth with several pending activations) ahead of one free
// run, and proves with a counting backend that each Dispatch pass reads a
// number of rows bounded by its limit, reports at most limit races, and
// that repeated passes of one Store still reach and admit the free run.
func caseDiscoveryBounded(e *env) {
	s := store(e)
	const fullRuns = 300
	for i := range fullRuns {
		id := fmt.Sprintf("full-%03d", i)
		mkRun(e, s, id, workflow.Limits{ConcurrencyCap: 1}, nil)
		a := key(id, "n", "a")
		mkAct(e, s, a)
		prep(e, s, a, workflow.ReadOnly, ms(2))
		mkAct(e, s, key(id, "n", "b"))
		if i%10 == 0 {
			mkAct(e, s, key(id, "n", "c"))
			mkAct(e, s, key(id, "n", "d"))
		}
	}
	for _, limit := range []int{1, 10} {
		free := key(fmt.Sprintf("zz-free-%02d", limit), "n", "y")
		mkRun(e, s, free.RunID, workflow.Limits{}, nil)
		mkAct(e, s, free)
		cs := newCounting(e.B)
		st := e.newStore(cs)
		o := newOwner()
		reached := false
		for pass := 0; pass <= fullRuns+1 && !reached; pass++ {
			cs.reset()
			sum, err := st.Dispatch(e.Ctx, o, workflow.DispatchOptions{Limit: limit}, ms(100+int64(pass)))
			require.NoError(e.T, err)
			pages, pending, loaded, rows := cs.pages.Load(), cs.pending.Load(), cs.loaded.Load(), cs.rows.Load()
			what := fmt.Sprintf("limit %d pass %d: %d pages, %d index rows, %d loaded, %d rows; %d admitted, %d raced",
				limit, pass, pages, pending, loaded, rows, len(sum.Admitted), len(sum.Raced))
			require.LessOrEqual(e.T, pending, int64(4*limit), "index rows: %s", what)
			require.LessOrEqual(e.T, pages, int64(4*limit+2), "index pages: %s", what)
			require.LessOrEqual(e.T, loaded, pending+8, "runs inspected: %s", what)
			require.LessOrEqual(e.T, rows, 2*pending+16, "rows read: %s", what)
			require.LessOrEqual(e.T, len(sum.Raced), limit, "races reported: %s", what)
			require.LessOrEqual(e.T, len(sum.Admitted)+len(sum.Unsupported)+len(sum.Exhausted)+len(sum.Rejected), limit, what)
			for _, k := range sum.Raced {
				require.Equal(e.T, "b", k.ActivationID, "one activation per full run is reported: %s", what)
			}
			switch len(sum.Admitted) {
			case 0:
			case 1:
				require.Equal(e.T, identity(free, 1), sum.Admitted[0].Identity, what)
				reached = true
			default:
				require.Fail(e.T, "more than the free run admitted", what)
			}
		}
		require.True(e.T, reached, "limit %d: repeated passes reach the run behind %d full runs", limit, fullRuns)
		assert.Equal(e.T, 1, o.totalCalls())
	}
}

// caseDiscoveryResume: consecutive passes over all runs of one Store resume
// after the previous pass and wrap at the end of the index; a pass for one
// run and a new Store start at the beginning.
func caseDiscoveryResume(e *env) {
	s := store(e)
	a, b, c := key("a", "n", "x"), key("b", "n", "x"), key("c", "n", "x")
	for _, k := range []workflow.ActivationKey{a, b, c} {
		mkRun(e, s, k.RunID, workflow.Limits{}, nil)
		mkAct(e, s, k)
	}
	o := newOwner()
	o.unsupported["x"] = true // everything stays pending
	pass := func(st *workflow.Store, runID string, limit int, want ...workflow.ActivationKey) {
		e.T.Helper()
		sum := dispatch(e, st, o, workflow.DispatchOptions{RunID: runID, Limit: limit}, ms(10))
		assert.Equal(e.T, want, sum.Unsupported, "run %q limit %d", runID, limit)
	}
	pass(s, "", 2, a, b)
	pass(s, "c", 1, c)       // a pass for one run starts at its beginning
	pass(s, "", 2, c, a)     // resumes after b, wraps to a
	pass(s, "", 2, b, c)     // resumes after a
	pass(s, "", 10, a, b, c) // resumes after c: wraps, and sees everything
	pass(s, "", 10, a, b, c) // the previous pass saw the whole index: starts over
	pass(s, "", 1, a)
	pass(store(e), "", 2, a, b) // another Store starts at the beginning
	pass(s, "", 1, b)
	assert.Zero(e.T, o.totalCalls())
}
