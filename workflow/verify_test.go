package workflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/memstore"
	"github.com/wfstore/wfstore/workflow"
)

// verifyFixture builds, through the Store, a run "r" with an admitted
// attempt holding a lease (a1), a pending admissible activation (a3) and a
// low-level prepared attempt (a4); a run "rf" failed by an attempt with a
// retry schedule (a2); and an empty run "r2".
func verifyFixture(t *testing.T) (context.Context, backend.Backend, *workflow.Store) {
	t.Helper()
	ctx := context.Background()
	b := memstore.New()
	t.Cleanup(func() { b.Close() })
	s := workflow.New(b)
	now := time.UnixMilli(1_700_000_000_000)
	for _, id := range []string{"r", "rf", "r2"} {
		_, err := s.CreateRun(ctx, workflow.NewRun{ID: id}, now)
		require.NoError(t, err)
	}
	key := func(act string) workflow.ActivationKey {
		run := "r"
		if act == "a2" {
			run = "rf"
		}
		return workflow.ActivationKey{RunID: run, NodeID: "n", ActivationID: act}
	}
	add := func(na workflow.NewActivation) {
		t.Helper()
		na.Input = json.RawMessage(`{"x":1}`)
		_, err := s.AddActivation(ctx, na, now)
		require.NoError(t, err)
	}
	add(workflow.NewActivation{Key: key("a1"), Claims: []workflow.ResourceClaim{{Resource: "res", Mode: workflow.LeaseWrite}}})
	add(workflow.NewActivation{Key: key("a2"), Effect: workflow.ReadOnly, Reconciliation: workflow.IdempotentReplay,
		RetryPolicy: &workflow.RetryPolicy{Version: 1, MaxAttempts: 3,
			EligibleFailures: []workflow.FailureKind{workflow.FailureOwnerReportedRetryable},
			InitialBackoff:   time.Second, BackoffMultiplier: 2, MaximumBackoff: time.Minute}})
	sum, err := s.Dispatch(ctx, echoOwner{}, workflow.DispatchOptions{Limit: 10}, now)
	require.NoError(t, err)
	require.Len(t, sum.Admitted, 2)
	res, err := s.ApplyObservation(ctx, workflow.DispatchIdentity("rf", "n", "a2", 1),
		workflow.Observation{Kind: workflow.ObservedRetryableFailure}, now)
	require.NoError(t, err)
	require.NotNil(t, res.Schedule, "a2's failure schedules a retry: %+v", res)
	add(workflow.NewActivation{Key: key("a3")})
	add(workflow.NewActivation{Key: key("a4")})
	_, err = s.Engine().PrepareAttempt(ctx, workflow.AttemptIntent{Key: workflow.AttemptKey{ActivationKey: key("a4"), Attempt: 1},
		SideEffect: workflow.ReadOnly, Intent: json.RawMessage(`{}`)}, now)
	require.NoError(t, err)
	return ctx, b, s
}

// storeDigest lists every record the contract can enumerate, for
// "Verify writes nothing".
func storeDigest(t *testing.T, ctx context.Context, b backend.Backend) string {
	t.Helper()
	var out []string
	require.NoError(t, b.View(ctx, func(r backend.ReadTx) error {
		runs, err := r.Runs(ctx, backend.RunQuery{Limit: 1000})
		if err != nil {
			return err
		}
		for _, run := range runs {
			out = append(out, fmt.Sprintf("%+v", run))
			acts, err := r.Activations(ctx, backend.ActivationQuery{RunID: run.ID, Limit: 1000})
			if err != nil {
				return err
			}
			atts, err := r.Attempts(ctx, backend.AttemptQuery{RunID: run.ID, Limit: 1000})
			if err != nil {
				return err
			}
			leases, err := r.Leases(ctx, backend.LeaseQuery{RunID: run.ID, IncludeReleased: true, Limit: 1000})
			if err != nil {
				return err
			}
			evs, err := r.Events(ctx, backend.EventQuery{RunID: run.ID, Limit: 1000})
			if err != nil {
				return err
			}
			out = append(out, fmt.Sprintf("%+v %+v %+v %+v", acts, atts, leases, evs))
		}
		return nil
	}))
	sort.Strings(out)
	return fmt.Sprint(out)
}

