package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/event"
	"github.com/wfstore/wfstore/workflow"
)

// Retention: Prune deletes the events, attempts, leases and schedules of
// finished runs in bounded transactions, refuses anything that can still
// change, and leaves every other run, and every guarantee for live runs,
// as it was.
func pruneCases() []testCase {
	return []testCase{
		{Name: "prune_deletes_a_finished_runs_history_in_bounded_batches", Run: casePruneDeletes},
		{Name: "prune_dry_run_counts_and_writes_nothing", Run: casePruneDryRun},
		{Name: "prune_refuses_a_live_run_or_a_run_of_a_live_tree", Run: casePruneRefusesLive},
		{Name: "prune_cut_off_skips_runs_finished_later", Run: casePruneCutOff},
		{Name: "prune_keeps_every_guarantee_for_live_runs", Run: casePruneLiveRunsUnaffected},
		{Name: "prune_all_finished_pages_through_the_runs_of_finished_trees", Run: casePruneAllFinished},
	}
}

// deleteCounting records, for every committed Update, how many Delete
// operations it applied.
type deleteCounting struct {
	backend.Backend
	mu    sync.Mutex
	perTx []int
}

type deleteCountingTx struct {
	backend.Tx
	n *int
}

func (t deleteCountingTx) Apply(ctx context.Context, c backend.Changes) error {
	d := &c.Delete
	*t.n += len(d.Events) + len(d.Schedules) + len(d.Leases) + len(d.Attempts)
	return t.Tx.Apply(ctx, c)
}

func (c *deleteCounting) Update(ctx context.Context, fn func(backend.Tx) error) error {
	var n int
	err := c.Backend.Update(ctx, func(tx backend.Tx) error {
		n = 0
		return fn(deleteCountingTx{Tx: tx, n: &n})
	})
	if err == nil {
		c.mu.Lock()
		c.perTx = append(c.perTx, n)
		c.mu.Unlock()
	}
	return err
}

// finishedRun builds a completed run: activations a, b (claiming resources,
// so their attempts take leases) and c, each admitted and succeeded; a
// failed first with a retryable failure and was retried.
func finishedRun(e *env, s *workflow.Store, id string, o *owner, at int64) {
	e.T.Helper()
	mkRun(e, s, id, workflow.Limits{}, nil)
	a, b, c := key(id, "n", "a"), key(id, "n", "b"), key(id, "n", "c")
	mkAct(e, s, a, withClaims(claim("disk", workflow.LeaseWrite), claim("net", workflow.LeaseRead)),
		withPolicy(retryPolicy(3, 1)), withEffect(workflow.ReadOnly, workflow.IdempotentReplay))
	mkAct(e, s, b, withClaims(claim("cpu", workflow.LeaseRead)))
	mkAct(e, s, c)
	admitOnly(e, s, o, ms(at), identity(a, 1), identity(b, 1), identity(c, 1))
	require.NotNil(e.T, observe(e, s, identity(a, 1), obs(workflow.ObservedRetryableFailure), ms(at+1)).Schedule)
	_, err := s.Engine().ConsumeDueRetry(e.Ctx, a, ms(at+10))
	require.NoError(e.T, err)
	admitOnly(e, s, o, ms(at+11), identity(a, 2))
	for _, id := range []string{identity(a, 2), identity(b, 1), identity(c, 1)} {
		observe(e, s, id, obs(workflow.ObservedSucceeded), ms(at+12))
	}
	require.Equal(e.T, workflow.RunCompleted, getRun(e, s, id).Status)
}

