package conformance

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/workflow"
)

// Fan-out settlement: the group's accounting follows retries, and a
// member's terminal failure settles by the group's policy (wait-all, the
// default, or fail-fast).

func fanoutSettlementCases() []testCase {
	return []testCase{
		{Name: "fanout_retry_interleavings_never_exceed_max_concurrency_and_promote_in_index_order", Run: caseFanOutRetryInterleavings},
		{Name: "fanout_wait_all_fails_the_run_only_after_every_member_settles", Run: caseFanOutWaitAll},
		{Name: "fanout_fail_fast_cancels_siblings_in_the_failing_transaction", Run: caseFanOutFailFast},
		{Name: "fanout_settlement_policy_is_validated_and_part_of_the_group", Run: caseFanOutPolicyInput},
		{Name: "fanout_member_failure_with_a_scheduled_retry_is_not_terminal_and_its_requeue_waits_for_a_place", Run: caseFanOutScheduledMemberFailure},
	}
}

// fanOutWith is fanOut with a settlement policy.
func fanOutWith(e *env, s *workflow.Store, run string, n int, max int64, pol workflow.FanOutFailure) (workflow.ActivationKey, []workflow.ActivationKey) {
	e.T.Helper()
	mkRun(e, s, run, workflow.Limits{}, nil)
	c := key(run, "ctl", "c")
	mkAct(e, s, c)
	created, err := s.AddFanOut(e.Ctx, workflow.NewFanOut{Controller: c, Members: memberInputs(n), MaxConcurrency: max, OnFailure: pol}, ms(2))
	require.NoError(e.T, err)
	require.True(e.T, created)
	members := make([]workflow.ActivationKey, n)
	for i := range members {
		members[i] = workflow.MemberKey(c, int64(i))
	}
	return c, members
}

// ---- every interleaving of fail / retry / succeed ----

// memberState is one member's abstract state in the interleaving search.
type memberState struct {
	Status workflow.ActivationStatus
	Last   uint32
}

type groupState [4]memberState

func (g groupState) String() string {
	var b strings.Builder
	for i, m := range g {
		fmt.Fprintf(&b, "%d:%s/%d ", i, m.Status, m.Last)
	}
	return b.String()
}

type memberAction struct {
	Kind   string // "fail", "retry", "succeed"
	Member int
}

func (a memberAction) String() string { return fmt.Sprintf("%s(%d)", a.Kind, a.Member) }

// The search is bounded: each member is retried at most once, and at most
// interleavingRetries() retries happen in one interleaving.
const (
	maxInterleavingAttempts = 2
	// runsPerStore: the search spreads its runs over fresh stores so that
	// no store grows large (an in-memory store copies its maps per write).
	runsPerStore = 60
)

// interleavingRetries is 2, or 1 under the race detector: the search is
// sequential, so the detector adds nothing to it but time (with 2 retries it
// runs about 19k transactions).
func interleavingRetries() int {
	if raceDetector {
		return 1
	}
	return 2
}

// explorer runs the interleaving search. Each state is kept as an image of
// its run's records; an edge clones the image under a fresh run id (member
// ids, identities, intents and receipts derived again for it, events
// left out) and then drives the action through the Store, so every edge
// starts from exactly the records the Store left for that state.
type explorer struct {
	e    *env
	b    backend.Backend
	s    *workflow.Store
	o    *owner
	runs int
}

// runImage is the records of one interleaving run.
type runImage struct {
	run   backend.Run
	acts  []backend.Activation
	group backend.FanOutGroup
	atts  []backend.Attempt
}

func (x *explorer) nextRun() string {
	e := x.e
	if x.runs%runsPerStore == 0 {
		if x.b != nil {
			require.NoError(e.T, x.b.Close())
		}
		loc := e.H.New(e.T)
		b, err := e.H.Open(e.Ctx, loc)
		require.NoError(e.T, err, "open a fresh store")
		x.b, x.s = b, x.e.newStore(b)
	}
	x.runs++
	return fmt.Sprintf("il%d", x.runs)
}

func members(run string) []workflow.ActivationKey {
	m := make([]workflow.ActivationKey, 4)
	for i := range m {
		m[i] = workflow.MemberKey(key(run, "ctl", "c"), int64(i))
	}
	return m
}