func akey(act string) backend.ActivationKey {
	run := "r"
	if act == "a2" {
		run = "rf"
	}
	return backend.ActivationKey{RunID: run, NodeID: "n", ActivationID: act}
}

func atkey(act string, n uint32) backend.AttemptKey {
	return backend.AttemptKey{ActivationKey: akey(act), Attempt: n}
}

// corrupt rewrites records of the fixture through one backend transaction.
func corrupt(t *testing.T, ctx context.Context, b backend.Backend, fn func(r backend.ReadTx) backend.Changes) {
	t.Helper()
	require.NoError(t, b.Update(ctx, func(tx backend.Tx) error {
		return tx.Apply(ctx, fn(tx))
	}))
}

func mustRun(t *testing.T, ctx context.Context, r backend.ReadTx, id string) backend.Run {
	run, err := backend.GetRun(ctx, r, id)
	require.NoError(t, err)
	return run
}

func mustAct(t *testing.T, ctx context.Context, r backend.ReadTx, k backend.ActivationKey) backend.Activation {
	act, err := backend.GetActivation(ctx, r, k)
	require.NoError(t, err)
	return act
}

func mustAttempt(t *testing.T, ctx context.Context, r backend.ReadTx, k backend.AttemptKey) backend.Attempt {
	att, err := backend.GetAttempt(ctx, r, k)
	require.NoError(t, err)
	return att
}

func TestVerifyCleanStore(t *testing.T) {
	ctx, b, s := verifyFixture(t)
	before := storeDigest(t, ctx, b)
	rep, err := s.Verify(ctx, workflow.VerifyOptions{PageSize: 1})
	require.NoError(t, err)
	assert.True(t, rep.OK(), "violations: %v", rep.Violations)
	assert.Equal(t, 3, rep.Runs)
	assert.False(t, rep.Truncated)
	assert.Equal(t, before, storeDigest(t, ctx, b), "Verify wrote to the store")

	_, err = s.Verify(ctx, workflow.VerifyOptions{RunID: "missing"})
	assert.True(t, errors.Is(err, workflow.ErrNotFound), "missing run: %v", err)
	_, err = s.Verify(ctx, workflow.VerifyOptions{RunID: ""})
	assert.NoError(t, err)
}

