package conformance

import (
	"encoding/json"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/workflow"
)

// stuckCases are the cases of the stuck-work query and the attempt
// timeout.
func stuckCases() []testCase {
	return []testCase{
		{Name: "stuck_attempts_pages_prepared_admitted_and_cancelling_work_by_age_within_its_limit", Run: caseStuckAttempts},
		{Name: "timeout_settles_read_only_attempt_failed_once_never_retried_and_records_late_observation", Run: caseTimeoutReadOnly},
		{Name: "timeout_settles_mutating_attempt_repair_required_and_a_late_success_settles_it", Run: caseTimeoutMutating},
		{Name: "timeout_of_an_activation_is_stored_bounded_and_wins_over_the_default", Run: caseTimeoutPerActivation},
	}
}

// stuckFixture builds, in run "r": a prepared attempt (a, prepared at
// 30), an admitted one (b, admitted at 20), a running one (c, admitted at
// 40), one prepared at 50 and admitted at 200 (d), a succeeded one (e);
// in run "x" a prepared attempt signalled cancelling (p, prepared at 80,
// cancellation requested at 100). It returns the identities a, b, c, d, p.
func stuckFixture(e *env, s *workflow.Store) (a, b, c, d, p string) {
	e.T.Helper()
	mkRun(e, s, "r", workflow.Limits{}, nil)
	mkRun(e, s, "x", workflow.Limits{}, nil)
	admitAt := func(k workflow.ActivationKey, prepared, admitted int64) string {
		pd := prep(e, s, k, workflow.ReadOnly, ms(prepared))
		if admitted > 0 {
			require.NoError(e.T, s.Engine().PersistReceipt(e.Ctx, workflow.OwnerReceipt{Key: pd.Key(), Receipt: json.RawMessage(`{"ok":1}`), Authority: nil}, ms(admitted)))
		}
		return pd.Identity
	}
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		mkAct(e, s, key("r", "n", id))
	}
	mkAct(e, s, key("x", "n", "p"))
	b = admitAt(key("r", "n", "b"), 15, 20)
	a = admitAt(key("r", "n", "a"), 30, 0)
	c = admitAt(key("r", "n", "c"), 35, 40)
	observe(e, s, c, obs(workflow.ObservedRunning), ms(45))
	d = admitAt(key("r", "n", "d"), 50, 200)
	done := admitAt(key("r", "n", "e"), 55, 60)
	observe(e, s, done, obs(workflow.ObservedSucceeded), ms(70))
	p = admitAt(key("x", "n", "p"), 80, 0)
	_, err := s.RequestCancellation(e.Ctx, "x", nil, ms(100))
	require.NoError(e.T, err)
	require.NoError(e.T, s.Engine().MarkCancellationSignalled(e.Ctx, p, ms(110)))
	return a, b, c, d, p
}

