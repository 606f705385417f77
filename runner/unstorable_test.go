package runner

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

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
	s := newStore(t, clock, "r1")
	_, err := s.AddActivation(ctx, workflow.NewActivation{Key: key("r1", "a"), Input: json.RawMessage(`{}`), Effect: workflow.Mutating}, clock.Now())
	require.NoError(t, err)
	o := bigReceiptOwner{&testOwner{clock: clock}}
	_, err = s.Dispatch(ctx, o, workflow.DispatchOptions{}, clock.Now())
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
