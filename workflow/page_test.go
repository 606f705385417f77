package workflow

import (
	"encoding/base64"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCursorRoundTrip(t *testing.T) {
	t.Parallel()
	want := stagePos{Stage: 2, RunID: "r", Prepared: 7, Identity: "id"}
	c := encodeCursor(stuckCursor, want)
	var got stagePos
	ok, err := decodeCursor(stuckCursor, c, &got)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, want, got)
	ok, err = decodeCursor(stuckCursor, "", &got)
	require.NoError(t, err)
	assert.False(t, ok, "the empty cursor is the beginning")
	assert.Equal(t, want, got, "and leaves the position alone")
	assert.NotContains(t, string(c), "=", "a cursor is URL-safe, unpadded")
}

func TestCursorRefusals(t *testing.T) {
	t.Parallel()
	raw := func(b []byte) Cursor { return Cursor(base64.RawURLEncoding.EncodeToString(b)) }
	good := []byte("\x01stuck attempts\x00{\"s\":1}")
	bad := map[string]Cursor{
		"not base64":       "%%%",
		"padded":           Cursor(base64.URLEncoding.EncodeToString(good)),
		"too short":        raw([]byte{1}),
		"other version":    raw(append([]byte{2}, good[1:]...)),
		"other listing":    encodeCursor(timedOutCursor, stagePos{Stage: 1}),
		"no separator":     raw([]byte("\x01stuck attempts{\"s\":1}")),
		"unknown field":    raw([]byte("\x01stuck attempts\x00{\"s\":1,\"x\":2}")),
		"trailing value":   raw([]byte("\x01stuck attempts\x00{\"s\":1}{\"s\":2}")),
		"not json":         raw([]byte("\x01stuck attempts\x00nope")),
		"wrong field type": raw([]byte("\x01stuck attempts\x00{\"s\":\"1\"}")),
	}
	var p stagePos
	ok, err := decodeCursor(stuckCursor, raw(good), &p)
	require.NoError(t, err, "the control decodes")
	require.True(t, ok)
	for name, c := range bad {
		_, err := decodeCursor(stuckCursor, c, &p)
		assert.True(t, errors.Is(err, ErrInvalidInput), "%s: %v", name, err)
	}
	_, err = decodeStage(stuckCursor, encodeCursor(stuckCursor, stagePos{Stage: len(stuckStages)}), len(stuckStages))
	assert.True(t, errors.Is(err, ErrInvalidInput), "a stage past the last is refused")
	_, err = decodeStage(stuckCursor, encodeCursor(stuckCursor, stagePos{Stage: -1}), len(stuckStages))
	assert.True(t, errors.Is(err, ErrInvalidInput), "a negative stage is refused")
}

func FuzzCursorDecode(f *testing.F) {
	f.Add("")
	f.Add(string(EventCursor(3)))
	f.Add(string(encodeCursor(stuckCursor, stagePos{Stage: 1, Identity: "x"})))
	f.Fuzz(func(t *testing.T, c string) {
		var p stagePos
		ok, err := decodeCursor(stuckCursor, Cursor(c), &p)
		if err != nil {
			if !errors.Is(err, ErrInvalidInput) {
				t.Fatalf("refusal %v is not ErrInvalidInput", err)
			}
			return
		}
		if ok && encodeCursor(stuckCursor, p) == "" {
			t.Fatal("a decoded position encodes to nothing")
		}
	})
}