// cancelledRun builds a cancelled tree, root id and one child run, and
// returns the child: a cancelled run that keeps a retry schedule. Both of
// the child's activations failed with a retryable failure; z's schedule was
// consumed (so the child runs again), then the tree was cancelled, which
// cancelled z and left x's schedule (tree cancellation deletes the
// schedules of failed runs only).
func cancelledRun(e *env, s *workflow.Store, id string, o *owner, at int64) string {
	e.T.Helper()
	mkRun(e, s, id, workflow.Limits{}, nil)
	child := spawn(e, s, id, "a", at)
	k, z := key(child, "n", "x"), key(child, "n", "z")
	pol, eff := withPolicy(retryPolicy(3, 100_000)), withEffect(workflow.ReadOnly, workflow.IdempotentReplay)
	mkAct(e, s, k, withClaims(claim("disk", workflow.LeaseWrite)), pol, eff)
	mkAct(e, s, z, withPolicy(retryPolicy(3, 1)), eff)
	admitOnly(e, s, o, ms(at+2), identity(k, 1), identity(z, 1))
	require.NotNil(e.T, observe(e, s, identity(k, 1), obs(workflow.ObservedRetryableFailure), ms(at+3)).Schedule)
	require.NotNil(e.T, observe(e, s, identity(z, 1), obs(workflow.ObservedRetryableFailure), ms(at+3)).Schedule)
	_, err := s.Engine().ConsumeDueRetry(e.Ctx, z, ms(at+4))
	require.NoError(e.T, err)
	require.Equal(e.T, workflow.RunRunning, getRun(e, s, child).Status)
	_, err = s.RequestTreeCancellation(e.Ctx, id, nil, ms(at+4))
	require.NoError(e.T, err)
	observe(e, s, parentOf(id, "a"), obs(workflow.ObservedCancelled), ms(at+5))
	require.Equal(e.T, workflow.RunCancelled, getRun(e, s, child).Status)
	require.Equal(e.T, workflow.RunCancelled, getRun(e, s, id).Status)
	require.NotNil(e.T, getSchedule(e, s, k), "the cancelled run keeps its schedule")
	return child
}

// runRecords counts a run's events, attempts, leases (released or not, by
// their activations' claims) and schedules straight from the backend.
func runRecords(e *env, runID string) workflow.PruneCounts {
	e.T.Helper()
	var c workflow.PruneCounts
	e.view(e.B, func(r backend.ReadTx) error {
		evs, err := r.Events(e.Ctx, backend.EventQuery{RunID: runID, Limit: 100000})
		if err != nil {
			return err
		}
		for _, ev := range evs {
			if ev.Type != string(event.RunPruned) {
				c.Events++
			}
		}
		atts, err := r.Attempts(e.Ctx, backend.AttemptQuery{RunID: runID, Limit: 100000})
		if err != nil {
			return err
		}
		c.Attempts = len(atts)
		acts, err := r.Activations(e.Ctx, backend.ActivationQuery{RunID: runID, Limit: 100000})
		if err != nil {
			return err
		}
		var lk []backend.LeaseKey
		var sk []backend.ActivationKey
		claims := map[backend.ActivationKey][]backend.ResourceClaim{}
		for _, a := range acts {
			sk = append(sk, a.Key)
			claims[a.Key] = a.Claims
		}
		for _, a := range atts {
			for _, cl := range claims[a.Key.ActivationKey] {
				lk = append(lk, backend.LeaseKey{AttemptKey: a.Key, Resource: cl.Resource, Mode: cl.Mode})
			}
		}
		f, err := r.Load(e.Ctx, backend.Lookup{Leases: lk, Schedules: sk})
		if err != nil {
			return err
		}
		c.Leases, c.Schedules = len(f.Leases), len(f.Schedules)
		return nil
	})
	return c
}

// activationsOf renders the run's activations and its link: what a prune
// keeps.
func activationsOf(e *env, runID string) string {
	e.T.Helper()
	out := ""
	e.view(e.B, func(r backend.ReadTx) error {
		acts, err := r.Activations(e.Ctx, backend.ActivationQuery{RunID: runID, Limit: 100000})
		if err != nil {
			return err
		}
		for _, a := range acts {
			out += render(a) + "\n"
		}
		return nil
	})
	return out
}