// caseStuckAttempts: StuckAttempts finds prepared attempts by their
// prepared time, admitted and running ones by their admitted time and
// cancelling ones without a receipt by their run's cancellation request;
// an attempt admitted recently, a settled one and a young one are not
// stuck; pages of one attempt read one attempt each and together return
// what one page returns; a one-run scan stays in its run; bad arguments are
// refused; nothing is written.
func caseStuckAttempts(e *env) {
	s := store(e)
	a, b, c, d, p := stuckFixture(e, s)
	before := digest(e, "r", "x")
	now := ms(250)

	type seen struct {
		ID    string
		Stage workflow.StuckStage
		Age   time.Duration
	}
	flat := func(page workflow.Page[workflow.StuckAttempt]) []seen {
		out := []seen{}
		for _, sa := range page.Items {
			assert.Equal(e.T, now.Add(-sa.Age), sa.Since, "%s: Age is now minus Since", sa.Attempt.Identity)
			out = append(out, seen{sa.Attempt.Identity, sa.Stage, sa.Age})
		}
		return out
	}
	whole, err := s.Engine().StuckAttempts(e.Ctx, workflow.StuckQuery{OlderThan: 100 * time.Millisecond}, now)
	require.NoError(e.T, err)
	assert.Empty(e.T, whole.Next, "the default limit covers the store: a finished scan has no cursor")
	want := []seen{
		{a, workflow.StuckPrepared, 220 * time.Millisecond},
		{b, workflow.StuckAdmitted, 230 * time.Millisecond},
		{c, workflow.StuckAdmitted, 210 * time.Millisecond},
		{p, workflow.StuckCancelling, 150 * time.Millisecond},
	}
	require.Equal(e.T, want, flat(whole), "prepared, then admitted, then running, then cancelling; d was admitted 50ms ago")

	var paged []seen
	var cur workflow.Cursor
	ctr := newCounting(e.B)
	cs := e.newStore(ctr)
	for pages := 0; ; pages++ {
		require.Less(e.T, pages, 20, "the scan must end")
		ctr.reset()
		page, err := cs.Engine().StuckAttempts(e.Ctx, workflow.StuckQuery{OlderThan: 100 * time.Millisecond, After: cur, Limit: 1}, now)
		require.NoError(e.T, err)
		assert.LessOrEqual(e.T, len(page.Items), 1, "a page returns at most Limit attempts")
		assert.LessOrEqual(e.T, ctr.rows.Load(), int64(2), "a page reads at most Limit attempts (and, for cancelling ones, their runs)")
		paged = append(paged, flat(page)...)
		if page.Next == "" {
			break
		}
		cur = page.Next
	}
	assert.Equal(e.T, want, paged, "pages of one return what one page returns")

	young, err := s.Engine().StuckAttempts(e.Ctx, workflow.StuckQuery{OlderThan: time.Millisecond}, now)
	require.NoError(e.T, err)
	ids := []string{}
	for _, sa := range young.Items {
		ids = append(ids, sa.Attempt.Identity)
	}
	assert.Equal(e.T, []string{a, b, d, c, p}, ids, "with a 1ms age every unmoved attempt is stuck (admitted ones before running ones), the settled one never")

	one, err := s.Engine().StuckAttempts(e.Ctx, workflow.StuckQuery{RunID: "x", OlderThan: 100 * time.Millisecond}, now)
	require.NoError(e.T, err)
	assert.Equal(e.T, want[3:], flat(one), "a one-run scan reads that run")
	none, err := s.Engine().StuckAttempts(e.Ctx, workflow.StuckQuery{OlderThan: time.Second}, now)
	require.NoError(e.T, err)
	assert.Empty(e.T, none.Items, "nothing is a second old")
	assert.Empty(e.T, none.Next)

	for _, q := range []workflow.StuckQuery{{}, {OlderThan: time.Microsecond}, {OlderThan: time.Second, Limit: -1},
		{OlderThan: time.Second, Limit: workflow.MaxPageLimit + 1}, {OlderThan: time.Second, RunID: "x\x00"},
		{OlderThan: time.Second, After: "garbage"}, {OlderThan: time.Second, After: workflow.EventCursor(1)}} {
		_, err := s.Engine().StuckAttempts(e.Ctx, q, now)
		requireIs(e.T, err, workflow.ErrInvalidInput, "scan %+v", q)
	}
	unchanged(e, before, "stuck scans", "r", "x")
}

// timeoutFixture adds activation (run,"n","a") of effect eff with a
// 3-attempt retry policy admitting owner_reported_retryable to a fresh
// run, prepares it at 5 and admits it at 10, returning its key and
// identity.
func timeoutFixture(e *env, s *workflow.Store, run string, eff workflow.Effect) (workflow.ActivationKey, string) {
	e.T.Helper()
	mkRun(e, s, run, workflow.Limits{}, nil)
	k := key(run, "n", "a")
	rec := workflow.IdempotentReplay
	if eff == workflow.Mutating {
		rec = workflow.ReceiptStatus
	}
	mkAct(e, s, k, withPolicy(retryPolicy(3, 10)), withEffect(eff, rec))
	pd := prep(e, s, k, eff, ms(5))
	require.NoError(e.T, s.Engine().PersistReceipt(e.Ctx, workflow.OwnerReceipt{Key: pd.Key(), Receipt: json.RawMessage(`{"ok":1}`), Authority: nil}, ms(10)))
	return k, pd.Identity
}

