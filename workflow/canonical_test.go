package workflow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCanonicalAccepts(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{`null`, `null`},
		{` true `, `true`},
		{"\t\r\n false \n", `false`},
		{`0`, `0`},
		{`-0`, `-0`},
		{`1.0`, `1.0`},
		{`1`, `1`},
		{`1E+05`, `1E+05`},
		{`-12.50e-3`, `-12.50e-3`},
		{`123456789012345678901234567890`, `123456789012345678901234567890`},
		{`""`, `""`},
		{`"abc"`, `"abc"`},
		{`[ 1 , 2 ,[ ] ,{ } ]`, `[1,2,[],{}]`},
		{`{ "b" : 1 , "a" : [ true , null ] }`, `{"a":[true,null],"b":1}`},
		{`{"b":{"d":1,"c":2},"a":0}`, `{"a":0,"b":{"c":2,"d":1}}`},
		// Keys sort bytewise by decoded UTF-8: "B" < "a" < "é" (0xC3) < "日" (0xE6).
		{`{"日":1,"é":2,"a":3,"B":4}`, `{"B":4,"a":3,"é":2,"日":1}`},
		// Escaped and literal spellings of one key are the same key; decoded order.
		{`{"\u0062":1,"a":2}`, `{"a":2,"b":1}`},
		// Sorting uses decoded bytes: '"' (0x22) < '#' (0x23) even though \" starts with '\'.
		{`{"#":1,"\"":2}`, `{"\"":2,"#":1}`},
		{`{"\u0000":1,"":2}`, `{"":2,"\u0000":1}`},
		// Minimal escapes.
		{`"\/"`, `"/"`},
		{`"\u0041\u00e9\u65E5"`, `"Aé日"`},
		{`"\ud83d\ude00"`, `"😀"`},
		{`"\uD83D\uDE00"`, `"😀"`},
		{`"😀"`, `"😀"`},
		{`"\"\\"`, `"\"\\"`},
		{`"\u0022\u005c"`, `"\"\\"`},
		{`"\b\f\n\r\t"`, `"\b\f\n\r\t"`},
		{`"\u0008\u000C\u000a\u000D\u0009"`, `"\b\f\n\r\t"`},
		{`"\u0000\u0001\u001F\u001f"`, `"\u0000\u0001\u001f\u001f"`},
		{`"\u007f\u2028\u2029<>&"`, "\"\u007f\u2028\u2029<>&\""},
		{"\"\u2028\"", "\"\u2028\""},
		{`"\ufffd\ufffe\uffff"`, "\"\ufffd\ufffe\uffff\""},
		{`"a\u0041b\nc"`, `"aAb\nc"`},
		{`[[[[]]]]`, `[[[[]]]]`},
	}
	for _, c := range cases {
		got, err := canonicalJSON("doc", []byte(c.in))
		require.NoError(t, err, c.in)
		assert.Equal(t, c.want, string(got), c.in)
		again, err := canonicalJSON("doc", got)
		require.NoError(t, err, c.in)
		assert.Equal(t, string(got), string(again), "idempotent: %s", c.in)
		assert.True(t, json.Valid(got), c.in)
	}
}

