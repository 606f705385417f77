package conformance

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/event"
	"github.com/wfstore/wfstore/workflow"
)

// Fan-out as a step and fan-in by the store: a Succeeded observation adds
// a fan-out group with the completion that causes it, and a group created
// with FanIn has its controller settled by the store, in the transaction
// that settles the deciding member.

func faninCases() []testCase {
	return []testCase{
		{Name: "fanin_fanout_successor_is_atomic_with_its_cause", Run: caseFanInSuccessorAtomic},
		{Name: "fanin_fanout_successor_of_a_receipt_pass_observation", Run: caseFanInSuccessorReceiptPass},
		{Name: "fanin_wait_all_settles_the_controller_once_with_its_last_member_under_racing_settlements", Run: caseFanInWaitAllRace},
		{Name: "fanin_wait_all_fails_the_controller_once_every_member_settled_with_one_failed", Run: caseFanInWaitAllFailedRace},
		{Name: "fanin_fail_fast_fails_the_controller_with_the_first_terminal_failure_under_racing_settlements", Run: caseFanInFailFastRace},
		{Name: "fanin_waits_for_a_member_whose_automatic_retry_is_pending", Run: caseFanInRetryPending},
		{Name: "fanin_member_outcomes_page_by_key", Run: caseFanInMemberPages},
		{Name: "fanin_owner_settled_groups_are_unchanged", Run: caseFanInOwnerSettled},
		{Name: "fanin_retirement_and_run_cancellation_settle_a_waiting_controller", Run: caseFanInRetiredOrCancelled},
	}
}

// shipFanOut is the fan-out successor the cases add: controller
// run/ship/s with n members at most max at a time.
func shipFanOut(run string, n int, max int64, pol workflow.FanOutFailure) (workflow.NewActivation, workflow.NewFanOut) {
	c := key(run, "ship", "s")
	return workflow.NewActivation{Key: c, Input: json.RawMessage(`{"order":1}`)},
		workflow.NewFanOut{Controller: c, Members: memberInputs(n), MaxConcurrency: max, OnFailure: pol, FanIn: true}
}

// fanInRun creates run with a step "reserve", admits it, and observes it
// succeeded with a fan-in group of n members (max at a time) as its
// successor, at ms(20). It returns the controller and member keys.
func fanInRun(e *env, s *workflow.Store, run string, n int, max int64, pol workflow.FanOutFailure) (workflow.ActivationKey, []workflow.ActivationKey) {
	e.T.Helper()
	id := admittedIn(e, s, run, workflow.ReadOnly, nil, "reserve")[0]
	na, nf := shipFanOut(run, n, max, pol)
	o := obs(workflow.ObservedSucceeded)
	o.Successors, o.FanOuts = []workflow.NewActivation{na}, []workflow.NewFanOut{nf}
	observe(e, s, id, o, ms(20))
	m := make([]workflow.ActivationKey, n)
	for i := range m {
		m[i] = workflow.MemberKey(nf.Controller, int64(i))
	}
	return nf.Controller, m
}

// eventsOf returns the run's events.
func eventsOf(e *env, s *workflow.Store, run string) []event.Event {
	e.T.Helper()
	evsPage, err := s.Events(e.Ctx, workflow.EventQuery{RunID: run, Limit: workflow.MaxPageLimit})
	require.NoError(e.T, err)
	evs := evsPage.Items
	return evs
}

func fanInSettled(e *env, s *workflow.Store, run string) []event.FanInSettledPayload {
	e.T.Helper()
	var out []event.FanInSettledPayload
	for _, p := range payloadsOf(e, s, run, "fan_in_settled") {
		var v event.FanInSettledPayload
		require.NoError(e.T, json.Unmarshal([]byte(p), &v))
		out = append(out, v)
	}
	return out
}

