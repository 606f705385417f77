package workflow_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/event"
	"github.com/wfstore/wfstore/internal/faultseam"
	"github.com/wfstore/wfstore/memstore"
	"github.com/wfstore/wfstore/workflow"
)

// loadCounter counts, per Update, the Loads and the Expect writes its fn
// makes.
type loadCounter struct {
	backend.Backend
	mu      sync.Mutex
	updates []txCount
}

type txCount struct{ loads, expects int }

func (c *loadCounter) Update(ctx context.Context, fn func(tx backend.Tx) error) error {
	var n txCount
	err := c.Backend.Update(ctx, func(tx backend.Tx) error {
		n = txCount{}
		return fn(&countingTx{Tx: tx, n: &n})
	})
	c.mu.Lock()
	c.updates = append(c.updates, n)
	c.mu.Unlock()
	return err
}

func (c *loadCounter) take() []txCount {
	c.mu.Lock()
	defer c.mu.Unlock()
	u := c.updates
	c.updates = nil
	return u
}

type countingTx struct {
	backend.Tx
	n *txCount
}

func (t *countingTx) Load(ctx context.Context, l backend.Lookup) (backend.Found, error) {
	t.n.loads++
	return t.Tx.Load(ctx, l)
}

func (t *countingTx) Apply(ctx context.Context, c backend.Changes) error {
	e := c.Expect
	t.n.expects += len(e.Runs) + len(e.Activations) + len(e.Attempts)
	return t.Tx.Apply(ctx, c)
}

type acceptOwner struct{}

func (acceptOwner) Plan(context.Context, workflow.Activation) (*workflow.Plan, error) {
	return &workflow.Plan{SideEffect: workflow.Mutating, Intent: json.RawMessage(`{"op":"x"}`)}, nil
}

func (acceptOwner) Dispatch(context.Context, workflow.PreparedDispatch) (json.RawMessage, error) {
	return json.RawMessage(`{"ok":true}`), nil
}

func newCounted(t *testing.T) (*workflow.Store, *loadCounter, time.Time) {
	t.Helper()
	ctx := context.Background()
	b := memstore.New()
	t.Cleanup(func() { b.Close() })
	c := &loadCounter{Backend: b}
	s := workflow.New(c)
	now := time.UnixMilli(1_700_000_000_000)
	_, err := s.CreateRun(ctx, workflow.NewRun{ID: "run", Limits: workflow.RunLimits{NodeExecutionCap: 10, ConcurrencyCap: 10, CycleCap: 10, RetryCap: workflow.RetryCap(1)}}, now)
	require.NoError(t, err)
	for _, a := range []string{"a1", "a2"} {
		_, err = s.AddActivation(ctx, workflow.NewActivation{Key: workflow.ActivationKey{RunID: "run", NodeID: "node-" + a, ActivationID: a}, Input: json.RawMessage(`{}`)}, now)
		require.NoError(t, err)
	}
	c.take()
	return s, c, now
}

// An admission decides the handoff and the receipt on the records the step
// before committed: each of those transactions expects them unchanged and
// reads nothing.
func TestAdmissionDecidesOnKnownRecords(t *testing.T) {
	s, c, now := newCounted(t)
	sum, err := s.Dispatch(context.Background(), acceptOwner{}, workflow.DispatchOptions{RunID: "run", Limit: 1}, now.Add(time.Second))
	require.NoError(t, err)
	require.Len(t, sum.Admitted, 1)
	require.Equal(t, []txCount{{loads: 1}, {expects: 3}, {expects: 2}}, c.take(), "prepare reads; handoff and receipt expect run, activation, attempt / run, attempt")
}

// When another transaction changes the run between prepare and handoff,
// the handoff's expectation fails and it reads and decides again: the
// admission still succeeds, and the events of both admissions keep one
// sequence.
func TestAdmissionRereadsChangedRecords(t *testing.T) {
	s, c, now := newCounted(t)
	ctx := context.Background()
	other := workflow.ActivationKey{RunID: "run", NodeID: "node-a2", ActivationID: "a2"}
	fault := func(ctx context.Context, b faultseam.Boundary, p workflow.PreparedDispatch) error {
		if b == faultseam.IntentCommitted && p.Activation.Key != other {
			// Another dispatcher prepares a2: the run's counters and event
			// sequence change under a1's handoff.
			_, err := s.Engine().PreparePending(ctx, other, workflow.Plan{SideEffect: workflow.ReadOnly, Intent: json.RawMessage(`{"op":"y"}`)}, now.Add(2*time.Second))
			return err
		}
		return nil
	}
	sum, err := s.Dispatch(faultseam.With(ctx, fault), acceptOwner{}, workflow.DispatchOptions{RunID: "run", Limit: 1}, now.Add(time.Second))
	require.NoError(t, err)
	require.Len(t, sum.Admitted, 1)
	got := c.take()
	// prepare a1; PreparePending(a2): view + update; handoff a1: expect
	// (changed) then read; receipt a1: expects the handoff's records.
	require.Equal(t, []txCount{{loads: 1}, {loads: 1}, {expects: 3}, {loads: 1}, {expects: 2}}, got)
	evsPage, err := s.Events(ctx, workflow.EventQuery{RunID: "run", Limit: 100})
	require.NoError(t, err)
	evs := evsPage.Items
	for i, e := range evs {
		require.Equal(t, int64(i+1), e.Seq, "events keep one sequence")
	}
	require.Equal(t, event.AttemptAdmitted, evs[len(evs)-1].Type)
}
