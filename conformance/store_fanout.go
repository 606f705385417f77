package conformance

import (
	"encoding/json"
	"fmt"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/workflow"
)

func fanoutCases() []testCase {
	return []testCase{
		{Name: "fanout_members_are_bounded_ordered_distinct_and_restart_safe", Run: caseFanOutBounded},
		{Name: "fanout_re_add_is_idempotent_and_a_different_group_conflicts", Run: caseFanOutIdempotent},
		{Name: "fanout_retirement_blocks_prepare_handoff_owner_admission_and_dispatch", Run: caseFanOutRetirement},
		{Name: "fanout_settling_retirement_cancels_unstarted_members", Run: caseFanOutSettleRetirement},
	}
}

func memberInputs(n int) []json.RawMessage {
	out := make([]json.RawMessage, n)
	for i := range out {
		out[i] = json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))
	}
	return out
}

// fanOut creates run (with auth), a controller activation "ctl"/"c" and a
// group of n members at most max at a time. The controller is unsupported
// by owners from fanOutOwner.
func fanOut(e *env, s *workflow.Store, run string, auth *workflow.Authority, n int, max int64) (workflow.ActivationKey, []workflow.ActivationKey) {
	e.T.Helper()
	mkRun(e, s, run, workflow.Limits{}, auth)
	c := key(run, "ctl", "c")
	mkAct(e, s, c)
	created, err := s.AddFanOut(e.Ctx, workflow.NewFanOut{Controller: c, Members: memberInputs(n), MaxConcurrency: max}, ms(2))
	require.NoError(e.T, err)
	require.True(e.T, created)
	members := make([]workflow.ActivationKey, n)
	for i := range members {
		members[i] = workflow.MemberKey(c, int64(i))
	}
	return c, members
}

func fanOutOwner() *owner {
	o := newOwner()
	o.unsupported["c"] = true
	return o
}

func memberStatuses(e *env, s *workflow.Store, members []workflow.ActivationKey) []workflow.ActivationStatus {
	e.T.Helper()
	out := make([]workflow.ActivationStatus, len(members))
	for i, m := range members {
		out[i] = getAct(e, s, m).Status
	}
	return out
}

const (
	stPend = workflow.ActivationPending
	stWait = workflow.ActivationWaiting
	stRun  = workflow.ActivationRunning
	stDone = workflow.ActivationCompleted
	stCanc = workflow.ActivationCancelled
)

func caseFanOutBounded(e *env) {
	s := store(e)
	c, m := fanOut(e, s, "r", nil, 5, 2)
	ids := map[string]bool{}
	idents := map[string]bool{}
	for i, k := range m {
		a := getAct(e, s, k)
		assert.Equal(e.T, fmt.Sprintf("ctl::member::%d", i), k.NodeID)
		assert.Equal(e.T, workflow.FanOutMemberID("r", "c", int64(i)), k.ActivationID)
		require.NotNil(e.T, a.FanOut)
		assert.Equal(e.T, workflow.FanOutMember{Controller: c, Index: int64(i)}, *a.FanOut)
		assert.JSONEq(e.T, fmt.Sprintf(`{"i":%d}`, i), string(a.Input))
		ids[k.ActivationID] = true
		idents[identity(k, 1)] = true
	}
	assert.Len(e.T, ids, 5, "distinct member activation ids")
	assert.Len(e.T, idents, 5, "distinct member identities")
	assert.Equal(e.T, []workflow.ActivationStatus{stPend, stPend, stWait, stWait, stWait}, memberStatuses(e, s, m))
	g := getGroup(e, c)
	assert.Equal(e.T, int64(5), g.Size)
	assert.Equal(e.T, int64(2), g.MaxConcurrency)
	assert.Equal(e.T, int64(2), g.Promoted)
	assert.Equal(e.T, int64(0), g.Settled)
	assert.False(e.T, g.Retiring)

	s = e.newStore(e.Reopen())
	assert.Equal(e.T, []workflow.ActivationStatus{stPend, stPend, stWait, stWait, stWait}, memberStatuses(e, s, m), "after reopen")
	o := fanOutOwner()
	sum := admitOnly(e, s, o, ms(10), identity(m[0], 1), identity(m[1], 1))
	assert.Equal(e.T, []workflow.ActivationKey{c}, sum.Unsupported)
	assert.Empty(e.T, sum.Raced, "waiting members are not discovered")
	assert.Equal(e.T, []string{identity(m[0], 1), identity(m[1], 1)}, o.order, "admitted in index order")

	observe(e, s, identity(m[0], 1), obs(workflow.ObservedSucceeded), ms(20))
	assert.Equal(e.T, []workflow.ActivationStatus{stDone, stRun, stPend, stWait, stWait}, memberStatuses(e, s, m), "member 2 promoted")
	s = e.newStore(e.Reopen())
	admitOnly(e, s, o, ms(30), identity(m[2], 1))
	observe(e, s, identity(m[1], 1), obs(workflow.ObservedSucceeded), ms(40))
	observe(e, s, identity(m[2], 1), obs(workflow.ObservedSucceeded), ms(41))
	assert.Equal(e.T, []workflow.ActivationStatus{stDone, stDone, stDone, stPend, stPend}, memberStatuses(e, s, m))
	admitOnly(e, s, o, ms(50), identity(m[3], 1), identity(m[4], 1))
	var promoted []string
	for _, p := range payloadsOf(e, s, "r", "fan_out_member_promoted") {
		var v struct {
			Index int64 `json:"member_index"`
		}
		require.NoError(e.T, json.Unmarshal([]byte(p), &v))
		promoted = append(promoted, fmt.Sprint(v.Index))
	}
	assert.Equal(e.T, []string{"2", "3", "4"}, promoted, "promotion in index order")
	g = getGroup(e, c)
	assert.Equal(e.T, int64(5), g.Promoted)
	assert.Equal(e.T, int64(3), g.Settled)
	assert.Len(e.T, attemptsOf(e, s, "r"), 5)
}

