package workflow_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/memstore"
	"github.com/wfstore/wfstore/workflow"
)

// CanonicalJSON is the form the store compares in: members sorted,
// whitespace gone, numbers as written; its Checksum is the IntentChecksum
// the store records for the same intent.
func TestCanonicalJSONIsTheFormTheStoreComparesIn(t *testing.T) {
	t.Parallel()
	got, err := workflow.CanonicalJSON([]byte(`{ "b": 1.0, "a": [true, "x\u002fy"] }`))
	require.NoError(t, err)
	assert.Equal(t, `{"a":[true,"x/y"],"b":1.0}`, string(got))
	same, err := workflow.CanonicalJSON([]byte(`{"a":[true,"x/y"],"b":1.0}`))
	require.NoError(t, err)
	assert.Equal(t, got, same)
	other, err := workflow.CanonicalJSON([]byte(`{"a":[true,"x/y"],"b":1}`))
	require.NoError(t, err)
	assert.NotEqual(t, got, other, "1 and 1.0 differ")

	ctx := context.Background()
	now := time.UnixMilli(1_700_000_000_000)
	s := workflow.New(memstore.New())
	_, err = s.CreateRun(ctx, workflow.NewRun{ID: "r"}, now)
	require.NoError(t, err)
	k := workflow.ActivationKey{RunID: "r", NodeID: "n", ActivationID: "a"}
	_, err = s.AddActivation(ctx, workflow.NewActivation{Key: k, Input: json.RawMessage(`{}`)}, now)
	require.NoError(t, err)
	intent := json.RawMessage(`{ "b": 1.0, "a": [true, "x\u002fy"] }`)
	ds, err := s.Dispatch(ctx, fixedPlanOwner{intent}, workflow.DispatchOptions{}, now)
	require.NoError(t, err)
	require.Len(t, ds.Admitted, 1)
	a, err := s.GetAttempt(ctx, ds.Admitted[0].Identity)
	require.NoError(t, err)
	assert.Equal(t, workflow.Checksum(got), a.IntentChecksum)

	_, err = workflow.CanonicalJSON([]byte(`{"a":1,"a":2}`))
	require.ErrorIs(t, err, workflow.ErrInvalidInput, "duplicate keys")
	_, err = workflow.CanonicalJSON([]byte(`"` + strings.Repeat("x", workflow.MaxJSONBytes) + `"`))
	require.ErrorIs(t, err, workflow.ErrTooLarge)
}

// fixedPlanOwner plans every activation with one intent and accepts it.
type fixedPlanOwner struct{ intent json.RawMessage }

func (o fixedPlanOwner) Plan(context.Context, workflow.Activation) (*workflow.Plan, error) {
	return &workflow.Plan{SideEffect: workflow.ReadOnly, Intent: o.intent}, nil
}

func (fixedPlanOwner) Dispatch(context.Context, workflow.PreparedDispatch) (json.RawMessage, error) {
	return json.RawMessage(`{}`), nil
}
