package main

import (
	"bytes"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
)

// The attempt table shows how long each attempt has been in its status:
// since it settled, was admitted or was prepared, whichever came last.
func TestInspectAttemptsShowEachAttemptsAge(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(1_000_000)
	atts := []backend.Attempt{
		{Identity: "p", Status: backend.AttemptPrepared, Handoff: backend.HandoffRecorded, PreparedMS: 1_000_000 - 250},
		{Identity: "a", Status: backend.AttemptAdmitted, PreparedMS: 1_000, AdmittedMS: 1_000_000 - 90_500, Receipt: []byte(`{}`)},
		{Identity: "s", Status: backend.AttemptSucceeded, PreparedMS: 1_000, AdmittedMS: 2_000, TerminalMS: 1_000_000 - 3_000},
	}
	assert.Equal(t, 250*time.Millisecond, attemptAge(atts[0], now))
	assert.Equal(t, 90*time.Second, attemptAge(atts[1], now), "an admitted attempt is aged from its admission")
	assert.Equal(t, 3*time.Second, attemptAge(atts[2], now), "a settled attempt is aged from its settlement")

	var out bytes.Buffer
	tw := tabwriter.NewWriter(&out, 0, 4, 2, ' ', 0)
	writeAttemptsAt(tw, atts, now)
	require.NoError(t, tw.Flush())
	lines := bytes.Split(bytes.TrimSpace(out.Bytes()), []byte("\n"))
	require.Len(t, lines, 4)
	assert.Regexp(t, `^IDENTITY\s+STATUS\s+AGE\s+HANDOFF`, string(lines[0]))
	assert.Regexp(t, `^a\s+admitted\s+1m30s\s`, string(lines[2]))
}

// inspect --json gives each attempt the age the table shows, in
// milliseconds, beside the times it is computed from.
func TestInspectJSONGivesEachAttemptsAge(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(1_000_000)
	a := backend.Attempt{Identity: "a", Status: backend.AttemptAdmitted, PreparedMS: 1_000, AdmittedMS: 1_000_000 - 90_500}
	m, ok := jsonRecordAt(a, now).(map[string]any)
	require.True(t, ok)
	assert.Equal(t, int64(90_500), m["age_ms"])
	assert.Equal(t, int64(1_000_000-90_500), m["admitted_ms"])
	assert.Equal(t, int64(1_000), m["prepared_ms"])
	run, ok := jsonRecordAt(backend.Run{ID: "r"}, now).(map[string]any)
	require.True(t, ok)
	assert.NotContains(t, run, "age_ms", "only attempts have an age")
}
