package conformance

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/workflow"
)

func childCases() []testCase {
	return []testCase{
		{Name: "child_run_admits_its_prepared_parent_with_a_synthetic_receipt", Run: caseChildCreate},
		{Name: "child_run_requires_a_prepared_parent_of_a_running_activation", Run: caseChildRequiresPrepared},
		{Name: "child_run_repeat_is_idempotent_by_derived_id", Run: caseChildIdempotent},
		{Name: "child_run_limits_only_narrow", Run: caseChildLimits},
		{Name: "child_run_depth_is_bounded", Run: caseChildDepth},
		{Name: "child_run_descendants_are_bounded", Run: caseChildDescendants},
		{Name: "child_run_refused_when_the_root_allowance_is_used_up", Run: caseChildRootExhausted},
	}
}

// spawn prepares activation (run,"n",act) and creates a child from it.
func spawn(e *env, s *workflow.Store, run, act string, at int64) string {
	e.T.Helper()
	k := key(run, "n", act)
	mkAct(e, s, k)
	prep(e, s, k, workflow.ReadOnly, ms(at))
	child, created, err := s.CreateChildRun(e.Ctx, workflow.NewChildRun{Parent: attemptKey(k, 1), Target: json.RawMessage(`{"call":"` + act + `"}`)}, ms(at+1))
	require.NoError(e.T, err, "child of %v", k)
	require.True(e.T, created)
	return child
}

// refuseChild requires CreateChildRun(nc) to fail with an error matching
// want and to leave the durable state unchanged: that of runs and of the
// child run nc names (its id derives from the request, so a refusal that
// still wrote the child or its link shows up).
func refuseChild(e *env, s *workflow.Store, nc workflow.NewChildRun, at int64, want error, what string, runs ...string) {
	e.T.Helper()
	ids := append(slices.Clone(runs), requestedChild(e, nc))
	before := digest(e, ids...)
	_, _, err := s.CreateChildRun(e.Ctx, nc, ms(at))
	requireIs(e.T, err, want, what)
	unchanged(e, before, what, ids...)
}

// requestedChild is the id of the child run nc asks for (the parent run's
// root, when the parent run exists, else the parent run stands in).
func requestedChild(e *env, nc workflow.NewChildRun) string {
	e.T.Helper()
	root := nc.Parent.RunID
	if r, ok := e.load(e.B, backend.Lookup{Runs: []string{root}}).Runs[root]; ok {
		root = r.RootID
	}
	return workflow.ChildRunID(root, nc.Parent.RunID, nc.Parent.ActivationID, nc.Parent.Attempt, nc.Target)
}

func caseChildCreate(e *env) {
	s := store(e)
	auth := authority(1, "p")
	mkRun(e, s, "p", workflow.Limits{NodeExecutionCap: 50, ConcurrencyCap: 4}, auth)
	pa := key("p", "n", "a")
	mkAct(e, s, pa)
	p := prep(e, s, pa, workflow.Mutating, ms(10))
	target := json.RawMessage(`{"workflow": "w", "v": 1}`)
	child, created, err := s.CreateChildRun(e.Ctx, workflow.NewChildRun{Parent: p.Key(), Target: target}, ms(20))
	require.NoError(e.T, err)
	assert.True(e.T, created)
	assert.Equal(e.T, workflow.ChildRunID("p", "p", "a", 1, []byte(`{"v":1,"workflow":"w"}`)), child, "the id is derived")

	att := getAttempt(e, s, pa, 1)
	assert.Equal(e.T, workflow.AttemptAdmitted, att.Status, "the parent attempt is admitted")
	require.NotNil(e.T, att.Receipt)
	var rc struct {
		Child string `json:"child_run_id"`
		Root  string `json:"root_run_id"`
		Depth int64  `json:"depth"`
	}
	require.NoError(e.T, json.Unmarshal(att.Receipt, &rc))
	assert.Equal(e.T, child, rc.Child)
	assert.Equal(e.T, "p", rc.Root)
	assert.Equal(e.T, int64(2), rc.Depth)
	assert.Equal(e.T, ms(20).UnixMilli(), msOf(att.AdmittedAt))
	assert.Equal(e.T, []string{"attempt_admitted", "child_run_linked"}, lastTypes(e, s, "p", 2))

	c := getRun(e, s, child)
	assert.Equal(e.T, workflow.RunRunning, c.Status)
	assert.Equal(e.T, "p", c.RootID)
	assert.Equal(e.T, "p", c.ParentID)
	assert.Equal(e.T, 2, c.Depth)
	assert.Equal(e.T, workflow.Limits{NodeExecutionCap: 50, ConcurrencyCap: 4, CycleCap: workflow.DefaultCycleCap, RetryCap: workflow.DefaultRetryCap}, c.Limits, "zero limits inherit")
	require.NotNil(e.T, c.Authority)
	assert.Equal(e.T, *auth, *c.Authority, "the authority is inherited")
	assert.Equal(e.T, []string{"run_created"}, eventTypes(e, s, child))
	assert.Equal(e.T, int64(1), rawRun(e, "p").DescendantCount)
	link := e.load(e.B, backend.Lookup{Links: []string{child}}).Links[child]
	assert.Equal(e.T, backend.RunLink{ChildRunID: child, RootRunID: "p", Parent: battkey(p.Key()), Target: []byte(`{"v":1,"workflow":"w"}`),
		Depth: 2, CreatedMS: ms(20).UnixMilli()}, link)

	// A grandchild links to the same root and counts as its descendant.
	gc := spawn(e, s, child, "g", 30)
	g := getRun(e, s, gc)
	assert.Equal(e.T, "p", g.RootID)
	assert.Equal(e.T, child, g.ParentID)
	assert.Equal(e.T, 3, g.Depth)
	assert.Equal(e.T, int64(2), rawRun(e, "p").DescendantCount)
}

