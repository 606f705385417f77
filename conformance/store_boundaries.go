package conformance

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/workflow"
)

func boundaryCases() []testCase {
	return []testCase{
		{Name: "boundaries_deadline_is_exclusive_at_the_millisecond", Run: caseBoundaryDeadline},
		{Name: "boundaries_nil_and_zero_arguments_are_invalid_input_at_every_entry", Run: caseBoundaryNilArguments},
		{Name: "boundaries_every_page_limit_takes_0_as_default_and_1_to_1000_as_given", Run: caseBoundaryPageLimits},
	}
}

// caseBoundaryDeadline: a run's wall-clock deadline is exclusive. At the
// deadline millisecond itself prepare (pending and low-level), adding an
// activation, creating a child run and Dispatch (a Rejected entry) are all
// refused with ErrIneligible, changing nothing; one millisecond earlier
// each of them succeeds.
func caseBoundaryDeadline(e *env) {
	s := store(e)
	const dl = 50
	mk := func(id string) {
		e.T.Helper()
		_, err := s.CreateRun(e.Ctx, workflow.NewRun{ID: id, Deadline: ms(dl), Limits: workflow.RunLimits{ConcurrencyCap: 100}}, ms(0))
		require.NoError(e.T, err, "create run %q", id)
		mkAct(e, s, key(id, "n", "a"))
	}
	runs := []string{"pp", "pa", "aa", "cc", "dx"}
	for _, id := range runs {
		mk(id)
	}
	plan := workflow.Plan{SideEffect: workflow.ReadOnly, Intent: json.RawMessage(`{}`)}
	low := workflow.AttemptIntent{Key: attemptKey(key("pa", "n", "a"), 1), SideEffect: workflow.ReadOnly, Intent: json.RawMessage(`{}`)}
	parent := attemptKey(key("cc", "n", "a"), 1)
	child := workflow.NewChildRun{Parent: parent, Target: json.RawMessage(`{"call":"child"}`)}
	p, err := s.Engine().PreparePending(e.Ctx, parent.ActivationKey, plan, ms(40))
	require.NoError(e.T, err)
	require.NotNil(e.T, p, "the parent attempt is prepared before the deadline")

	at := ms(dl)
	before := digest(e, runs...)
	p, err = s.Engine().PreparePending(e.Ctx, key("pp", "n", "a"), plan, at)
	requireIs(e.T, err, workflow.ErrIneligible, "PreparePending at the deadline")
	assert.Nil(e.T, p)
	_, err = s.Engine().PrepareAttempt(e.Ctx, low, at)
	requireIs(e.T, err, workflow.ErrIneligible, "PrepareAttempt at the deadline")
	_, err = s.AddActivation(e.Ctx, workflow.NewActivation{Key: key("aa", "n", "b"), Input: json.RawMessage(`{}`)}, at)
	requireIs(e.T, err, workflow.ErrIneligible, "AddActivation at the deadline")
	_, _, err = s.CreateChildRun(e.Ctx, child, at)
	requireIs(e.T, err, workflow.ErrIneligible, "CreateChildRun at the deadline")
	unchanged(e, before, "work at the deadline millisecond", runs...)
	o := newOwner()
	sum, err := s.Dispatch(e.Ctx, o, workflow.DispatchOptions{RunID: "dx", Limit: 10}, at)
	require.NoError(e.T, err, "a deadline refusal is a Rejected entry, not a batch error")
	require.Len(e.T, sum.Rejected, 1, "Dispatch at the deadline: %+v", sum)
	assert.Equal(e.T, key("dx", "n", "a"), sum.Rejected[0].Key)
	requireIs(e.T, sum.Rejected[0].Err, workflow.ErrIneligible, "rejection at the deadline")
	assert.Empty(e.T, sum.Admitted)
	assert.Zero(e.T, o.totalCalls(), "no owner dispatch at the deadline")
	assert.Empty(e.T, attemptsOf(e, s, "dx"), "no attempt at the deadline")

	at = ms(dl - 1)
	p, err = s.Engine().PreparePending(e.Ctx, key("pp", "n", "a"), plan, at)
	require.NoError(e.T, err, "PreparePending 1 ms before the deadline")
	require.NotNil(e.T, p, "PreparePending 1 ms before the deadline")
	id, err := s.Engine().PrepareAttempt(e.Ctx, low, at)
	require.NoError(e.T, err, "PrepareAttempt 1 ms before the deadline")
	assert.Equal(e.T, identity(key("pa", "n", "a"), 1), id)
	created, err := s.AddActivation(e.Ctx, workflow.NewActivation{Key: key("aa", "n", "b"), Input: json.RawMessage(`{}`)}, at)
	require.NoError(e.T, err, "AddActivation 1 ms before the deadline")
	assert.True(e.T, created)
	childID, created, err := s.CreateChildRun(e.Ctx, child, at)
	require.NoError(e.T, err, "CreateChildRun 1 ms before the deadline")
	assert.True(e.T, created)
	assert.Equal(e.T, ms(dl).UnixMilli(), msOf(getRun(e, s, childID).Deadline), "the child inherits the deadline")
	mk("dy") // dx's activation was refused durably; a fresh run for the earlier Dispatch
	sum, err = s.Dispatch(e.Ctx, o, workflow.DispatchOptions{RunID: "dy", Limit: 10}, at)
	require.NoError(e.T, err)
	assert.Empty(e.T, sum.Rejected, "Dispatch 1 ms before the deadline")
	assert.Equal(e.T, []string{identity(key("dy", "n", "a"), 1)}, refIdentities(sum.Admitted), "Dispatch 1 ms before the deadline")

	// The inherited deadline is exclusive in the child too.
	_, err = s.AddActivation(e.Ctx, workflow.NewActivation{Key: key(childID, "n", "a"), Input: json.RawMessage(`{}`)}, ms(dl))
	requireIs(e.T, err, workflow.ErrIneligible, "child AddActivation at the inherited deadline")
	created, err = s.AddActivation(e.Ctx, workflow.NewActivation{Key: key(childID, "n", "a"), Input: json.RawMessage(`{}`)}, ms(dl-1))
	require.NoError(e.T, err, "child AddActivation 1 ms before the inherited deadline")
	assert.True(e.T, created)
}