// image reads run's records.
func (x *explorer) image(run string) runImage {
	e := x.e
	var img runImage
	e.view(x.b, func(r backend.ReadTx) error {
		c := bkey(key(run, "ctl", "c"))
		f, err := r.Load(e.Ctx, backend.Lookup{Runs: []string{run}, Groups: []backend.ActivationKey{c}})
		if err != nil {
			return err
		}
		img.run, img.group = f.Runs[run], f.Groups[c]
		if img.acts, err = r.Activations(e.Ctx, backend.ActivationQuery{RunID: run, Limit: 100}); err != nil {
			return err
		}
		img.atts, err = r.Attempts(e.Ctx, backend.AttemptQuery{RunID: run, Limit: 100})
		return err
	})
	require.Len(e.T, img.acts, 5, "controller and members of %s", run)
	return img
}

// clone writes img under a fresh run id and returns it.
func (x *explorer) clone(img runImage) string {
	e := x.e
	run := x.nextRun()
	rename := func(k backend.ActivationKey) backend.ActivationKey {
		k.RunID = run
		if strings.Contains(k.NodeID, "::member::") {
			var i int64
			_, err := fmt.Sscanf(k.NodeID, "ctl::member::%d", &i)
			require.NoError(e.T, err)
			k.ActivationID = workflow.FanOutMemberID(run, "c", i)
		}
		return k
	}
	r := img.run
	r.ID, r.RootID = run, run
	ws := backend.Changes{Insert: backend.Inserts{Runs: []backend.Run{r}}}
	for _, a := range img.acts {
		a.Key = rename(a.Key)
		if a.Group != nil {
			a.Group = &backend.GroupMember{Controller: rename(a.Group.Controller), Index: a.Group.Index}
		}
		ws.Insert.Activations = append(ws.Insert.Activations, a)
	}
	g := img.group
	g.Controller = rename(g.Controller)
	ws.Insert.Groups = append(ws.Insert.Groups, g)
	for _, a := range img.atts {
		a.Key.ActivationKey = rename(a.Key.ActivationKey)
		a.Identity = identity(workflow.ActivationKey(a.Key.ActivationKey), a.Key.Attempt)
		a.Intent = json.RawMessage(fmt.Sprintf(`{"do":%q}`, a.Key.ActivationID))
		a.IntentChecksum = workflow.Checksum(a.Intent)
		if a.Receipt != nil {
			a.Receipt = json.RawMessage(fmt.Sprintf(`{"accepted":%q}`, a.Identity))
		}
		ws.Insert.Attempts = append(ws.Insert.Attempts, a)
	}
	e.apply(x.b, ws)
	return run
}

// apply performs a (the caller dispatches after it).
func (x *explorer) apply(m []workflow.ActivationKey, st groupState, a memberAction) {
	e, s := x.e, x.s
	k := m[a.Member]
	last := st[a.Member].Last
	switch a.Kind {
	case "fail":
		observe(e, s, identity(k, last), obs(workflow.ObservedFailed), ms(10))
	case "succeed":
		observe(e, s, identity(k, last), obs(workflow.ObservedSucceeded), ms(10))
	case "retry":
		rq, err := s.RetryFailedNode(e.Ctx, k, last, ms(10))
		require.NoError(e.T, err, "retry member %d", a.Member)
		require.Equal(e.T, last+1, rq.NextAttempt)
	}
}

// groupSnap is one read of a group: the members' abstract states and the
// facts the invariants need.
type groupSnap struct {
	st                groupState
	live              int // admissible or holding an active attempt
	promoted, settled int64
	run               workflow.RunStatus
}

func (x *explorer) snapshot(run string, m []workflow.ActivationKey) groupSnap {
	e := x.e
	var out groupSnap
	var atts []backend.AttemptKey
	c := bkey(key(run, "ctl", "c"))
	bm := make([]backend.ActivationKey, len(m))
	for i, k := range m {
		bm[i] = bkey(k)
	}
	f := e.load(x.b, backend.Lookup{Runs: []string{run}, Activations: bm, Groups: []backend.ActivationKey{c}})
	for i, k := range m {
		a, ok := f.Activations[bkey(k)]
		require.True(e.T, ok, "member %d exists", i)
		out.st[i] = memberState{workflow.ActivationStatus(a.Status), a.LastAttempt}
		if a.Admissible {
			out.live++
		} else if a.LastAttempt > 0 {
			atts = append(atts, battkey(attemptKey(k, a.LastAttempt)))
		}
	}
	fa := e.load(x.b, backend.Lookup{Attempts: atts})
	for _, k := range atts {
		switch fa.Attempts[k].Status {
		case backend.AttemptPrepared, backend.AttemptAdmitted, backend.AttemptRunning,
			backend.AttemptCancelling, backend.AttemptSiblingCancelling:
			out.live++
		}
	}
	g := f.Groups[c]
	out.promoted, out.settled, out.run = g.Promoted, g.Settled, workflow.RunStatus(f.Runs[run].Status)
	return out
}

