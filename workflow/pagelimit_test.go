package workflow

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPageLimit(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 2, 999, MaxPageLimit} {
		got, err := pageLimit("history limit", n)
		assert.NoError(t, err, n)
		assert.Equal(t, n, got, "taken as given")
	}
	got, err := pageLimit("history limit", 0)
	assert.NoError(t, err)
	assert.Equal(t, DefaultPageLimit, got, "0 means the default")
	for _, n := range []int{-1, MaxPageLimit + 1, math.MaxInt, math.MinInt} {
		got, err := pageLimit("history limit", n)
		assert.ErrorIs(t, err, ErrInvalidInput, n)
		assert.EqualError(t, err, "workflow: history limit must be 0 to 1000 (0 means 100)", n)
		assert.Zero(t, got)
	}
}