// timedOutIDs lists the identities a full TimedOutAttempts scan returns.
func timedOutIDs(e *env, s *workflow.Store, def time.Duration, now time.Time) []string {
	e.T.Helper()
	ids := []string{}
	var cur workflow.Cursor
	for pages := 0; ; pages++ {
		require.Less(e.T, pages, 20, "the scan must end")
		page, err := s.Engine().TimedOutAttempts(e.Ctx, workflow.TimeoutQuery{Default: def, After: cur, Limit: 1}, now)
		require.NoError(e.T, err)
		require.LessOrEqual(e.T, len(page.Items), 1)
		for _, t := range page.Items {
			ids = append(ids, t.Attempt.Identity)
			assert.Equal(e.T, t.Attempt.AdmittedAt.Add(t.Timeout), t.Deadline)
		}
		if page.Next == "" {
			return ids
		}
		cur = page.Next
	}
}

// caseTimeoutReadOnly: a read-only attempt not observed terminal by its
// admitted time plus the timeout is found by TimedOutAttempts and settled
// failed by SettleTimedOut, never a millisecond early, with no automatic
// retry even though its policy would retry an owner-reported failure; a
// settled attempt (by the timeout or otherwise) is never settled again; a
// later observation is recorded and changes nothing; an explicit retry
// starts the next attempt.
func caseTimeoutReadOnly(e *env) {
	s := store(e)
	k, id := timeoutFixture(e, s, "r", workflow.ReadOnly)
	opts := workflow.TimeoutOptions{Default: 100 * time.Millisecond}
	assert.Empty(e.T, timedOutIDs(e, s, opts.Default, ms(109)), "not due before admitted+timeout")
	assert.Equal(e.T, []string{id}, timedOutIDs(e, s, opts.Default, ms(110)))
	assert.Empty(e.T, timedOutIDs(e, s, 0, ms(10_000)), "no timeout, no deadline")

	before := digest(e, "r")
	_, err := s.Engine().SettleTimedOut(e.Ctx, id, opts, ms(109))
	requireIs(e.T, err, workflow.ErrIneligible, "a millisecond early")
	_, err = s.Engine().SettleTimedOut(e.Ctx, id, workflow.TimeoutOptions{}, ms(10_000))
	requireIs(e.T, err, workflow.ErrIneligible, "no timeout applies")
	for _, bad := range []time.Duration{-time.Millisecond, time.Microsecond, 1500 * time.Microsecond, workflow.MaxAttemptTimeout + time.Millisecond} {
		_, err = s.Engine().SettleTimedOut(e.Ctx, id, workflow.TimeoutOptions{Default: bad}, ms(10_000))
		requireIs(e.T, err, workflow.ErrInvalidInput, "default %v", bad)
		_, err = s.Engine().TimedOutAttempts(e.Ctx, workflow.TimeoutQuery{Default: bad}, ms(10_000))
		requireIs(e.T, err, workflow.ErrInvalidInput, "scan default %v", bad)
	}
	unchanged(e, before, "refused timeouts", "r")

	res, err := s.Engine().SettleTimedOut(e.Ctx, id, opts, ms(110))
	require.NoError(e.T, err)
	assert.Equal(e.T, workflow.AttemptFailed, res.Status)
	assert.Equal(e.T, 100*time.Millisecond, res.Timeout)
	assert.Equal(e.T, ms(110), res.Deadline)
	require.NotNil(e.T, res.NotScheduled, "a timeout schedules no automatic retry")
	assert.Nil(e.T, getSchedule(e, s, k), "no automatic retry of a timeout")
	assert.Equal(e.T, workflow.AttemptFailed, getAttempt(e, s, k, 1).Status)
	assert.Equal(e.T, workflow.ActivationFailed, getAct(e, s, k).Status)
	assert.Equal(e.T, workflow.RunFailed, getRun(e, s, "r").Status)
	types := eventTypes(e, s, "r")
	assert.Equal(e.T, 1, countType(types, "attempt_timed_out"))
	assert.Equal(e.T, 1, countType(types, "automatic_retry_not_scheduled"))
	assert.Zero(e.T, countType(types, "automatic_retry_scheduled"))

	before = digest(e, "r")
	_, err = s.Engine().SettleTimedOut(e.Ctx, id, opts, ms(500))
	requireIs(e.T, err, workflow.ErrIneligible, "a timed-out attempt is settled")
	unchanged(e, before, "second timeout", "r")

	// A late observation is recorded, and the attempt stays failed.
	late, err := s.ApplyObservation(e.Ctx, id, obs(workflow.ObservedSucceeded), ms(600))
	require.NoError(e.T, err, "a late observation never fails")
	assert.Equal(e.T, workflow.AttemptFailed, late.Status)
	assert.Equal(e.T, workflow.AttemptFailed, getAttempt(e, s, k, 1).Status)
	assert.Equal(e.T, []string{"attempt_observed_after_timeout"}, lastTypes(e, s, "r", 1))

	rq, err := s.RetryFailedNode(e.Ctx, k, 1, ms(700))
	require.NoError(e.T, err, "an explicit retry of a timed-out read-only attempt")
	assert.Equal(e.T, uint32(2), rq.NextAttempt)

	// An attempt of a run whose cancellation is requested settles by the
	// cancellation, never by a timeout.
	_, cid := timeoutFixture(e, s, "c", workflow.ReadOnly)
	_, err = s.RequestCancellation(e.Ctx, "c", nil, ms(20))
	require.NoError(e.T, err)
	before = digest(e, "c")
	_, err = s.Engine().SettleTimedOut(e.Ctx, cid, opts, ms(1000))
	requireIs(e.T, err, workflow.ErrIneligible, "a cancelling run's attempt does not time out")
	unchanged(e, before, "timeout in a cancelling run", "c")

	// An attempt settled otherwise is never timed out.
	_, other := timeoutFixture(e, s, "q", workflow.ReadOnly)
	observe(e, s, other, obs(workflow.ObservedSucceeded), ms(50))
	before = digest(e, "q")
	_, err = s.Engine().SettleTimedOut(e.Ctx, other, opts, ms(1000))
	requireIs(e.T, err, workflow.ErrIneligible, "a succeeded attempt does not time out")
	unchanged(e, before, "timeout of a settled attempt", "q")
}