// caseBoundaryNilArguments calls every Store entry point with each nil,
// typed-nil, zero or empty argument it can be given: each call returns an
// error matching ErrInvalidInput (never panics, never calls an owner) and
// leaves durable state unchanged.
func caseBoundaryNilArguments(e *env) {
	s := store(e)
	_, err := s.CreateRun(e.Ctx, workflow.NewRun{ID: "r", Limits: workflow.RunLimits{ConcurrencyCap: 100}}, ms(0))
	require.NoError(e.T, err)
	pend, prep, hand, adm := key("r", "n", "pend"), key("r", "n", "prep"), key("r", "n", "hand"), key("r", "n", "adm")
	for _, k := range []workflow.ActivationKey{pend, prep, hand, adm} {
		mkAct(e, s, k)
	}
	plan := workflow.Plan{SideEffect: workflow.ReadOnly, Intent: json.RawMessage(`{"do":1}`)}
	for _, k := range []workflow.ActivationKey{prep, hand, adm} {
		p, err := s.Engine().PreparePending(e.Ctx, k, plan, ms(10))
		require.NoError(e.T, err)
		require.NotNil(e.T, p)
	}
	for _, k := range []workflow.ActivationKey{hand, adm} {
		require.NoError(e.T, s.Engine().Handoff(e.Ctx, attemptKey(k, 1), nil, ms(11)))
	}
	require.NoError(e.T, s.Engine().PersistReceipt(e.Ctx, workflow.OwnerReceipt{Key: attemptKey(adm, 1), Receipt: json.RawMessage(`{"r":1}`), Authority: nil}, ms(12)))

	var zero time.Time
	now := ms(20)
	var nilOwner *owner // typed nil: a non-nil Owner interface holding a nil pointer
	o := newOwner()
	auth, next := *authority(1, "a"), *authority(2, "b")
	next.TargetArtifactID = auth.TargetArtifactID
	obsOK := workflow.Observation{Kind: workflow.ObservedSucceeded, Output: json.RawMessage(`{}`)}
	retryable := workflow.Observation{Kind: workflow.ObservedRetryableFailure}
	input := json.RawMessage(`{}`)
	rows := []struct {
		name string
		call func() error
	}{
		// Admission.
		{"Dispatch nil owner", func() error {
			_, err := s.Dispatch(e.Ctx, nil, workflow.DispatchOptions{RunID: "r"}, now)
			return err
		}},
		{"Dispatch typed-nil owner", func() error {
			_, err := s.Dispatch(e.Ctx, nilOwner, workflow.DispatchOptions{RunID: "r"}, now)
			return err
		}},
		{"Dispatch zero now", func() error { _, err := s.Dispatch(e.Ctx, o, workflow.DispatchOptions{}, zero); return err }},
		{"PreparePending zero now", func() error { _, err := s.Engine().PreparePending(e.Ctx, pend, plan, zero); return err }},
		{"PreparePending nil intent", func() error {
			_, err := s.Engine().PreparePending(e.Ctx, pend, workflow.Plan{SideEffect: workflow.ReadOnly}, now)
			return err
		}},
		{"PreparePending empty intent", func() error {
			_, err := s.Engine().PreparePending(e.Ctx, pend, workflow.Plan{SideEffect: workflow.ReadOnly, Intent: json.RawMessage{}}, now)
			return err
		}},
		{"PreparePending zero side effect", func() error {
			_, err := s.Engine().PreparePending(e.Ctx, pend, workflow.Plan{Intent: input}, now)
			return err
		}},
		{"PreparePending zero key", func() error {
			_, err := s.Engine().PreparePending(e.Ctx, workflow.ActivationKey{}, plan, now)
			return err
		}},
		{"PrepareAttempt zero now", func() error {
			_, err := s.Engine().PrepareAttempt(e.Ctx, workflow.AttemptIntent{Key: attemptKey(pend, 1), SideEffect: workflow.ReadOnly, Intent: input}, zero)
			return err
		}},
		{"PrepareAttempt nil intent", func() error {
			_, err := s.Engine().PrepareAttempt(e.Ctx, workflow.AttemptIntent{Key: attemptKey(pend, 1), SideEffect: workflow.ReadOnly}, now)
			return err
		}},
		{"PrepareAttempt zero key", func() error {
			_, err := s.Engine().PrepareAttempt(e.Ctx, workflow.AttemptIntent{SideEffect: workflow.ReadOnly, Intent: input}, now)
			return err
		}},
		{"Handoff zero now", func() error { return s.Engine().Handoff(e.Ctx, attemptKey(prep, 1), nil, zero) }},
		{"Handoff zero key", func() error { return s.Engine().Handoff(e.Ctx, workflow.AttemptKey{}, nil, now) }},
		{"PersistReceipt nil receipt", func() error {
			return s.Engine().PersistReceipt(e.Ctx, workflow.OwnerReceipt{Key: attemptKey(hand, 1), Receipt: nil, Authority: nil}, now)
		}},
		{"PersistReceipt zero now", func() error {
			return s.Engine().PersistReceipt(e.Ctx, workflow.OwnerReceipt{Key: attemptKey(hand, 1), Receipt: json.RawMessage(`{}`), Authority: nil}, zero)
		}},
		{"PersistReceipt zero key", func() error {
			return s.Engine().PersistReceipt(e.Ctx, workflow.OwnerReceipt{Key: workflow.AttemptKey{}, Receipt: json.RawMessage(`{}`), Authority: nil}, now)
		}},
		{"CheckOwnerAdmission zero authority", func() error {
			_, err := s.Engine().CheckOwnerAdmission(e.Ctx, workflow.OwnerAdmission{Key: attemptKey(prep, 1), Identity: identity(prep, 1), Intent: plan.Intent}, workflow.Authority{})
			return err
		}},
		{"CheckOwnerAdmission nil intent", func() error {
			_, err := s.Engine().CheckOwnerAdmission(e.Ctx, workflow.OwnerAdmission{Key: attemptKey(prep, 1), Identity: identity(prep, 1)}, auth)
			return err
		}},
		{"CheckOwnerAdmission empty identity", func() error {
			_, err := s.Engine().CheckOwnerAdmission(e.Ctx, workflow.OwnerAdmission{Key: attemptKey(prep, 1), Intent: plan.Intent}, auth)
			return err
		}},
		// Reconciliation.
		{"Redispatch nil owner", func() error {
			_, err := s.Engine().Redispatch(e.Ctx, nil, workflow.ReconcileOptions{RunID: "r", Limit: 10}, now)
			return err
		}},
		{"Redispatch typed-nil owner", func() error {
			_, err := s.Engine().Redispatch(e.Ctx, nilOwner, workflow.ReconcileOptions{RunID: "r", Limit: 10}, now)
			return err
		}},
		{"Redispatch zero now", func() error {
			_, err := s.Engine().Redispatch(e.Ctx, o, workflow.ReconcileOptions{RunID: "r", Limit: 10}, zero)
			return err
		}},
		{"ReconcilePrepared typed-nil lookup", func() error {
			_, err := s.Engine().ReconcilePrepared(e.Ctx, workflow.ReconcileOptions{RunID: "r", Limit: 10, Lookup: nilOwner}, now)
			return err
		}},
		{"ReconcilePrepared zero now", func() error {
			_, err := s.Engine().ReconcilePrepared(e.Ctx, workflow.ReconcileOptions{RunID: "r", Limit: 10}, zero)
			return err
		}},
		// Runs, activations, children, fan-out.
		{"CreateRun zero now", func() error { _, err := s.CreateRun(e.Ctx, workflow.NewRun{ID: "new"}, zero); return err }},
		{"CreateRun zero id", func() error { _, err := s.CreateRun(e.Ctx, workflow.NewRun{}, now); return err }},
		{"AddActivation zero now", func() error {
			_, err := s.AddActivation(e.Ctx, workflow.NewActivation{Key: key("r", "n", "new"), Input: input}, zero)
			return err
		}},
		{"AddActivation nil input", func() error {
			_, err := s.AddActivation(e.Ctx, workflow.NewActivation{Key: key("r", "n", "new")}, now)
			return err
		}},
		{"AddActivation zero key", func() error { _, err := s.AddActivation(e.Ctx, workflow.NewActivation{Input: input}, now); return err }},
		{"CreateChildRun zero now", func() error {
			_, _, err := s.CreateChildRun(e.Ctx, workflow.NewChildRun{Parent: attemptKey(prep, 1), Target: input}, zero)
			return err
		}},
		{"CreateChildRun nil target", func() error {
			_, _, err := s.CreateChildRun(e.Ctx, workflow.NewChildRun{Parent: attemptKey(prep, 1)}, now)
			return err
		}},
		{"CreateChildRun zero parent", func() error {
			_, _, err := s.CreateChildRun(e.Ctx, workflow.NewChildRun{Target: input}, now)
			return err
		}},
		{"AddFanOut zero now", func() error {
			_, err := s.AddFanOut(e.Ctx, workflow.NewFanOut{Controller: pend, Members: []json.RawMessage{input}, MaxConcurrency: 1}, zero)
			return err
		}},
		{"AddFanOut nil members", func() error {
			_, err := s.AddFanOut(e.Ctx, workflow.NewFanOut{Controller: pend, MaxConcurrency: 1}, now)
			return err
		}},
		{"AddFanOut nil member input", func() error {
			_, err := s.AddFanOut(e.Ctx, workflow.NewFanOut{Controller: pend, Members: []json.RawMessage{nil}, MaxConcurrency: 1}, now)
			return err
		}},
		{"AddFanOut zero max concurrency", func() error {
			_, err := s.AddFanOut(e.Ctx, workflow.NewFanOut{Controller: pend, Members: []json.RawMessage{input}}, now)
			return err
		}},
		{"AddFanOut zero controller", func() error {
			_, err := s.AddFanOut(e.Ctx, workflow.NewFanOut{Members: []json.RawMessage{input}, MaxConcurrency: 1}, now)
			return err
		}},
		{"RetireFanOut zero now", func() error { return s.RetireFanOut(e.Ctx, pend, zero) }},
		{"SettleFanOutRetirement zero now", func() error { return s.Engine().SettleFanOutRetirement(e.Ctx, pend, zero) }},
		{"PauseRun zero now", func() error { return s.PauseRun(e.Ctx, "r", nil, zero) }},
		{"ResumeRun zero now", func() error { return s.ResumeRun(e.Ctx, "r", nil, zero) }},
		// Authority.
		{"VerifyAuthority zero authority", func() error { return s.VerifyAuthority(e.Ctx, "r", workflow.Authority{}) }},
		{"TransferAuthority zero expected", func() error {
			return s.TransferAuthority(e.Ctx, workflow.AuthorityTransfer{RunID: "r", Expected: workflow.Authority{}, Replacement: next}, now)
		}},
		{"TransferAuthority zero replacement", func() error {
			return s.TransferAuthority(e.Ctx, workflow.AuthorityTransfer{RunID: "r", Expected: auth, Replacement: workflow.Authority{}}, now)
		}},
		{"TransferAuthority zero now", func() error {
			return s.TransferAuthority(e.Ctx, workflow.AuthorityTransfer{RunID: "r", Expected: auth, Replacement: next}, zero)
		}},
		// Observations, repair, cancellation.
		{"ApplyObservation zero now", func() error { _, err := s.ApplyObservation(e.Ctx, identity(adm, 1), obsOK, zero); return err }},
		{"ApplyObservation succeeded with nil output", func() error {
			_, err := s.ApplyObservation(e.Ctx, identity(adm, 1), workflow.Observation{Kind: workflow.ObservedSucceeded}, now)
			return err
		}},
		{"ApplyObservation zero observation", func() error {
			_, err := s.ApplyObservation(e.Ctx, identity(adm, 1), workflow.Observation{}, now)
			return err
		}},
		{"ApplyObservation successor with nil input", func() error {
			withSucc := obsOK
			withSucc.Successors = []workflow.NewActivation{{Key: key("r", "n", "succ")}}
			_, err := s.ApplyObservation(e.Ctx, identity(adm, 1), withSucc, now)
			return err
		}},
		{"ApplyObservation empty identity", func() error { _, err := s.ApplyObservation(e.Ctx, "", obsOK, now); return err }},
		{"Repair confirm succeeded with nil output", func() error {
			return s.Repair(e.Ctx, workflow.RepairRequest{Identity: identity(adm, 1), Action: workflow.RepairConfirmSucceeded}, now)
		}},
		{"Repair zero action", func() error {
			return s.Repair(e.Ctx, workflow.RepairRequest{Identity: identity(adm, 1), Action: ""}, now)
		}},
		{"Repair zero now", func() error {
			return s.Repair(e.Ctx, workflow.RepairRequest{Identity: identity(adm, 1), Action: workflow.RepairAbandon}, zero)
		}},
		{"Repair empty identity", func() error {
			return s.Repair(e.Ctx, workflow.RepairRequest{Identity: "", Action: workflow.RepairAbandon}, now)
		}},
		{"RequestCancellation zero now", func() error { _, err := s.RequestCancellation(e.Ctx, "r", nil, zero); return err }},
		{"MarkCancellationSignalled zero now", func() error { return s.Engine().MarkCancellationSignalled(e.Ctx, identity(adm, 1), zero) }},
		{"CancelNeverDispatched zero now", func() error {
			_, err := s.Engine().CancelNeverDispatched(e.Ctx, identity(prep, 1), nil, zero)
			return err
		}},
		{"SettleOrphanedCancellation zero now", func() error {
			_, err := s.Engine().SettleOrphanedCancellation(e.Ctx, identity(adm, 1), zero)
			return err
		}},
		// Retries.
		{"ScheduleRetry zero now", func() error {
			_, err := s.ScheduleRetry(e.Ctx, workflow.RetrySchedulingRequest{Eligibility: eligibility(), Key: adm, Backoff: 1 * time.Millisecond}, zero)
			return err
		}},
		{"ScheduleRetryForFailedAttempt zero now", func() error {
			_, err := s.Engine().ScheduleRetryForFailedAttempt(e.Ctx, workflow.RetryRequest{Key: adm, Effect: workflow.ReadOnly, Reconciliation: workflow.IdempotentReplay, MaxAttempts: 3, Backoff: 1 * time.Millisecond}, workflow.FailureOwnerReportedRetryable, zero)
			return err
		}},
		{"ScheduleRetryFromObservation zero now", func() error {
			_, err := s.Engine().ScheduleRetryFromObservation(e.Ctx, workflow.RetryRequest{Key: adm, Effect: workflow.ReadOnly, Reconciliation: workflow.IdempotentReplay, MaxAttempts: 3, Backoff: 1 * time.Millisecond}, retryable, zero)
			return err
		}},
		{"ScheduleRetryFromObservation zero now, not a failure", func() error {
			_, err := s.Engine().ScheduleRetryFromObservation(e.Ctx, workflow.RetryRequest{Key: adm, Effect: workflow.ReadOnly, Reconciliation: workflow.IdempotentReplay, MaxAttempts: 3, Backoff: 1 * time.Millisecond}, obsOK, zero)
			return err
		}},
		{"ScheduleRetryFromObservation zero key, not a failure", func() error {
			_, err := s.Engine().ScheduleRetryFromObservation(e.Ctx, workflow.RetryRequest{Key: workflow.ActivationKey{}, Effect: workflow.ReadOnly, Reconciliation: workflow.IdempotentReplay, MaxAttempts: 3, Backoff: 1 * time.Millisecond}, obsOK, now)
			return err
		}},
		{"ConsumeNextDueRetry zero now", func() error { _, err := s.Engine().ConsumeNextDueRetry(e.Ctx, "r", zero); return err }},
		{"ConsumeDueRetry zero now", func() error { _, err := s.Engine().ConsumeDueRetry(e.Ctx, adm, zero); return err }},
		{"RetryFailedNode zero now", func() error { _, err := s.RetryFailedNode(e.Ctx, adm, 1, zero); return err }},
		{"RetryFailedNode zero attempt", func() error { _, err := s.RetryFailedNode(e.Ctx, adm, 0, now); return err }},
		// Reads.
		{"GetRun empty id", func() error { _, err := s.GetRun(e.Ctx, ""); return err }},
		{"GetActivation zero key", func() error { _, err := s.GetActivation(e.Ctx, workflow.ActivationKey{}); return err }},
		{"GetAttempt empty identity", func() error { _, err := s.GetAttempt(e.Ctx, ""); return err }},
		{"GetRetrySchedule zero key", func() error { _, err := s.GetRetrySchedule(e.Ctx, workflow.ActivationKey{}); return err }},
		{"Authority empty run id", func() error { _, err := s.Authority(e.Ctx, ""); return err }},
		{"AllowanceObservation empty run id", func() error { _, err := s.Engine().AllowanceObservation(e.Ctx, ""); return err }},
		{"Events empty run id", func() error { _, err := s.Events(e.Ctx, workflow.EventQuery{RunID: "", Limit: 10}); return err }},
		{"ActiveAttempts empty run id", func() error {
			_, err := s.Engine().ActiveAttempts(e.Ctx, workflow.ActiveAttemptQuery{RunID: "", Limit: 10})
			return err
		}},
		{"ActiveLeases empty run id", func() error {
			_, err := s.Engine().ActiveLeases(e.Ctx, workflow.LeaseQuery{RunID: "", Limit: 10})
			return err
		}},
	}
	before := digest(e, "r")
	for _, row := range rows {
		err := func() (err error) {
			defer func() {
				if p := recover(); p != nil {
					err = fmt.Errorf("panicked: %v", p)
				}
			}()
			return row.call()
		}()
		assert.ErrorIs(e.T, err, workflow.ErrInvalidInput, row.name)
		unchanged(e, before, row.name, "r")
		before = digest(e, "r") // report each change once, at the row that made it
	}
	assert.Zero(e.T, o.totalCalls(), "no owner was called")
	_, err = s.GetRun(e.Ctx, "new")
	requireIs(e.T, err, workflow.ErrNotFound, "no run was created by a rejected call")
}