// caseFanOutRetryInterleavings drives every interleaving of {fail, retry,
// succeed} of 4 members with MaxConcurrency 2 (bounded as above) through
// ApplyObservation, RetryFailedNode and Dispatch. After every action and
// after every dispatch: at most 2 members are pending or running, at most 2
// are admissible or hold an active attempt, a free place never leaves a
// member waiting, the group's counters agree with its members, members
// leave waiting lowest index first, and the run fails exactly when every
// member has settled with one of them failed. States are memoised on the
// members' statuses, attempt numbers and the retries spent; every edge out
// of every reachable state is executed once.
func caseFanOutRetryInterleavings(e *env) {
	// The edges of one depth run on interleavingLanes explorers at once,
	// each with stores of its own: an edge starts from a cloned image, so
	// edges are independent, and on a store behind a network the search
	// waits on round trips, not on the CPU.
	lanes := make([]*explorer, interleavingLanes)
	for i := range lanes {
		lanes[i] = &explorer{e: e, o: fanOutOwner()}
	}
	defer func() {
		for _, x := range lanes {
			if x.b != nil {
				_ = x.b.Close()
			}
		}
	}()
	x := lanes[0]
	run0 := x.nextRun()
	_, m0 := fanOutWith(e, x.s, run0, 4, 2, "")
	dispatch(e, x.s, x.o, workflow.DispatchOptions{RunID: run0}, ms(3))
	start := x.snapshot(run0, m0).st
	require.Equal(e.T, groupState{{stRun, 1}, {stRun, 1}, {stWait, 0}, {stWait, 0}}, start, "initial admission")
	seen := map[interleavingMemo]bool{{start, 0}: true}
	depth := []interleavingNode{{nil, start, 0, x.image(run0)}}
	edges := 0
	for len(depth) > 0 {
		var todo []interleavingEdge
		for _, n := range depth {
			for _, a := range applicable(n.st, n.retries) {
				todo = append(todo, interleavingEdge{from: n, a: a})
			}
		}
		// A lane's helpers may call T.Fatal, which ends only that lane's
		// goroutine: the others stop at their next edge, and the search
		// returns once all have.
		var next atomic.Int64
		var wg sync.WaitGroup
		for _, x := range lanes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1)) - 1
					if i >= len(todo) || e.T.Failed() {
						return
					}
					x.walk(&todo[i])
				}
			}()
		}
		wg.Wait()
		if e.T.Failed() {
			return
		}
		// New states are kept in edge order, so every run of the search
		// explores the same states from the same paths.
		depth = depth[:0:0]
		for _, ed := range todo {
			edges++
			if k := (interleavingMemo{ed.to.st, ed.to.retries}); !seen[k] {
				seen[k] = true
				depth = append(depth, ed.to)
			}
		}
	}
	runs := 0
	for _, x := range lanes {
		runs += x.runs
	}
	e.T.Logf("fan-out interleavings: %d states, %d edges, %d runs", len(seen), edges, runs)
	assert.Greater(e.T, len(seen), 100, "the search reached the retry states")
}

// interleavingLanes is how many edges of the interleaving search run at once.
const interleavingLanes = 4

// interleavingNode is one state of the search: the path that reached it
// first, the members' states, the retries spent and an image of its run.
type interleavingNode struct {
	path    []memberAction
	st      groupState
	retries int
	img     runImage
}

// interleavingMemo is what the search memoises a state on.
type interleavingMemo struct {
	st      groupState
	retries int
}

// interleavingEdge is an action out of a state, and the state it led to.
type interleavingEdge struct {
	from interleavingNode
	a    memberAction
	to   interleavingNode
}

