package conformance

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/event"
	"github.com/wfstore/wfstore/workflow"
)

// Owner JSON near its limits: every document an event also carries
// (intent, receipt, output, child target) is stored or refused before
// anything is written, and an owner's value that cannot be stored settles
// its attempt as repair_required once, never panicking or looping.
func payloadCases() []testCase {
	return []testCase{
		{Name: "oversized_owner_receipt_settles_repair_required_once", Run: caseOversizedReceipt},
		{Name: "owner_receipt_at_the_limit_is_admitted_with_the_longest_ids", Run: caseReceiptAtLimit},
		{Name: "owner_receipt_from_lookup_that_cannot_be_stored_settles_repair_required_once", Run: caseLookupUnstorable},
		{Name: "owner_output_at_the_limit_is_stored_or_refused_never_panics", Run: caseOutputAtLimit},
		{Name: "owner_intent_and_child_target_at_the_limit_are_stored_or_refused", Run: caseIntentTargetAtLimit},
	}
}

// longID is a 512-byte id of control characters (each escaped to six bytes
// in canonical JSON) ending in tag: the largest envelope an id can make.
func longID(tag string) string {
	return strings.Repeat("\x01", workflow.MaxIDBytes-len(tag)) + tag
}

// sizedJSONString is a JSON string whose canonical form is n bytes long.
func sizedJSONString(n int) json.RawMessage {
	return json.RawMessage(`"` + strings.Repeat("x", n-2) + `"`)
}