// caseBoundaryPageLimits: every page or batch limit of the API follows one
// rule. 0 means workflow.DefaultPageLimit, 1 to MaxPageLimit is taken as
// given, and a negative limit or one above MaxPageLimit is ErrInvalidInput
// with state unchanged.
func caseBoundaryPageLimits(e *env) {
	s := store(e)
	const n = workflow.DefaultPageLimit + 2
	lim := workflow.Limits{ConcurrencyCap: 1000, NodeExecutionCap: 1000}
	mkRun(e, s, "dp", lim, nil) // dispatched: attempts, leases, events
	mkRun(e, s, "rc", lim, nil) // prepared, never dispatched: reconcile, redispatch
	plan := workflow.Plan{SideEffect: workflow.ReadOnly, Intent: json.RawMessage(`{}`)}
	for i := range n {
		mkAct(e, s, key("dp", "n", fmt.Sprintf("a%03d", i)), withClaims(claim("res", workflow.LeaseRead)))
		k := key("rc", "n", fmt.Sprintf("a%03d", i))
		mkAct(e, s, k)
		p, err := s.Engine().PreparePending(e.Ctx, k, plan, ms(5))
		require.NoError(e.T, err)
		require.NotNil(e.T, p)
	}
	o := newOwner()

	// Out of range: rejected at every limit, nothing read or written.
	before := digest(e, "dp", "rc")
	for _, bad := range []int{-1, workflow.MaxPageLimit + 1, math.MinInt, math.MaxInt} {
		_, err := s.Dispatch(e.Ctx, o, workflow.DispatchOptions{RunID: "dp", Limit: bad}, ms(10))
		requireIs(e.T, err, workflow.ErrInvalidInput, "Dispatch limit %d", bad)
		_, err = s.Engine().ReconcilePrepared(e.Ctx, workflow.ReconcileOptions{RunID: "rc", Limit: bad}, ms(10))
		requireIs(e.T, err, workflow.ErrInvalidInput, "ReconcilePrepared limit %d", bad)
		_, err = s.Engine().Redispatch(e.Ctx, o, workflow.ReconcileOptions{RunID: "rc", Limit: bad}, ms(10))
		requireIs(e.T, err, workflow.ErrInvalidInput, "Redispatch limit %d", bad)
		_, err = s.Events(e.Ctx, workflow.EventQuery{RunID: "dp", Limit: bad})
		requireIs(e.T, err, workflow.ErrInvalidInput, "Events limit %d", bad)
		_, err = s.Attempts(e.Ctx, workflow.AttemptQuery{RunID: "rc", Limit: bad})
		requireIs(e.T, err, workflow.ErrInvalidInput, "Attempts limit %d", bad)
		_, err = s.Engine().ActiveAttempts(e.Ctx, workflow.ActiveAttemptQuery{RunID: "rc", Limit: bad})
		requireIs(e.T, err, workflow.ErrInvalidInput, "ActiveAttempts limit %d", bad)
		_, err = s.Engine().ActiveLeases(e.Ctx, workflow.LeaseQuery{RunID: "dp", Limit: bad})
		requireIs(e.T, err, workflow.ErrInvalidInput, "ActiveLeases limit %d", bad)
		unchanged(e, before, fmt.Sprintf("limit %d", bad), "dp", "rc")
	}
	assert.Zero(e.T, o.totalCalls(), "no owner call for an invalid limit")

	// Events: n+1 (run_created and one activation_created each).
	for _, c := range []struct{ limit, want int }{{1, 1}, {0, workflow.DefaultPageLimit}, {workflow.MaxPageLimit, n + 1}} {
		evsPage, err := s.Events(e.Ctx, workflow.EventQuery{RunID: "dp", Limit: c.limit})
		require.NoError(e.T, err, "Events limit %d", c.limit)
		evs := evsPage.Items
		assert.Len(e.T, evs, c.want, "Events limit %d", c.limit)
	}
	// Read-only scans over rc's n prepared attempts.
	for _, c := range []struct{ limit, want int }{{1, 1}, {0, workflow.DefaultPageLimit}, {workflow.MaxPageLimit, n}} {
		attsPage, err := s.Attempts(e.Ctx, workflow.AttemptQuery{RunID: "rc", Limit: c.limit})
		require.NoError(e.T, err, "Attempts limit %d", c.limit)
		atts := attsPage.Items
		assert.Len(e.T, atts, c.want, "Attempts limit %d", c.limit)
		actPage, err := s.Engine().ActiveAttempts(e.Ctx, workflow.ActiveAttemptQuery{RunID: "rc", Limit: c.limit})
		require.NoError(e.T, err, "ActiveAttempts limit %d", c.limit)
		act := actPage.Items
		assert.Len(e.T, act, c.want, "ActiveAttempts limit %d", c.limit)
		sum, err := s.Engine().ReconcilePrepared(e.Ctx, workflow.ReconcileOptions{RunID: "rc", Limit: c.limit}, ms(10))
		require.NoError(e.T, err, "ReconcilePrepared limit %d", c.limit)
		assert.Len(e.T, sum.NeverDispatched, c.want, "ReconcilePrepared limit %d", c.limit)
	}
	unchanged(e, before, "read-only scans and reconciliation of never-dispatched attempts", "dp", "rc")

	// Batches that admit: 1, then the default, then the rest.
	for _, c := range []struct{ limit, want int }{{1, 1}, {0, workflow.DefaultPageLimit}, {workflow.MaxPageLimit, n - 1 - workflow.DefaultPageLimit}} {
		sum, err := s.Dispatch(e.Ctx, o, workflow.DispatchOptions{RunID: "dp", Limit: c.limit}, ms(20))
		require.NoError(e.T, err, "Dispatch limit %d", c.limit)
		assert.Len(e.T, sum.Admitted, c.want, "Dispatch limit %d", c.limit)
		rsum, err := s.Engine().Redispatch(e.Ctx, o, workflow.ReconcileOptions{RunID: "rc", Limit: c.limit}, ms(20))
		require.NoError(e.T, err, "Redispatch limit %d", c.limit)
		assert.Len(e.T, rsum.Admitted, c.want, "Redispatch limit %d", c.limit)
	}
	assert.Equal(e.T, 2*n, o.totalCalls(), "every activation dispatched once")
	for _, c := range []struct{ limit, want int }{{1, 1}, {0, workflow.DefaultPageLimit}, {workflow.MaxPageLimit, n}} {
		lsPage, err := s.Engine().ActiveLeases(e.Ctx, workflow.LeaseQuery{RunID: "dp", Limit: c.limit})
		require.NoError(e.T, err, "ActiveLeases limit %d", c.limit)
		ls := lsPage.Items
		assert.Len(e.T, ls, c.want, "ActiveLeases limit %d", c.limit)
	}
}
