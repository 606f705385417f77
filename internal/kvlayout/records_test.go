package kvlayout

import (
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/wfstore/wfstore/backend"
)

// roundTrips checks that every record of R that rapid draws decodes from
// its encoding as itself, nil and empty slices included, and that the
// encoding is a function of the record (equal records, equal bytes).
func roundTrips[K comparable, R any](t *testing.T, tb *Table[K, R]) {
	t.Run(tb.Name, func(t *testing.T) {
		t.Parallel()
		rapid.Check(t, func(t *rapid.T) {
			rec := rapid.Make[R]().Draw(t, "record")
			v := tb.Encode(rec)
			got, err := tb.Decode(v)
			require.NoError(t, err)
			require.Equal(t, rec, got)
			require.Equal(t, v, tb.Encode(got))
			require.Equal(t, []byte(tb.PK(rec)), []byte(tb.PK(got)))
		})
	})
}

func TestValueRoundTripEveryKind(t *testing.T) {
	t.Parallel()
	l := New(Config{Name: "test"})
	roundTrips(t, l.Run)
	roundTrips(t, l.Link)
	roundTrips(t, l.Activation)
	roundTrips(t, l.FanOutGroup)
	roundTrips(t, l.Attempt)
	roundTrips(t, l.Lease)
	roundTrips(t, l.Schedule)
	roundTrips(t, l.Event)
}

// Every value decodes only as its own kind, and damage is an error that
// names the layout.
func TestValueDecodeRejectsDamage(t *testing.T) {
	t.Parallel()
	l := New(Config{Name: "test"})
	att := backend.Attempt{Key: backend.AttemptKey{ActivationKey: backend.ActivationKey{RunID: "r", NodeID: "n", ActivationID: "a"}, Attempt: 1},
		Identity: "i", Intent: []byte(`{}`)}
	act := backend.Activation{Key: att.Key.ActivationKey, Input: []byte(`{}`), Claims: []backend.ResourceClaim{{Resource: "x"}}}
	v := l.Attempt.Encode(att)
	_, err := l.Activation.Decode(v)
	require.ErrorIs(t, err, ErrMalformedValue)
	require.EqualError(t, err, "test: malformed record value: kind tag is not 0x03")
	_, err = l.Attempt.Decode(v[:len(v)-1])
	require.ErrorIs(t, err, ErrMalformedValue)
	_, err = l.Attempt.Decode(append(v, 0))
	require.ErrorIs(t, err, ErrMalformedValue)
	got, err := l.Activation.Decode(l.Activation.Encode(act))
	require.NoError(t, err)
	require.Equal(t, act, got)
}

func TestGroupWrittenBeforeTheFanOutPolicyDecodesAsWaitAll(t *testing.T) {
	t.Parallel()
	g := backend.FanOutGroup{
		Controller: backend.ActivationKey{RunID: "r", NodeID: "ctl", ActivationID: "c"},
		Size:       3, MaxConcurrency: 2, Promoted: 2, Settled: 1, RetiredMS: 5, CreatedMS: 4,
	}
	old := encodeGroup(g)
	old = old[:len(old)-1] // the earlier layout ended at CreatedMS
	got, err := decodeGroup(old)
	require.NoError(t, err)
	require.Equal(t, g, got)
	g.FailFast = true
	got, err = decodeGroup(encodeGroup(g))
	require.NoError(t, err)
	require.Equal(t, g, got)
}