// nestedJSON is d nested arrays around 0 (depth d).
func nestedJSON(d int) json.RawMessage {
	return json.RawMessage(strings.Repeat("[", d) + "0" + strings.Repeat("]", d))
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// repairEvents decodes the attempt_repair_required events of run.
func repairEvents(e *env, s *workflow.Store, run string) []event.AttemptRepairRequiredPayload {
	e.T.Helper()
	evsPage, err := s.Events(e.Ctx, workflow.EventQuery{RunID: run, Limit: workflow.MaxPageLimit})
	require.NoError(e.T, err)
	evs := evsPage.Items
	var out []event.AttemptRepairRequiredPayload
	for _, ev := range evs {
		if ev.Type != event.AttemptRepairRequired {
			continue
		}
		p, err := ev.Decode()
		require.NoError(e.T, err)
		out = append(out, p.(event.AttemptRepairRequiredPayload))
	}
	return out
}

// requireUnstorable requires exactly one repair event for identity,
// describing doc as the unstorable value.
func requireUnstorable(e *env, s *workflow.Store, run, identity, reason, document, problem string, doc []byte) {
	e.T.Helper()
	evs := repairEvents(e, s, run)
	require.Len(e.T, evs, 1, "one settlement event")
	ev := evs[0]
	assert.Equal(e.T, identity, ev.DispatchIdentity)
	assert.Equal(e.T, reason, ev.Reason)
	require.NotNil(e.T, ev.Unstorable, "the event records what could not be stored")
	u := *ev.Unstorable
	assert.NotEmpty(e.T, u.Detail)
	u.Detail = ""
	assert.Equal(e.T, event.Unstorable{
		Document: document, Problem: problem,
		LimitBytes: workflow.MaxOwnerJSONBytes, LimitDepth: workflow.MaxOwnerJSONDepth,
		SizeBytes: int64(len(doc)), SHA256: sha256Hex(doc),
	}, u)
}

func caseOversizedReceipt(e *env) {
	s := store(e)
	rid := longID("r")
	mkRun(e, s, rid, workflow.Limits{}, nil)
	k := key(rid, longID("n"), longID("a"))
	mkAct(e, s, k)
	mkRun(e, s, "other", workflow.Limits{}, nil)
	ko := key("other", "n", "b")
	mkAct(e, s, ko)
	id := identity(k, 1)
	big := sizedJSONString(workflow.MaxJSONBytes) // valid JSON, over the owner limit
	o := newOwner()
	o.effect = workflow.Mutating
	o.receipt = func(p workflow.PreparedDispatch) json.RawMessage {
		if p.Identity == id {
			return big
		}
		return json.RawMessage(`{"ok":1}`)
	}
	sum, err := s.Dispatch(e.Ctx, o, workflow.DispatchOptions{Limit: workflow.MaxPageLimit}, ms(10))
	requireIs(e.T, err, workflow.ErrOwner, "an unstorable receipt is the owner's failure")
	requireIs(e.T, err, workflow.ErrTooLarge, "and says why")
	assert.False(e.T, errors.Is(err, workflow.ErrInvalidInput), "not the caller's invalid argument: %v", err)
	assert.NotContains(e.T, refIdentities(sum.Admitted), id)
	a := getAttempt(e, s, k, 1)
	assert.Equal(e.T, workflow.AttemptRepairRequired, a.Status)
	assert.Nil(e.T, a.Receipt, "nothing of the receipt is stored")
	assert.Equal(e.T, workflow.RunRepairRequired, getRun(e, s, rid).Status)
	requireUnstorable(e, s, rid, id, event.RepairReceiptNotStorable, "dispatch receipt", "too_large", big)

	// Nothing asks the owner again or settles twice; other work goes on.
	before := digest(e, rid)
	o.receipts[id] = big
	for i := range 2 {
		dispatch(e, s, o, workflow.DispatchOptions{}, ms(20+int64(i)))
		rs, err := s.Engine().ReconcilePrepared(e.Ctx, workflow.ReconcileOptions{Lookup: o}, ms(30))
		require.NoError(e.T, err)
		assert.Empty(e.T, rs.RepairRequired)
		_, err = s.Engine().Redispatch(e.Ctx, o, workflow.ReconcileOptions{}, ms(31))
		require.NoError(e.T, err)
	}
	unchanged(e, before, "passes after the settlement", rid)
	assert.Equal(e.T, 1, o.callCount(id), "the owner is asked once")
	assert.Equal(e.T, workflow.AttemptAdmitted, getAttempt(e, s, ko, 1).Status, "the store admits other work")

	// The same receipt given directly is refused, state unchanged; a
	// storable late receipt is the proof the repair needs.
	requireIs(e.T, s.Engine().PersistReceipt(e.Ctx, workflow.OwnerReceipt{Key: attemptKey(k, 1), Receipt: big, Authority: nil}, ms(40)), workflow.ErrTooLarge)
	unchanged(e, before, "refused late receipt", rid)
	require.NoError(e.T, s.Engine().PersistReceipt(e.Ctx, workflow.OwnerReceipt{Key: attemptKey(k, 1), Receipt: json.RawMessage(`{"late":1}`), Authority: nil}, ms(41)))
	assert.Equal(e.T, workflow.AttemptAdmitted, getAttempt(e, s, k, 1).Status)
	assert.Equal(e.T, workflow.RunRunning, getRun(e, s, rid).Status)
}

func caseReceiptAtLimit(e *env) {
	s := store(e)
	rid := longID("r")
	mkRun(e, s, rid, workflow.Limits{}, nil)
	docs := map[string]json.RawMessage{
		longID("size"):      sizedJSONString(workflow.MaxOwnerJSONBytes),
		longID("depth"):     nestedJSON(workflow.MaxOwnerJSONDepth),
		longID("escapes"):   json.RawMessage(`"` + strings.Repeat(`\u0001`, (workflow.MaxOwnerJSONBytes-2)/6) + `"`),
		longID("unescaped"): json.RawMessage(`"` + strings.Repeat(`\u00e9`, 1000) + `"`),
	}
	want := map[string]json.RawMessage{}
	for a, doc := range docs {
		k := key(rid, longID("n"), a)
		mkAct(e, s, k)
		want[identity(k, 1)] = doc
	}
	o := newOwner()
	o.receipt = func(p workflow.PreparedDispatch) json.RawMessage { return want[p.Identity] }
	sum := dispatch(e, s, o, workflow.DispatchOptions{}, ms(10))
	assert.Len(e.T, sum.Admitted, len(docs), "every receipt within the limits is admitted")
	for id, doc := range want {
		r, err := s.Engine().DispatchReceipt(e.Ctx, id)
		require.NoError(e.T, err)
		assert.LessOrEqual(e.T, len(r), workflow.MaxOwnerJSONBytes)
		if len(doc) == workflow.MaxOwnerJSONBytes {
			assert.Equal(e.T, string(doc), string(r), "stored as canonical, at the limit")
		}
	}
	assert.Len(e.T, payloadsOf(e, s, rid, "attempt_admitted"), len(docs), "every event carries its receipt")
}

func caseLookupUnstorable(e *env) {
	s := store(e)
	rid := longID("r")
	mkRun(e, s, rid, workflow.Limits{}, nil)
	o := newOwner()
	rows := []struct {
		act, problem string
		doc          json.RawMessage
	}{
		{"big", "too_large", sizedJSONString(workflow.MaxJSONBytes)},
		{"deep", "too_deep", nestedJSON(workflow.MaxJSONDepth)},
		{"invalid", "invalid", json.RawMessage(`{"a":`)},
	}
	var ids []string
	for _, r := range rows {
		k := key(rid, longID("n"), longID(r.act))
		mkAct(e, s, k)
		p := prep(e, s, k, workflow.ReadOnly, ms(10))
		require.NoError(e.T, s.Engine().Handoff(e.Ctx, p.Key(), nil, ms(11)))
		o.receipts[p.Identity] = r.doc
		ids = append(ids, p.Identity)
	}
	sum, err := s.Engine().ReconcilePrepared(e.Ctx, workflow.ReconcileOptions{Lookup: o}, ms(20))
	require.NoError(e.T, err)
	assert.ElementsMatch(e.T, ids, refIdentities(sum.RepairRequired), "read-only or not, settled for repair")
	assert.Empty(e.T, sum.Recovered)
	assert.Empty(e.T, sum.SafeReadOnly, "never redispatched: the owner would return the same receipt")
	evs := repairEvents(e, s, rid)
	require.Len(e.T, evs, len(rows))
	byID := map[string]event.AttemptRepairRequiredPayload{}
	for _, ev := range evs {
		byID[ev.DispatchIdentity] = ev
	}
	for i, r := range rows {
		ev := byID[ids[i]]
		require.NotNil(e.T, ev.Unstorable, r.act)
		assert.Equal(e.T, event.RepairReceiptNotStorable, ev.Reason)
		assert.Equal(e.T, r.problem, ev.Unstorable.Problem, r.act)
		assert.Equal(e.T, int64(len(r.doc)), ev.Unstorable.SizeBytes, r.act)
		assert.Equal(e.T, sha256Hex(r.doc), ev.Unstorable.SHA256, r.act)
	}
	before := digest(e, rid)
	for i := range 2 {
		sum, err = s.Engine().ReconcilePrepared(e.Ctx, workflow.ReconcileOptions{Lookup: o}, ms(30+int64(i)))
		require.NoError(e.T, err)
		assert.Empty(e.T, sum.RepairRequired)
		_, err = s.Engine().Redispatch(e.Ctx, o, workflow.ReconcileOptions{}, ms(32))
		require.NoError(e.T, err)
	}
	unchanged(e, before, "later passes", rid)
	assert.Zero(e.T, o.totalCalls(), "the owner is never dispatched again")
	// An operator resolves them like any repair.
	for _, id := range ids {
		require.NoError(e.T, s.Repair(e.Ctx, workflow.RepairRequest{Identity: id, Action: workflow.RepairConfirmFailed}, ms(40)))
	}
	assert.Equal(e.T, workflow.RunFailed, getRun(e, s, rid).Status)
}

func caseOutputAtLimit(e *env) {
	s := store(e)
	rid := longID("r")
	mkRun(e, s, rid, workflow.Limits{}, nil)
	acts := []string{"size", "depth", "refused", "pass"}
	for _, a := range acts {
		mkAct(e, s, key(rid, longID("n"), longID(a)))
	}
	dispatch(e, s, newOwner(), workflow.DispatchOptions{}, ms(10))
	id := func(a string) string { return identity(key(rid, longID("n"), longID(a)), 1) }

	// At the limits: stored, in the activation and in the event.
	exact := sizedJSONString(workflow.MaxOwnerJSONBytes)
	observe(e, s, id("size"), workflow.Observation{Kind: workflow.ObservedSucceeded, Output: exact}, ms(20))
	assert.Equal(e.T, string(exact), string(getAct(e, s, key(rid, longID("n"), longID("size"))).Output))
	observe(e, s, id("depth"), workflow.Observation{Kind: workflow.ObservedSucceeded, Output: nestedJSON(workflow.MaxOwnerJSONDepth)}, ms(21))
	assert.Len(e.T, payloadsOf(e, s, rid, "attempt_succeeded"), 2)

	// Over them, given directly: refused, state unchanged.
	before := digest(e, rid)
	for _, r := range []struct {
		name string
		doc  json.RawMessage
		want error
	}{
		{"limit+1 bytes", sizedJSONString(workflow.MaxOwnerJSONBytes + 1), workflow.ErrTooLarge},
		{"1 MiB", sizedJSONString(workflow.MaxJSONBytes), workflow.ErrTooLarge},
		{"limit+1 deep", nestedJSON(workflow.MaxOwnerJSONDepth + 1), workflow.ErrInvalidInput},
		{"10000 deep", nestedJSON(workflow.MaxJSONDepth), workflow.ErrInvalidInput},
	} {
		_, err := s.ApplyObservation(e.Ctx, id("refused"), workflow.Observation{Kind: workflow.ObservedSucceeded, Output: r.doc}, ms(22))
		requireIs(e.T, err, r.want, r.name)
		unchanged(e, before, "refused output "+r.name, rid)
	}
	err := s.Repair(e.Ctx, workflow.RepairRequest{Identity: id("refused"), Action: workflow.RepairConfirmSucceeded, Output: sizedJSONString(workflow.MaxOwnerJSONBytes + 1)}, ms(22))
	requireIs(e.T, err, workflow.ErrTooLarge, "repair output")
	unchanged(e, before, "refused repair output", rid)

	// From the observer: the attempt settles for repair, once.
	big := sizedJSONString(workflow.MaxJSONBytes)
	ob := newObserver()
	ob.answer[id("pass")] = workflow.Observation{Kind: workflow.ObservedSucceeded, Output: big}
	sum := receiptPass(e, s, ob, workflow.ReceiptPassOptions{RunID: rid}, 30)
	out, ok := outcomeOf(sum, id("pass"))
	require.True(e.T, ok)
	assert.Equal(e.T, workflow.AttemptRepairRequired, out.Status)
	requireUnstorable(e, s, rid, id("pass"), event.RepairObservationNotStorable, "observation output", "too_large", big)
	before = digest(e, rid)
	sum = receiptPass(e, s, ob, workflow.ReceiptPassOptions{RunID: rid}, 31)
	_, ok = outcomeOf(sum, id("pass"))
	assert.False(e.T, ok, "a settled attempt is not asked about again")
	unchanged(e, before, "a second receipt pass", rid)
	assert.Equal(e.T, workflow.AttemptRunning, getAttempt(e, s, key(rid, longID("n"), longID("refused")), 1).Status,
		"the attempt whose output was refused is observed as before")
}

func caseIntentTargetAtLimit(e *env) {
	s := store(e)
	rid := longID("r")
	mkRun(e, s, rid, workflow.Limits{}, nil)
	k := func(a string) workflow.ActivationKey { return key(rid, longID("n"), longID(a)) }
	for _, a := range []string{"size", "depth", "refused", "parent1", "parent2", "parent3"} {
		mkAct(e, s, k(a))
	}
	plan := func(doc json.RawMessage) workflow.Plan {
		return workflow.Plan{SideEffect: workflow.Mutating, Intent: doc}
	}
	p, err := s.Engine().PreparePending(e.Ctx, k("size"), plan(sizedJSONString(workflow.MaxOwnerJSONBytes)), ms(10))
	require.NoError(e.T, err)
	require.NotNil(e.T, p)
	p, err = s.Engine().PreparePending(e.Ctx, k("depth"), plan(nestedJSON(workflow.MaxOwnerJSONDepth)), ms(10))
	require.NoError(e.T, err)
	require.NotNil(e.T, p)
	assert.Len(e.T, payloadsOf(e, s, rid, "attempt_prepared"), 2)

	over := []struct {
		name string
		doc  json.RawMessage
		want error
	}{
		{"limit+1 bytes", sizedJSONString(workflow.MaxOwnerJSONBytes + 1), workflow.ErrTooLarge},
		{"1 MiB", sizedJSONString(workflow.MaxJSONBytes), workflow.ErrTooLarge},
		{"limit+1 deep", nestedJSON(workflow.MaxOwnerJSONDepth + 1), workflow.ErrInvalidInput},
		{"10000 deep", nestedJSON(workflow.MaxJSONDepth), workflow.ErrInvalidInput},
	}
	before := digest(e, rid)
	for _, r := range over {
		_, err := s.Engine().PreparePending(e.Ctx, k("refused"), plan(r.doc), ms(11))
		requireIs(e.T, err, r.want, "intent "+r.name)
		unchanged(e, before, "refused intent "+r.name, rid)
	}
	// An owner planning one: refused before anything is written.
	o := newOwner()
	o.intent = func(workflow.Activation) json.RawMessage { return sizedJSONString(workflow.MaxJSONBytes) }
	_, err = s.Dispatch(e.Ctx, o, workflow.DispatchOptions{RunID: rid}, ms(12))
	requireIs(e.T, err, workflow.ErrTooLarge, "planned intent")
	unchanged(e, before, "refused planned intent", rid)
	assert.Zero(e.T, o.totalCalls())

	// Child targets: at the limits created, over them refused.
	parents := []string{"parent1", "parent2", "parent3"}
	for _, a := range parents {
		prep(e, s, k(a), workflow.ReadOnly, ms(13))
	}
	_, created, err := s.CreateChildRun(e.Ctx, workflow.NewChildRun{Parent: attemptKey(k("parent1"), 1), Target: sizedJSONString(workflow.MaxOwnerJSONBytes)}, ms(14))
	require.NoError(e.T, err)
	require.True(e.T, created)
	_, created, err = s.CreateChildRun(e.Ctx, workflow.NewChildRun{Parent: attemptKey(k("parent2"), 1), Target: nestedJSON(workflow.MaxOwnerJSONDepth)}, ms(14))
	require.NoError(e.T, err)
	require.True(e.T, created)
	before = digest(e, rid)
	for _, r := range over {
		_, _, err := s.CreateChildRun(e.Ctx, workflow.NewChildRun{Parent: attemptKey(k("parent3"), 1), Target: r.doc}, ms(15))
		requireIs(e.T, err, r.want, "child target "+r.name)
		unchanged(e, before, "refused child target "+r.name, rid)
	}
}
