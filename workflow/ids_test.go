package workflow

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestValidateID(t *testing.T) {
	t.Parallel()
	accepted := []string{
		"x", " x ", "run-1", "Ünïcødé", "日本語", "a\tb", strings.Repeat("x", MaxIDBytes),
		strings.Repeat("é", MaxIDBytes/2), "\u2003x\u2003",
	}
	for _, id := range accepted {
		assert.NoError(t, ValidateID("run id", id), "%q", id)
	}
	rejected := map[string]string{
		"empty":             "",
		"space":             " ",
		"em space":          "\u2003",
		"mixed whitespace":  " \t\n\r\v\f\u00a0\u2028\u3000",
		"513 bytes":         strings.Repeat("x", MaxIDBytes+1),
		"513 bytes unicode": strings.Repeat("é", MaxIDBytes/2) + "x",
		"invalid utf-8":     "a\xffb",
		"truncated utf-8":   "\xe6\x97",
		"utf-8 surrogate":   "\xed\xa0\x80",
		"nul":               "a\x00b",
		"only nul":          "\x00",
	}
	for name, id := range rejected {
		err := ValidateID("run id", id)
		require.Error(t, err, name)
		assert.ErrorIs(t, err, ErrInvalidInput, name)
		assert.NotErrorIs(t, err, ErrTooLarge, name)
		var ie *InputError
		require.ErrorAs(t, err, &ie, name)
		assert.Equal(t, "run id", ie.Field, name)
	}
	assert.EqualError(t, ValidateID("node id", ""), "workflow: node id must contain 1 to 512 bytes")
}

func FuzzValidateID(f *testing.F) {
	for _, s := range []string{"", " ", " x ", "\u2003", "a\x00", "\xff", strings.Repeat("x", 512), strings.Repeat("x", 513)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		err := ValidateID("id", id)
		ok := len(id) >= 1 && len(id) <= MaxIDBytes && utf8.ValidString(id) &&
			!strings.ContainsRune(id, 0) && strings.TrimSpace(id) != ""
		if ok {
			if err != nil {
				t.Fatalf("ValidateID(%q) = %v, want nil", id, err)
			}
			return
		}
		if err == nil {
			t.Fatalf("ValidateID(%q) accepted an invalid id", id)
		}
		var ie *InputError
		if !assert.ErrorAs(t, err, &ie) || !assert.ErrorIs(t, err, ErrInvalidInput) {
			t.FailNow()
		}
	})
}
