package canonical

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The parser's grammar is tested through workflow's wrapper (which maps
// *Error to the workflow's input error); these cases pin the package's own
// contract.

func TestCanonicalSortsMembersAndKeepsNumbersAsWritten(t *testing.T) {
	out, err := Canonical([]byte(" {\"b\": 1.0, \"a\": [true, -0, \"\\u00e9/\"]} "))
	require.NoError(t, err)
	assert.Equal(t, `{"a":[true,-0,"é/"],"b":1.0}`, string(out))
	again, err := Canonical(out)
	require.NoError(t, err)
	assert.Equal(t, out, again, "idempotent")
}

func TestCanonicalReportsWhyAsAnError(t *testing.T) {
	for _, raw := range []string{``, `{`, `{"a":1,"a":2}`, `1 2`, "\"\xff\""} {
		_, err := Canonical([]byte(raw))
		var ce *Error
		require.True(t, errors.As(err, &ce), "%q: %v", raw, err)
		assert.False(t, ce.Oversized, "%q", raw)
	}
}

func TestCanonicalRefusesAnOversizedDocument(t *testing.T) {
	raw := append(append([]byte(`"`), bytes.Repeat([]byte("x"), MaxBytes)...), '"')
	_, err := Canonical(raw)
	var ce *Error
	require.ErrorAs(t, err, &ce)
	assert.True(t, ce.Oversized)
	_, err = Canonical(raw[1 : len(raw)-3])
	require.Error(t, err, "invalid, not oversized")
}

func TestMarshalEncodesWithoutHTMLEscapingAndFailsOnWhatJSONCannotHold(t *testing.T) {
	b, err := Marshal(map[string]any{"b": []int{1, 2}, "a": "<&>"})
	require.NoError(t, err)
	assert.Equal(t, `{"a":"<&>","b":[1,2]}`, string(b))
	_, err = Marshal(make(chan int))
	assert.Error(t, err)
}

func TestWithinHoldsADocumentToItsLimits(t *testing.T) {
	str := func(n int) []byte { return []byte(`"` + strings.Repeat("x", n-2) + `"`) }
	nest := func(d int) []byte { return []byte(strings.Repeat("[", d) + strings.Repeat("]", d)) }
	lim := Limits{Bytes: 100, Depth: 5}
	for _, c := range []struct {
		name            string
		doc             []byte
		oversized, deep bool
	}{
		{"at the byte limit", str(100), false, false},
		{"one byte over", str(101), true, false},
		{"escapes decoded to fit", []byte(`"` + strings.Repeat(`\u0041`, 98) + `"`), false, false},
		{"escapes that grow over", []byte(`"` + strings.Repeat("\x01", 0) + strings.Repeat(`\u0001`, 17) + `"`), true, false},
		{"at the depth limit", nest(5), false, false},
		{"one level deeper", nest(6), false, true},
	} {
		_, err := Within(c.doc, lim)
		if !c.oversized && !c.deep {
			assert.NoError(t, err, c.name)
			continue
		}
		var ce *Error
		require.ErrorAs(t, err, &ce, c.name)
		assert.Equal(t, c.oversized, ce.Oversized, c.name)
		assert.Equal(t, c.deep, ce.TooDeep, c.name)
	}
	_, err := Canonical(nest(MaxDepth))
	assert.NoError(t, err, "Canonical keeps the default depth")
	_, err = Within(nest(MaxDepth+1), Limits{Bytes: MaxBytes, Depth: MaxDepth + 5})
	assert.Error(t, err, "limits are clamped to Default")
}
