package conformance

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/workflow"
)

// More store-tier fixtures: activation modifiers, observations and small
// readers used by the retry, fan-out, cancellation, limits, children and
// input groups.

// retryPolicy is a valid version-1 policy admitting owner-reported
// retryable failures with a constant backoff.
func retryPolicy(maxAttempts uint32, backoffMS int64) *workflow.RetryPolicy {
	return &workflow.RetryPolicy{
		Version: workflow.RetryPolicyVersion, MaxAttempts: maxAttempts,
		EligibleFailures: []workflow.FailureKind{workflow.FailureOwnerReportedRetryable},
		InitialBackoff:   time.Duration(backoffMS) * time.Millisecond, BackoffMultiplier: 1,
		MaximumBackoff: time.Duration(backoffMS) * time.Millisecond,
	}
}

func withPolicy(p *workflow.RetryPolicy) func(*workflow.NewActivation) {
	return func(na *workflow.NewActivation) { na.RetryPolicy = p }
}

func withEffect(eff workflow.Effect, rec workflow.Reconciliation) func(*workflow.NewActivation) {
	return func(na *workflow.NewActivation) { na.Effect, na.Reconciliation = eff, rec }
}

func withClaims(c ...workflow.ResourceClaim) func(*workflow.NewActivation) {
	return func(na *workflow.NewActivation) { na.Claims = c }
}

func withPreds(p ...workflow.NodeRef) func(*workflow.NewActivation) {
	return func(na *workflow.NewActivation) { na.Predecessors = p }
}

func withGeneration(g int64) func(*workflow.NewActivation) {
	return func(na *workflow.NewActivation) { na.Generation = g }
}

func claim(res string, mode workflow.LeaseMode) workflow.ResourceClaim {
	return workflow.ResourceClaim{Resource: res, Mode: mode}
}

// obs builds an observation of kind k (Succeeded gets output {"ok":true}).
func obs(k workflow.ObservationKind) workflow.Observation {
	o := workflow.Observation{Kind: k}
	if k == workflow.ObservedSucceeded {
		o.Output = json.RawMessage(`{"ok":true}`)
	}
	return o
}

// observe applies an observation that must succeed.
func observe(e *Env, s *workflow.Store, identity string, o workflow.Observation, at time.Time) workflow.ObservationResult {
	e.T.Helper()
	res, err := s.ApplyObservation(e.Ctx, identity, o, at)
	require.NoError(e.T, err, "observation %s of %s", o.Kind, identity)
	return res
}

// prep prepares a pending activation through the single-winner gate with an
// intent naming it; it must produce an attempt.
func prep(e *Env, s *workflow.Store, k workflow.ActivationKey, effect workflow.Effect, at time.Time) *workflow.PreparedDispatch {
	e.T.Helper()
	p, err := s.PreparePending(e.Ctx, k, workflow.Plan{SideEffect: effect, Intent: json.RawMessage(`{"do":"` + k.ActivationID + `"}`)}, at)
	require.NoError(e.T, err, "prepare %v", k)
	require.NotNil(e.T, p, "prepare %v found nothing pending", k)
	return p
}

// admitOnly dispatches everything and requires exactly the identities want
// admitted, in that order.
func admitOnly(e *Env, s *workflow.Store, o *owner, at time.Time, want ...string) workflow.DispatchSummary {
	e.T.Helper()
	sum := dispatch(e, s, o, workflow.DispatchOptions{}, at)
	if want == nil {
		want = []string{}
	}
	got := refIdentities(sum.Admitted)
	require.Equal(e.T, want, got, "admitted identities")
	return sum
}

// unchanged asserts the named runs' digest still equals before.
func unchanged(e *Env, before string, what string, runIDs ...string) {
	e.T.Helper()
	assert.Equal(e.T, before, digest(e, runIDs...), "state unchanged after: %s", what)
}

// payloadsOf returns the payloads of the run's events of type typ.
func payloadsOf(e *Env, s *workflow.Store, runID, typ string) []string {
	e.T.Helper()
	evs, err := s.Events(e.Ctx, runID, 0, workflow.MaxPageLimit)
	require.NoError(e.T, err)
	var out []string
	for _, ev := range evs {
		if string(ev.Type) == typ {
			out = append(out, string(ev.Payload))
		}
	}
	return out
}

// lastTypes returns the last n event types of the run.
func lastTypes(e *Env, s *workflow.Store, runID string, n int) []string {
	e.T.Helper()
	t := eventTypes(e, s, runID)
	if len(t) < n {
		return t
	}
	return t[len(t)-n:]
}