// caseTimeoutMutating: a mutating attempt past its deadline becomes
// repair_required (its work may still run; nothing is retried); an
// observation that settles nothing is recorded and keeps it so; a late
// success is recorded and settles it as a late receipt would, completing
// the run.
func caseTimeoutMutating(e *env) {
	s := store(e)
	k, id := timeoutFixture(e, s, "r", workflow.Mutating)
	res, err := s.Engine().SettleTimedOut(e.Ctx, id, workflow.TimeoutOptions{Default: 50 * time.Millisecond}, ms(60))
	require.NoError(e.T, err)
	assert.Equal(e.T, workflow.AttemptRepairRequired, res.Status)
	assert.Nil(e.T, res.NotScheduled)
	assert.Equal(e.T, workflow.RunRepairRequired, getRun(e, s, "r").Status)
	assert.Equal(e.T, workflow.ActivationRunning, getAct(e, s, k).Status, "the activation waits for its repair")
	assert.Nil(e.T, getSchedule(e, s, k))
	assert.Equal(e.T, 1, countType(eventTypes(e, s, "r"), "attempt_timed_out"))

	r, err := s.ApplyObservation(e.Ctx, id, obs(workflow.ObservedRunning), ms(70))
	require.NoError(e.T, err)
	assert.Equal(e.T, workflow.AttemptRepairRequired, r.Status, "running settles nothing")
	assert.Equal(e.T, []string{"attempt_observed_after_timeout"}, lastTypes(e, s, "r", 1))

	r, err = s.ApplyObservation(e.Ctx, id, obs(workflow.ObservedSucceeded), ms(80))
	require.NoError(e.T, err)
	assert.Equal(e.T, workflow.AttemptSucceeded, r.Status, "a late success settles the attempt")
	assert.Equal(e.T, workflow.ActivationCompleted, getAct(e, s, k).Status)
	assert.Equal(e.T, workflow.RunCompleted, getRun(e, s, "r").Status)
	assert.Equal(e.T, 2, countType(eventTypes(e, s, "r"), "attempt_observed_after_timeout"))
}

