package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
)

// An export line carries every field of its record under the field's Go
// name, the activation's attempt timeout and the attempt's handoff token
// included, and reads back as the same record.
func TestExportLinesCarryTheAttemptTimeoutAndHandoffToken(t *testing.T) {
	t.Parallel()
	for _, rec := range everyKind() {
		line, err := encodeLine(rec)
		require.NoError(t, err)
		switch r := rec.(type) {
		case backend.Activation:
			require.Contains(t, string(line), `"AttemptTimeoutMS":`)
			if r.AttemptTimeoutMS != 0 {
				require.Contains(t, string(line), `"AttemptTimeoutMS":120000`)
			}
		case backend.Attempt:
			require.Contains(t, string(line), `"HandoffToken":"7c4a8d09ca3762af61e59520943dc264"`)
		}
		got, err := decodeLine(line)
		require.NoError(t, err)
		require.Equal(t, rec, got)
	}
}

// A stream written before the attempt timeout and the handoff token
// existed (its lines lack both fields) imports with no timeout set and no
// token, every other field as written.
func TestExportLinesWithoutTheTimeoutAndTokenReadAsZero(t *testing.T) {
	t.Parallel()
	for _, rec := range everyKind() {
		var field string
		switch r := rec.(type) {
		case backend.Activation:
			field = "AttemptTimeoutMS"
			r.AttemptTimeoutMS = 0
			rec = r
		case backend.Attempt:
			field = "HandoffToken"
			r.HandoffToken = ""
			rec = r
		default:
			continue
		}
		line, err := encodeLine(rec)
		require.NoError(t, err)
		old := dropField(t, string(line), field)
		require.NotContains(t, old, field)
		got, err := decodeLine([]byte(old))
		require.NoError(t, err)
		require.Equal(t, rec, got)
	}
}

// dropField removes the zero-valued field name from an export line.
func dropField(t *testing.T, line, name string) string {
	t.Helper()
	for _, zero := range []string{`,"` + name + `":0`, `,"` + name + `":""`} {
		if strings.Contains(line, zero) {
			return strings.Replace(line, zero, "", 1)
		}
	}
	t.Fatalf("line has no zero %s: %s", name, line)
	return ""
}