// Each corruption breaks exactly one invariant; Verify reports exactly
// that violation, on the whole store and on the run alone.
func TestVerifyReportsEachCorruption(t *testing.T) {
	cases := []struct {
		name    string
		run     string
		check   workflow.VerifyCheck
		subject string
		fn      func(t *testing.T, ctx context.Context, r backend.ReadTx) backend.Changes
	}{
		{"second_live_attempt", "r", workflow.CheckOneActiveAttempt, `activation "n"/"a1"`,
			func(t *testing.T, ctx context.Context, r backend.ReadTx) backend.Changes {
				run := mustRun(t, ctx, r, "r")
				run.AttemptCount++
				run.ActiveCount++
				run.TreeAttemptCount++
				act := mustAct(t, ctx, r, akey("a1"))
				act.LastAttempt = 2
				att := mustAttempt(t, ctx, r, atkey("a1", 1))
				att.Key.Attempt = 2
				att.Identity = workflow.DispatchIdentity("r", "n", "a1", 2)
				att.PreparedMS++
				return backend.Changes{Insert: backend.Inserts{Attempts: []backend.Attempt{att}}, Replace: backend.Replaces{Runs: []backend.Run{run}, Activations: []backend.Activation{act}}}
			}},
		{"activation_not_running", "r", workflow.CheckActivationStatus, `attempt "n"/"a1"#1`,
			func(t *testing.T, ctx context.Context, r backend.ReadTx) backend.Changes {
				act := mustAct(t, ctx, r, akey("a1"))
				act.Status = backend.ActivationPending
				return backend.Changes{Replace: backend.Replaces{Activations: []backend.Activation{act}}}
			}},
		{"running_without_live_attempt", "rf", workflow.CheckActivationStatus, `activation "n"/"a2"`,
			func(t *testing.T, ctx context.Context, r backend.ReadTx) backend.Changes {
				act := mustAct(t, ctx, r, akey("a2"))
				act.Status = backend.ActivationRunning
				act.Admissible = false
				return backend.Changes{Replace: backend.Replaces{Activations: []backend.Activation{act}}}
			}},
		{"receipt_on_prepared", "r", workflow.CheckReceiptHandoff, `attempt "n"/"a4"#1`,
			func(t *testing.T, ctx context.Context, r backend.ReadTx) backend.Changes {
				att := mustAttempt(t, ctx, r, atkey("a4", 1))
				att.Receipt = []byte(`{"forged":true}`)
				return backend.Changes{Replace: backend.Replaces{Attempts: []backend.Attempt{att}}}
			}},
		{"active_count", "r", workflow.CheckRunCounters, "ActiveCount",
			func(t *testing.T, ctx context.Context, r backend.ReadTx) backend.Changes {
				run := mustRun(t, ctx, r, "r")
				run.ActiveCount++
				return backend.Changes{Replace: backend.Replaces{Runs: []backend.Run{run}}}
			}},
		{"attempt_count", "r", workflow.CheckRunCounters, "AttemptCount",
			func(t *testing.T, ctx context.Context, r backend.ReadTx) backend.Changes {
				run := mustRun(t, ctx, r, "r")
				run.AttemptCount-- // the tree count stays equal to the sum
				run.TreeAttemptCount--
				return backend.Changes{Replace: backend.Replaces{Runs: []backend.Run{run}}}
			}},
		{"tree_attempt_count", "r", workflow.CheckRunCounters, "TreeAttemptCount",
			func(t *testing.T, ctx context.Context, r backend.ReadTx) backend.Changes {
				run := mustRun(t, ctx, r, "r")
				run.TreeAttemptCount++
				return backend.Changes{Replace: backend.Replaces{Runs: []backend.Run{run}}}
			}},
		{"descendant_count", "r", workflow.CheckRunCounters, "DescendantCount",
			func(t *testing.T, ctx context.Context, r backend.ReadTx) backend.Changes {
				run := mustRun(t, ctx, r, "r")
				run.DescendantCount = 3
				return backend.Changes{Replace: backend.Replaces{Runs: []backend.Run{run}}}
			}},
		{"last_event_seq", "r", workflow.CheckRunCounters, "LastEventSeq",
			func(t *testing.T, ctx context.Context, r backend.ReadTx) backend.Changes {
				run := mustRun(t, ctx, r, "r")
				run.LastEventSeq--
				return backend.Changes{Replace: backend.Replaces{Runs: []backend.Run{run}}}
			}},
		{"lease_of_failed_attempt", "rf", workflow.CheckLeaseHolder, `lease "n"/"a2"#1 "res" write`,
			func(t *testing.T, ctx context.Context, r backend.ReadTx) backend.Changes {
				return backend.Changes{Insert: backend.Inserts{Leases: []backend.Lease{{
					Key:        backend.LeaseKey{AttemptKey: atkey("a2", 1), Resource: "res", Mode: backend.LeaseWrite},
					AcquiredMS: 1_700_000_000_000,
				}}}}
			}},
		{"schedule_of_missing_attempt", "rf", workflow.CheckRetrySchedule, `schedule "n"/"a2"`,
			func(t *testing.T, ctx context.Context, r backend.ReadTx) backend.Changes {
				f, err := r.Load(ctx, backend.Lookup{Schedules: []backend.ActivationKey{akey("a2")}})
				require.NoError(t, err)
				sc, ok := f.Schedules[akey("a2")]
				require.True(t, ok, "the fixture has a schedule on a2")
				sc.FailedAttempt = 2
				return backend.Changes{Replace: backend.Replaces{Schedules: []backend.RetrySchedule{sc}}}
			}},
		{"schedule_of_succeeded_attempt", "rf", workflow.CheckRetrySchedule, `schedule "n"/"a2"`,
			func(t *testing.T, ctx context.Context, r backend.ReadTx) backend.Changes {
				att := mustAttempt(t, ctx, r, atkey("a2", 1))
				att.Status = backend.AttemptSucceeded
				return backend.Changes{Replace: backend.Replaces{Attempts: []backend.Attempt{att}}}
			}},
		{"admissible_running_activation", "r", workflow.CheckAdmissible, `activation "n"/"a1"`,
			func(t *testing.T, ctx context.Context, r backend.ReadTx) backend.Changes {
				act := mustAct(t, ctx, r, akey("a1"))
				act.Admissible = true
				return backend.Changes{Replace: backend.Replaces{Activations: []backend.Activation{act}}}
			}},
		{"admissible_waiting_activation", "r", workflow.CheckAdmissible, `activation "n"/"a3"`,
			func(t *testing.T, ctx context.Context, r backend.ReadTx) backend.Changes {
				act := mustAct(t, ctx, r, akey("a3"))
				act.Status = backend.ActivationWaiting
				return backend.Changes{Replace: backend.Replaces{Activations: []backend.Activation{act}}}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, b, s := verifyFixture(t)
			corrupt(t, ctx, b, func(r backend.ReadTx) backend.Changes { return c.fn(t, ctx, r) })
			before := storeDigest(t, ctx, b)
			for _, opts := range []workflow.VerifyOptions{{}, {PageSize: 1}, {RunID: c.run}} {
				rep, err := s.Verify(ctx, opts)
				require.NoError(t, err)
				if assert.Len(t, rep.Violations, 1, "%+v: %v", opts, rep.Violations) {
					v := rep.Violations[0]
					assert.Equal(t, c.check, v.Check, "%v", v)
					assert.Equal(t, c.run, v.RunID, "%v", v)
					assert.Equal(t, c.subject, v.Subject, "%v", v)
					assert.NotEmpty(t, v.Detail)
				}
			}
			rep, err := s.Verify(ctx, workflow.VerifyOptions{RunID: "r2"})
			require.NoError(t, err)
			assert.True(t, rep.OK(), "the other run is clean: %v", rep.Violations)
			assert.Equal(t, before, storeDigest(t, ctx, b), "Verify wrote to the store")
		})
	}
}