func getSchedule(e *Env, s *workflow.Store, k workflow.ActivationKey) *workflow.RetrySchedule {
	e.T.Helper()
	sc, err := s.GetRetrySchedule(e.Ctx, k)
	if errors.Is(err, workflow.ErrNotFound) {
		return nil
	}
	require.NoError(e.T, err)
	return &sc
}

// getGroup reads a fan-out group record directly.
func getGroup(e *Env, c workflow.ActivationKey) backend.FanOutGroup {
	e.T.Helper()
	f := e.load(e.B, backend.Lookup{Groups: []backend.ActivationKey{bkey(c)}})
	g, ok := f.Groups[bkey(c)]
	require.True(e.T, ok, "fan-out group %v exists", c)
	return g
}

func activeLeases(e *Env, s *workflow.Store, runID string) []workflow.Lease {
	e.T.Helper()
	ls, err := s.ActiveLeases(e.Ctx, runID, workflow.MaxPageLimit)
	require.NoError(e.T, err)
	return ls
}

// seedAttempts inserts n settled attempts 1..n of activation k directly
// through the backend (for allowance boundaries the Store cannot reach
// cheaply). Run counters are not touched: the observation counts rows.
func seedAttempts(e *Env, k workflow.ActivationKey, n int) {
	e.T.Helper()
	const chunk = 500
	for from := 1; from <= n; from += chunk {
		var ws backend.Changes
		for i := from; i < from+chunk && i <= n; i++ {
			ak := battkey(attemptKey(k, uint32(i)))
			ws.Insert.Attempts = append(ws.Insert.Attempts, backend.Attempt{
				Key: ak, Identity: identity(k, uint32(i)), Status: backend.AttemptFailed,
				SideEffect: backend.ReadOnly, Intent: []byte(`{}`), IntentChecksum: workflow.Checksum([]byte(`{}`)),
				Receipt: []byte(`{}`), Handoff: backend.HandoffRecorded,
				PreparedMS: ms(2).UnixMilli() + int64(i), AdmittedMS: ms(2).UnixMilli() + int64(i), TerminalMS: ms(2).UnixMilli() + int64(i),
			})
		}
		e.apply(e.B, ws)
	}
}

// seedLinks inserts n child links under root directly (children whose run
// records do not exist: the observation only counts links and attempts).
func seedLinks(e *Env, root string, parent workflow.AttemptKey, n int) {
	e.T.Helper()
	const chunk = 500
	for from := 0; from < n; from += chunk {
		var ws backend.Changes
		for i := from; i < from+chunk && i < n; i++ {
			ws.Insert.Links = append(ws.Insert.Links, backend.RunLink{
				ChildRunID: fmt.Sprintf("%s-seeded-child-%04d", root, i), RootRunID: root, Parent: battkey(parent),
				Target: []byte(`{}`), Depth: 2, CreatedMS: ms(3).UnixMilli() + int64(i),
			})
		}
		e.apply(e.B, ws)
	}
}

func i64(v int64) *int64 { return &v }

// refIdentities lists the dispatch identities of refs ([]string{} when none).
func refIdentities(refs []workflow.AttemptRef) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.Identity
	}
	return out
}

// bkey and battkey name a workflow key as the backend does, for the
// records some cases read or seed through the backend directly.
func bkey(k workflow.ActivationKey) backend.ActivationKey { return backend.ActivationKey(k) }

func battkey(k workflow.AttemptKey) backend.AttemptKey {
	return backend.AttemptKey{ActivationKey: bkey(k.ActivationKey), Attempt: k.Attempt}
}

// rawRun and rawAct read a record through the backend, for the durable
// counters and index flags the Store does not expose.
func rawRun(e *Env, id string) backend.Run {
	e.T.Helper()
	f := e.load(e.B, backend.Lookup{Runs: []string{id}})
	r, ok := f.Runs[id]
	require.True(e.T, ok, "run %q exists", id)
	return r
}

func rawAct(e *Env, k workflow.ActivationKey) backend.Activation {
	e.T.Helper()
	f := e.load(e.B, backend.Lookup{Activations: []backend.ActivationKey{bkey(k)}})
	a, ok := f.Activations[bkey(k)]
	require.True(e.T, ok, "activation %v exists", k)
	return a
}

// msOf is t in unix milliseconds, 0 for the zero time (the store's "unset").
func msOf(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}
