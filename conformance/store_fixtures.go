package conformance

import (
	"encoding/json"
	"errors"
	"github.com/wfstore/wfstore/backend"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/workflow"
)

// Fixtures for the store tier: the clock, keys and authorities, and the
// runs and activations a case starts from. Every case works through
// workflow.Store over e.B.

// t0 is the suite's clock origin; ms(n) is t0 + n milliseconds.
var t0 = time.UnixMilli(1_700_000_000_000).UTC()

func ms(n int64) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }

// msOf is t in unix milliseconds, 0 for the zero time (the store's "unset").
func msOf(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func store(e *env) *workflow.Store { return e.newStore(e.B) }

// newStore returns a Store over b in the case's dispatch mode: one at a time,
// or batch mode with the batch size of the store-batch tier.
func (e *env) newStore(b backend.Backend) *workflow.Store {
	return workflow.New(b, workflow.WithBatchSize(e.batch))
}

func key(run, node, act string) workflow.ActivationKey {
	return workflow.ActivationKey{RunID: run, NodeID: node, ActivationID: act}
}

func identity(k workflow.ActivationKey, attempt uint32) string {
	return workflow.DispatchIdentity(k.RunID, k.NodeID, k.ActivationID, attempt)
}

// attemptEvent is the stored payload of an event about attempt n of k: the
// attempt's names (run, node, activation, attempt number) and dispatch
// identity, with the fields of the JSON object extra, in canonical form.
func attemptEvent(k workflow.ActivationKey, n uint32, extra string) string {
	fields := map[string]any{}
	if err := json.Unmarshal([]byte(extra), &fields); err != nil {
		panic(err)
	}
	fields["run_id"], fields["node_id"], fields["activation_id"] = k.RunID, k.NodeID, k.ActivationID
	fields["attempt"], fields["dispatch_identity"] = n, identity(k, n)
	raw, err := json.Marshal(fields)
	if err != nil {
		panic(err)
	}
	canon, err := workflow.CanonicalJSON(raw)
	if err != nil {
		panic(err)
	}
	return string(canon)
}

func attemptKey(k workflow.ActivationKey, n uint32) workflow.AttemptKey {
	return workflow.AttemptKey{ActivationKey: k, Attempt: n}
}

func authority(gen int64, tag string) *workflow.Authority {
	return &workflow.Authority{TargetArtifactID: "artifact", DaemonInstanceID: "daemon-" + tag, Generation: gen, FencingToken: "token-" + tag}
}

// mkRun creates a root run with the given limits, every zero field taking
// its default (RetryCap too: for an explicit retry cap of 0 call CreateRun
// with workflow.RetryCap(0)).
func mkRun(e *env, s *workflow.Store, id string, l workflow.Limits, auth *workflow.Authority) {
	e.T.Helper()
	_, err := s.CreateRun(e.Ctx, workflow.NewRun{ID: id, Limits: defaulted(l), Authority: auth}, ms(0))
	require.NoError(e.T, err, "create run %q", id)
}

// defaulted requests l with every zero field unset (so taking its default).
func defaulted(l workflow.Limits) workflow.RunLimits {
	r := workflow.RunLimits{NodeExecutionCap: l.NodeExecutionCap, ConcurrencyCap: l.ConcurrencyCap, CycleCap: l.CycleCap}
	if l.RetryCap != 0 {
		r.RetryCap = workflow.RetryCap(uint32(l.RetryCap))
	}
	return r
}

// mkAct adds a pending activation with input {"n":"<act>"}.
func mkAct(e *env, s *workflow.Store, k workflow.ActivationKey, mod ...func(*workflow.NewActivation)) {
	e.T.Helper()
	na := workflow.NewActivation{Key: k, Input: json.RawMessage(`{"n":` + jsonString(k.ActivationID) + `}`)}
	for _, m := range mod {
		m(&na)
	}
	_, err := s.AddActivation(e.Ctx, na, ms(1))
	require.NoError(e.T, err, "add activation %v", k)
}

// withPolicy, withEffect, withClaims, withPreds and withGeneration modify
// the activation mkAct adds.
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

func claim(res string, mode workflow.LeaseMode) workflow.ResourceClaim {
	return workflow.ResourceClaim{Resource: res, Mode: mode}
}

func i64(v int64) *int64 { return &v }

// requireIs fails unless err matches target with errors.Is.
func requireIs(t testing.TB, err, target error, msgAndArgs ...any) {
	t.Helper()
	require.Error(t, err, msgAndArgs...)
	require.Truef(t, errors.Is(err, target), "error %q does not match %q", err, target)
}

var errInjected = errors.New("conformance: injected failure")

// jsonString is s as a JSON string (ids may hold any character but NUL).
func jsonString(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}