func casePruneDeletes(e *env) {
	s := store(e)
	o := newOwner()
	finishedRun(e, s, "done", o, 10)
	gone := cancelledRun(e, s, "tree", o, 100)
	finishedRun(e, s, "other", o, 200)
	mkRun(e, s, "live", workflow.Limits{}, nil)
	mkAct(e, s, key("live", "n", "p"))

	want := runRecords(e, "done")
	wantGone := runRecords(e, gone)
	require.Equal(e.T, 1, wantGone.Schedules, "the cancelled run has a schedule to prune")
	require.Equal(e.T, 4, want.Attempts)
	require.Equal(e.T, 5, want.Leases, "a#1, a#2 hold two leases each, b#1 one")
	keptDone, keptGone := activationsOf(e, "done"), activationsOf(e, gone)
	runDone, runGone := rawRun(e, "done"), rawRun(e, gone)
	others := digest(e, "other", "live")

	cb := &deleteCounting{Backend: e.B}
	ps := e.newStore(cb)
	const batch = 3
	rep, err := ps.Prune(e.Ctx, workflow.PruneOptions{Runs: []string{"done", gone}, BatchSize: batch}, ms(1000))
	require.NoError(e.T, err)
	require.Len(e.T, rep.Runs, 2)
	assert.False(e.T, rep.DryRun)
	assert.Equal(e.T, "done", rep.Runs[0].RunID)
	assert.Equal(e.T, want, rep.Runs[0].Deleted, "the report counts what the run held")
	assert.Equal(e.T, wantGone, rep.Runs[1].Deleted)
	assert.Equal(e.T, workflow.RunCompleted, rep.Runs[0].Status)
	assert.Equal(e.T, workflow.RunCancelled, rep.Runs[1].Status)

	// Bounded: no transaction deleted more than the batch (an attempt goes
	// with its leases, at most 3 records here), and it took as many
	// transactions as that implies.
	total := 0
	for i, n := range cb.perTx {
		assert.LessOrEqual(e.T, n, batch, "transaction %d deleted %d records", i, n)
		total += n
	}
	// Each prune took several transactions, so each also deleted its
	// run_prune_started marker.
	assert.Equal(e.T, want.Total()+wantGone.Total()+2, total, "every deleted record is counted once")
	assert.GreaterOrEqual(e.T, len(cb.perTx), (want.Total()+batch-1)/batch+(wantGone.Total()+batch-1)/batch)
	assert.Equal(e.T, len(cb.perTx), rep.Runs[0].Transactions+rep.Runs[1].Transactions)

	for _, id := range []string{"done", gone} {
		assert.Equal(e.T, workflow.PruneCounts{}, runRecords(e, id), "run %s holds no events, attempts, leases or schedules", id)
		assert.Equal(e.T, []string{string(event.RunPruned)}, eventTypes(e, s, id), "the run_pruned event is the only one left")
		assert.Empty(e.T, attemptsOf(e, s, id))
		assert.Empty(e.T, activeLeases(e, s, id))
		evsPage, err := s.Events(e.Ctx, workflow.EventQuery{RunID: id, Limit: 10})
		require.NoError(e.T, err)
		evs := evsPage.Items
		require.Len(e.T, evs, 1)
		assert.Equal(e.T, rawRun(e, id).LastEventSeq, evs[0].Seq, "the run's event sequence ends at the marker")
	}
	assert.JSONEq(e.T, fmt.Sprintf(`{"run_id":"done","deleted":{"events":%d,"attempts":%d,"leases":%d,"schedules":%d}}`,
		want.Events, want.Attempts, want.Leases, want.Schedules), payloadsOf(e, s, "done", string(event.RunPruned))[0])

	// The run and its activations are kept; the run only gained the marker.
	after := rawRun(e, "done")
	runDone.LastEventSeq += 2
	assert.Equal(e.T, runDone, after, "the run record is kept (its event sequence advanced by the run_prune_started and run_pruned markers)")
	after = rawRun(e, gone)
	runGone.LastEventSeq += 2
	assert.Equal(e.T, runGone, after)
	assert.Equal(e.T, keptDone, activationsOf(e, "done"))
	assert.Equal(e.T, keptGone, activationsOf(e, gone))
	unchanged(e, others, "pruning other runs", "other", "live")

	// A pruned run answers: its attempts are gone, it takes no work.
	_, err = s.GetAttempt(e.Ctx, identity(key("done", "n", "a"), 1))
	requireIs(e.T, err, workflow.ErrNotFound, "a pruned attempt")
	_, err = s.ApplyObservation(e.Ctx, identity(key("done", "n", "a"), 2), obs(workflow.ObservedSucceeded), ms(1001))
	requireIs(e.T, err, workflow.ErrNotFound, "an observation of a pruned attempt")
	_, err = s.AddActivation(e.Ctx, workflow.NewActivation{Key: key("done", "n", "late"), Input: json.RawMessage(`{}`)}, ms(1002))
	requireIs(e.T, err, workflow.ErrIneligible, "a pruned run takes no work")
	_, err = s.RetryFailedNode(e.Ctx, key(gone, "n", "x"), 1, ms(1003))
	require.Error(e.T, err, "a pruned cancelled run cannot be retried")
	_, err = s.Engine().ConsumeDueRetry(e.Ctx, key(gone, "n", "x"), ms(200_000))
	require.Error(e.T, err, "a pruned schedule cannot be consumed")
	admitOnly(e, s, o, ms(1004), identity(key("live", "n", "p"), 1))

	// Pruning again writes nothing.
	before := digest(e, "done", gone, "other", "live")
	rep, err = s.Prune(e.Ctx, workflow.PruneOptions{Runs: []string{"done"}}, ms(2000))
	require.NoError(e.T, err)
	assert.True(e.T, rep.Runs[0].AlreadyPruned)
	assert.Equal(e.T, workflow.PruneCounts{}, rep.Runs[0].Deleted)
	assert.Equal(e.T, 0, rep.Runs[0].Transactions)
	unchanged(e, before, "a second prune", "done", gone, "other", "live")

	s = e.newStore(e.Reopen())
	assert.Equal(e.T, []string{string(event.RunPruned)}, eventTypes(e, s, "done"), "durably")
	requireVerified(e, s, "after pruning")
}