func caseFanInSuccessorAtomic(e *env) {
	s := store(e)
	ids := admittedIn(e, s, "r", workflow.ReadOnly, nil, "reserve", "busy")
	reserve := ids[0]
	busy := key("r", "n", "busy")
	before := digest(e, "r")

	na, nf := shipFanOut("r", 3, 2, "")
	for name, o := range map[string]workflow.Observation{
		"controller not a successor": {Kind: workflow.ObservedSucceeded, Output: json.RawMessage(`{}`), FanOuts: []workflow.NewFanOut{nf}},
		"fan-out on a failure":       {Kind: workflow.ObservedFailed, Successors: []workflow.NewActivation{na}, FanOuts: []workflow.NewFanOut{nf}},
		"two groups, one controller": {Kind: workflow.ObservedSucceeded, Output: json.RawMessage(`{}`), Successors: []workflow.NewActivation{na}, FanOuts: []workflow.NewFanOut{nf, nf}},
		"too many members in all": {Kind: workflow.ObservedSucceeded, Output: json.RawMessage(`{}`),
			Successors: []workflow.NewActivation{na, {Key: key("r", "other", "o"), Input: json.RawMessage(`{}`)}},
			FanOuts: []workflow.NewFanOut{
				{Controller: na.Key, Members: memberInputs(workflow.MaxPageLimit), MaxConcurrency: 1},
				{Controller: key("r", "other", "o"), Members: memberInputs(1), MaxConcurrency: 1},
			}},
	} {
		_, err := s.ApplyObservation(e.Ctx, reserve, o, ms(15))
		requireIs(e.T, err, workflow.ErrInvalidInput, name)
		unchanged(e, before, name, "r")
	}
	// A group that cannot be added fails the whole observation: the
	// fan-in controller here already has an attempt (it is the running
	// "busy" activation), found only once its members are decided.
	o := obs(workflow.ObservedSucceeded)
	o.Successors = []workflow.NewActivation{{Key: busy, Input: json.RawMessage(`{"n":"busy"}`)}}
	o.FanOuts = []workflow.NewFanOut{{Controller: busy, Members: memberInputs(3), MaxConcurrency: 2, FanIn: true}}
	_, err := s.ApplyObservation(e.Ctx, reserve, o, ms(16))
	requireIs(e.T, err, workflow.ErrIneligible, "fan-in controller with an attempt")
	unchanged(e, before, "a failed observation creates nothing", "r")

	o = obs(workflow.ObservedSucceeded)
	o.Successors, o.FanOuts = []workflow.NewActivation{na}, []workflow.NewFanOut{nf}
	observe(e, s, reserve, o, ms(20))

	s = e.newStore(e.Reopen())
	assert.Equal(e.T, stDone, getAct(e, s, key("r", "n", "reserve")).Status)
	ctl := getAct(e, s, nf.Controller)
	assert.Equal(e.T, stWait, ctl.Status, "the fan-in controller waits for its members")
	assert.False(e.T, ctl.Admissible)
	m := []workflow.ActivationKey{workflow.MemberKey(nf.Controller, 0), workflow.MemberKey(nf.Controller, 1), workflow.MemberKey(nf.Controller, 2)}
	assert.Equal(e.T, []workflow.ActivationStatus{stPend, stPend, stWait}, memberStatuses(e, s, m))
	g := getGroup(e, nf.Controller)
	assert.True(e.T, g.FanIn)
	assert.Equal(e.T, int64(3), g.Size)
	var together []string
	for _, ev := range eventsOf(e, s, "r") {
		if ev.CreatedAt.Equal(ms(20)) {
			together = append(together, string(ev.Type))
		}
	}
	assert.Equal(e.T, []string{"attempt_succeeded", "activation_created", "activation_created", "activation_created", "activation_waiting", "fan_in_waiting"}, together,
		"the completion, the controller, its members and its waiting are one transaction's events")

	o2 := newOwner()
	o2.unsupported["busy"] = true
	admitOnly(e, s, o2, ms(30), identity(m[0], 1), identity(m[1], 1))
	assert.Zero(e.T, o2.callCount(identity(nf.Controller, 1)), "a fan-in controller is never dispatched")
}

