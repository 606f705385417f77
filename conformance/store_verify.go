package conformance

import (
	"encoding/json"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/workflow"
)

func verifyCases() []testCase {
	return []testCase{
		{Name: "verify_finds_no_violation_in_a_store_the_store_wrote", Run: caseVerifyClean},
		{Name: "verify_reports_exactly_the_corrupted_invariants", Run: caseVerifyCorrupted},
	}
}

// verifyStore writes, through the Store, a run "v" with an admitted attempt
// holding a lease, a prepared attempt that parents a child run, and a
// pending activation; and a run "vf" failed by an attempt with a retry
// schedule.
func verifyStore(e *env) *workflow.Store {
	e.T.Helper()
	s := store(e)
	mkRun(e, s, "v", workflow.Limits{}, nil)
	mkRun(e, s, "vf", workflow.Limits{}, nil)
	mkAct(e, s, key("v", "n", "leased"), withClaims(claim("res", workflow.LeaseWrite)))
	mkAct(e, s, key("vf", "n", "retried"), withEffect(workflow.ReadOnly, workflow.IdempotentReplay), withPolicy(retryPolicy(3, 1000)))
	admitOnly(e, s, newOwner(), ms(10), identity(key("v", "n", "leased"), 1), identity(key("vf", "n", "retried"), 1))
	res := observe(e, s, identity(key("vf", "n", "retried"), 1), obs(workflow.ObservedRetryableFailure), ms(11))
	require.NotNil(e.T, res.Schedule, "the failure schedules a retry")
	mkAct(e, s, key("v", "n", "parent"))
	prep(e, s, key("v", "n", "parent"), workflow.ReadOnly, ms(12))
	_, _, err := s.CreateChildRun(e.Ctx, workflow.NewChildRun{Parent: attemptKey(key("v", "n", "parent"), 1), Target: json.RawMessage(`{"t":1}`)}, ms(13))
	require.NoError(e.T, err)
	mkAct(e, s, key("v", "n", "pending"))
	return s
}

func caseVerifyClean(e *env) {
	s := verifyStore(e)
	before := digest(e, "v", "vf")
	rep, err := s.Verify(e.Ctx, workflow.VerifyOptions{PageSize: 1})
	require.NoError(e.T, err)
	assert.Empty(e.T, rep.Violations)
	assert.Equal(e.T, 3, rep.Runs, "v, its child and vf")
	unchanged(e, before, "Verify", "v", "vf")
}

func caseVerifyCorrupted(e *env) {
	s := verifyStore(e)
	e.update(e.B, func(tx backend.Tx) error {
		run, err := backend.GetRun(e.Ctx, tx, "v")
		if err != nil {
			return err
		}
		run.DescendantCount++
		f, err := tx.Load(e.Ctx, backend.Lookup{Schedules: []backend.ActivationKey{bkey(key("vf", "n", "retried"))}})
		if err != nil {
			return err
		}
		sc, ok := f.Schedules[bkey(key("vf", "n", "retried"))]
		if !ok {
			e.T.Fatal("no schedule")
		}
		sc.FailedAttempt = 7
		stale := backend.Lease{Key: backend.LeaseKey{AttemptKey: battkey(attemptKey(key("vf", "n", "retried"), 1)), Resource: "res", Mode: backend.LeaseRead}, AcquiredMS: 1}
		return tx.Apply(e.Ctx, join(rep(run, sc), ins(stale)))
	})
	before := digest(e, "v", "vf")
	rep, err := s.Verify(e.Ctx, workflow.VerifyOptions{PageSize: 1})
	require.NoError(e.T, err)
	type found struct {
		Check   workflow.VerifyCheck
		Run     string
		Subject string
	}
	var got []found
	for _, v := range rep.Violations {
		got = append(got, found{v.Check, v.RunID, v.Subject})
	}
	assert.Equal(e.T, []found{
		{workflow.CheckRunCounters, "v", "DescendantCount"},
		{workflow.CheckLeaseHolder, "vf", `lease "n"/"retried"#1 "res" read`},
		{workflow.CheckRetrySchedule, "vf", `schedule "n"/"retried"`},
	}, got, "violations: %v", rep.Violations)
	unchanged(e, before, "Verify", "v", "vf")
}
