package workflow

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestValidateLimit(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 2, 999, MaxPageLimit} {
		assert.NoError(t, validateLimit("history limit", n), n)
	}
	for _, n := range []int{0, -1, MaxPageLimit + 1, math.MaxInt, math.MinInt} {
		err := validateLimit("history limit", n)
		assert.ErrorIs(t, err, ErrInvalidInput, n)
		assert.EqualError(t, err, "workflow: history limit must be in 1..=1000", n)
	}
}