// indexFailing is a backend whose own index check fails.
type indexFailing struct{ backend.Backend }

func (indexFailing) Verify(context.Context) error { return errors.New("index entry without record") }

func TestVerifyReportsTheBackendsOwnCheck(t *testing.T) {
	ctx, b, _ := verifyFixture(t)
	rep, err := workflow.New(indexFailing{b}).Verify(ctx, workflow.VerifyOptions{})
	require.NoError(t, err)
	require.Len(t, rep.Violations, 1)
	assert.Equal(t, workflow.CheckBackendIndex, rep.Violations[0].Check)
	assert.Contains(t, rep.Violations[0].Detail, "index entry without record")
	// A one-run pass does not run the store-wide check.
	rep, err = workflow.New(indexFailing{b}).Verify(ctx, workflow.VerifyOptions{RunID: "r"})
	require.NoError(t, err)
	assert.True(t, rep.OK())
}

func TestVerifyStopsAtMaxViolations(t *testing.T) {
	ctx, b, s := verifyFixture(t)
	corrupt(t, ctx, b, func(r backend.ReadTx) backend.Changes {
		run := mustRun(t, ctx, r, "r")
		run.ActiveCount++
		run.AttemptCount++
		run2 := mustRun(t, ctx, r, "r2")
		run2.AttemptCount++
		return backend.Changes{Replace: backend.Replaces{Runs: []backend.Run{run, run2}}}
	})
	rep, err := s.Verify(ctx, workflow.VerifyOptions{MaxViolations: 1})
	require.NoError(t, err)
	assert.Len(t, rep.Violations, 1)
	assert.True(t, rep.Truncated)
	rep, err = s.Verify(ctx, workflow.VerifyOptions{})
	require.NoError(t, err)
	// r: AttemptCount, ActiveCount, TreeAttemptCount; r2: AttemptCount,
	// TreeAttemptCount.
	assert.Len(t, rep.Violations, 5)
	assert.False(t, rep.Truncated)
	assert.Equal(t, "r2", rep.Violations[4].RunID)
}