func caseChildRequiresPrepared(e *env) {
	s := store(e)
	mkRun(e, s, "p", workflow.Limits{}, nil)
	a, b, c := key("p", "n", "a"), key("p", "n", "b"), key("p", "n", "c")
	mkAct(e, s, a)
	mkAct(e, s, b)
	mkAct(e, s, c)
	nc := func(k workflow.ActivationKey) workflow.NewChildRun {
		return workflow.NewChildRun{Parent: attemptKey(k, 1), Target: json.RawMessage(`{"t":1}`)}
	}
	refuseChild(e, s, nc(a), 10, workflow.ErrIneligible, "child of an activation without an attempt", "p")
	// A low-level prepared attempt leaves its activation pending.
	_, err := s.Engine().PrepareAttempt(e.Ctx, workflow.AttemptIntent{Key: attemptKey(b, 1), SideEffect: workflow.ReadOnly, Intent: json.RawMessage(`{}`)}, ms(11))
	require.NoError(e.T, err)
	refuseChild(e, s, nc(b), 12, workflow.ErrIneligible, "child of a pending activation", "p")
	// An admitted parent is no longer prepared.
	// (Dispatch takes b too, at attempt 2: the low-level attempt 1 never took the pending gate.)
	admitOnly(e, s, newOwner(), ms(13), identity(a, 1), identity(b, 2), identity(c, 1))
	refuseChild(e, s, nc(a), 14, workflow.ErrIneligible, "child of an admitted attempt", "p")
	refuseChild(e, s, workflow.NewChildRun{Parent: attemptKey(c, 0), Target: json.RawMessage(`{}`)}, 14,
		workflow.ErrInvalidInput, "child of attempt 0", "p")
	refuseChild(e, s, workflow.NewChildRun{Parent: attemptKey(c, 1)}, 14,
		workflow.ErrInvalidInput, "child without a target", "p")
	refuseChild(e, s, workflow.NewChildRun{Parent: attemptKey(c, 1), Target: json.RawMessage(`{"a":1,"a":2}`)}, 14,
		workflow.ErrInvalidInput, "child with a duplicate key in its target", "p")
	refuseChild(e, s, workflow.NewChildRun{Parent: attemptKey(key("nope", "n", "a"), 1), Target: json.RawMessage(`{}`)}, 14,
		workflow.ErrNotFound, "child of an unknown parent run", "p", "nope")
	// Cancellation requested: the run takes no new work.
	mkAct(e, s, key("p", "n", "d"))
	pd := prep(e, s, key("p", "n", "d"), workflow.ReadOnly, ms(20))
	_, err = s.RequestCancellation(e.Ctx, "p", nil, ms(21))
	require.NoError(e.T, err)
	refuseChild(e, s, workflow.NewChildRun{Parent: pd.Key(), Target: json.RawMessage(`{}`)}, 22,
		workflow.ErrIneligible, "child after cancellation", "p")
}

func caseChildIdempotent(e *env) {
	s := store(e)
	mkRun(e, s, "p", workflow.Limits{}, nil)
	k := key("p", "n", "a")
	mkAct(e, s, k)
	prep(e, s, k, workflow.ReadOnly, ms(10))
	nc := workflow.NewChildRun{Parent: attemptKey(k, 1), Target: json.RawMessage(`{"b":2,"a":1}`)}
	child, created, err := s.CreateChildRun(e.Ctx, nc, ms(20))
	require.NoError(e.T, err)
	require.True(e.T, created)
	before := digest(e, "p", child)
	again, created, err := s.CreateChildRun(e.Ctx, nc, ms(21))
	require.NoError(e.T, err)
	assert.Equal(e.T, child, again)
	assert.False(e.T, created, "a repeat does not create")
	unchanged(e, before, "repeated child request", "p", child)
	nc.Target = json.RawMessage(`{ "a" : 1, "b" : 2 }`)
	s = e.newStore(e.Reopen())
	again, created, err = s.CreateChildRun(e.Ctx, nc, ms(22))
	require.NoError(e.T, err)
	assert.Equal(e.T, child, again, "an equivalent spelling of the target is the same child")
	assert.False(e.T, created)
	unchanged(e, before, "equivalent child request after reopen", "p", child)
	nc.Target = json.RawMessage(`{"a":1,"b":3}`)
	refuseChild(e, s, nc, 23, workflow.ErrIneligible, "a second target from the now-admitted parent", "p", child)
}

