package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/workflow"
)

// bigReceiptOwner plans mutating work and returns (and holds, for lookups)
// a receipt over the owner JSON limit.
type bigReceiptOwner struct{ *testOwner }

var bigReceipt = json.RawMessage(`"` + strings.Repeat("x", workflow.MaxJSONBytes-2) + `"`)

func (bigReceiptOwner) Plan(context.Context, workflow.Activation) (*workflow.Plan, error) {
	return &workflow.Plan{SideEffect: workflow.Mutating, Intent: json.RawMessage(`{}`)}, nil
}

func (o bigReceiptOwner) Dispatch(ctx context.Context, p workflow.PreparedDispatch) (json.RawMessage, error) {
	if _, err := o.testOwner.Dispatch(ctx, p); err != nil {
		return nil, err
	}
	return bigReceipt, nil
}

func (bigReceiptOwner) LookupReceipt(context.Context, string) (json.RawMessage, bool, error) {
	return bigReceipt, true, nil
}

// An owner's receipt the store cannot keep settles its attempt as
// repair_required once; a runner that starts afterwards, whose
// ReceiptLookup holds the same receipt, neither stops nor asks again.
func TestAnUnstorableReceiptNeverStopsTheRunner(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	ctx := context.Background()
	s := mutatingStore(t, clock)
	o := bigReceiptOwner{&testOwner{clock: clock}}
	_, err := s.Dispatch(ctx, o, workflow.DispatchOptions{}, clock.Now())
	require.ErrorIs(t, err, workflow.ErrOwner)
	id := workflow.DispatchIdentity("r1", "n", "a", 1)
	att, err := s.GetAttempt(ctx, id)
	require.NoError(t, err)
	require.Equal(t, workflow.AttemptRepairRequired, att.Status)

	st := start(t, newRunner(t, s, o, clock))
	clock.nextTimer(t)
	sum, err := st.stop(t)
	require.NoError(t, err, "the runner keeps running")
	assert.Empty(t, sum.Reconciled.Recovered)
	att, err = s.GetAttempt(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, workflow.AttemptRepairRequired, att.Status)
	assert.Len(t, o.calls, 1, "the owner is dispatched once")
}

// bigIntentOwner plans an intent over the owner JSON limit for activation
// "bad" (until fixed) and an ordinary one for every other activation.
type bigIntentOwner struct {
	*testOwner
	fixed atomic.Bool
}

func (o *bigIntentOwner) Plan(ctx context.Context, a workflow.Activation) (*workflow.Plan, error) {
	if a.Key.ActivationID == "bad" && !o.fixed.Load() {
		return &workflow.Plan{SideEffect: workflow.ReadOnly, Intent: bigReceipt}, nil
	}
	return o.testOwner.Plan(ctx, a)
}

// A plan whose intent the store cannot keep is the owner's error: the
// Store reports it as ErrOwner (still matching ErrTooLarge) with nothing
// written, and the runner logs it and backs off instead of stopping, in
// one-at-a-time and batch mode, and admits the activation once the owner
// plans something storable.
func TestAnUnstorablePlanNeverStopsTheRunner(t *testing.T) {
	t.Parallel()
	for _, batch := range []int{1, 4} {
		t.Run(fmt.Sprintf("batch-%d", batch), func(t *testing.T) {
			t.Parallel()
			clock := newFakeClock()
			ctx := context.Background()
			s := newStore(t, clock, "r1")
			_, err := s.AddActivation(ctx, workflow.NewActivation{Key: key("r1", "bad"), Input: json.RawMessage(`{}`)}, clock.Now())
			require.NoError(t, err)
			o := &bigIntentOwner{testOwner: &testOwner{clock: clock}}
			_, err = s.Dispatch(ctx, o, workflow.DispatchOptions{BatchSize: batch}, clock.Now())
			require.ErrorIs(t, err, workflow.ErrOwner)
			require.ErrorIs(t, err, workflow.ErrTooLarge)
			_, err = s.GetAttempt(ctx, workflow.DispatchIdentity("r1", "n", "bad", 1))
			require.ErrorIs(t, err, workflow.ErrNotFound, "nothing was prepared")

			st := start(t, newRunner(t, s, o, clock, WithBatchSize(batch)))
			clock.fire(clock.nextTimer(t)) // a pass failed on the plan and backed off
			o.fixed.Store(true)
			clock.fire(clock.nextTimer(t))
			require.Eventually(t, func() bool {
				att, err := s.GetAttempt(ctx, workflow.DispatchIdentity("r1", "n", "bad", 1))
				return err == nil && att.Status == workflow.AttemptAdmitted
			}, 10*time.Second, 10*time.Millisecond, "admitted once the owner plans something storable")
			_, err = st.stop(t)
			require.NoError(t, err, "the runner kept running")
		})
	}
}