func TestCanonicalRejects(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"empty":                   ``,
		"whitespace only":         "  \n",
		"trailing data":           `1 2`,
		"trailing object":         `{}{}`,
		"trailing garbage":        `null x`,
		"bare word":               `nul`,
		"literal prefix":          `truex`,
		"single quotes":           `'a'`,
		"unterminated string":     `"abc`,
		"unterminated escape":     `"abc\`,
		"bad escape":              `"\x"`,
		"short unicode escape":    `"\u12"`,
		"bad unicode escape":      `"\u12g4"`,
		"raw control":             "\"a\x01b\"",
		"raw newline":             "\"a\nb\"",
		"raw tab":                 "\"a\tb\"",
		"lone high surrogate":     `"\ud800"`,
		"lone high then text":     `"\ud800abcdef"`,
		"high then high":          `"\ud800\ud800"`,
		"high then non-low":       `"\ud800\u0041"`,
		"lone low surrogate":      `"\udc00"`,
		"low then high":           `"\udc00\ud800"`,
		"invalid utf-8":           "\"\xff\"",
		"invalid utf-8 key":       "{\"\xff\":1}",
		"truncated utf-8":         "\"\xe6\x97\"",
		"utf-8 encoded surrogate": "\"\xed\xa0\x80\"",
		"overlong utf-8":          "\"\xc0\xaf\"",
		"utf-8 after escape":      "\"\\n\xff\"",
		"invalid utf-8 outside":   "[1]\xff",
		"bom":                     "\xef\xbb\xbf{}",
		"duplicate key":           `{"a":1,"a":2}`,
		"duplicate key unsorted":  `{"b":1,"a":2,"b":3}`,
		"duplicate escaped key":   `{"a":1,"\u0061":2}`,
		"duplicate nested":        `[{"x":{"k":1,"k":1}}]`,
		"leading zero":            `01`,
		"negative leading zero":   `-01`,
		"plus sign":               `+1`,
		"bare minus":              `-`,
		"trailing dot":            `1.`,
		"leading dot":             `.5`,
		"empty exponent":          `1e`,
		"signed empty exponent":   `1e+`,
		"hex number":              `0x10`,
		"nan":                     `NaN`,
		"infinity":                `Infinity`,
		"trailing comma array":    `[1,]`,
		"trailing comma object":   `{"a":1,}`,
		"missing colon":           `{"a" 1}`,
		"missing value":           `{"a":}`,
		"non-string key":          `{1:2}`,
		"unclosed array":          `[1`,
		"unclosed object":         `{"a":1`,
		"missing comma":           `[1 2]`,
		"comment":                 `[1 /* x */]`,
		"nul outside":             "[\x00]",
		"vertical tab ws":         "\v1",
	}
	for name, in := range cases {
		out, err := canonicalJSON("intent", []byte(in))
		require.Error(t, err, name)
		assert.Nil(t, out, name)
		assert.ErrorIs(t, err, ErrInvalidInput, name)
		assert.NotErrorIs(t, err, ErrTooLarge, name)
		var ie *InputError
		require.ErrorAs(t, err, &ie, name)
		assert.Equal(t, "intent", ie.Field, name)
		assert.False(t, ie.Oversized, name)
	}
}

func TestCanonicalDepth(t *testing.T) {
	t.Parallel()
	nest := func(n int, open, close string) []byte {
		return []byte(strings.Repeat(open, n) + strings.Repeat(close, n))
	}
	_, err := canonicalJSON("doc", nest(10000, "[", "]"))
	require.NoError(t, err)
	_, err = canonicalJSON("doc", []byte(strings.Repeat(`{"a":`, 10000)+"1"+strings.Repeat("}", 10000)))
	require.NoError(t, err)
	_, err = canonicalJSON("doc", nest(10000+1, "[", "]"))
	assert.ErrorIs(t, err, ErrInvalidInput)
	_, err = canonicalJSON("doc", []byte(strings.Repeat(`{"a":[`, 10000/2)+"{}"+strings.Repeat("]}", 10000/2)))
	assert.ErrorIs(t, err, ErrInvalidInput)
	// Far deeper than the limit: rejected without exhausting the stack.
	_, err = canonicalJSON("doc", []byte(strings.Repeat("[", 10_000_000)))
	assert.ErrorIs(t, err, ErrInvalidInput)
}

func TestCanonicalSize(t *testing.T) {
	t.Parallel()
	str := func(n int) []byte { return []byte(`"` + strings.Repeat("x", n-2) + `"`) }
	out, err := canonicalJSON("receipt", str(MaxJSONBytes))
	require.NoError(t, err)
	assert.Len(t, out, MaxJSONBytes)

	for name, in := range map[string][]byte{
		"string":   str(MaxJSONBytes + 1),
		"number":   []byte(strings.Repeat("1", MaxJSONBytes+1)),
		"array":    []byte("[" + strings.Repeat("1,", MaxJSONBytes/2) + "1]"),
		"empties":  []byte("[" + strings.Repeat("[],", MaxJSONBytes/3) + "[]]"),
		"escapes":  []byte(`"` + strings.Repeat(`\u0001`, MaxJSONBytes/6+1) + `"`),
		"key":      []byte(`{` + string(str(MaxJSONBytes)) + `:1}`),
		"huge key": []byte(`{"` + strings.Repeat(`\t`, MaxJSONBytes) + `":1}`),
	} {
		_, err := canonicalJSON("receipt", in)
		require.Error(t, err, name)
		assert.ErrorIs(t, err, ErrTooLarge, name)
		assert.ErrorIs(t, err, ErrInvalidInput, name)
		assert.EqualError(t, err, "workflow: receipt exceeds 1048576 bytes", name)
	}

	// The limit is on the canonical form: whitespace does not count.
	padded := append(append([]byte("["), bytes.Repeat([]byte(" "), 2*MaxJSONBytes)...), ']')
	out, err = canonicalJSON("receipt", padded)
	require.NoError(t, err)
	assert.Equal(t, "[]", string(out))
}

func TestCanonicalMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	docs := []string{
		`{"z":[1,2.50,{"y":"\u00e9\n","x":null}],"a":{"c":true,"b":false},"\u0001":"\ud83d\ude00"}`,
		`[{"a<b":"&amp;"},"\u2028",-0.0e-0,1E400]`,
	}
	for _, d := range docs {
		out, err := canonicalJSON("doc", []byte(d))
		require.NoError(t, err)
		assert.Equal(t, decodeJSON(t, []byte(d)), decodeJSON(t, out), d)
	}
}

func TestCanonicalResultIsFresh(t *testing.T) {
	t.Parallel()
	a, err := canonicalJSON("doc", []byte(`{"b":1,"a":2}`))
	require.NoError(t, err)
	b, err := canonicalJSON("doc", []byte(`[3]`))
	require.NoError(t, err)
	assert.Equal(t, `{"a":2,"b":1}`, string(a))
	assert.Equal(t, `[3]`, string(b))
	assert.Equal(t, len(a), cap(a), "result is exactly sized")
}

func TestChecksum(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", Checksum(nil))
	assert.Equal(t, "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb", Checksum([]byte("a")))
}

func TestEncodeJSON(t *testing.T) {
	t.Parallel()
	type payload struct {
		Z    string            `json:"z"`
		A    int               `json:"a"`
		Tags map[string]string `json:"tags"`
	}
	got := mustCanonical(payload{Z: "<&>\u2028", A: 1, Tags: map[string]string{"y": "1", "x": "2"}})
	assert.Equal(t, "{\"a\":1,\"tags\":{\"x\":\"2\",\"y\":\"1\"},\"z\":\"<&>\u2028\"}", string(got))
	assert.Equal(t, `null`, string(mustCanonical(nil)))
	_, err := encodeJSON("test payload", make(chan int))
	assert.Error(t, err, "an unencodable value is an error, not a panic")
	_, err = encodeJSON("test payload", json.RawMessage(`{"a":1,"a":2}`))
	assert.ErrorIs(t, err, ErrInvalidInput)
	_, err = encodeJSON("test payload", json.RawMessage(`"`+strings.Repeat("x", MaxJSONBytes-1)+`"`))
	assert.ErrorIs(t, err, ErrTooLarge, "one byte over the document limit")
	_, err = encodeJSON("test payload", []json.RawMessage{json.RawMessage(strings.Repeat("[", MaxJSONDepth) + strings.Repeat("]", MaxJSONDepth))})
	assert.ErrorIs(t, err, ErrInvalidInput, "one level over the depth limit")
	assert.NotErrorIs(t, err, ErrTooLarge)
}

// mustCanonical encodes a test payload the test knows to be valid.
func mustCanonical(v any) []byte {
	b, err := encodeJSON("test payload", v)
	if err != nil {
		panic(err)
	}
	return b
}

// decodeJSON decodes with encoding/json (numbers as json.Number) for
// semantic comparison.
func decodeJSON(t testing.TB, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	require.NoError(t, dec.Decode(&v))
	return normalizeNumbers(v)
}

// normalizeNumbers maps json.Number to its text (already what UseNumber
// gives) so values compare with reflect.DeepEqual.
func normalizeNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		return "#" + string(x)
	case []any:
		for i := range x {
			x[i] = normalizeNumbers(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = normalizeNumbers(x[k])
		}
	}
	return v
}

// hasDuplicateKeys reports whether any object in the valid JSON document b
// repeats a key (after unescaping), using encoding/json's tokenizer.
func hasDuplicateKeys(b []byte) bool {
	dup, _ := walkDuplicates(json.NewDecoder(bytes.NewReader(b)))
	return dup
}

func walkDuplicates(dec *json.Decoder) (bool, error) {
	tok, err := dec.Token()
	if err != nil {
		return false, err
	}
	switch tok {
	case json.Delim('{'):
		keys := map[string]bool{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return false, err
			}
			if keys[k.(string)] {
				return true, nil
			}
			keys[k.(string)] = true
			if dup, err := walkDuplicates(dec); dup || err != nil {
				return dup, err
			}
		}
		_, err = dec.Token()
	case json.Delim('['):
		for dec.More() {
			if dup, err := walkDuplicates(dec); dup || err != nil {
				return dup, err
			}
		}
		_, err = dec.Token()
	}
	return false, err
}

func TestHasDuplicateKeysHelper(t *testing.T) {
	t.Parallel()
	assert.True(t, hasDuplicateKeys([]byte(`[{"a":{"b":1,"b":2}}]`)))
	assert.True(t, hasDuplicateKeys([]byte(`{"a":1,"\u0061":2}`)))
	assert.False(t, hasDuplicateKeys([]byte(`{"a":{"a":1},"b":[{"a":2}]}`)))
}

func FuzzCanonical(f *testing.F) {
	for _, s := range []string{
		`null`, `{"b":1,"a":[1.0,-0,1e5]}`, `"\ud83d\ude00\u2028\/\u0001"`, `{"a":1,"a":2}`,
		`{"\u0061":1,"a":2}`, `"\ud800"`, "\"\xff\"", `[[[[]]]]`, ` {"z" : { "y" : "x" } } `,
		`01`, `1.`, `{"#":1,"\"":2}`, `"\u00e9é"`, `[1,2,]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := canonicalJSON("doc", in)
		if err != nil {
			var ie *InputError
			if !errors.As(err, &ie) || !errors.Is(err, ErrInvalidInput) {
				t.Fatalf("error %v is not an *InputError", err)
			}
			if out != nil {
				t.Fatalf("rejected input returned %q", out)
			}
			// Only the strict rules may reject what encoding/json accepts.
			if json.Valid(in) && utf8.Valid(in) && !bytes.Contains(in, []byte(`\u`)) &&
				!hasDuplicateKeys(in) && !ie.Oversized {
				t.Fatalf("rejected valid JSON %q: %v", in, err)
			}
			return
		}
		if !utf8.Valid(in) {
			t.Fatalf("accepted invalid UTF-8 %q", in)
		}
		if !json.Valid(in) || !json.Valid(out) {
			t.Fatalf("accepted %q as %q, not valid per encoding/json", in, out)
		}
		if len(out) > MaxJSONBytes || len(out) > len(in) {
			t.Fatalf("canonical form of %d bytes from %d", len(out), len(in))
		}
		if hasDuplicateKeys(in) {
			t.Fatalf("accepted duplicate keys in %q", in)
		}
		again, err := canonicalJSON("doc", out)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("not idempotent: %q → %q → %q (%v)", in, out, again, err)
		}
		if !reflect.DeepEqual(decodeJSON(t, in), decodeJSON(t, out)) {
			t.Fatalf("canonical form %q of %q means something else", out, in)
		}
		// Derived documents: a repeated key and invalid UTF-8 are rejected.
		dup := fmt.Appendf(nil, `{"k":%s,"k":%s}`, out, out)
		if _, err := canonicalJSON("doc", dup); !errors.Is(err, ErrInvalidInput) {
			t.Fatalf("accepted duplicate key in %q", dup)
		}
		bad := fmt.Appendf(nil, "[%s,\"\xff\"]", out)
		if _, err := canonicalJSON("doc", bad); !errors.Is(err, ErrInvalidInput) {
			t.Fatalf("accepted invalid UTF-8 in %q", bad)
		}
	})
}

// benchDoc builds a realistic JSON document of about n bytes.
func benchDoc(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"kind":"intent","items":[`)
	for i := 0; b.Len() < n-200; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"zeta":%d,"name":"item-%d caf\u00e9 \"q\"","ok":true,"score":%d.25,"tags":["a","b\n"],"alpha":null}`, i, i, i)
	}
	b.WriteString(`],"owner":"bench"}`)
	return b.Bytes()
}

func BenchmarkCanonical(b *testing.B) {
	for _, size := range []int{1 << 10, MaxJSONBytes - 1024} {
		doc := benchDoc(size)
		b.Run(strconv.Itoa(len(doc))+"B", func(b *testing.B) {
			if _, err := canonicalJSON("doc", doc); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(doc)))
			b.ReportAllocs()
			for b.Loop() {
				_, _ = canonicalJSON("doc", doc)
			}
		})
	}
}
