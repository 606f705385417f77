package workflow

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestToMS(t *testing.T) {
	t.Parallel()
	epoch := time.Unix(0, 0)
	cases := []struct {
		t    time.Time
		want int64
	}{
		{epoch.Add(time.Millisecond), 1},
		{epoch.Add(1999 * time.Microsecond), 1}, // truncates
		{time.Date(2024, 5, 6, 7, 8, 9, 123_999_999, time.UTC), 1714979289123},
		{time.Date(2024, 5, 6, 9, 8, 9, 123_000_000, time.FixedZone("x", 2*3600)), 1714979289123},
	}
	for _, c := range cases {
		got, err := toMS("now", c.t)
		require.NoError(t, err, c.t)
		assert.Equal(t, c.want, got, c.t)
	}
	rejected := []time.Time{
		{},
		epoch,
		epoch.Add(999 * time.Microsecond), // truncates to 0
		epoch.Add(-time.Millisecond),
		epoch.Add(-time.Nanosecond),
		time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC),
		time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC),
		time.Unix(math.MaxInt64/1000, 0),
		time.Unix(math.MaxInt64, 0),
	}
	for _, tm := range rejected {
		_, err := toMS("scheduled at", tm)
		require.Error(t, err, tm)
		assert.ErrorIs(t, err, ErrInvalidInput, tm)
		var ie *InputError
		require.ErrorAs(t, err, &ie)
		assert.Equal(t, "scheduled at", ie.Field)
	}
}

func TestFromMS(t *testing.T) {
	t.Parallel()
	assert.True(t, fromMS(0).IsZero())
	got := fromMS(1714979289123)
	assert.Equal(t, time.UTC, got.Location())
	assert.True(t, got.Equal(time.Date(2024, 5, 6, 7, 8, 9, 123_000_000, time.UTC)))
	for _, ms := range []int64{1, 1714979289123, 253402300799999} {
		back, err := toMS("t", fromMS(ms))
		require.NoError(t, err)
		assert.Equal(t, ms, back)
	}
}