func caseFanOutIdempotent(e *env) {
	s := store(e)
	c, m := fanOut(e, s, "r", nil, 3, 2)
	before := digest(e, "r")
	created, err := s.AddFanOut(e.Ctx, workflow.NewFanOut{Controller: c, Members: memberInputs(3), MaxConcurrency: 2}, ms(3))
	require.NoError(e.T, err)
	assert.False(e.T, created, "identical re-add")
	unchanged(e, before, "identical re-add", "r")
	s = e.newStore(e.Reopen())
	created, err = s.AddFanOut(e.Ctx, workflow.NewFanOut{Controller: c, Members: memberInputs(3), MaxConcurrency: 2}, ms(4))
	require.NoError(e.T, err)
	assert.False(e.T, created, "identical re-add after reopen")
	unchanged(e, before, "identical re-add after reopen", "r")
	for _, nf := range []workflow.NewFanOut{
		{Controller: c, Members: memberInputs(3), MaxConcurrency: 3},
		{Controller: c, Members: memberInputs(4), MaxConcurrency: 2},
		{Controller: c, Members: []json.RawMessage{[]byte(`{"i":9}`), []byte(`{"i":1}`), []byte(`{"i":2}`)}, MaxConcurrency: 2},
		{Controller: c, Members: []json.RawMessage{[]byte(`{"i":0}`), []byte(`{"i":1}`), []byte(`{"i":9}`)}, MaxConcurrency: 2},
		{Controller: c, Members: memberInputs(3), MaxConcurrency: 2, Effect: workflow.Mutating},
		{Controller: c, Members: memberInputs(3), MaxConcurrency: 2, Claims: []workflow.ResourceClaim{claim("res", workflow.LeaseRead)}},
	} {
		_, err := s.AddFanOut(e.Ctx, nf, ms(5))
		requireIs(e.T, err, workflow.ErrConflict, "different group %d members max %d", len(nf.Members), nf.MaxConcurrency)
		unchanged(e, before, "conflicting re-add", "r")
	}
	_, err = s.AddFanOut(e.Ctx, workflow.NewFanOut{Controller: key("r", "ctl", "missing"), Members: memberInputs(1), MaxConcurrency: 1}, ms(5))
	requireIs(e.T, err, workflow.ErrNotFound, "unknown controller")
	for _, max := range []int64{0, -1} {
		_, err = s.AddFanOut(e.Ctx, workflow.NewFanOut{Controller: c, Members: memberInputs(1), MaxConcurrency: max}, ms(5))
		requireIs(e.T, err, workflow.ErrInvalidInput, "max concurrency %d", max)
	}
	_, err = s.AddFanOut(e.Ctx, workflow.NewFanOut{Controller: c, MaxConcurrency: 1}, ms(5))
	requireIs(e.T, err, workflow.ErrInvalidInput, "no members")
	unchanged(e, before, "invalid fan-outs", "r")
	assert.Equal(e.T, []workflow.ActivationStatus{stPend, stPend, stWait}, memberStatuses(e, s, m))
}

