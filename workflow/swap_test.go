package workflow_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/internal/faultseam"
	"github.com/wfstore/wfstore/memstore"
	"github.com/wfstore/wfstore/workflow"
)

// swapCounter counts, per Update, the Loads, the Expect writes and the
// swapped rows its fn makes, over a backend whose transactions are
// backend.Swappers.
type swapCounter struct {
	backend.Backend
	mu      sync.Mutex
	updates []swapCount
}

type swapCount struct{ loads, expects, swaps int }

func (c *swapCounter) Update(ctx context.Context, fn func(tx backend.Tx) error) error {
	var n swapCount
	err := c.Backend.Update(ctx, func(tx backend.Tx) error {
		n = swapCount{}
		return fn(&swappingTx{Tx: tx, sw: tx.(backend.Swapper), n: &n})
	})
	c.mu.Lock()
	c.updates = append(c.updates, n)
	c.mu.Unlock()
	return err
}

func (c *swapCounter) take() []swapCount {
	c.mu.Lock()
	defer c.mu.Unlock()
	u := c.updates
	c.updates = nil
	return u
}

type swappingTx struct {
	backend.Tx
	sw backend.Swapper
	n  *swapCount
}

func (t *swappingTx) Load(ctx context.Context, l backend.Lookup) (backend.Found, error) {
	t.n.loads++
	return t.Tx.Load(ctx, l)
}

func (t *swappingTx) Apply(ctx context.Context, c backend.Changes) error {
	e := c.Expect
	t.n.expects += len(e.Runs) + len(e.Activations) + len(e.Attempts)
	return t.Tx.Apply(ctx, c)
}

func (t *swappingTx) SwapAttempts(ctx context.Context, swaps []backend.AttemptSwap) ([]bool, error) {
	t.n.swaps += len(swaps)
	return t.sw.SwapAttempts(ctx, swaps)
}

// recordingOwner accepts every attempt and records which it was called for.
type recordingOwner struct {
	acceptOwner
	mu     sync.Mutex
	called []workflow.ActivationKey
}

func (o *recordingOwner) Dispatch(ctx context.Context, p workflow.PreparedDispatch) (json.RawMessage, error) {
	o.mu.Lock()
	o.called = append(o.called, p.Activation.Key)
	o.mu.Unlock()
	return o.acceptOwner.Dispatch(ctx, p)
}

func newSwapping(t *testing.T, acts ...string) (*workflow.Store, *memstore.Backend, *swapCounter, time.Time) {
	t.Helper()
	ctx := context.Background()
	b := memstore.New()
	t.Cleanup(func() { b.Close() })
	c := &swapCounter{Backend: b}
	s := workflow.New(c)
	now := time.UnixMilli(1_700_000_000_000)
	_, err := s.CreateRun(ctx, workflow.NewRun{ID: "run", Limits: workflow.RunLimits{NodeExecutionCap: 10, ConcurrencyCap: 10, CycleCap: 10, RetryCap: workflow.RetryCap(1)}}, now)
	require.NoError(t, err)
	for _, a := range acts {
		_, err = s.AddActivation(ctx, workflow.NewActivation{Key: workflow.ActivationKey{RunID: "run", NodeID: "node-" + a, ActivationID: a}, Input: json.RawMessage(`{}`)}, now)
		require.NoError(t, err)
	}
	c.take()
	return s, b, c, now
}

// On a backend with per-row compare-and-set, a batch's handoff expects the
// run and the activations unchanged and flips each attempt by a swap from
// the record prepare committed: it reads nothing and expects no attempt.
func TestBatchHandoffSwapsTheAttempts(t *testing.T) {
	s, _, c, now := newSwapping(t, "a1", "a2", "a3")
	o := &recordingOwner{}
	sum, err := s.Dispatch(context.Background(), o, workflow.DispatchOptions{RunID: "run", Limit: 3, BatchSize: 3}, now.Add(time.Second))
	require.NoError(t, err)
	require.Len(t, sum.Admitted, 3)
	require.Equal(t, []swapCount{{loads: 1}, {expects: 4, swaps: 3}, {expects: 7}}, c.take(),
		"prepare reads; handoff expects run and activations and swaps the attempts; receipt expects what the handoff committed")
}