func caseFanInSuccessorReceiptPass(e *env) {
	s := store(e)
	id := admittedIn(e, s, "r", workflow.ReadOnly, nil, "reserve")[0]
	na, nf := shipFanOut("r", 2, 2, workflow.FailFast)
	o := obs(workflow.ObservedSucceeded)
	o.Successors, o.FanOuts = []workflow.NewActivation{na}, []workflow.NewFanOut{nf}
	ob := newObserver()
	ob.answer[id] = o
	sum := receiptPass(e, s, ob, workflow.ReceiptPassOptions{RunID: "r"}, 20)
	require.Len(e.T, sum.Attempts, 1)
	require.NoError(e.T, sum.Attempts[0].Err)
	s = e.newStore(e.Reopen())
	assert.Equal(e.T, stWait, getAct(e, s, nf.Controller).Status)
	assert.Equal(e.T, []workflow.ActivationStatus{stPend, stPend},
		memberStatuses(e, s, []workflow.ActivationKey{workflow.MemberKey(nf.Controller, 0), workflow.MemberKey(nf.Controller, 1)}))
	g := getGroup(e, nf.Controller)
	assert.True(e.T, g.FanIn)
	assert.True(e.T, g.FailFast)
}

// raceObserve applies one observation per member concurrently, member i at
// ms(base+i), and returns when all are applied.
func raceObserve(e *env, s *workflow.Store, m []workflow.ActivationKey, base int64, kind func(i int) workflow.ObservationKind) {
	e.T.Helper()
	var wg sync.WaitGroup
	errs := make([]error, len(m))
	for i, k := range m {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := obs(kind(i))
			if kind(i) == workflow.ObservedSucceeded {
				o.Output = json.RawMessage(fmt.Sprintf(`{"shipped":%d}`, i))
			}
			_, errs[i] = s.ApplyObservation(e.Ctx, identity(k, 1), o, ms(base+int64(i)))
		}()
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(e.T, err, "member %d", i)
	}
}

// settledWith requires one fan_in_settled event in the run, appended by
// the transaction that applied the observation of type typ appended last:
// it follows that event and bears its time.
func settledWith(e *env, s *workflow.Store, run, typ string) event.Event {
	e.T.Helper()
	evs := eventsOf(e, s, run)
	var last, settled *event.Event
	n := 0
	for i := range evs {
		switch string(evs[i].Type) {
		case typ:
			if settled == nil {
				last = &evs[i]
			}
		case "fan_in_settled":
			settled = &evs[i]
			n++
		}
	}
	require.Equal(e.T, 1, n, "the controller settles exactly once")
	require.NotNil(e.T, last)
	assert.True(e.T, settled.CreatedAt.Equal(last.CreatedAt), "fan_in_settled (%v) is appended with the deciding %s (%v)", settled.CreatedAt, typ, last.CreatedAt)
	return *settled
}

func caseFanInWaitAllRace(e *env) {
	s := store(e)
	c, m := fanInRun(e, s, "r", 6, 6, workflow.WaitAll)
	o := newOwner()
	var want []string
	for _, k := range m {
		want = append(want, identity(k, 1))
	}
	admitOnly(e, s, o, ms(30), want...)
	assert.Equal(e.T, stWait, getAct(e, s, c).Status)
	raceObserve(e, s, m, 100, func(int) workflow.ObservationKind { return workflow.ObservedSucceeded })

	settled := settledWith(e, s, "r", "attempt_succeeded")
	ctl := getAct(e, s, c)
	assert.Equal(e.T, stDone, ctl.Status)
	assert.JSONEq(e.T, `{"members":6}`, string(ctl.Output))
	p := fanInSettled(e, s, "r")[0]
	assert.Equal(e.T, workflow.ActivationCompleted, p.Status)
	assert.Equal(e.T, workflow.WaitAll, p.Policy)
	assert.Equal(e.T, int64(6), p.Completed)
	assert.Nil(e.T, p.MemberIndex)
	run := getRun(e, s, "r")
	assert.Equal(e.T, workflow.RunCompleted, run.Status, "the controller's completion completes the run")
	evs := eventsOf(e, s, "r")
	assert.Equal(e.T, "run_completed", string(evs[len(evs)-1].Type))
	assert.True(e.T, evs[len(evs)-1].CreatedAt.Equal(settled.CreatedAt), "in the same transaction")
	assert.Zero(e.T, o.callCount(identity(c, 1)))
}

