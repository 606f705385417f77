package workflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/memstore"
	"github.com/wfstore/wfstore/workflow"
)

type watchingTx struct {
	backend.Tx
	handoff bool
}

func (t *watchingTx) Apply(ctx context.Context, c backend.Changes) error {
	for _, a := range c.Replace.Attempts {
		t.handoff = t.handoff || (a.Handoff == backend.HandoffRecorded && a.Receipt == nil)
	}
	return t.Tx.Apply(ctx, c)
}

// A handoff commit whose answer was lost is reported as a
// HandoffOutcomeUnknownError naming the attempt and the holder token the
// write stored; the re-read shows that exact token on the recorded
// handoff, which proves the handoff is the caller's own.
func TestLostHandoffCommitNamesItsHolderToken(t *testing.T) {
	ctx := context.Background()
	now := time.UnixMilli(1_700_000_000_000)
	for _, batch := range []int{1, 3} {
		lb := &lostAnswer{Backend: memstore.New()}
		s := workflow.New(lb)
		_, err := s.CreateRun(ctx, workflow.NewRun{ID: "r"}, now)
		require.NoError(t, err)
		k := workflow.ActivationKey{RunID: "r", NodeID: "n", ActivationID: "a"}
		_, err = s.AddActivation(ctx, workflow.NewActivation{Key: k, Input: json.RawMessage(`{}`), Effect: workflow.Mutating,
			Reconciliation: workflow.ReceiptStatus}, now)
		require.NoError(t, err)
		_, err = s.Dispatch(ctx, mutatingOwner{}, workflow.DispatchOptions{BatchSize: batch}, now)
		require.ErrorIs(t, err, backend.ErrOutcomeUnknown, "batch %d", batch)
		hu, ok := errors.AsType[*workflow.HandoffOutcomeUnknownError](err)
		require.True(t, ok, "batch %d: %v", batch, err)
		require.Len(t, hu.Handoffs, 1)
		id := workflow.DispatchIdentity("r", "n", "a", 1)
		assert.Equal(t, id, hu.Handoffs[0].Attempt.Identity)
		assert.Len(t, hu.Handoffs[0].Token, 32, "128 bits, hex")
		a, err := s.GetAttempt(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, workflow.HandoffRecorded, a.Handoff)
		assert.Equal(t, hu.Handoffs[0].Token, a.HandoffToken, "batch %d: the re-read shows the write's own token", batch)
	}
}

// lostAnswer applies every commit and loses the answer of the first one
// that records a handoff, reporting backend.ErrOutcomeUnknown.
type lostAnswer struct {
	backend.Backend
	lost bool
}

func (b *lostAnswer) Update(ctx context.Context, fn func(tx backend.Tx) error) error {
	var hit bool
	err := b.Backend.Update(ctx, func(tx backend.Tx) error {
		w := &watchingTx{Tx: tx}
		err := fn(w)
		hit = w.handoff
		return err
	})
	if err == nil && hit && !b.lost {
		b.lost = true
		return errLostAnswer
	}
	return err
}

var errLostAnswer = errors.Join(errors.New("test: commit answer lost"), backend.ErrOutcomeUnknown)

// mutatingOwner plans every activation as mutating work and accepts it.
type mutatingOwner struct{}

func (mutatingOwner) Plan(context.Context, workflow.Activation) (*workflow.Plan, error) {
	return &workflow.Plan{SideEffect: workflow.Mutating, Intent: json.RawMessage(`{}`)}, nil
}

func (mutatingOwner) Dispatch(context.Context, workflow.PreparedDispatch) (json.RawMessage, error) {
	return json.RawMessage(`{}`), nil
}
