package conformance

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/workflow"
)

func inputCases() []testCase {
	return []testCase{
		{Name: "input_invalid_ids_are_rejected_at_every_entry", Run: caseInputBadIDs},
		{Name: "input_boundary_ids_are_accepted_and_kept_as_given", Run: caseInputGoodIDs},
		{Name: "input_invalid_json_is_rejected_with_state_unchanged", Run: caseInputBadJSON},
		{Name: "input_times_at_or_before_the_epoch_are_rejected", Run: caseInputTimes},
		{Name: "input_page_limits_above_1000_or_negative_are_rejected", Run: caseInputLimits},
		{Name: "input_create_run_is_idempotent_only_when_identical", Run: caseInputCreateRunIdempotent},
		{Name: "input_add_activation_is_idempotent_only_when_identical", Run: caseInputAddActivationIdempotent},
		{Name: "input_closed_backend_reports_err_closed_through_the_store", Run: caseInputClosed},
	}
}

var badIDs = []struct{ name, id string }{
	{"empty", ""},
	{"513 bytes", strings.Repeat("x", workflow.MaxIDBytes+1)},
	{"513 bytes of two-byte runes", strings.Repeat("é", 256) + "x"},
	{"spaces only", "   "},
	{"em space only", "\u2003"},
	{"tab and newline only", "\t\n"},
	{"invalid UTF-8", "a\xffb"},
	{"truncated rune", "\xc3"},
	{"NUL", "a\x00b"},
}

func caseInputBadIDs(e *env) {
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{}, nil)
	mkAct(e, s, key("r", "n", "a"))
	before := digest(e, "r")
	for _, b := range badIDs {
		_, err := s.CreateRun(e.Ctx, workflow.NewRun{ID: b.id}, ms(1))
		requireIs(e.T, err, workflow.ErrInvalidInput, "run id %s", b.name)
		for _, k := range []workflow.ActivationKey{key(b.id, "n", "x"), key("r", b.id, "x"), key("r", "n", b.id)} {
			_, err = s.AddActivation(e.Ctx, workflow.NewActivation{Key: k, Input: json.RawMessage(`{}`)}, ms(2))
			requireIs(e.T, err, workflow.ErrInvalidInput, "activation key %s: %q", b.name, k)
		}
		_, err = s.AddActivation(e.Ctx, workflow.NewActivation{Key: key("r", "n", "x"), Input: json.RawMessage(`{}`),
			Claims: []workflow.ResourceClaim{claim(b.id, workflow.LeaseRead)}}, ms(2))
		requireIs(e.T, err, workflow.ErrInvalidInput, "resource key %s", b.name)
		_, err = s.AddActivation(e.Ctx, workflow.NewActivation{Key: key("r", "n", "x"), Input: json.RawMessage(`{}`),
			Predecessors: []workflow.NodeRef{{NodeID: "n", ActivationID: b.id}}}, ms(2))
		requireIs(e.T, err, workflow.ErrInvalidInput, "predecessor %s", b.name)
		_, err = s.GetRun(e.Ctx, b.id)
		requireIs(e.T, err, workflow.ErrInvalidInput, "GetRun %s", b.name)
		_, err = s.GetAttempt(e.Ctx, b.id)
		requireIs(e.T, err, workflow.ErrInvalidInput, "GetAttempt %s", b.name)
		_, err = s.RequestCancellation(e.Ctx, b.id, nil, ms(3))
		requireIs(e.T, err, workflow.ErrInvalidInput, "RequestCancellation %s", b.name)
		if b.id != "" { // an empty RunID means every run
			_, err = s.Dispatch(e.Ctx, newOwner(), workflow.DispatchOptions{RunID: b.id, Limit: 1}, ms(3))
			requireIs(e.T, err, workflow.ErrInvalidInput, "Dispatch run %s", b.name)
		}
		_, err = s.CreateRun(e.Ctx, workflow.NewRun{ID: "auth", Authority: &workflow.Authority{TargetArtifactID: b.id, DaemonInstanceID: "d", Generation: 1, FencingToken: "t"}}, ms(1))
		requireIs(e.T, err, workflow.ErrInvalidInput, "authority artifact %s", b.name)
		unchanged(e, before, "bad id "+b.name, "r")
	}
	_, err := s.GetRun(e.Ctx, "auth")
	requireIs(e.T, err, workflow.ErrNotFound, "no run was created by a rejected call")
}