// caseTimeoutPerActivation: an activation's own attempt timeout is stored
// and read back, refused outside its bounds (nothing written), and decides
// the deadline over the caller's default, which applies to activations
// without one.
func caseTimeoutPerActivation(e *env) {
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{}, nil)
	before := digest(e, "r")
	for _, bad := range []time.Duration{-time.Millisecond, time.Microsecond, 1500 * time.Microsecond, workflow.MaxAttemptTimeout + time.Millisecond} {
		_, err := s.AddActivation(e.Ctx, workflow.NewActivation{Key: key("r", "n", "bad"), Input: json.RawMessage(`{}`), AttemptTimeout: bad}, ms(1))
		requireIs(e.T, err, workflow.ErrInvalidInput, "attempt timeout %v", bad)
	}
	unchanged(e, before, "refused attempt timeouts", "r")

	own, dflt := key("r", "n", "own"), key("r", "n", "default")
	mkAct(e, s, own, func(na *workflow.NewActivation) { na.AttemptTimeout = 20 * time.Millisecond })
	mkAct(e, s, dflt)
	assert.Equal(e.T, 20*time.Millisecond, getAct(e, s, own).AttemptTimeout)
	assert.Zero(e.T, getAct(e, s, dflt).AttemptTimeout)
	_, err := s.AddActivation(e.Ctx, workflow.NewActivation{Key: own, Input: json.RawMessage(`{}`), AttemptTimeout: 30 * time.Millisecond}, ms(2))
	requireIs(e.T, err, workflow.ErrConflict, "the same activation with another timeout")
	var ids []string
	for _, k := range []workflow.ActivationKey{own, dflt} {
		pd := prep(e, s, k, workflow.ReadOnly, ms(5))
		require.NoError(e.T, s.Engine().PersistReceipt(e.Ctx, workflow.OwnerReceipt{Key: pd.Key(), Receipt: json.RawMessage(`{"ok":1}`), Authority: nil}, ms(10)))
		ids = append(ids, pd.Identity)
	}
	assert.Equal(e.T, []string{ids[0]}, timedOutIDs(e, s, 0, ms(30)), "its own timeout applies without a default")
	assert.Equal(e.T, []string{ids[0]}, timedOutIDs(e, s, time.Second, ms(30)), "and wins over a longer default")
	assert.ElementsMatch(e.T, ids, timedOutIDs(e, s, 15*time.Millisecond, ms(30)), "the default applies to the other")
	_, err = s.Engine().SettleTimedOut(e.Ctx, ids[1], workflow.TimeoutOptions{}, ms(1000))
	requireIs(e.T, err, workflow.ErrIneligible, "no timeout of its own and no default")
	res, err := s.Engine().SettleTimedOut(e.Ctx, ids[0], workflow.TimeoutOptions{Default: time.Hour}, ms(30))
	require.NoError(e.T, err)
	assert.Equal(e.T, 20*time.Millisecond, res.Timeout)
	assert.Equal(e.T, ms(30), res.Deadline)
}
