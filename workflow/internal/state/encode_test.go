package state

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/wfstore/wfstore/event"
	"github.com/wfstore/wfstore/internal/canonical"
	"github.com/wfstore/wfstore/wftype"
)

// encodeCases are the payloads encodePayload writes directly, built from
// the given strings, numbers and embedded document.
func encodeCases(s1, s2, s3, s4 string, n uint32, at int64, doc json.RawMessage) []any {
	names := event.AttemptNames{RunID: s1, NodeID: s2, ActivationID: s3, Attempt: n}
	adm := event.AttemptAdmittedPayload{RunID: s1, NodeID: s2, ActivationID: s3, Attempt: n,
		DispatchIdentity: s4, Receipt: doc, AdmittedAt: event.UnixMS(at)}
	return []any{
		event.AttemptPreparedPayload{RunID: s1, NodeID: s2, ActivationID: s3, Attempt: n,
			SideEffect: wftype.Effect(s4), Intent: doc, PreparedAt: event.UnixMS(at)},
		event.DispatchHandedOffPayload{AttemptNames: names, DispatchIdentity: s4},
		event.DispatchHandoffReleasedPayload{AttemptNames: names, DispatchIdentity: s4},
		adm,
		event.AttemptCancellationReceiptRecordedPayload(adm),
	}
}

// checkEncode fails unless encodePayload returns exactly what
// canonical.Marshal returns for v: the same bytes, or an error both ways
// with the same text.
func checkEncode(t *testing.T, v any) {
	t.Helper()
	want, wantErr := canonical.Marshal(v)
	got, err := encodePayload(v)
	switch {
	case (err != nil) != (wantErr != nil):
		t.Fatalf("%#v: error %v, canonical.Marshal's %v", v, err, wantErr)
	case err != nil && err.Error() != wantErr.Error():
		t.Fatalf("%#v: error %q, canonical.Marshal's %q", v, err, wantErr)
	case !bytes.Equal(got, want):
		t.Fatalf("%#v:\n got %s\nwant %s", v, got, want)
	}
}

// The payloads written directly are byte for byte canonical.Marshal's,
// errors included: escapes, invalid UTF-8, embedded documents that are
// nil, empty, invalid, unsorted, too deep or too large.
func TestEncodePayloadIsCanonicalMarshal(t *testing.T) {
	strs := []string{"", "run-1", "a\"b\\c", "tab\there\nnl\r\b\f\x00\x1f\x7f", "<&>/", "é ü 中 😀",
		"\u2028\u2029", "bad\xffutf8", "\xed\xa0\x80", strings.Repeat("x", 300)}
	docs := []json.RawMessage{nil, {}, json.RawMessage(`{"op":"bench","target":"noop"}`),
		json.RawMessage(` { "b" : 1 , "a" : [ 1.0 , -0 , 1e5 , "\u00e9\/" ] } `), json.RawMessage(`{"a":1,"a":2}`),
		json.RawMessage(`{"a":`), json.RawMessage(`"bad` + "\xff" + `"`), json.RawMessage(`null`), json.RawMessage(`1 2`),
		json.RawMessage(strings.Repeat("[", canonical.MaxDepth-1) + strings.Repeat("]", canonical.MaxDepth-1)),
		json.RawMessage(strings.Repeat("[", canonical.MaxDepth) + strings.Repeat("]", canonical.MaxDepth)),
		json.RawMessage(`"` + strings.Repeat("y", canonical.MaxBytes-150) + `"`),
		json.RawMessage(`"` + strings.Repeat("y", canonical.MaxBytes-100) + `"`),
		json.RawMessage(`"` + strings.Repeat("y", canonical.MaxBytes) + `"`)}
	for i, s := range strs {
		for _, d := range docs {
			for _, v := range encodeCases(s, strs[(i+1)%len(strs)], strs[(i+2)%len(strs)], strs[(i+3)%len(strs)], uint32(i)*0x1999_9999, int64(i-3)*1_700_000_000_000, d) {
				checkEncode(t, v)
			}
		}
	}
	for _, v := range encodeCases("r", "n", "a", "r/n/a/1", 1, 5, json.RawMessage(`{"b":1,"a":[null]}`)) {
		if _, ok := encodeDirect(v); !ok {
			t.Errorf("%T is not written directly", v)
		}
	}
	for _, v := range randomEncodeCases(rand.New(rand.NewPCG(1, 2)), 2000,
		"a", "Z", "0", "-", "_", "\"", "\\", "\n", "\x01", "é", "中", "😀", "\u2028", "\xff", "<", " ") {
		checkEncode(t, v)
	}
}

// randomEncodeCases returns the encodeCases of n random draws from r, each
// string made of up to 11 pieces of alphabet.
func randomEncodeCases(r *rand.Rand, n int, alphabet ...string) []any {
	str := func() string {
		var b strings.Builder
		for range r.IntN(12) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		return b.String()
	}
	var out []any
	for range n {
		doc, _ := json.Marshal(map[string]any{str(): str(), str(): []any{r.Int64(), str(), nil, true}})
		out = append(out, encodeCases(str(), str(), str(), str(), r.Uint32(), r.Int64()-r.Int64(), doc)...)
	}
	return out
}

// A payload written directly costs no reflection and no re-parse: it
// allocates its result and nothing else but the embedded document's parse.
func BenchmarkEncodePayload(b *testing.B) {
	v := encodeCases("probe-00001", "node-0042", "a-1", "probe-00001/node-0042/a-1/1", 1, 1_800_000_000_000,
		json.RawMessage(`{"accepted":true,"owner":"bench"}`))
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, p := range v {
				if _, err := encodePayload(p); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("canonical.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, p := range v {
				if _, err := canonical.Marshal(p); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