func caseFanInWaitAllFailedRace(e *env) {
	s := store(e)
	c, m := fanInRun(e, s, "r", 5, 5, workflow.WaitAll)
	var want []string
	for _, k := range m {
		want = append(want, identity(k, 1))
	}
	admitOnly(e, s, newOwner(), ms(30), want...)
	raceObserve(e, s, m, 100, func(i int) workflow.ObservationKind {
		if i == 2 {
			return workflow.ObservedFailed
		}
		return workflow.ObservedSucceeded
	})
	evs := eventsOf(e, s, "r")
	last := evs[0]
	for _, ev := range evs {
		if ev.Type == "attempt_succeeded" || ev.Type == "attempt_failed" {
			last = ev
		}
	}
	settled := settledWith(e, s, "r", string(last.Type))
	assert.True(e.T, settled.CreatedAt.Equal(last.CreatedAt))
	assert.Equal(e.T, workflow.ActivationFailed, getAct(e, s, c).Status)
	p := fanInSettled(e, s, "r")[0]
	assert.Equal(e.T, workflow.ActivationFailed, p.Status)
	assert.Equal(e.T, [3]int64{4, 1, 0}, [3]int64{p.Completed, p.Failed, p.Cancelled})
	assert.Equal(e.T, workflow.RunFailed, getRun(e, s, "r").Status)
	assert.Equal(e.T, 1, countType(eventTypes(e, s, "r"), "fan_out_failed"))
	before := digest(e, "r")
	_, err := s.RetryFailedNode(e.Ctx, m[2], 1, ms(200))
	requireIs(e.T, err, workflow.ErrIneligible, "a member of a settled fan-in is not retried")
	unchanged(e, before, "refused member retry", "r")
}

func caseFanInFailFastRace(e *env) {
	s := store(e)
	c, m := fanInRun(e, s, "r", 5, 5, workflow.FailFast)
	var want []string
	for _, k := range m {
		want = append(want, identity(k, 1))
	}
	admitOnly(e, s, newOwner(), ms(30), want...)
	raceObserve(e, s, m, 100, func(i int) workflow.ObservationKind {
		if i == 0 {
			return workflow.ObservedFailed
		}
		return workflow.ObservedSucceeded
	})
	settled := settledWith(e, s, "r", "attempt_failed")
	assert.True(e.T, settled.CreatedAt.Equal(ms(100)), "the failing member's transaction settles the controller")
	assert.Equal(e.T, workflow.ActivationFailed, getAct(e, s, c).Status)
	p := fanInSettled(e, s, "r")[0]
	assert.Equal(e.T, workflow.ActivationFailed, p.Status)
	assert.Equal(e.T, workflow.FailFast, p.Policy)
	require.NotNil(e.T, p.MemberIndex)
	assert.Equal(e.T, int64(0), *p.MemberIndex)
	assert.Equal(e.T, workflow.RunFailed, getRun(e, s, "r").Status)
	for _, st := range memberStatuses(e, s, m[1:]) {
		assert.Contains(e.T, []workflow.ActivationStatus{stDone, stCanc}, st, "siblings settle as today")
	}
}

func caseFanInRetryPending(e *env) {
	s := store(e)
	id := admittedIn(e, s, "r", workflow.ReadOnly, nil, "reserve")[0]
	na, nf := shipFanOut("r", 2, 2, workflow.WaitAll)
	nf.RetryPolicy, nf.Reconciliation = retryPolicy(2, 5), workflow.IdempotentReplay
	o := obs(workflow.ObservedSucceeded)
	o.Successors, o.FanOuts = []workflow.NewActivation{na}, []workflow.NewFanOut{nf}
	observe(e, s, id, o, ms(20))
	c := nf.Controller
	m := []workflow.ActivationKey{workflow.MemberKey(c, 0), workflow.MemberKey(c, 1)}
	admitOnly(e, s, newOwner(), ms(30), identity(m[0], 1), identity(m[1], 1))
	observe(e, s, identity(m[0], 1), obs(workflow.ObservedSucceeded), ms(40))
	res := observe(e, s, identity(m[1], 1), obs(workflow.ObservedRetryableFailure), ms(41))
	require.NotNil(e.T, res.Schedule, "the member's retry is scheduled")
	assert.Equal(e.T, stWait, getAct(e, s, c).Status, "a member whose retry is pending may still succeed")
	assert.Empty(e.T, fanInSettled(e, s, "r"))
	_, err := s.Engine().ConsumeDueRetry(e.Ctx, m[1], res.Schedule.Due)
	require.NoError(e.T, err)
	admitOnly(e, s, newOwner(), res.Schedule.Due.Add(1), identity(m[1], 2))
	observe(e, s, identity(m[1], 2), obs(workflow.ObservedSucceeded), res.Schedule.Due.Add(2))
	assert.Equal(e.T, stDone, getAct(e, s, c).Status)
	assert.Len(e.T, fanInSettled(e, s, "r"), 1)
	assert.Equal(e.T, workflow.RunCompleted, getRun(e, s, "r").Status)
}