func caseInputGoodIDs(e *env) {
	s := store(e)
	for _, id := range []string{strings.Repeat("x", workflow.MaxIDBytes), strings.Repeat("é", 256), " x ", "x", "\u2003x"} {
		created, err := s.CreateRun(e.Ctx, workflow.NewRun{ID: id}, ms(1))
		require.NoError(e.T, err, "run id %q", id)
		require.True(e.T, created, "run id %q is its own run", id)
		assert.Equal(e.T, id, getRun(e, s, id).ID, "kept as given")
		k := key(id, " n ", strings.Repeat("y", workflow.MaxIDBytes))
		mkAct(e, s, k)
		assert.Equal(e.T, k, getAct(e, s, k).Key)
	}
	_, err := s.GetRun(e.Ctx, "  x  ")
	requireIs(e.T, err, workflow.ErrNotFound, "surrounding whitespace is significant")
	sum := dispatch(e, s, newOwner(), workflow.DispatchOptions{RunID: " x "}, ms(10))
	assert.Equal(e.T, []string{identity(key(" x ", " n ", strings.Repeat("y", workflow.MaxIDBytes)), 1)}, refIdentities(sum.Admitted))
}

func caseInputBadJSON(e *env) {
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{}, nil)
	k := key("r", "n", "a")
	mkAct(e, s, k)
	big := `"` + strings.Repeat("x", workflow.MaxJSONBytes-1) + `"` // canonical length MaxJSONBytes+1
	rows := []struct {
		name string
		doc  string
		want error
	}{
		{"empty", ``, workflow.ErrInvalidInput},
		{"invalid", `{"a":`, workflow.ErrInvalidInput},
		{"trailing data", `{} {}`, workflow.ErrInvalidInput},
		{"duplicate keys", `{"a":1,"a":2}`, workflow.ErrInvalidInput},
		{"duplicate keys after unescaping", `{"a":1,"\u0061":2}`, workflow.ErrInvalidInput},
		{"invalid UTF-8", "{\"a\":\"\xff\"}", workflow.ErrInvalidInput},
		{"lone surrogate", `{"a":"\ud800"}`, workflow.ErrInvalidInput},
		{"lone low surrogate", `["\udc00"]`, workflow.ErrInvalidInput},
		{"over 1 MiB", big, workflow.ErrTooLarge},
	}
	before := digest(e, "r")
	for _, r := range rows {
		doc := json.RawMessage(r.doc)
		_, err := s.AddActivation(e.Ctx, workflow.NewActivation{Key: key("r", "n", "x"), Input: doc}, ms(5))
		requireIs(e.T, err, r.want, "activation input: %s", r.name)
		requireIs(e.T, err, workflow.ErrInvalidInput, "activation input: %s", r.name)
		_, err = s.Engine().PreparePending(e.Ctx, k, workflow.Plan{SideEffect: workflow.ReadOnly, Intent: doc}, ms(5))
		requireIs(e.T, err, r.want, "dispatch intent: %s", r.name)
		if r.doc != "" { // empty metadata means none
			_, err = s.CreateRun(e.Ctx, workflow.NewRun{ID: "m", Metadata: doc}, ms(5))
			requireIs(e.T, err, r.want, "run metadata: %s", r.name)
		}
		_, err = s.AddFanOut(e.Ctx, workflow.NewFanOut{Controller: k, Members: []json.RawMessage{doc}, MaxConcurrency: 1}, ms(5))
		requireIs(e.T, err, r.want, "fan-out member input: %s", r.name)
		unchanged(e, before, "json "+r.name, "r")
	}
	_, err := s.GetRun(e.Ctx, "m")
	requireIs(e.T, err, workflow.ErrNotFound)
	// Exactly 1 MiB canonical is accepted; observations are validated too.
	exact := json.RawMessage(`"` + strings.Repeat("x", workflow.MaxJSONBytes-2) + `"`)
	_, err = s.AddActivation(e.Ctx, workflow.NewActivation{Key: key("r", "n", "exact"), Input: exact}, ms(6))
	require.NoError(e.T, err, "exactly MaxJSONBytes")
	assert.Len(e.T, getAct(e, s, key("r", "n", "exact")).Input, workflow.MaxJSONBytes)
	sum := dispatch(e, s, newOwner(), workflow.DispatchOptions{}, ms(10))
	require.Contains(e.T, refIdentities(sum.Admitted), identity(k, 1))
	before = digest(e, "r")
	for _, r := range rows[1:] {
		_, err := s.ApplyObservation(e.Ctx, identity(k, 1), workflow.Observation{Kind: workflow.ObservedSucceeded, Output: json.RawMessage(r.doc)}, ms(20))
		requireIs(e.T, err, r.want, "observation output: %s", r.name)
		_, err = s.ApplyObservation(e.Ctx, identity(k, 1), workflow.Observation{Kind: workflow.ObservedFailed, Detail: json.RawMessage(r.doc)}, ms(20))
		requireIs(e.T, err, r.want, "observation detail: %s", r.name)
		unchanged(e, before, "observation json "+r.name, "r")
	}
	_, err = s.ApplyObservation(e.Ctx, identity(k, 1), workflow.Observation{Kind: workflow.ObservedSucceeded}, ms(20))
	requireIs(e.T, err, workflow.ErrInvalidInput, "succeeded without output")
	_, err = s.ApplyObservation(e.Ctx, identity(k, 1), workflow.Observation{Kind: "exploded"}, ms(20))
	requireIs(e.T, err, workflow.ErrInvalidInput, "unknown observation kind")
	unchanged(e, before, "bad observations", "r")
}

