package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/sqlite"
)

// An export line carries every field of its record under the field's
// snake_case name, the activation's attempt timeout and the attempt's handoff token
// included, and reads back as the same record.
func TestExportLinesCarryTheAttemptTimeoutAndHandoffToken(t *testing.T) {
	t.Parallel()
	for _, rec := range everyKind() {
		line, err := encodeLine(rec)
		require.NoError(t, err)
		switch r := rec.(type) {
		case backend.Activation:
			require.Contains(t, string(line), `"attempt_timeout_ms":`)
			if r.AttemptTimeoutMS != 0 {
				require.Contains(t, string(line), `"attempt_timeout_ms":120000`)
			}
		case backend.Attempt:
			require.Contains(t, string(line), `"handoff_token":`)
			if r.HandoffToken != "" {
				require.Contains(t, string(line), `"handoff_token":"7c4a8d09ca3762af61e59520943dc264"`)
			}
		}
		got, err := decodeLine(exportVersion, line)
		require.NoError(t, err)
		require.Equal(t, rec, got)
	}
}

// A stream written before the attempt timeout and the handoff token
// existed (its lines lack both fields) imports with no timeout set and no
// token, every other field as written, and the import's digest check
// passes.
func TestExportLinesWithoutTheTimeoutAndTokenReadAsZero(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	// The records of everyKind as an earlier build stored them, exported
	// in the export's order.
	var want []record
	for _, rec := range everyKind() {
		switch r := rec.(type) {
		case backend.Activation:
			r.AttemptTimeoutMS = 0
			rec = r
		case backend.Attempt:
			r.HandoffToken = ""
			rec = r
		}
		want = append(want, rec)
	}
	src, err := sqlite.Open(ctx, filepath.Join(dir, "src.db"))
	require.NoError(t, err)
	defer src.Close()
	require.NoError(t, insertRecords(ctx, src, want))
	var old []string
	require.NoError(t, walkStore(ctx, src, func(rec record) error {
		line, err := encodeLine(rec)
		require.NoError(t, err)
		switch rec.(type) {
		case backend.Activation:
			line = []byte(dropField(t, string(line), "attempt_timeout_ms"))
		case backend.Attempt:
			line = []byte(dropField(t, string(line), "handoff_token"))
		}
		got, err := decodeLine(exportVersion, line)
		require.NoError(t, err)
		require.Equal(t, rec, got)
		old = append(old, string(line))
		return nil
	}))
	require.Len(t, old, len(want))

	stream, db := filepath.Join(dir, "old.jsonl"), filepath.Join(dir, "in.db")
	// A stream of the current version (header, the lines, a trailer over them) whose
	// lines lack both fields.
	d := newDigester()
	for _, l := range old {
		d.add([]byte(l))
	}
	header, err := json.Marshal(exportHeader{Format: exportFormatName, Version: exportVersion})
	require.NoError(t, err)
	trailer, err := json.Marshal(trailerLine{Trailer: &exportTrailer{Records: d.n, SHA256: d.sum()}})
	require.NoError(t, err)
	body := string(header) + "\n" + strings.Join(old, "\n") + "\n" + string(trailer) + "\n"
	require.NoError(t, os.WriteFile(stream, []byte(body), 0o600))
	var stdout, stderr bytes.Buffer
	require.NoError(t, importCmd(ctx, []string{"--db", db, "--in", stream}, &stdout, &stderr), "%s%s", &stdout, &stderr)
	b, err := sqlite.Open(ctx, db)
	require.NoError(t, err)
	defer b.Close()
	var got []record
	require.NoError(t, walkStore(ctx, b, func(rec record) error {
		got = append(got, rec)
		return nil
	}))
	require.ElementsMatch(t, want, got)
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

// An export line carries a join's wait_for, open_waits and joins and a
// group's fan_in, reads back as the same record, and a line written before
// those fields existed reads as no join, awaited by none, and owner
// settlement.
func TestExportLinesCarryTheJoinFieldsAndFanIn(t *testing.T) {
	t.Parallel()
	k := backend.ActivationKey{RunID: "r", NodeID: "join", ActivationID: "1"}
	act := backend.Activation{Key: k, Status: backend.ActivationWaiting, Input: []byte(`{}`), Effect: backend.ReadOnly,
		Reconciliation: backend.RepairRequired, CreatedMS: 1_700_000_000_001,
		WaitFor:   []backend.NodeRef{{NodeID: "a", ActivationID: "1"}, {NodeID: "b", ActivationID: "1"}},
		OpenWaits: 1, Joins: []backend.NodeRef{{NodeID: "next", ActivationID: "1"}}}
	grp := backend.FanOutGroup{Controller: k, Size: 2, MaxConcurrency: 2, CreatedMS: 1_700_000_000_002, FanIn: true}
	for _, tc := range []struct {
		rec    record
		fields []string
		old    record
	}{
		{act, []string{`"wait_for":[{"activation_id":"1","node_id":"a"},{"activation_id":"1","node_id":"b"}]`, `"open_waits":1`, `"joins":[{"activation_id":"1","node_id":"next"}]`},
			backend.Activation{Key: k, Status: backend.ActivationWaiting, Input: []byte(`{}`), Effect: backend.ReadOnly,
				Reconciliation: backend.RepairRequired, CreatedMS: 1_700_000_000_001}},
		{grp, []string{`"fan_in":true`}, backend.FanOutGroup{Controller: k, Size: 2, MaxConcurrency: 2, CreatedMS: 1_700_000_000_002}},
	} {
		line, err := encodeLine(tc.rec)
		require.NoError(t, err)
		oldLine := string(line)
		for _, f := range tc.fields {
			require.Contains(t, string(line), f)
			oldLine = strings.Replace(oldLine, ","+f, "", 1)
		}
		got, err := decodeLine(exportVersion, line)
		require.NoError(t, err)
		require.Equal(t, tc.rec, got)
		require.NotEqual(t, string(line), oldLine)
		got, err = decodeLine(exportVersion, []byte(oldLine))
		require.NoError(t, err, oldLine)
		require.Equal(t, tc.old, got)
	}
}
