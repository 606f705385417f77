package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
)

// pageAll follows a listing's next_cursor with pages of size and
// returns every row's key field, in order, and the number of pages.
func pageAll(t *testing.T, bin, path, verb, runID, field, list string, size int) ([]string, int) {
	t.Helper()
	var keys []string
	after, pages := "", 0
	for {
		args := []string{"inspect", verb, runID, "--db", path, "--json", "--limit", strconv.Itoa(size)}
		if after != "" {
			args = append(args, "--cursor", after)
		}
		stdout, stderr, code := runCLI(t, bin, nil, args...)
		require.Equal(t, 0, code, stderr)
		var page map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(stdout), &page), stdout)
		var rows []map[string]any
		require.NoError(t, json.Unmarshal(page[list], &rows))
		require.LessOrEqual(t, len(rows), size)
		for _, r := range rows {
			keys = append(keys, fmt.Sprint(r[field]))
		}
		pages++
		require.NoError(t, json.Unmarshal(page["next_cursor"], &after))
		if after == "" {
			return keys, pages
		}
		require.Len(t, rows, size, "only a full page has a next cursor")
		require.Less(t, pages, 1000)
	}
}

func TestInspectActivationsAndAttemptsPageThroughARun(t *testing.T) {
	t.Parallel()
	bin := wfstoreBinary(t, "")
	path, ids := demoStore(t, bin)
	// The run with the most attempts.
	runID, most := "", -1
	for _, id := range ids {
		stdout, _, code := runCLI(t, bin, nil, "inspect", "attempts", id, "--db", path, "--json", "--limit", "1000")
		require.Equal(t, 0, code)
		var all struct {
			Attempts []map[string]any `json:"attempts_newest_first"`
		}
		require.NoError(t, json.Unmarshal([]byte(stdout), &all))
		if len(all.Attempts) > most {
			runID, most = id, len(all.Attempts)
		}
	}
	require.Greater(t, most, 3, "the demo makes a run with several attempts")

	for _, l := range []struct{ verb, list, field string }{
		{"activations", "activations", "key"},
		{"attempts", "attempts_newest_first", "identity"},
	} {
		whole, pages := pageAll(t, bin, path, l.verb, runID, l.field, l.list, 1000)
		require.Equal(t, 1, pages)
		require.Greater(t, len(whole), 3)
		paged, pages := pageAll(t, bin, path, l.verb, runID, l.field, l.list, 2)
		assert.Equal(t, whole, paged, "%s: pages of 2 give every row once, in order", l.verb)
		assert.Equal(t, (len(whole)+1)/2, pages, l.verb)
	}

	// The table form prints the cursor; "run" says where a cut list goes on.
	stdout, _, code := runCLI(t, bin, nil, "inspect", "attempts", runID, "--db", path, "--limit", "1")
	require.Equal(t, 0, code)
	assert.Regexp(t, `(?m)^next: --cursor [A-Za-z0-9_-]+$`, stdout)
	stdout, _, code = runCLI(t, bin, nil, "inspect", "run", runID, "--db", path, "--limit", "1")
	require.Equal(t, 0, code)
	assert.Contains(t, stdout, "more: wfstore inspect activations "+strconv.Quote(runID)+" --cursor ")
	assert.Contains(t, stdout, "more: wfstore inspect attempts "+strconv.Quote(runID)+" --cursor ")
	stdout, _, code = runCLI(t, bin, nil, "inspect", "run", runID, "--db", path, "--limit", "1000")
	require.Equal(t, 0, code)
	assert.NotContains(t, stdout, "more:")

	// Cursors a user can get wrong.
	for _, bad := range [][]string{
		{"activations", runID, "--cursor", "n1"},
		{"activations", runID, "--cursor", `["n1","a1"]`},
		{"activations", runID, "--after", `["n1","a1"]`},
		{"attempts", runID, "--cursor", `[1,"id"]`},
		{"attempts", runID, "--cursor", attemptCursor("another-run", backend.Attempt{PreparedMS: 1, Identity: "id"})},
		{"attempts", runID, "--cursor", activationCursor(runID, backend.NodeRef{NodeID: "n", ActivationID: "a"})},
		{"attempts", runID, "--cursor", encodeCursor(pageCursor{Listing: "attempts", Run: runID})},
		{"run", runID, "--after", "x"},
		{"run", runID, "--cursor", "x"},
	} {
		_, stderr, code := runCLI(t, bin, nil, append(append([]string{"inspect"}, bad...), "--db", path)...)
		assert.Equal(t, 2, code, "%v", bad)
		assert.NotEmpty(t, strings.TrimSpace(stderr), "%v", bad)
	}
	_, stderr, code := runCLI(t, bin, nil, "inspect", "attempts", "no-such-run", "--db", path)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "not found")
}
