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