func caseFanOutRetirement(e *env) {
	s := store(e)
	auth := authority(1, "a")
	c, m := fanOut(e, s, "r", auth, 3, 3)
	p := prep(e, s, m[0], workflow.Mutating, ms(10))
	require.NoError(e.T, s.RetireFanOut(e.Ctx, c, ms(11)))
	assert.True(e.T, getGroup(e, c).Retiring)
	assert.Equal(e.T, 1, countType(eventTypes(e, s, "r"), "fan_out_retirement_requested"))
	before := digest(e, "r")
	require.NoError(e.T, s.RetireFanOut(e.Ctx, c, ms(12)), "recording it twice")
	unchanged(e, before, "second retirement", "r")

	got, err := s.Engine().PreparePending(e.Ctx, m[1], workflow.Plan{SideEffect: workflow.ReadOnly, Intent: json.RawMessage(`{}`)}, ms(13))
	require.NoError(e.T, err)
	assert.Nil(e.T, got, "no new attempt while retirement is pending")
	unchanged(e, before, "prepare while retiring", "r")
	requireIs(e.T, s.Engine().Handoff(e.Ctx, p.Key(), nil, ms(14)), workflow.ErrIneligible, "handoff of a prepared member")
	unchanged(e, before, "handoff while retiring", "r")
	_, err = s.Engine().CheckOwnerAdmission(e.Ctx, workflow.OwnerAdmission{Key: p.Key(), Identity: p.Identity, Intent: p.Intent}, *auth)
	requireIs(e.T, err, workflow.ErrIneligible, "receipt-less owner admission")
	o := fanOutOwner()
	sum := admitOnly(e, s, o, ms(15))
	assert.Empty(e.T, sum.Raced)
	assert.Empty(e.T, sum.Exhausted)
	assert.Zero(e.T, o.totalCalls(), "the owner is never called for the group")
	unchanged(e, before, "dispatch while retiring", "r")
	s = e.newStore(e.Reopen())
	got, err = s.Engine().PreparePending(e.Ctx, m[2], workflow.Plan{SideEffect: workflow.ReadOnly, Intent: json.RawMessage(`{}`)}, ms(16))
	require.NoError(e.T, err)
	assert.Nil(e.T, got, "retirement intent survives restart")
	unchanged(e, before, "prepare after reopen", "r")
}

func caseFanOutSettleRetirement(e *env) {
	s := store(e)
	c, m := fanOut(e, s, "r", nil, 4, 3)
	before := digest(e, "r")
	requireIs(e.T, s.Engine().SettleFanOutRetirement(e.Ctx, c, ms(5)), workflow.ErrIneligible, "no retirement pending")
	unchanged(e, before, "settling without retirement", "r")
	p := prep(e, s, m[0], workflow.ReadOnly, ms(10))
	require.NoError(e.T, s.RetireFanOut(e.Ctx, c, ms(11)))
	require.NoError(e.T, s.Engine().SettleFanOutRetirement(e.Ctx, c, ms(12)))
	assert.Equal(e.T, []workflow.ActivationStatus{stRun, stCanc, stCanc, stCanc}, memberStatuses(e, s, m),
		"pending and waiting members cancelled; the started one keeps its attempt")
	assert.Equal(e.T, workflow.AttemptPrepared, getAttempt(e, s, m[0], 1).Status)
	g := getGroup(e, c)
	assert.False(e.T, g.Retiring)
	assert.Equal(e.T, ms(12).UnixMilli(), g.RetiredMS)
	assert.Equal(e.T, int64(3), g.Settled)
	assert.Equal(e.T, 1, countType(eventTypes(e, s, "r"), "fan_out_retired"))
	for _, k := range m[1:] {
		_, err := s.GetAttempt(e.Ctx, identity(k, 1))
		requireIs(e.T, err, workflow.ErrNotFound, "a cancelled member never got an attempt")
	}
	o := fanOutOwner()
	admitOnly(e, s, o, ms(13))
	assert.Zero(e.T, o.totalCalls(), "cancelled members are never dispatched")
	require.NoError(e.T, s.Engine().Handoff(e.Ctx, p.Key(), nil, ms(14)), "after settlement the started member may proceed")
}
