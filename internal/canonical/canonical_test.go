package canonical

import (
	"bytes"
	"errors"
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

func TestMustEncodesWithoutHTMLEscapingAndPanicsOnWhatJSONCannotHold(t *testing.T) {
	assert.Equal(t, `{"a":"<&>","b":[1,2]}`, string(Must(map[string]any{"b": []int{1, 2}, "a": "<&>"})))
	assert.Panics(t, func() { Must(make(chan int)) })
}