// requireVerified fails unless Verify finds no violation in the store.
func requireVerified(e *env, s *workflow.Store, when string) {
	e.T.Helper()
	vr, err := s.Verify(e.Ctx, workflow.VerifyOptions{})
	require.NoError(e.T, err)
	assert.True(e.T, vr.OK(), "verify %s: %+v", when, vr.Violations)
}

func casePruneDryRun(e *env) {
	s := store(e)
	o := newOwner()
	finishedRun(e, s, "done", o, 10)
	gone := cancelledRun(e, s, "tree", o, 100)
	want, wantGone := runRecords(e, "done"), runRecords(e, gone)
	before := digest(e, "done", gone)

	cb := &deleteCounting{Backend: e.B}
	rep, err := e.newStore(cb).Prune(e.Ctx, workflow.PruneOptions{Runs: []string{"done", gone}, DryRun: true, BatchSize: 2}, ms(1000))
	require.NoError(e.T, err)
	assert.True(e.T, rep.DryRun)
	require.Len(e.T, rep.Runs, 2)
	assert.Equal(e.T, want, rep.Runs[0].Deleted, "the dry run counts what a prune deletes")
	assert.Equal(e.T, wantGone, rep.Runs[1].Deleted)
	assert.Equal(e.T, 0, rep.Runs[0].Transactions+rep.Runs[1].Transactions)
	assert.Empty(e.T, cb.perTx, "a dry run opens no write transaction")
	unchanged(e, before, "a dry run", "done", gone)

	// The real prune deletes exactly what the dry run reported.
	real, err := s.Prune(e.Ctx, workflow.PruneOptions{Runs: []string{"done", gone}}, ms(1001))
	require.NoError(e.T, err)
	assert.Equal(e.T, rep.Runs[0].Deleted, real.Runs[0].Deleted)
	assert.Equal(e.T, rep.Runs[1].Deleted, real.Runs[1].Deleted)

	// A dry run of a pruned run reports it so.
	dry, err := s.Prune(e.Ctx, workflow.PruneOptions{Runs: []string{"done"}, DryRun: true}, ms(1002))
	require.NoError(e.T, err)
	assert.True(e.T, dry.Runs[0].AlreadyPruned)
	assert.Equal(e.T, workflow.PruneCounts{}, dry.Runs[0].Deleted)
}