// walk executes ed on a clone of its state's run and checks the invariants
// after the action and after a dispatch; it records the state reached in
// ed.to.
func (x *explorer) walk(ed *interleavingEdge) {
	e, n, a := x.e, ed.from, ed.a
	run := x.clone(n.img)
	m := members(run)
	require.Equal(e.T, n.st, x.snapshot(run, m).st, "clone of %v", n.path)
	path := append(slices.Clone(n.path), a)
	x.apply(m, n.st, a)
	mid := x.snapshot(run, m)
	checkGroupPlaces(e, mid, path, "after the action")
	checkPromotion(e, n.st, mid.st, a, path)
	dispatch(e, x.s, x.o, workflow.DispatchOptions{RunID: run}, ms(11))
	after := x.snapshot(run, m)
	checkGroupPlaces(e, after, path, "after dispatch")
	for i := range after.st {
		if mid.st[i].Status == stWait {
			assert.Equal(e.T, stWait, after.st[i].Status, "dispatch never admits a waiting member (%d) after %v", i, path)
		}
	}
	checkWaitAllRun(e, after, path)
	r := n.retries
	if a.Kind == "retry" {
		r++
	}
	ed.to = interleavingNode{path, after.st, r, x.image(run)}
}

func applicable(st groupState, retries int) []memberAction {
	var out []memberAction
	for i, m := range st {
		switch {
		case m.Status == stRun:
			out = append(out, memberAction{"fail", i}, memberAction{"succeed", i})
		case m.Status == workflow.ActivationFailed && m.Last < maxInterleavingAttempts && retries < interleavingRetries():
			out = append(out, memberAction{"retry", i})
		}
	}
	return out
}

// checkWaitAllRun: the run fails exactly when every member has settled
// with one of them failed.
func checkWaitAllRun(e *env, g groupSnap, path []memberAction) {
	e.T.Helper()
	settled, failed := 0, false
	for _, m := range g.st {
		switch m.Status {
		case stDone:
			settled++
		case workflow.ActivationFailed:
			settled++
			failed = true
		}
	}
	want := workflow.RunRunning
	if settled == len(g.st) && failed {
		want = workflow.RunFailed
	}
	assert.Equal(e.T, want, g.run, "wait-all run status after %v (%v)", path, g.st)
}

// checkGroupPlaces: at most 2 members are pending or running, at most 2
// are admissible or hold an active attempt, a free place leaves no member
// waiting, and the group's counters agree with the members.
func checkGroupPlaces(e *env, g groupSnap, path []memberAction, when string) {
	e.T.Helper()
	const max = 2
	places, waiting, notWaiting, terminal := 0, 0, 0, 0
	for _, ms := range g.st {
		switch ms.Status {
		case stPend, stRun:
			places++
		case stWait:
			waiting++
		}
		if ms.Status != stWait {
			notWaiting++
		}
		if ms.Status == stDone || ms.Status == workflow.ActivationFailed || ms.Status == stCanc {
			terminal++
		}
	}
	assert.LessOrEqual(e.T, places, max, "members pending or running %s %v: %v", when, path, g.st)
	assert.LessOrEqual(e.T, g.live, max, "members admissible or holding an active attempt %s %v: %v", when, path, g.st)
	if places < max {
		assert.Zero(e.T, waiting, "a free place leaves no member waiting %s %v: %v", when, path, g.st)
	}
	assert.Equal(e.T, int64(notWaiting), g.promoted, "group Promoted counts the members not waiting %s %v", when, path)
	assert.Equal(e.T, int64(terminal), g.settled, "group Settled counts the settled members %s %v", when, path)
}

// checkPromotion: the members the action moved out of waiting are the
// lowest-index waiting members before it, and a retried member waits only
// when every place is taken.
func checkPromotion(e *env, before, after groupState, a memberAction, path []memberAction) {
	e.T.Helper()
	var waiting, promoted []int
	for i := range before {
		if before[i].Status == stWait {
			waiting = append(waiting, i)
			if after[i].Status != stWait {
				promoted = append(promoted, i)
			}
		}
	}
	if len(promoted) > 0 {
		assert.Equal(e.T, waiting[:len(promoted)], promoted, "promotion in index order after %v", path)
	}
	if a.Kind == "retry" && after[a.Member].Status == stWait {
		places := 0
		for _, ms := range after {
			if ms.Status == stPend || ms.Status == stRun {
				places++
			}
		}
		assert.Equal(e.T, 2, places, "a retried member waits only for a full group, after %v", path)
	}
}

// ---- wait-all ----

