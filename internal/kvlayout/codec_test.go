package kvlayout

import (
	"bytes"
	"cmp"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// compareTuples is the order the codec must preserve: part by part, strings
// bytewise.
func compareTuples(a, b []any) int {
	for i := range min(len(a), len(b)) {
		var c int
		switch x := a[i].(type) {
		case string:
			c = strings.Compare(x, b[i].(string))
		case uint32:
			c = cmp.Compare(x, b[i].(uint32))
		case int64:
			c = cmp.Compare(x, b[i].(int64))
		}
		if c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a), len(b))
}

// awkwardString draws strings rich in the bytes the codec treats specially.
func awkwardString() *rapid.Generator[string] {
	special := rapid.SampledFrom([]byte{0x00, 0x01, 0x02, 0xfe, 0xff, 'a', 'b'})
	return rapid.OneOf(
		rapid.String(),
		rapid.Custom(func(t *rapid.T) string {
			return string(rapid.SliceOfN(special, 0, 8).Draw(t, "bytes"))
		}),
	)
}

func drawSchema(t *rapid.T) Schema {
	parts := rapid.SliceOfN(rapid.SampledFrom([]Part{PartStr, PartU32, PartI64}), 1, 5).Draw(t, "parts")
	s := make(Schema, len(parts))
	for i, p := range parts {
		s[i] = Field{Name: "f", Part: p}
	}
	return s
}

func drawValues(t *rapid.T, s Schema, label string) []any {
	vals := make([]any, len(s))
	for i, f := range s {
		switch f.Part {
		case PartStr:
			vals[i] = awkwardString().Draw(t, label)
		case PartU32:
			vals[i] = rapid.OneOf(rapid.Uint32(), rapid.SampledFrom([]uint32{0, 1, math.MaxUint32})).Draw(t, label)
		case PartI64:
			vals[i] = rapid.OneOf(rapid.Int64(), rapid.SampledFrom([]int64{math.MinInt64, -1, 0, 1, math.MaxInt64})).Draw(t, label)
		}
	}
	return vals
}

func TestCodecOrderMatchesTupleOrder(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		s := drawSchema(t)
		a, b := drawValues(t, s, "a"), drawValues(t, s, "b")
		ka, kb := s.Encode(a, nil), s.Encode(b, nil)
		require.Equal(t, compareTuples(a, b), bytes.Compare(ka, kb), "a=%q b=%q ka=%x kb=%x", a, b, ka, kb)
	})
}

func TestCodecRoundTrip(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		s := drawSchema(t)
		vals := drawValues(t, s, "v")
		got, err := s.Decode(s.Encode(vals, nil))
		require.NoError(t, err)
		require.Equal(t, vals, got)
	})
}

func TestCodecPrefixFree(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		s := drawSchema(t)
		a, b := drawValues(t, s, "a"), drawValues(t, s, "b")
		ka, kb := s.Encode(a, nil), s.Encode(b, nil)
		if !bytes.Equal(ka, kb) {
			require.False(t, bytes.HasPrefix(kb, ka), "%x is a prefix of %x", ka, kb)
		}
		// The encoding of b's first n parts prefixes a's key exactly when a
		// starts with those parts: prefix scans are exact.
		n := rapid.IntRange(1, len(s)).Draw(t, "n")
		kp := s[:n].Encode(b[:n], nil)
		require.Equal(t, compareTuples(a[:n], b[:n]) == 0, bytes.HasPrefix(ka, kp))
		// PrefixEnd(kp) sorts after every key under kp and before every
		// larger key (nil: there is no larger key).
		end := PrefixEnd(kp)
		if end == nil {
			require.True(t, bytes.HasPrefix(ka, kp) || bytes.Compare(ka, kp) < 0)
		} else if bytes.HasPrefix(ka, kp) {
			require.Negative(t, bytes.Compare(ka, end))
		} else if bytes.Compare(ka, kp) > 0 {
			require.GreaterOrEqual(t, bytes.Compare(ka, end), 0)
		}
	})
}

func TestCodecRejectsMalformed(t *testing.T) {
	t.Parallel()
	for _, k := range [][]byte{{}, {'a'}, {'a', 0x00}, {0x00, 0x02}, {'a', 0x00, 0x01, 'x'}} {
		r := ReadKey(k)
		r.Str()
		require.ErrorIs(t, r.End(), ErrMalformedKey, "%x", k)
	}
	r := ReadKey([]byte{1, 2, 3})
	r.U32()
	require.ErrorIs(t, r.End(), ErrMalformedKey)
}

func TestCodecKnownBytes(t *testing.T) {
	t.Parallel()
	require.Equal(t, []byte{'a', 0x00, 0xff, 'b', 0x00, 0x01}, []byte(Key(nil).Str("a\x00b")))
	require.Equal(t, []byte{0, 0, 0, 0, 0, 0, 0, 0}, []byte(Key(nil).I64(math.MinInt64)))
	require.Equal(t, []byte{0x80, 0, 0, 0, 0, 0, 0, 0}, []byte(Key(nil).I64(0)))
	require.Equal(t, []byte{0, 0, 1, 0}, []byte(Key(nil).U32(256)))
	require.Equal(t, []byte{'a', 0x00, 0x02}, PrefixEnd(Key(nil).Str("a")))
	require.Nil(t, PrefixEnd([]byte{0xff, 0xff}))
}

// FuzzKeyCodec checks order, round trip and prefix-freedom on a
// (string, int64, string, uint32) schema. The seed corpus in
// testdata/fuzz/FuzzKeyCodec runs in every go test.
func FuzzKeyCodec(f *testing.F) {
	f.Add("a", int64(0), "b", uint32(0), "a", int64(0), "b", uint32(1))
	f.Add("a\x00", int64(-1), "", uint32(7), "a", int64(1), "\x00\x01", uint32(7))
	s := Schema{{"s", PartStr}, {"t", PartI64}, {"u", PartStr}, {"n", PartU32}}
	f.Fuzz(func(t *testing.T, s1 string, t1 int64, u1 string, n1 uint32, s2 string, t2 int64, u2 string, n2 uint32) {
		a, b := []any{s1, t1, u1, n1}, []any{s2, t2, u2, n2}
		ka, kb := s.Encode(a, nil), s.Encode(b, nil)
		if got, want := bytes.Compare(ka, kb), compareTuples(a, b); got != want {
			t.Fatalf("order: compare(%x, %x) = %d, tuples compare %d", ka, kb, got, want)
		}
		for _, tp := range []struct {
			k    Key
			vals []any
		}{{ka, a}, {kb, b}} {
			got, err := s.Decode(tp.k)
			if err != nil {
				t.Fatalf("decode %x: %v", tp.k, err)
			}
			if compareTuples(got, tp.vals) != 0 {
				t.Fatalf("round trip: %q became %q", tp.vals, got)
			}
		}
		if !bytes.Equal(ka, kb) && (bytes.HasPrefix(ka, kb) || bytes.HasPrefix(kb, ka)) {
			t.Fatalf("prefix: %x and %x", ka, kb)
		}
	})
}