func casePruneRefusesLive(e *env) {
	s := store(e)
	o := newOwner()
	finishedRun(e, s, "done", o, 10)
	// A running run, a paused run and a failed run.
	mkRun(e, s, "live", workflow.Limits{}, nil)
	mkAct(e, s, key("live", "n", "p"))
	mkRun(e, s, "paused", workflow.Limits{}, nil)
	require.NoError(e.T, s.PauseRun(e.Ctx, "paused", nil, ms(5)))
	mkRun(e, s, "failed", workflow.Limits{}, nil)
	fk := key("failed", "n", "x")
	mkAct(e, s, fk, withPolicy(retryPolicy(3, 100)), withEffect(workflow.ReadOnly, workflow.IdempotentReplay))
	admitOnly(e, s, o, ms(20), identity(fk, 1), identity(key("live", "n", "p"), 1))
	require.NotNil(e.T, observe(e, s, identity(fk, 1), obs(workflow.ObservedRetryableFailure), ms(21)).Schedule)
	require.Equal(e.T, workflow.RunFailed, getRun(e, s, "failed").Status)
	// A completed child run whose root is still running.
	mkRun(e, s, "root", workflow.Limits{}, nil)
	child := spawn(e, s, "root", "a", 30)
	ck := key(child, "n", "c")
	mkAct(e, s, ck)
	admitOnly(e, s, o, ms(32), identity(ck, 1))
	observe(e, s, identity(ck, 1), obs(workflow.ObservedSucceeded), ms(33))
	require.Equal(e.T, workflow.RunCompleted, getRun(e, s, child).Status)
	require.Equal(e.T, workflow.RunRunning, getRun(e, s, "root").Status)

	all := []string{"done", "live", "paused", "failed", "root", child}
	before := digest(e, all...)
	for _, c := range []struct {
		what string
		runs []string
	}{
		{"a running run", []string{"live"}},
		{"a paused run", []string{"paused"}},
		{"a failed run with a retry schedule (it can still be retried)", []string{"failed"}},
		{"a completed child of a running root", []string{child}},
		{"a running root", []string{"root"}},
		{"a finished run named with a live one", []string{"done", "live"}},
	} {
		for _, dry := range []bool{false, true} {
			_, err := s.Prune(e.Ctx, workflow.PruneOptions{Runs: c.runs, DryRun: dry}, ms(100))
			requireIs(e.T, err, workflow.ErrIneligible, "%s (dry run %v)", c.what, dry)
		}
	}
	_, err := s.Prune(e.Ctx, workflow.PruneOptions{Runs: []string{"done", "missing"}}, ms(100))
	requireIs(e.T, err, workflow.ErrNotFound, "a missing run")
	for _, bad := range []struct {
		what string
		opts workflow.PruneOptions
		now  time.Time
	}{
		{"no runs named", workflow.PruneOptions{}, ms(100)},
		{"a run named twice", workflow.PruneOptions{Runs: []string{"done", "done"}}, ms(100)},
		{"an invalid run id", workflow.PruneOptions{Runs: []string{""}}, ms(100)},
		{"a negative batch size", workflow.PruneOptions{Runs: []string{"done"}, BatchSize: -1}, ms(100)},
		{"a batch size above the maximum", workflow.PruneOptions{Runs: []string{"done"}, BatchSize: workflow.MaxPageLimit + 1}, ms(100)},
		{"a zero now", workflow.PruneOptions{Runs: []string{"done"}}, time.Time{}},
		{"a cut-off at the epoch", workflow.PruneOptions{Runs: []string{"done"}, FinishedBefore: time.UnixMilli(0)}, ms(100)},
	} {
		_, err := s.Prune(e.Ctx, bad.opts, bad.now)
		requireIs(e.T, err, workflow.ErrInvalidInput, bad.what)
	}
	unchanged(e, before, "refused prunes", all...)

	// Once the whole tree has finished, the child can be pruned.
	observe(e, s, parentOf("root", "a"), obs(workflow.ObservedSucceeded), ms(40))
	require.Equal(e.T, workflow.RunCompleted, getRun(e, s, "root").Status)
	_, err = s.Prune(e.Ctx, workflow.PruneOptions{Runs: []string{child}}, ms(41))
	require.NoError(e.T, err)
	assert.Equal(e.T, []string{string(event.RunPruned)}, eventTypes(e, s, child))
}