func caseFanOutWaitAll(e *env) {
	s := store(e)
	o := fanOutOwner()
	c, m := fanOutWith(e, s, "r", 3, 2, "")
	assert.False(e.T, getGroup(e, c).FailFast, "wait-all is the default")
	admitOnly(e, s, o, ms(10), identity(m[0], 1), identity(m[1], 1))

	observe(e, s, identity(m[0], 1), obs(workflow.ObservedFailed), ms(11))
	assert.Equal(e.T, workflow.RunRunning, getRun(e, s, "r").Status, "one failed member does not fail the run yet")
	assert.Equal(e.T, []workflow.ActivationStatus{workflow.ActivationFailed, stRun, stPend}, memberStatuses(e, s, m),
		"the failed member settled: member 2 promoted")
	assert.Zero(e.T, countType(eventTypes(e, s, "r"), "fan_out_failed"))
	s = e.newStore(e.Reopen())
	admitOnly(e, s, o, ms(12), identity(m[2], 1))
	observe(e, s, identity(m[1], 1), obs(workflow.ObservedSucceeded), ms(13))
	assert.Equal(e.T, workflow.RunRunning, getRun(e, s, "r").Status, "member 2 still running")
	assert.Equal(e.T, workflow.AttemptAdmitted, getAttempt(e, s, m[2], 1).Status, "no sibling is cancelled")

	observe(e, s, identity(m[2], 1), obs(workflow.ObservedSucceeded), ms(14))
	assert.Equal(e.T, workflow.RunFailed, getRun(e, s, "r").Status, "the last member settled: the failure is persisted")
	assert.Equal(e.T, []string{`{"controller_activation_id":"c","failed_members":[0],"policy":"wait_all"}`},
		payloadsOf(e, s, "r", "fan_out_failed"))
	g := getGroup(e, c)
	assert.Equal(e.T, int64(3), g.Settled)
	assert.Zero(e.T, g.RetiredMS)

	// A wait-all group's failed member may be retried; succeeding leaves
	// nothing failed, so the run stays running.
	rq, err := s.RetryFailedNode(e.Ctx, m[0], 1, ms(15))
	require.NoError(e.T, err)
	assert.Equal(e.T, uint32(2), rq.NextAttempt)
	assert.Equal(e.T, workflow.RunRunning, getRun(e, s, "r").Status)
	assert.Equal(e.T, int64(2), getGroup(e, c).Settled, "the requeued member left Settled")
	admitOnly(e, s, o, ms(16), identity(m[0], 2))
	observe(e, s, identity(m[0], 2), obs(workflow.ObservedSucceeded), ms(17))
	assert.Equal(e.T, workflow.RunRunning, getRun(e, s, "r").Status, "every member completed")
	assert.Equal(e.T, []workflow.ActivationStatus{stDone, stDone, stDone}, memberStatuses(e, s, m))
	assert.Len(e.T, payloadsOf(e, s, "r", "fan_out_failed"), 1)
}

// ---- fail-fast ----

