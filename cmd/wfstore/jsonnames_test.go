package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	wfbench "github.com/wfstore/wfstore/bench"
)

// assertSnakeJSON checks that every key of the JSON document out, at any
// depth, is snake_case, except inside the JSON documents a user wrote
// (documentFields) and the settings map (keys are the engine's names).
func assertSnakeJSON(t *testing.T, what string, out []byte) {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal(out, &v), "%s: %s", what, out)
	assert.Empty(t, nonSnakeKeys(v, append(documentFields(), "settings", "payload"), what), "%s: %s", what, out)
}

// Every --json output names its fields one way, snake_case: inspect's
// listings and run view (records, allowance, next retry), verify's and
// prune's reports, the bench's and the conformance report's rows.
func TestEveryJSONOutputNamesFieldsInSnakeCase(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "demo.db")
	code, _, stderr := runInProcess(t, 2*time.Minute, "demo", "--db", db, "--activations", "4", "--members", "3")
	require.Equal(t, 0, code, stderr)
	code, stdout, stderr := runInProcess(t, time.Minute, "inspect", "runs", "--db", db, "--json")
	require.Equal(t, 0, code, stderr)
	assertSnakeJSON(t, "inspect runs", []byte(stdout))
	var page struct {
		Runs []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"runs"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &page))
	require.NotEmpty(t, page.Runs)
	for _, r := range page.Runs {
		for _, verb := range []string{"run", "activations", "attempts", "events"} {
			code, stdout, stderr := runInProcess(t, time.Minute, "inspect", verb, r.ID, "--db", db, "--json")
			require.Equal(t, 0, code, stderr)
			assertSnakeJSON(t, "inspect "+verb, []byte(stdout))
		}
		if r.Status == "completed" {
			code, stdout, stderr := runInProcess(t, time.Minute, "prune", "--db", db, "--run", r.ID, "--dry-run", "--json")
			require.Equal(t, 0, code, stderr)
			assertSnakeJSON(t, "prune", []byte(stdout))
		}
	}
	code, stdout, stderr = runInProcess(t, time.Minute, "verify", "--db", db, "--json")
	require.Equal(t, 0, code, stderr)
	assertSnakeJSON(t, "verify", []byte(stdout))

	// The allowance and next retry of a run view, whatever the demo left.
	var buf bytes.Buffer
	one := int64(1)
	require.NoError(t, writeJSON(&buf, map[string]any{"allowance": jsonRecord(struct {
		RunCap      int64
		RunConsumed *int64
	}{2, &one})}))
	assert.Contains(t, buf.String(), `"run_consumed": 1`)

	// The bench's rows (--json) and its whole report, with the adapter's
	// info and re-run counts.
	res, err := json.Marshal(wfbench.Report{
		Backends: []wfbench.BackendReport{{Name: "sqlite", Info: backend.Info{Name: "sqlite", Version: "3", Settings: map[string]string{"synchronous": "FULL"}}}},
		Results:  []wfbench.Result{{Backend: "sqlite", Reruns: &backend.Reruns{Busy: 1, OutcomeUnknown: 2}}},
	})
	require.NoError(t, err)
	assertSnakeJSON(t, "bench report", res)
	rep := conformReport{Backend: "sqlite", Adapter: newReportAdapter(backend.Info{Name: "sqlite"}), Cases: []conformCase{{Name: "x", Result: resultPass}}}
	buf.Reset()
	require.NoError(t, rep.writeJSON(&buf))
	assertSnakeJSON(t, "conform report", buf.Bytes())
}