func caseInputTimes(e *env) {
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{}, nil)
	k := key("r", "n", "a")
	mkAct(e, s, k)
	bad := []struct {
		name string
		t    time.Time
	}{
		{"zero", time.Time{}},
		{"epoch", time.Unix(0, 0)},
		{"epoch plus 999µs (truncates to 0 ms)", time.Unix(0, 999_999)},
		{"before the epoch", time.UnixMilli(-1)},
		{"year 1", time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC)},
		{"past int64 milliseconds", time.Unix(math.MaxInt64/1000+1, 0)},
	}
	before := digest(e, "r")
	for _, b := range bad {
		_, err := s.CreateRun(e.Ctx, workflow.NewRun{ID: "t"}, b.t)
		requireIs(e.T, err, workflow.ErrInvalidInput, "CreateRun at %s", b.name)
		if !b.t.IsZero() { // a zero deadline means none
			_, err = s.CreateRun(e.Ctx, workflow.NewRun{ID: "t", Deadline: b.t}, ms(1))
			requireIs(e.T, err, workflow.ErrInvalidInput, "deadline %s", b.name)
		}
		_, err = s.AddActivation(e.Ctx, workflow.NewActivation{Key: key("r", "n", "b"), Input: json.RawMessage(`{}`)}, b.t)
		requireIs(e.T, err, workflow.ErrInvalidInput, "AddActivation at %s", b.name)
		_, err = s.Engine().PreparePending(e.Ctx, k, workflow.Plan{SideEffect: workflow.ReadOnly, Intent: json.RawMessage(`{}`)}, b.t)
		requireIs(e.T, err, workflow.ErrInvalidInput, "PreparePending at %s", b.name)
		_, err = s.Dispatch(e.Ctx, newOwner(), workflow.DispatchOptions{Limit: 10}, b.t)
		requireIs(e.T, err, workflow.ErrInvalidInput, "Dispatch at %s", b.name)
		_, err = s.RequestCancellation(e.Ctx, "r", nil, b.t)
		requireIs(e.T, err, workflow.ErrInvalidInput, "RequestCancellation at %s", b.name)
		_, err = s.ScheduleRetry(e.Ctx, workflow.RetrySchedulingRequest{Eligibility: eligibility(), Key: k, Backoff: 1 * time.Millisecond}, b.t)
		requireIs(e.T, err, workflow.ErrInvalidInput, "ScheduleRetry at %s", b.name)
		_, err = s.Engine().ConsumeNextDueRetry(e.Ctx, "r", b.t)
		requireIs(e.T, err, workflow.ErrInvalidInput, "ConsumeNextDueRetry at %s", b.name)
		unchanged(e, before, "time "+b.name, "r")
	}
	_, err := s.GetRun(e.Ctx, "t")
	requireIs(e.T, err, workflow.ErrNotFound)
	created, err := s.CreateRun(e.Ctx, workflow.NewRun{ID: "t"}, time.UnixMilli(1))
	require.NoError(e.T, err, "1 ms after the epoch")
	assert.True(e.T, created)
	assert.Equal(e.T, int64(1), msOf(getRun(e, s, "t").CreatedAt))
}