func casePruneCutOff(e *env) {
	s := store(e)
	o := newOwner()
	finishedRun(e, s, "early", o, 10)
	finishedRun(e, s, "late", o, 500)
	late := getRun(e, s, "late")
	before := digest(e, "late")
	rep, err := s.Prune(e.Ctx, workflow.PruneOptions{Runs: []string{"early", "late"}, FinishedBefore: time.UnixMilli(msOf(late.UpdatedAt))}, ms(1000))
	require.NoError(e.T, err)
	require.Len(e.T, rep.Runs, 2)
	assert.Empty(e.T, rep.Runs[0].Skipped)
	assert.NotEmpty(e.T, rep.Runs[1].Skipped, "a run finished at the cut-off is kept")
	assert.Equal(e.T, workflow.PruneCounts{}, rep.Runs[1].Deleted)
	assert.Equal(e.T, []string{string(event.RunPruned)}, eventTypes(e, s, "early"))
	unchanged(e, before, "a run finished at the cut-off", "late")

	rep, err = s.Prune(e.Ctx, workflow.PruneOptions{Runs: []string{"late"}, FinishedBefore: time.UnixMilli(msOf(late.UpdatedAt) + 1)}, ms(1001))
	require.NoError(e.T, err)
	assert.Empty(e.T, rep.Runs[0].Skipped, "one millisecond later it is pruned")
	assert.Equal(e.T, []string{string(event.RunPruned)}, eventTypes(e, s, "late"))
}

func casePruneLiveRunsUnaffected(e *env) {
	s := store(e)
	o := newOwner()
	finishedRun(e, s, "done", o, 10)
	// Live runs: one with a failed attempt to retry, one to cancel, one
	// whose activation two dispatchers race for, sharing resource names
	// with the pruned run.
	mkRun(e, s, "retry", workflow.Limits{}, nil)
	rk := key("retry", "n", "a")
	mkAct(e, s, rk, withClaims(claim("disk", workflow.LeaseWrite)), withPolicy(retryPolicy(3, 5)),
		withEffect(workflow.ReadOnly, workflow.IdempotentReplay))
	mkRun(e, s, "cancel", workflow.Limits{}, nil)
	ck := key("cancel", "n", "a")
	mkAct(e, s, ck)
	admitOnly(e, s, o, ms(100), identity(ck, 1), identity(rk, 1))
	require.NotNil(e.T, observe(e, s, identity(rk, 1), obs(workflow.ObservedRetryableFailure), ms(101)).Schedule)
	before := digest(e, "retry", "cancel")

	_, err := s.Prune(e.Ctx, workflow.PruneOptions{Runs: []string{"done"}, BatchSize: 1}, ms(102))
	require.NoError(e.T, err)
	unchanged(e, before, "pruning a finished run", "retry", "cancel")

	// Retry: the schedule is consumed and the new attempt admitted once.
	_, err = s.Engine().ConsumeDueRetry(e.Ctx, rk, ms(110))
	require.NoError(e.T, err)
	admitOnly(e, s, o, ms(111), identity(rk, 2))
	observe(e, s, identity(rk, 2), obs(workflow.ObservedSucceeded), ms(112))
	assert.Equal(e.T, workflow.RunCompleted, getRun(e, s, "retry").Status)

	// Cancellation: requested, the active attempt settles, the run finalises.
	_, err = s.RequestCancellation(e.Ctx, "cancel", nil, ms(120))
	require.NoError(e.T, err)
	observe(e, s, identity(ck, 1), obs(workflow.ObservedCancelled), ms(121))
	assert.Equal(e.T, workflow.RunCancelled, getRun(e, s, "cancel").Status)

	// Admission stays exactly once under a racing dispatch, on a run whose
	// resources and node names match the pruned run's.
	mkRun(e, s, "race", workflow.Limits{}, nil)
	var keys []workflow.ActivationKey
	for _, a := range []string{"a", "b", "c", "d"} {
		k := key("race", "n", a)
		keys = append(keys, k)
		mkAct(e, s, k, withClaims(claim("disk-"+a, workflow.LeaseWrite)))
	}
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := e.newStore(e.B).Dispatch(e.Ctx, o, workflow.DispatchOptions{Limit: workflow.MaxPageLimit}, ms(130))
			assert.NoError(e.T, err)
		}()
	}
	wg.Wait()
	for _, k := range keys {
		assert.Equal(e.T, 1, o.callCount(identity(k, 1)), "%v is dispatched exactly once", k)
		assert.Equal(e.T, uint32(1), getAct(e, s, k).LastAttempt)
	}

	// The finished retry and cancel runs prune in turn; the race run,
	// still running, is refused.
	_, err = s.Prune(e.Ctx, workflow.PruneOptions{Runs: []string{"retry", "cancel"}}, ms(140))
	require.NoError(e.T, err)
	_, err = s.Prune(e.Ctx, workflow.PruneOptions{Runs: []string{"race"}}, ms(140))
	requireIs(e.T, err, workflow.ErrIneligible)
	requireVerified(e, s, "after pruning beside live runs")
}