func caseFanOutFailFast(e *env) {
	s := store(e)
	o := fanOutOwner()
	c, m := fanOutWith(e, s, "r", 5, 4, workflow.FailFast)
	assert.True(e.T, getGroup(e, c).FailFast)
	// Member 2: handed off, no receipt yet (ambiguous). Member 3: prepared,
	// provably never handed to its owner. Members 0 and 1 admitted, member
	// 1 running; member 4 waiting.
	p2 := prep(e, s, m[2], workflow.ReadOnly, ms(5))
	require.NoError(e.T, s.Engine().Handoff(e.Ctx, p2.Key(), nil, ms(6)))
	prep(e, s, m[3], workflow.ReadOnly, ms(7))
	admitOnly(e, s, o, ms(10), identity(m[0], 1), identity(m[1], 1))
	observe(e, s, identity(m[1], 1), obs(workflow.ObservedRunning), ms(11))
	require.Equal(e.T, []workflow.ActivationStatus{stRun, stRun, stRun, stRun, stWait}, memberStatuses(e, s, m))

	observe(e, s, identity(m[0], 1), obs(workflow.ObservedFailed), ms(20))
	assert.Equal(e.T, workflow.RunFailed, getRun(e, s, "r").Status, "the failure is persisted with the sibling cancellation")
	assert.Equal(e.T, []workflow.ActivationStatus{workflow.ActivationFailed, stRun, stRun, stCanc, stCanc}, memberStatuses(e, s, m))
	assert.Equal(e.T, workflow.AttemptSiblingCancelling, getAttempt(e, s, m[1], 1).Status, "running sibling")
	assert.Equal(e.T, workflow.AttemptSiblingCancelling, getAttempt(e, s, m[2], 1).Status, "handed-off sibling")
	assert.Equal(e.T, workflow.AttemptCancelled, getAttempt(e, s, m[3], 1).Status, "a never-dispatched sibling is cancelled outright")
	assert.Equal(e.T, []string{
		attemptEvent(m[1], 1, `{}`),
		attemptEvent(m[2], 1, `{}`),
	}, payloadsOf(e, s, "r", "attempt_sibling_cancelling"), "one event per sibling attempt")
	assert.Len(e.T, payloadsOf(e, s, "r", "fan_out_member_cancelled"), 2, "members 3 and 4")
	assert.Len(e.T, payloadsOf(e, s, "r", "fan_out_failed"), 1)
	assert.Equal(e.T, int64(2), rawRun(e, "r").ActiveCount, "sibling_cancelling attempts stay active")
	g := getGroup(e, c)
	assert.Equal(e.T, ms(20).UnixMilli(), g.RetiredMS, "the group is retired")
	assert.Equal(e.T, int64(5), g.Promoted)
	assert.Equal(e.T, int64(3), g.Settled)

	s = e.newStore(e.Reopen())
	before := digest(e, "r")
	_, err := s.RetryFailedNode(e.Ctx, m[0], 1, ms(21))
	requireIs(e.T, err, workflow.ErrIneligible, "a fail-fast group's failed member is not requeued")
	unchanged(e, before, "refused retry", "r")
	requireIs(e.T, s.Engine().Handoff(e.Ctx, attemptKey(m[2], 1), nil, ms(22)), workflow.ErrIneligible, "no handoff of a stopped sibling")
	unchanged(e, before, "refused handoff", "r")

	// A late receipt is stored and the status kept; the owner's word then
	// decides, as for a cancelling run: running work stays active, finished
	// work settles as cancelled.
	require.NoError(e.T, s.Engine().PersistReceipt(e.Ctx, workflow.OwnerReceipt{Key: attemptKey(m[2], 1), Receipt: json.RawMessage(`{"late":true}`), Authority: nil}, ms(23)))
	a2 := getAttempt(e, s, m[2], 1)
	assert.Equal(e.T, workflow.AttemptSiblingCancelling, a2.Status)
	assert.JSONEq(e.T, `{"late":true}`, string(a2.Receipt))
	res := observe(e, s, identity(m[1], 1), obs(workflow.ObservedSucceeded), ms(24))
	assert.Equal(e.T, workflow.AttemptCancelled, res.Status, "a success of a stopped sibling counts as cancelled")
	res = observe(e, s, identity(m[2], 1), obs(workflow.ObservedRunning), ms(25))
	assert.Equal(e.T, workflow.AttemptSiblingCancelling, res.Status, "running work of a stopped sibling stays active")
	res = observe(e, s, identity(m[2], 1), obs(workflow.ObservedCancelled), ms(25))
	assert.Equal(e.T, workflow.AttemptCancelled, res.Status)
	assert.Equal(e.T, []workflow.ActivationStatus{workflow.ActivationFailed, stCanc, stCanc, stCanc, stCanc}, memberStatuses(e, s, m))
	assert.Nil(e.T, getAct(e, s, m[1]).Output, "no output from a cancelled sibling")
	r := getRun(e, s, "r")
	assert.Equal(e.T, workflow.RunFailed, r.Status)
	assert.Zero(e.T, rawRun(e, "r").ActiveCount)
	assert.Equal(e.T, int64(5), getGroup(e, c).Settled)
	calls := o.totalCalls()
	admitOnly(e, s, o, ms(26))
	assert.Equal(e.T, calls, o.totalCalls(), "nothing of the group is dispatched again")
	before = digest(e, "r")
	_, err = s.RetryFailedNode(e.Ctx, m[0], 1, ms(27))
	requireIs(e.T, err, workflow.ErrIneligible, "still refused once every sibling settled")
	unchanged(e, before, "refused retry after settlement", "r")
}