func caseInputLimits(e *env) {
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{}, nil)
	for _, n := range []int{-1, workflow.MaxPageLimit + 1} { // 0 is the default (see the boundaries cases)
		_, err := s.Events(e.Ctx, workflow.EventQuery{RunID: "r", Limit: n})
		requireIs(e.T, err, workflow.ErrInvalidInput, "Events limit %d", n)
		_, err = s.Attempts(e.Ctx, workflow.AttemptQuery{RunID: "r", Limit: n})
		requireIs(e.T, err, workflow.ErrInvalidInput, "Attempts limit %d", n)
		_, err = s.Engine().ActiveLeases(e.Ctx, workflow.LeaseQuery{RunID: "r", Limit: n})
		requireIs(e.T, err, workflow.ErrInvalidInput, "ActiveLeases limit %d", n)
		_, err = s.Engine().ActiveAttempts(e.Ctx, workflow.ActiveAttemptQuery{RunID: "r", Limit: n})
		requireIs(e.T, err, workflow.ErrInvalidInput, "ActiveAttempts limit %d", n)
		_, err = s.Engine().ReconcilePrepared(e.Ctx, workflow.ReconcileOptions{Limit: n}, ms(5))
		requireIs(e.T, err, workflow.ErrInvalidInput, "ReconcilePrepared limit %d", n)
		_, err = s.Engine().Redispatch(e.Ctx, newOwner(), workflow.ReconcileOptions{Limit: n}, ms(5))
		requireIs(e.T, err, workflow.ErrInvalidInput, "Redispatch limit %d", n)
		_, err = s.Dispatch(e.Ctx, newOwner(), workflow.DispatchOptions{Limit: n}, ms(5))
		requireIs(e.T, err, workflow.ErrInvalidInput, "Dispatch limit %d", n)
	}
	_, err := s.Events(e.Ctx, workflow.EventQuery{RunID: "r", After: workflow.EventCursor(-1), Limit: 10})
	requireIs(e.T, err, workflow.ErrInvalidInput, "negative event sequence")
	n := workflow.MaxPageLimit
	evsPage, err := s.Events(e.Ctx, workflow.EventQuery{RunID: "r", Limit: n})
	require.NoError(e.T, err)
	evs := evsPage.Items
	assert.Len(e.T, evs, 1)
	_, err = s.Attempts(e.Ctx, workflow.AttemptQuery{Limit: n})
	require.NoError(e.T, err)
	_, err = s.Engine().ActiveLeases(e.Ctx, workflow.LeaseQuery{RunID: "r", Limit: n})
	require.NoError(e.T, err)
	_, err = s.Engine().ActiveAttempts(e.Ctx, workflow.ActiveAttemptQuery{RunID: "r", Limit: n})
	require.NoError(e.T, err)
	_, err = s.Engine().ReconcilePrepared(e.Ctx, workflow.ReconcileOptions{Limit: n}, ms(5))
	require.NoError(e.T, err)
	_, err = s.Dispatch(e.Ctx, newOwner(), workflow.DispatchOptions{Limit: n}, ms(5))
	require.NoError(e.T, err)
}

