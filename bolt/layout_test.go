package bolt

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// drawRunKey draws a key schema whose first part is a string (a run id) and
// two keys of it.
func drawRunKeys(t *rapid.T) (schema, []any, []any) {
	s := append(schema{{name: "run", part: partStr}}, drawSchema(t)...)
	a, b := drawValues(t, s, "a"), drawValues(t, s, "b")
	if rapid.Bool().Draw(t, "same run") {
		b[0] = a[0]
	}
	return s, a, b
}

// A per-run space keeps the codec's order, round-trips, and keeps each
// run's keys in one range that runSpan returns exactly.
func TestRunSpaceKeys(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		s, a, b := drawRunKeys(t)
		ka, kb := s.encode(a, nil), s.encode(b, nil)
		sp := &kindAttempt.space
		sa, sb := sp.stored(ka), sp.stored(kb)
		require.Equal(t, bytes.Compare(ka, kb), bytes.Compare(sa, sb))
		got, ok := sp.unstored(sa)
		require.True(t, ok)
		require.Equal(t, []byte(ka), []byte(got))
		_, ok = kindEvent.unstored(sa)
		require.False(t, ok, "another tag's key")

		run := a[0].(string)
		from, until := sp.runSpan(run, nil, nil)
		inB := bytes.Compare(sb, from) >= 0 && bytes.Compare(sb, until) < 0
		require.Equal(t, b[0] == run, inB, "b in a's run range")
		require.True(t, bytes.Compare(sa, from) >= 0 && bytes.Compare(sa, until) < 0)
		// Another space's keys of the same run are outside the range.
		se := kindEvent.stored(ka)
		require.False(t, bytes.Compare(se, from) >= 0 && bytes.Compare(se, until) < 0)

		// A bound from another run clips to the run's start or end.
		f2, u2 := sp.runSpan(run, kb, nil)
		switch {
		case b[0] == run:
			require.Equal(t, sb, f2)
		case bytes.Compare(kb, ka) < 0:
			require.Equal(t, from, f2)
		default:
			require.Equal(t, u2, f2)
		}
	})
}