func caseFanInMemberPages(e *env) {
	s := store(e)
	c, m := fanInRun(e, s, "r", 5, 5, workflow.WaitAll)
	var want []string
	for _, k := range m {
		want = append(want, identity(k, 1))
	}
	admitOnly(e, s, newOwner(), ms(30), want...)
	for i, k := range m[:4] {
		o := obs(workflow.ObservedSucceeded)
		o.Output = json.RawMessage(fmt.Sprintf(`{"shipped":%d}`, i))
		observe(e, s, identity(k, 1), o, ms(40))
	}
	var got []workflow.MemberOutcome
	var after workflow.Cursor
	pages := 0
	for ; ; pages++ {
		require.Less(e.T, pages, 5)
		page, err := s.FanOutMembers(e.Ctx, workflow.MemberQuery{Controller: c, After: after, Limit: 2})
		require.NoError(e.T, err)
		got = append(got, page.Items...)
		if page.Next == "" {
			break
		}
		require.Len(e.T, page.Items, 2, "a page with a next one is full")
		after = page.Next
	}
	assert.Equal(e.T, 2, pages, "5 members in pages of 2: the third page is the last, no empty round trip")
	require.Len(e.T, got, 5)
	for i, o := range got {
		assert.Equal(e.T, int64(i), o.Index)
		assert.Equal(e.T, m[i], o.Key)
		if i < 4 {
			assert.Equal(e.T, stDone, o.Status)
			assert.JSONEq(e.T, fmt.Sprintf(`{"shipped":%d}`, i), string(o.Output))
		} else {
			assert.Equal(e.T, stRun, o.Status)
			assert.Nil(e.T, o.Output, "an unsettled member has no output")
		}
	}
	page, err := s.FanOutMembers(e.Ctx, workflow.MemberQuery{Controller: c, After: workflow.MemberCursor(4)})
	require.NoError(e.T, err)
	assert.Empty(e.T, page.Items)
	assert.Empty(e.T, page.Next)
	page, err = s.FanOutMembers(e.Ctx, workflow.MemberQuery{Controller: c, After: workflow.MemberCursor(2)})
	require.NoError(e.T, err)
	require.Len(e.T, page.Items, 2, "a member cursor resumes after that index")
	assert.Equal(e.T, int64(3), page.Items[0].Index)
	_, err = s.FanOutMembers(e.Ctx, workflow.MemberQuery{Controller: key("r", "ship", "none")})
	requireIs(e.T, err, workflow.ErrNotFound, "unknown group")
	_, err = s.FanOutMembers(e.Ctx, workflow.MemberQuery{Controller: c, After: workflow.MemberCursor(-1)})
	requireIs(e.T, err, workflow.ErrInvalidInput, "negative index")
	_, err = s.FanOutMembers(e.Ctx, workflow.MemberQuery{Controller: c, Limit: workflow.MaxPageLimit + 1})
	requireIs(e.T, err, workflow.ErrInvalidInput, "limit too large")
}