// When an attempt of the batch changed between prepare and handoff and
// nothing else did, the handoff's swap leaves it and reports it: only it
// is read again and decided (here: raced, another caller's handoff is
// recorded), in the same transaction; the others are handed off, the
// owner is called for them only, and they are admitted.
func TestBatchHandoffRefusesOnlyTheAttemptItDidNotFlip(t *testing.T) {
	s, b, c, now := newSwapping(t, "a1", "a2", "a3")
	ctx := context.Background()
	a2 := workflow.ActivationKey{RunID: "run", NodeID: "node-a2", ActivationID: "a2"}
	var once sync.Once
	fault := func(ctx context.Context, bd faultseam.Boundary, p workflow.PreparedDispatch) error {
		if bd != faultseam.IntentCommitted || p.Activation.Key != a2 {
			return nil
		}
		var err error
		once.Do(func() {
			// Another caller's handoff of a2, written without touching
			// the run or the activation.
			err = b.Update(ctx, func(tx backend.Tx) error {
				k := p.Key()
				f, err := tx.Load(ctx, backend.Lookup{Attempts: []backend.AttemptKey{k}})
				if err != nil {
					return err
				}
				att := f.Attempts[k]
				att.Handoff, att.HandoffToken = backend.HandoffRecorded, "another caller's token"
				return tx.Apply(ctx, backend.Changes{Replace: backend.Replaces{Attempts: []backend.Attempt{att}}})
			})
		})
		return err
	}
	o := &recordingOwner{}
	sum, err := s.Dispatch(faultseam.With(ctx, fault), o, workflow.DispatchOptions{RunID: "run", Limit: 3, BatchSize: 3}, now.Add(time.Second))
	require.NoError(t, err)
	require.Equal(t, []workflow.ActivationKey{a2}, sum.Raced, "the attempt the swap did not flip is reported raced")
	require.Len(t, sum.Admitted, 2)
	require.NotContains(t, o.called, a2, "the owner is called only for attempts this caller flipped")
	require.Len(t, o.called, 2)
	require.Equal(t, []swapCount{{loads: 1}, {expects: 4, swaps: 3, loads: 1}, {expects: 5}}, c.take(),
		"the handoff reads only the attempt it did not flip, in its one transaction")
	k := backend.AttemptKey{ActivationKey: a2, Attempt: 1}
	require.NoError(t, b.View(ctx, func(r backend.ReadTx) error {
		f, err := r.Load(ctx, backend.Lookup{Attempts: []backend.AttemptKey{k}})
		att := f.Attempts[k]
		require.Equal(t, backend.AttemptPrepared, att.Status)
		require.Equal(t, "another caller's token", att.HandoffToken, "a2 keeps the other caller's handoff")
		return err
	}))
}

// A cancellation committed between prepare and handoff still stops the
// handoff on the swap path: the run is expected unchanged, so the handoff
// reads it and refuses every attempt; none is flipped and the owner is
// never called.
func TestBatchHandoffSwapPathStillStopsAtACancellation(t *testing.T) {
	s, b, _, now := newSwapping(t, "a1", "a2")
	ctx := context.Background()
	var once sync.Once
	fault := func(ctx context.Context, bd faultseam.Boundary, p workflow.PreparedDispatch) error {
		var err error
		if bd == faultseam.IntentCommitted {
			once.Do(func() { _, err = s.RequestCancellation(ctx, "run", nil, now.Add(1500*time.Millisecond)) })
		}
		return err
	}
	o := &recordingOwner{}
	sum, err := s.Dispatch(faultseam.With(ctx, fault), o, workflow.DispatchOptions{RunID: "run", Limit: 2, BatchSize: 2}, now.Add(time.Second))
	require.NoError(t, err)
	require.Empty(t, sum.Admitted)
	require.Len(t, sum.Rejected, 2, "both handoffs refused on the cancelled run")
	require.Empty(t, o.called)
	require.NoError(t, b.View(ctx, func(r backend.ReadTx) error {
		atts, err := r.Attempts(ctx, backend.AttemptQuery{RunID: "run", Limit: 10})
		for _, a := range atts {
			require.NotEqual(t, backend.HandoffRecorded, a.Handoff, "attempt %v handed off", a.Key)
		}
		return err
	}))
}