func caseInputCreateRunIdempotent(e *env) {
	s := store(e)
	base := workflow.NewRun{ID: "r", Limits: workflow.RunLimits{ConcurrencyCap: 3}, Deadline: ms(1000),
		Authority: authority(1, "a"), Metadata: json.RawMessage(`{"b":1,"a":[true,null]}`)}
	created, err := s.CreateRun(e.Ctx, base, ms(0))
	require.NoError(e.T, err)
	require.True(e.T, created)
	before := digest(e, "r")
	same := base
	same.Metadata = json.RawMessage(`{ "a" : [ true , null ], "b" : 1 }`)
	same.Limits = workflow.RunLimits{ConcurrencyCap: 3, NodeExecutionCap: workflow.DefaultNodeExecutionCap, RetryCap: workflow.RetryCap(workflow.DefaultRetryCap)}
	created, err = s.CreateRun(e.Ctx, same, ms(5))
	require.NoError(e.T, err)
	assert.False(e.T, created, "identical (canonical metadata, defaults spelled out, later time)")
	unchanged(e, before, "identical CreateRun", "r")
	for name, mod := range map[string]func(*workflow.NewRun){
		"limits":        func(n *workflow.NewRun) { n.Limits.ConcurrencyCap = 4 },
		"deadline":      func(n *workflow.NewRun) { n.Deadline = ms(1001) },
		"no deadline":   func(n *workflow.NewRun) { n.Deadline = time.Time{} },
		"authority":     func(n *workflow.NewRun) { n.Authority = authority(2, "b") },
		"no authority":  func(n *workflow.NewRun) { n.Authority = nil },
		"metadata":      func(n *workflow.NewRun) { n.Metadata = json.RawMessage(`{"b":1.0,"a":[true,null]}`) },
		"no metadata":   func(n *workflow.NewRun) { n.Metadata = nil },
		"retry cap":     func(n *workflow.NewRun) { n.Limits.RetryCap = workflow.RetryCap(1) },
		"execution cap": func(n *workflow.NewRun) { n.Limits.NodeExecutionCap = 999 },
	} {
		nr := base
		mod(&nr)
		_, err := s.CreateRun(e.Ctx, nr, ms(5))
		requireIs(e.T, err, workflow.ErrConflict, "different %s", name)
		unchanged(e, before, "conflicting CreateRun: "+name, "r")
	}
	for _, l := range []workflow.RunLimits{{NodeExecutionCap: -1}, {ConcurrencyCap: -1}, {CycleCap: -1}} {
		_, err := s.CreateRun(e.Ctx, workflow.NewRun{ID: "bad", Limits: l}, ms(5))
		requireIs(e.T, err, workflow.ErrInvalidInput, "limits %+v", l)
	}
	_, err = s.CreateRun(e.Ctx, workflow.NewRun{ID: "bad", Authority: &workflow.Authority{TargetArtifactID: "a", DaemonInstanceID: "d", FencingToken: "t"}}, ms(5))
	requireIs(e.T, err, workflow.ErrInvalidInput, "authority generation 0")
	_, err = s.GetRun(e.Ctx, "bad")
	requireIs(e.T, err, workflow.ErrNotFound)
}