func caseFanInOwnerSettled(e *env) {
	s := store(e)
	c, m := fanOut(e, s, "r", nil, 3, 3)
	assert.False(e.T, getGroup(e, c).FanIn)
	assert.Equal(e.T, stPend, getAct(e, s, c).Status, "an owner-settled controller stays pending")
	o := newOwner()
	o.unsupported["c"] = true
	admitOnly(e, s, o, ms(10), identity(m[0], 1), identity(m[1], 1), identity(m[2], 1))
	for _, k := range m {
		observe(e, s, identity(k, 1), obs(workflow.ObservedSucceeded), ms(20))
	}
	assert.Equal(e.T, stPend, getAct(e, s, c).Status, "its owner settles it")
	assert.Zero(e.T, countType(eventTypes(e, s, "r"), "fan_in_settled"))
	assert.Zero(e.T, countType(eventTypes(e, s, "r"), "fan_in_waiting"))
	assert.Equal(e.T, workflow.RunRunning, getRun(e, s, "r").Status)

	// AddFanOut with FanIn: a pending controller with no attempt waits; one
	// with an attempt is refused and nothing is written.
	c2 := key("r", "ctl2", "c2")
	mkAct(e, s, c2)
	created, err := s.AddFanOut(e.Ctx, workflow.NewFanOut{Controller: c2, Members: memberInputs(2), MaxConcurrency: 1, FanIn: true}, ms(30))
	require.NoError(e.T, err)
	require.True(e.T, created)
	assert.Equal(e.T, stWait, getAct(e, s, c2).Status)
	before := digest(e, "r")
	_, err = s.AddFanOut(e.Ctx, workflow.NewFanOut{Controller: c2, Members: memberInputs(2), MaxConcurrency: 1}, ms(31))
	requireIs(e.T, err, workflow.ErrConflict, "the same group without fan-in is a different group")
	unchanged(e, before, "conflicting fan-in", "r")
	c3 := key("r", "ctl3", "c3")
	mkAct(e, s, c3)
	prep(e, s, c3, workflow.ReadOnly, ms(32))
	before = digest(e, "r")
	_, err = s.AddFanOut(e.Ctx, workflow.NewFanOut{Controller: c3, Members: memberInputs(2), MaxConcurrency: 1, FanIn: true}, ms(33))
	requireIs(e.T, err, workflow.ErrIneligible, "a controller with an attempt")
	unchanged(e, before, "refused fan-in", "r")
}

func caseFanInRetiredOrCancelled(e *env) {
	s := store(e)
	c, m := fanInRun(e, s, "r", 3, 1, workflow.WaitAll)
	admitOnly(e, s, newOwner(), ms(30), identity(m[0], 1))
	observe(e, s, identity(m[0], 1), obs(workflow.ObservedSucceeded), ms(40))
	require.NoError(e.T, s.RetireFanOut(e.Ctx, c, ms(50)))
	assert.Equal(e.T, stWait, getAct(e, s, c).Status)
	require.NoError(e.T, s.Engine().SettleFanOutRetirement(e.Ctx, c, ms(51)))
	assert.Equal(e.T, []workflow.ActivationStatus{stDone, stCanc, stCanc}, memberStatuses(e, s, m))
	assert.Equal(e.T, stCanc, getAct(e, s, c).Status, "a retired group's controller settles with its last members")
	p := fanInSettled(e, s, "r")
	require.Len(e.T, p, 1)
	assert.Equal(e.T, [3]int64{1, 0, 2}, [3]int64{p[0].Completed, p[0].Failed, p[0].Cancelled})
	assert.Equal(e.T, workflow.RunCompleted, getRun(e, s, "r").Status)

	c, m = fanInRun(e, s, "r2", 2, 2, workflow.WaitAll)
	admitOnly(e, s, newOwner(), ms(30), identity(m[0], 1), identity(m[1], 1))
	_, err := s.RequestCancellation(e.Ctx, "r2", nil, ms(60))
	require.NoError(e.T, err)
	assert.Equal(e.T, stCanc, getAct(e, s, c).Status, "the run's cancellation cancels a waiting controller")
	for _, k := range m {
		observe(e, s, identity(k, 1), obs(workflow.ObservedCancelled), ms(61))
	}
	assert.Equal(e.T, workflow.RunCancelled, getRun(e, s, "r2").Status)
	assert.Empty(e.T, fanInSettled(e, s, "r2"), "the store did not settle it: the cancellation did")
}