func caseFanOutPolicyInput(e *env) {
	s := store(e)
	c, _ := fanOutWith(e, s, "r", 2, 1, workflow.FailFast)
	before := digest(e, "r")
	for _, pol := range []workflow.FanOutFailure{"", workflow.WaitAll} {
		_, err := s.AddFanOut(e.Ctx, workflow.NewFanOut{Controller: c, Members: memberInputs(2), MaxConcurrency: 1, OnFailure: pol}, ms(3))
		requireIs(e.T, err, workflow.ErrConflict, "re-add with policy %q", pol)
		unchanged(e, before, "conflicting policy", "r")
	}
	created, err := s.AddFanOut(e.Ctx, workflow.NewFanOut{Controller: c, Members: memberInputs(2), MaxConcurrency: 1, OnFailure: workflow.FailFast}, ms(3))
	require.NoError(e.T, err)
	assert.False(e.T, created, "identical re-add")
	unchanged(e, before, "identical re-add", "r")
	mkAct(e, s, key("r", "ctl2", "c2"))
	before = digest(e, "r")
	_, err = s.AddFanOut(e.Ctx, workflow.NewFanOut{Controller: key("r", "ctl2", "c2"), Members: memberInputs(1), MaxConcurrency: 1, OnFailure: "fail_slowly"}, ms(4))
	requireIs(e.T, err, workflow.ErrInvalidInput, "unknown policy")
	unchanged(e, before, "unknown policy", "r")
	_, err = s.GetActivation(e.Ctx, workflow.MemberKey(key("r", "ctl2", "c2"), 0))
	requireIs(e.T, err, workflow.ErrNotFound, "nothing materialised")
}

func caseFanOutScheduledMemberFailure(e *env) {
	s := store(e)
	o := fanOutOwner()
	mkRun(e, s, "r", workflow.Limits{}, nil)
	c := key("r", "ctl", "c")
	mkAct(e, s, c)
	_, err := s.AddFanOut(e.Ctx, workflow.NewFanOut{Controller: c, Members: memberInputs(3), MaxConcurrency: 2, OnFailure: workflow.FailFast,
		Reconciliation: workflow.IdempotentReplay, RetryPolicy: retryPolicy(3, 5)}, ms(2))
	require.NoError(e.T, err)
	m := []workflow.ActivationKey{workflow.MemberKey(c, 0), workflow.MemberKey(c, 1), workflow.MemberKey(c, 2)}
	admitOnly(e, s, o, ms(10), identity(m[0], 1), identity(m[1], 1))

	res := observe(e, s, identity(m[0], 1), obs(workflow.ObservedRetryableFailure), ms(20))
	require.NotNil(e.T, res.Schedule, "the member's policy schedules a retry")
	assert.Equal(e.T, workflow.RunFailed, getRun(e, s, "r").Status, "as for any activation with a retry scheduled")
	assert.Equal(e.T, workflow.AttemptAdmitted, getAttempt(e, s, m[1], 1).Status, "a scheduled retry stops no sibling")
	assert.Equal(e.T, []workflow.ActivationStatus{workflow.ActivationFailed, stRun, stPend}, memberStatuses(e, s, m), "member 2 took the place")
	assert.Zero(e.T, getGroup(e, c).RetiredMS)
	assert.Empty(e.T, payloadsOf(e, s, "r", "fan_out_failed"))

	rq, err := s.Engine().ConsumeDueRetry(e.Ctx, m[0], ms(25))
	require.NoError(e.T, err)
	assert.Equal(e.T, uint32(2), rq.NextAttempt)
	assert.Equal(e.T, workflow.RunRunning, getRun(e, s, "r").Status)
	assert.Equal(e.T, []workflow.ActivationStatus{stWait, stRun, stPend}, memberStatuses(e, s, m), "the group is full: the requeued member waits")
	assert.Len(e.T, payloadsOf(e, s, "r", "fan_out_member_waiting"), 1)
	s = e.newStore(e.Reopen())
	admitOnly(e, s, o, ms(26), identity(m[2], 1))
	observe(e, s, identity(m[1], 1), obs(workflow.ObservedSucceeded), ms(27))
	assert.Equal(e.T, []workflow.ActivationStatus{stPend, stDone, stRun}, memberStatuses(e, s, m), "promoted into the freed place")
	admitOnly(e, s, o, ms(28), identity(m[0], 2))

	observe(e, s, identity(m[0], 2), obs(workflow.ObservedFailed), ms(29))
	assert.Equal(e.T, workflow.RunFailed, getRun(e, s, "r").Status)
	assert.Equal(e.T, workflow.AttemptSiblingCancelling, getAttempt(e, s, m[2], 1).Status, "a terminal failure stops the siblings")
	assert.Equal(e.T, ms(29).UnixMilli(), getGroup(e, c).RetiredMS)
}
