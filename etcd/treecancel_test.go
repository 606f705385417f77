package etcd_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/etcd"
	"github.com/wfstore/wfstore/internal/benchdata"
	"github.com/wfstore/wfstore/workflow"
)

// acceptAll is an owner that accepts every activation at once.
type acceptAll struct{ calls atomic.Int64 }

func (o *acceptAll) Plan(context.Context, workflow.Activation) (*workflow.Plan, error) {
	return &workflow.Plan{SideEffect: workflow.ReadOnly, Intent: json.RawMessage(`{}`)}, nil
}

func (o *acceptAll) Dispatch(context.Context, workflow.PreparedDispatch) (json.RawMessage, error) {
	o.calls.Add(1)
	return json.RawMessage(`{"ok":true}`), nil
}

// An operator's tree cancellation commits while 8 dispatchers (each
// through a Store of its own, as separate processes) race to admit the
// same run's work: it never fails with ErrBusy because the
// dispatchers keep committing (each of their commits changes rows the
// cancellation read, so its compare fails and it re-runs).
func TestTreeCancellationUnderRacingDispatchers(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	b, _ := openFresh(t)
	ctx := ctxT(t)
	s := workflow.New(b)
	now := time.UnixMilli(1_800_000_000_000)
	const runs, perRun = 2, 150
	for r := range runs {
		id := fmt.Sprint("root-", r)
		_, err := s.CreateRun(ctx, workflow.NewRun{ID: id}, now)
		require.NoError(t, err)
		for a := range perRun {
			_, err := s.AddActivation(ctx, workflow.NewActivation{Key: workflow.ActivationKey{RunID: id, NodeID: "n", ActivationID: fmt.Sprint("a", a)},
				Input: json.RawMessage(`{}`)}, now)
			require.NoError(t, err)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var owner acceptAll
	var dispatchErrs atomic.Int64
	for range 8 {
		d := workflow.New(b) // a Store per dispatcher, as separate processes have
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := d.Dispatch(ctx, &owner, workflow.DispatchOptions{Limit: 1}, now); err != nil && ctx.Err() == nil {
					dispatchErrs.Add(1)
				}
			}
		})
	}
	// Let the dispatchers get going, then cancel every tree while they run.
	for owner.calls.Load() < 8 {
		time.Sleep(5 * time.Millisecond)
	}
	for r := range runs {
		id := fmt.Sprint("root-", r)
		start := time.Now()
		_, err := s.RequestTreeCancellation(ctx, id, nil, now.Add(time.Second))
		require.NotErrorIs(t, err, backend.ErrBusy, "tree cancellation of %s under 8 racing dispatchers", id)
		require.NoError(t, err, id)
		t.Logf("%s: tree cancellation took %v", id, time.Since(start).Round(time.Millisecond))
	}
	close(stop)
	wg.Wait()
	t.Logf("%d owner calls, %d dispatch errors", owner.calls.Load(), dispatchErrs.Load())
}

// The same under sustained dispatch load: a tree of 1000 activations that
// 8 dispatchers have been admitting for a while before the operator
// cancels it, each through a Store of its own over 4 Backends of their own
// (a client each), and the operator through another, as separate
// processes are. The cancellation reads every activation of the
// run and writes most of them, so its read set is large and its commit
// slow, while the dispatchers commit small transactions on that same run
// every few milliseconds: re-run optimistically against them, it loses
// every race until the busy timeout. It must commit, with the default
// busy timeout, without ErrBusy.
func TestTreeCancellationUnderSustainedDispatch(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	b, p := openFresh(t, etcd.WithMaxTxnOps(16384))
	ctx := ctxT(t)
	s := workflow.New(b)
	var procs []*etcd.Backend
	for range 4 {
		pb, err := openLocator(ctx, locator(p), etcd.WithMaxTxnOps(16384))
		require.NoError(t, err)
		t.Cleanup(func() { _ = pb.Close() })
		procs = append(procs, pb)
	}
	keys, err := benchdata.SeedRuns(ctx, s, b, "tree", 1000, 1000, nil, time.UnixMilli(1_800_000_000_000))
	require.NoError(t, err)
	root := keys[0].RunID
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var owner acceptAll
	var dispatchErrs atomic.Int64
	for i := range 8 {
		d := workflow.New(procs[i%len(procs)])
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := d.Dispatch(ctx, &owner, workflow.DispatchOptions{Limit: 10}, time.Now()); err != nil && ctx.Err() == nil {
					dispatchErrs.Add(1)
				}
			}
		})
	}
	for owner.calls.Load() < 40 {
		time.Sleep(5 * time.Millisecond)
	}
	start := time.Now()
	_, err = s.RequestTreeCancellation(ctx, root, nil, time.Now())
	took := time.Since(start)
	calls := owner.calls.Load()
	close(stop)
	wg.Wait()
	t.Logf("tree cancellation took %v; %d owner calls, %d dispatch errors; %+v", took.Round(time.Millisecond), calls, dispatchErrs.Load(), b.Stats())
	require.NotErrorIs(t, err, backend.ErrBusy, "tree cancellation under 8 dispatchers")
	require.NoError(t, err)
	got, err := s.GetRun(ctx, root)
	require.NoError(t, err)
	require.NotZero(t, got.CancelRequestedAt, "the cancellation committed")
}
