package workflow

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/wfstore/wfstore/backend"
)

type nilOwner struct{}

func (*nilOwner) Plan(context.Context, Activation) (*Plan, error) { return nil, nil }
func (*nilOwner) Dispatch(context.Context, PreparedDispatch) (json.RawMessage, error) {
	return nil, nil
}

func TestIsNil(t *testing.T) {
	t.Parallel()
	var o *nilOwner
	var f faultHook
	assert.True(t, isNil(nil))
	assert.True(t, isNil(o), "typed-nil pointer")
	assert.True(t, isNil(Owner(o)), "typed-nil pointer in an interface")
	assert.True(t, isNil(f), "nil func")
	assert.True(t, isNil([]int(nil)))
	assert.True(t, isNil(map[string]int(nil)))
	assert.False(t, isNil(&nilOwner{}))
	assert.False(t, isNil(nilOwner{}))
	assert.False(t, isNil(0))
	assert.ErrorIs(t, requireOwner(nil), ErrInvalidInput)
	assert.ErrorIs(t, requireOwner(o), ErrInvalidInput)
	assert.NoError(t, requireOwner(&nilOwner{}))
}

func TestNewNilBackendPanics(t *testing.T) {
	t.Parallel()
	const msg = "workflow: New called with a nil backend.Backend"
	assert.PanicsWithValue(t, msg, func() { New(nil) })
	var typed backend.Backend = (*fakeBackend)(nil)
	assert.PanicsWithValue(t, msg, func() { New(typed) })
}

// fakeBackend is only ever used as a typed nil.
type fakeBackend struct{ backend.Backend }

// TestPureFuncsRejectNilInput: the exported functions that take JSON reject
// nil and empty input with ErrInvalidInput instead of panicking.
func TestPureFuncsRejectNilInput(t *testing.T) {
	t.Parallel()
	for _, raw := range [][]byte{nil, {}} {
		_, err := canonicalJSON("doc", raw)
		assert.ErrorIs(t, err, ErrInvalidInput)
		_, err = ParseRetryPolicy(raw)
		assert.ErrorIs(t, err, ErrInvalidInput)
	}
	assert.ErrorIs(t, ValidateID("run id", ""), ErrInvalidInput)
	assert.ErrorIs(t, RetryPolicy{}.Validate(), ErrInvalidInput)
	assert.False(t, DecideRetry(RetryEligibility{}).Eligible, "the zero eligibility is never eligible")
}
