package kvlayout

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// drawRunKeys draws a key schema whose first part is a string (a run id) and
// two keys of it.
func drawRunKeys(t *rapid.T) (Schema, []any, []any) {
	s := append(Schema{{Name: "run", Part: PartStr}}, drawSchema(t)...)
	a, b := drawValues(t, s, "a"), drawValues(t, s, "b")
	if rapid.Bool().Draw(t, "same run") {
		b[0] = a[0]
	}
	return s, a, b
}

// A per-run space keeps the codec's order, round-trips, and keeps each
// run's keys in one range that Range returns exactly.
func TestRunSpaceKeys(t *testing.T) {
	t.Parallel()
	attempts := &Space{Group: []byte("runs"), PerRun: true, Tag: 0x44}
	events := &Space{Group: []byte("runs"), PerRun: true, Tag: 0x47}
	rapid.Check(t, func(t *rapid.T) {
		s, a, b := drawRunKeys(t)
		ka, kb := s.Encode(a, nil), s.Encode(b, nil)
		sp := attempts
		sa, sb := sp.Stored(ka), sp.Stored(kb)
		require.Equal(t, bytes.Compare(ka, kb), bytes.Compare(sa, sb))
		got, ok := sp.Unstored(sa)
		require.True(t, ok)
		require.Equal(t, []byte(ka), []byte(got))
		_, ok = events.Unstored(sa)
		require.False(t, ok, "another tag's key")

		run := a[0].(string)
		from, until := sp.Range(run, nil, nil)
		inB := bytes.Compare(sb, from) >= 0 && bytes.Compare(sb, until) < 0
		require.Equal(t, b[0] == run, inB, "b in a's run range")
		require.True(t, bytes.Compare(sa, from) >= 0 && bytes.Compare(sa, until) < 0)
		// Another space's keys of the same run are outside the range.
		se := events.Stored(ka)
		require.False(t, bytes.Compare(se, from) >= 0 && bytes.Compare(se, until) < 0)

		// A bound from another run clips to the run's start or end.
		f2, u2 := sp.Range(run, kb, nil)
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

// A flat space is the key range of its tag, in codec order.
func TestFlatSpaceKeys(t *testing.T) {
	t.Parallel()
	pending := &Space{Tag: 1}
	rapid.Check(t, func(t *rapid.T) {
		s := drawSchema(t)
		a, b := drawValues(t, s, "a"), drawValues(t, s, "b")
		ka, kb := s.Encode(a, nil), s.Encode(b, nil)
		sa, sb := pending.Stored(ka), pending.Stored(kb)
		require.Equal(t, bytes.Compare(ka, kb), bytes.Compare(sa, sb))
		require.Equal(t, []byte{1}, sa[:1])
		got, ok := pending.Unstored(sa)
		require.True(t, ok)
		require.Equal(t, []byte(ka), []byte(got))
		_, ok = (&Space{Tag: 2}).Unstored(sa)
		require.False(t, ok)
		from, until := pending.Range("ignored", nil, nil)
		require.True(t, bytes.Compare(sa, from) >= 0 && bytes.Compare(sa, until) < 0)
		from, until = pending.Range("", ka, kb)
		require.Equal(t, bytes.Compare(ka, kb) < 0, bytes.Compare(from, until) < 0)
	})
}