func caseInputAddActivationIdempotent(e *env) {
	s := store(e)
	mkRun(e, s, "r", workflow.Limits{}, nil)
	mkAct(e, s, key("r", "p", "a"))
	base := workflow.NewActivation{Key: key("r", "n", "a"), Generation: 2, Input: json.RawMessage(`{"y":2,"x":1}`),
		Claims: []workflow.ResourceClaim{claim("res", workflow.LeaseRead)}, Effect: workflow.ReadOnly, Reconciliation: workflow.ReceiptStatus,
		RetryPolicy: retryPolicy(2, 10), Predecessors: []workflow.NodeRef{{NodeID: "p", ActivationID: "a"}}}
	created, err := s.AddActivation(e.Ctx, base, ms(2))
	require.NoError(e.T, err)
	require.True(e.T, created)
	before := digest(e, "r")
	same := base
	same.Input = json.RawMessage(` { "x" : 1 , "y" : 2 } `)
	created, err = s.AddActivation(e.Ctx, same, ms(9))
	require.NoError(e.T, err)
	assert.False(e.T, created, "identical activation")
	unchanged(e, before, "identical AddActivation", "r")
	for name, mod := range map[string]func(*workflow.NewActivation){
		"input":      func(n *workflow.NewActivation) { n.Input = json.RawMessage(`{"x":1,"y":2.0}`) },
		"generation": func(n *workflow.NewActivation) { n.Generation = 3 },
		"claim mode": func(n *workflow.NewActivation) {
			n.Claims = []workflow.ResourceClaim{claim("res", workflow.LeaseWrite)}
		},
		"no claims":      func(n *workflow.NewActivation) { n.Claims = nil },
		"effect":         func(n *workflow.NewActivation) { n.Effect = workflow.Mutating },
		"reconciliation": func(n *workflow.NewActivation) { n.Reconciliation = workflow.IdempotentReplay },
		"policy":         func(n *workflow.NewActivation) { n.RetryPolicy = retryPolicy(3, 10) },
		"no policy":      func(n *workflow.NewActivation) { n.RetryPolicy = nil },
		"predecessors":   func(n *workflow.NewActivation) { n.Predecessors = nil },
	} {
		na := base
		mod(&na)
		_, err := s.AddActivation(e.Ctx, na, ms(9))
		requireIs(e.T, err, workflow.ErrConflict, "different %s", name)
		unchanged(e, before, "conflicting AddActivation: "+name, "r")
	}
	for name, na := range map[string]workflow.NewActivation{
		"mutating idempotent_replay": {Key: key("r", "n", "z"), Input: json.RawMessage(`{}`), Effect: workflow.Mutating, Reconciliation: workflow.IdempotentReplay},
		"unknown effect":             {Key: key("r", "n", "z"), Input: json.RawMessage(`{}`), Effect: "maybe"},
		"unknown lease mode":         {Key: key("r", "n", "z"), Input: json.RawMessage(`{}`), Claims: []workflow.ResourceClaim{{Resource: "res", Mode: "exclusive"}}},
		"invalid policy":             {Key: key("r", "n", "z"), Input: json.RawMessage(`{}`), RetryPolicy: retryPolicy(0, 10)},
	} {
		_, err := s.AddActivation(e.Ctx, na, ms(9))
		requireIs(e.T, err, workflow.ErrInvalidInput, name)
		unchanged(e, before, "invalid AddActivation: "+name, "r")
	}
	_, err = s.AddActivation(e.Ctx, workflow.NewActivation{Key: key("missing", "n", "a"), Input: json.RawMessage(`{}`)}, ms(9))
	requireIs(e.T, err, workflow.ErrNotFound, "unknown run")
	_, err = s.AddActivation(e.Ctx, workflow.NewActivation{Key: key("r", "n", "q"), Input: json.RawMessage(`{}`),
		Predecessors: []workflow.NodeRef{{NodeID: "p", ActivationID: "missing"}}}, ms(9))
	requireIs(e.T, err, workflow.ErrNotFound, "unknown predecessor")
	unchanged(e, before, "AddActivation naming missing records", "r")
}

func caseInputClosed(e *env) {
	var b backend.Backend
	if e.Caps.MultiInstance {
		b = e.Open()
	} else {
		b = e.Reopen()
	}
	s := e.newStore(b)
	mkRun(e, s, "r", workflow.Limits{}, nil)
	mkAct(e, s, key("r", "n", "a"))
	e.Close(b)
	isClosed := func(what string, err error) {
		e.T.Helper()
		assert.Truef(e.T, errors.Is(err, backend.ErrClosed), "%s on a closed backend: got %v, want backend.ErrClosed", what, err)
	}
	_, err := s.CreateRun(e.Ctx, workflow.NewRun{ID: "r2"}, ms(5))
	isClosed("CreateRun", err)
	_, err = s.GetRun(e.Ctx, "r")
	isClosed("GetRun", err)
	_, err = s.AddActivation(e.Ctx, workflow.NewActivation{Key: key("r", "n", "b"), Input: json.RawMessage(`{}`)}, ms(5))
	isClosed("AddActivation", err)
	o := newOwner()
	_, err = s.Dispatch(e.Ctx, o, workflow.DispatchOptions{Limit: 10}, ms(5))
	isClosed("Dispatch", err)
	assert.Zero(e.T, o.totalCalls(), "no owner call on a closed backend")
	_, err = s.Events(e.Ctx, workflow.EventQuery{RunID: "r", Limit: 10})
	isClosed("Events", err)
	_, err = s.RequestCancellation(e.Ctx, "r", nil, ms(5))
	isClosed("RequestCancellation", err)
	if e.Caps.MultiInstance {
		// The other instance is unaffected and sees the committed state.
		live := store(e)
		assert.Equal(e.T, workflow.ActivationPending, getAct(e, live, key("r", "n", "a")).Status)
		_, err := live.GetRun(e.Ctx, "r2")
		requireIs(e.T, err, workflow.ErrNotFound)
	}
}
