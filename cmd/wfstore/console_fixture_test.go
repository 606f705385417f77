package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/sqlite"
	"github.com/wfstore/wfstore/workflow"
)

// fixtureOwner plans every node except "notify" (left pending, as an owner
// that does not handle it would) and accepts every dispatch.
type fixtureOwner struct{}

func (fixtureOwner) Plan(_ context.Context, a workflow.Activation) (*workflow.Plan, error) {
	if a.Key.NodeID == "notify" {
		return nil, nil
	}
	return &workflow.Plan{SideEffect: a.Effect, Intent: a.Input}, nil
}

func (fixtureOwner) Dispatch(_ context.Context, p workflow.PreparedDispatch) (json.RawMessage, error) {
	return json.RawMessage(`{"queue":"orders","accepted":true}`), nil
}

// consoleStore is an order pipeline's SQLite store as an operator finds it.
type consoleStore struct {
	Path string
	// Run ids, by what the operator sees.
	Running, Failed, Cancelled, Retrying, Repair, Fenced, Child string
	// RepairIdentity is the repair_required attempt of Repair.
	RepairIdentity string
	// Now is a time just after the store was written.
	Now time.Time
}

// newConsoleStore writes the fixture store: a running root with an
// admitted attempt, a pending node and a child run; a failed run; a
// cancelled run; a run with a retry due; a run whose mutating attempt
// needs repair; and a running run with an execution authority.
func newConsoleStore(t testing.TB) consoleStore {
	t.Helper()
	ctx := context.Background()
	fx := consoleStore{Path: filepath.Join(t.TempDir(), "orders.db"),
		Running: "order-1001", Failed: "order-1002", Cancelled: "order-1003", Retrying: "order-1004",
		Repair: "order-1005", Fenced: "order-1006"}
	b, err := sqlite.Open(ctx, fx.Path)
	require.NoError(t, err)
	defer b.Close()
	s := workflow.New(b)
	now := time.Now().Add(-30 * time.Minute).Truncate(time.Millisecond)
	tick := func(d time.Duration) time.Time { now = now.Add(d); return now }
	key := func(run, node string) workflow.ActivationKey {
		return workflow.ActivationKey{RunID: run, NodeID: node, ActivationID: "a1"}
	}
	in := json.RawMessage(`{"order":"` + "sku-42" + `","qty":2}`)
	add := func(run, node string, na workflow.NewActivation) {
		na.Key, na.Input = key(run, node), in
		if na.Effect == "" {
			na.Effect, na.Reconciliation = workflow.ReadOnly, workflow.IdempotentReplay
		}
		_, err := s.AddActivation(ctx, na, tick(time.Second))
		require.NoError(t, err)
	}
	create := func(nr workflow.NewRun) {
		_, err := s.CreateRun(ctx, nr, tick(time.Second))
		require.NoError(t, err)
	}
	identity := func(run, node string) string {
		attsPage, err := s.Attempts(ctx, workflow.AttemptQuery{RunID: run, Descending: true, Limit: 50})
		require.NoError(t, err)
		atts := attsPage.Items
		for _, a := range atts {
			if a.Key.NodeID == node {
				return a.Identity
			}
		}
		t.Fatalf("no attempt of %s/%s", run, node)
		return ""
	}
	observe := func(run, node string, o workflow.Observation) {
		_, err := s.ApplyObservation(ctx, identity(run, node), o, tick(time.Second))
		require.NoError(t, err)
	}

	create(workflow.NewRun{ID: fx.Running})
	add(fx.Running, "reserve", workflow.NewActivation{})
	add(fx.Running, "notify", workflow.NewActivation{})
	add(fx.Running, "payment", workflow.NewActivation{})
	create(workflow.NewRun{ID: fx.Failed})
	add(fx.Failed, "charge", workflow.NewActivation{})
	create(workflow.NewRun{ID: fx.Cancelled})
	add(fx.Cancelled, "notify", workflow.NewActivation{})
	create(workflow.NewRun{ID: fx.Retrying})
	add(fx.Retrying, "fetch", workflow.NewActivation{RetryPolicy: &workflow.RetryPolicy{Version: 1, MaxAttempts: 3,
		EligibleFailures: []workflow.FailureKind{workflow.FailureOwnerReportedRetryable},
		InitialBackoff:   time.Hour, BackoffMultiplier: 2, MaximumBackoff: 4 * time.Hour}})
	create(workflow.NewRun{ID: fx.Repair})
	add(fx.Repair, "charge", workflow.NewActivation{Effect: workflow.Mutating, Reconciliation: workflow.RepairRequired})
	create(workflow.NewRun{ID: fx.Fenced, Authority: &workflow.Authority{TargetArtifactID: "orders-v3",
		DaemonInstanceID: "engine-7", Generation: 3, FencingToken: "f3"}})
	add(fx.Fenced, "notify", workflow.NewActivation{})

	// The child run's parent attempt is prepared before Dispatch, so
	// Dispatch does not take its activation.
	_, err = s.Engine().PreparePending(ctx, key(fx.Running, "payment"), workflow.Plan{SideEffect: workflow.ReadOnly, Intent: in}, tick(time.Second))
	require.NoError(t, err)
	fx.Child, _, err = s.CreateChildRun(ctx, workflow.NewChildRun{Parent: workflow.AttemptKey{ActivationKey: key(fx.Running, "payment"), Attempt: 1},
		Target: json.RawMessage(`{"workflow":"payment"}`)}, tick(time.Second))
	require.NoError(t, err)
	add(fx.Child, "authorize", workflow.NewActivation{})

	_, err = s.Dispatch(ctx, fixtureOwner{}, workflow.DispatchOptions{Limit: 100}, tick(time.Minute))
	require.NoError(t, err)
	observe(fx.Failed, "charge", workflow.Observation{Kind: workflow.ObservedFailed, Detail: json.RawMessage(`{"error":"card declined"}`)})
	observe(fx.Retrying, "fetch", workflow.Observation{Kind: workflow.ObservedRetryableFailure, Detail: json.RawMessage(`{"error":"upstream 503"}`)})
	observe(fx.Repair, "charge", workflow.Observation{Kind: workflow.ObservedUnknown, Detail: json.RawMessage(`{"error":"timeout after send"}`)})
	fx.RepairIdentity = identity(fx.Repair, "charge")
	_, err = s.RequestCancellation(ctx, fx.Cancelled, nil, tick(time.Second))
	require.NoError(t, err)
	fx.Now = tick(time.Minute)

	for id, want := range map[string]workflow.RunStatus{fx.Running: workflow.RunRunning, fx.Failed: workflow.RunFailed,
		fx.Cancelled: workflow.RunCancelled, fx.Repair: workflow.RunRepairRequired, fx.Fenced: workflow.RunRunning} {
		run, err := s.GetRun(ctx, id)
		require.NoError(t, err)
		require.Equal(t, want, run.Status, "run %s", id)
	}
	return fx
}