// casePruneAllFinished: with AllFinished, Prune chooses the runs itself, a
// bounded page at a time: completed and cancelled runs of finished trees
// that finished before the cut-off, and nothing else.
func casePruneAllFinished(e *env) {
	s := store(e)
	o := newOwner()
	finishedRun(e, s, "a-done", o, 10)
	child := cancelledRun(e, s, "b-tree", o, 30)
	finishedRun(e, s, "c-done", o, 60)
	finishedRun(e, s, "z-late", o, 500)
	mkRun(e, s, "m-live", workflow.Limits{}, nil)
	mkAct(e, s, key("m-live", "n", "a"))
	keep := []string{"z-late", "m-live"}
	before := digest(e, keep...)

	_, err := s.Prune(e.Ctx, workflow.PruneOptions{AllFinished: true}, ms(1000))
	requireIs(e.T, err, workflow.ErrInvalidInput, "a cut-off is required")
	_, err = s.Prune(e.Ctx, workflow.PruneOptions{AllFinished: true, Runs: []string{"a-done"}, FinishedBefore: ms(400)}, ms(1000))
	requireIs(e.T, err, workflow.ErrInvalidInput, "named runs and AllFinished")

	var pruned []string
	opts := workflow.PruneOptions{AllFinished: true, FinishedBefore: ms(400), Limit: 1}
	for calls := 0; ; calls++ {
		require.Less(e.T, calls, 20, "the pages end")
		rep, err := s.Prune(e.Ctx, opts, ms(1000))
		require.NoError(e.T, err)
		assert.LessOrEqual(e.T, len(rep.Runs), 1, "at most Limit runs a call")
		for _, r := range rep.Runs {
			pruned = append(pruned, r.RunID)
		}
		if rep.Next == "" {
			break
		}
		opts.After = rep.Next
	}
	sort.Strings(pruned)
	want := []string{"a-done", "b-tree", "c-done", child}
	sort.Strings(want)
	assert.Equal(e.T, want, pruned, "every finished run before the cut-off, each once")
	unchanged(e, before, "runs finished later or still running", keep...)
	for _, id := range want {
		assert.Equal(e.T, []string{string(event.RunPruned)}, eventTypes(e, s, id), "%s pruned", id)
	}
	requireVerified(e, s, "after pruning every finished run")
}