func caseChildLimits(e *env) {
	s := store(e)
	parent := workflow.Limits{NodeExecutionCap: 10, ConcurrencyCap: 4, CycleCap: 5, RetryCap: 2}
	mkRun(e, s, "p", parent, nil)
	k := key("p", "n", "a")
	mkAct(e, s, k)
	prep(e, s, k, workflow.ReadOnly, ms(10))
	for _, l := range []workflow.RunLimits{
		{NodeExecutionCap: 11}, {ConcurrencyCap: 5}, {CycleCap: 6}, {RetryCap: workflow.RetryCap(3)},
		{NodeExecutionCap: -1}, {ConcurrencyCap: 1, RetryCap: workflow.RetryCap(4)},
	} {
		refuseChild(e, s, workflow.NewChildRun{Parent: attemptKey(k, 1), Target: json.RawMessage(`{}`), Limits: l}, 20,
			workflow.ErrInvalidInput, "limits "+showLimits(l)+" wider than the parent's", "p")
	}
	assert.Equal(e.T, workflow.AttemptPrepared, getAttempt(e, s, k, 1).Status)
	child, _, err := s.CreateChildRun(e.Ctx, workflow.NewChildRun{Parent: attemptKey(k, 1), Target: json.RawMessage(`{}`),
		Limits: workflow.RunLimits{NodeExecutionCap: 5, ConcurrencyCap: 4, RetryCap: workflow.RetryCap(1)}}, ms(21))
	require.NoError(e.T, err)
	assert.Equal(e.T, workflow.Limits{NodeExecutionCap: 5, ConcurrencyCap: 4, CycleCap: 5, RetryCap: 1}, getRun(e, s, child).Limits)
}

// showLimits renders requested limits, the retry cap by value.
func showLimits(l workflow.RunLimits) string {
	rc := "unset"
	if l.RetryCap != nil {
		rc = fmt.Sprint(*l.RetryCap)
	}
	return fmt.Sprintf("{NodeExecutionCap:%d ConcurrencyCap:%d CycleCap:%d RetryCap:%s}", l.NodeExecutionCap, l.ConcurrencyCap, l.CycleCap, rc)
}

func caseChildDepth(e *env) {
	s := store(e)
	mkRun(e, s, "d", workflow.Limits{}, nil)
	cur := "d"
	for depth := int64(2); depth <= workflow.MaxRunDepth; depth++ {
		cur = spawn(e, s, cur, "a", depth*10)
		assert.Equal(e.T, int(depth), getRun(e, s, cur).Depth)
	}
	assert.Equal(e.T, int64(workflow.MaxRunDepth-1), rawRun(e, "d").DescendantCount)
	k := key(cur, "n", "a")
	mkAct(e, s, k)
	prep(e, s, k, workflow.ReadOnly, ms(100))
	refuseChild(e, s, workflow.NewChildRun{Parent: attemptKey(k, 1), Target: json.RawMessage(`{}`)}, 101,
		workflow.ErrIneligible, fmt.Sprintf("child at depth %d", workflow.MaxRunDepth+1), "d", cur)
	assert.Equal(e.T, workflow.AttemptPrepared, getAttempt(e, s, k, 1).Status)
}

func caseChildDescendants(e *env) {
	s := store(e)
	mkRun(e, s, "q", workflow.Limits{ConcurrencyCap: 100}, nil)
	for i := range workflow.MaxDescendants {
		spawn(e, s, "q", fmt.Sprintf("a%02d", i), 10)
	}
	assert.Equal(e.T, int64(workflow.MaxDescendants), rawRun(e, "q").DescendantCount)
	k := key("q", "n", "extra")
	mkAct(e, s, k)
	prep(e, s, k, workflow.ReadOnly, ms(20))
	refuseChild(e, s, workflow.NewChildRun{Parent: attemptKey(k, 1), Target: json.RawMessage(`{}`)}, 21,
		workflow.ErrIneligible, fmt.Sprintf("descendant %d", workflow.MaxDescendants+1), "q")
	n := scan(e, e.B, func(r backend.ReadTx) ([]backend.RunLink, error) {
		return r.ChildRuns(e.Ctx, backend.ChildRunQuery{RootRunID: "q", Limit: 1000})
	})
	assert.Len(e.T, n, workflow.MaxDescendants)
}

func caseChildRootExhausted(e *env) {
	s := store(e)
	mkRun(e, s, "p", workflow.Limits{NodeExecutionCap: 1}, nil)
	k := key("p", "n", "a")
	mkAct(e, s, k)
	prep(e, s, k, workflow.ReadOnly, ms(10))
	refuseChild(e, s, workflow.NewChildRun{Parent: attemptKey(k, 1), Target: json.RawMessage(`{}`)}, 11,
		workflow.ErrRootAllowanceExhausted, "child of a root whose last unit the parent attempt used", "p")
}
