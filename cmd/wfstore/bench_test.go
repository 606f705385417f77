package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBenchFailOnMissedExitsOneListingTheMissedTargets runs a tiny bench
// twice on bbolt: with --fail-on-missed the exit status is 1 exactly when
// the report marks a target MISSED, and stderr lists each missed target;
// without the flag the same report exits 0.
func TestBenchFailOnMissedExitsOneListingTheMissedTargets(t *testing.T) {
	args := []string{"bench", "--backends", "bolt", "-n", "100", "--batch-n", "200", "--history", "300", "--dir", t.TempDir()}
	var out, errb bytes.Buffer
	code := run(append(args, "--fail-on-missed"), &out, &errb)
	missed := strings.Count(out.String(), "**MISSED**")
	if missed > 0 {
		require.Equal(t, 1, code, errb.String())
		require.Contains(t, errb.String(), "wfstore bench: "+plural(missed)+" missed:")
		for _, line := range strings.Split(out.String(), "\n") {
			if target, ok := strings.CutSuffix(line, " — **MISSED**"); ok {
				require.Contains(t, errb.String(), strings.TrimPrefix(target, "- "))
			}
		}
	} else {
		require.Equal(t, 0, code, errb.String())
	}

	out.Reset()
	errb.Reset()
	require.Equal(t, 0, run(args, &out, &errb), errb.String())
	require.NotContains(t, errb.String(), "missed:")
}

func plural(n int) string {
	if n == 1 {
		return "1 target"
	}
	return strconv.Itoa(n) + " targets"
}

// TestBenchMeasuresRiverFromAnyDirectory runs a tiny bench on PostgreSQL
// from a directory outside the repository, as an installed binary would
// run: River drains beside it, and every row reports rows written and WAL
// bytes per admission, in the table and in the JSON.
func TestBenchMeasuresRiverFromAnyDirectory(t *testing.T) {
	dsn := os.Getenv("WFSTORE_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("WFSTORE_POSTGRES_DSN not set")
	}
	dir := t.TempDir()
	t.Chdir(dir)
	jsonPath := filepath.Join(dir, "results.json")
	var out, errb bytes.Buffer
	code := run([]string{"bench", "--backends", "postgres", "--dsn", dsn, "-n", "40", "--batch-n", "200",
		"--history", "300", "--dir", filepath.Join(dir, "stores"), "--json", jsonPath}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	require.Contains(t, out.String(), "river v0.51.2 (peer, same PostgreSQL, same run): drained 200 jobs")
	require.NotContains(t, out.String(), "not measured")
	require.Contains(t, out.String(), "postgres writes: rows written: ")

	b, err := os.ReadFile(jsonPath)
	require.NoError(t, err)
	var rows []map[string]any
	require.NoError(t, json.Unmarshal(b, &rows))
	require.NotEmpty(t, rows)
	for _, r := range rows {
		if r["ops"] == nil || r["ops"].(float64) == 0 {
			continue
		}
		for _, k := range []string{"rows_written_per_op", "wal_bytes_per_op"} {
			require.NotNil(t, r[k], "%s %s", r["workload"], k)
			require.Positive(t, r[k], "%s %s", r["workload"], k)
		}
	}
}

// --river takes on or off; River without postgres says why it did not run.
func TestBenchRiverFlag(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, 2, run([]string{"bench", "--river", "/some/dir"}, &out, &errb))
	require.Contains(t, errb.String(), "want on or off")

	out.Reset()
	errb.Reset()
	code := run([]string{"bench", "--backends", "bolt", "-n", "20", "--batch-n", "100", "--history", "100", "--dir", t.TempDir()}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	require.Contains(t, out.String(), "river (peer): not measured: not run: it needs the postgres backend (not in --backends)")
}

// TestBenchWorkloadsRunsOnlyThoseNamed: --workloads measures the named
// workloads and no other; an unknown name is a usage error naming the
// valid ones.
func TestBenchWorkloadsRunsOnlyThoseNamed(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"bench", "--backends", "bolt", "-n", "40", "--workloads", "sequential,racing-stores", "--dir", t.TempDir()}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	require.Contains(t, out.String(), "| bolt | racing-stores |")
	require.Contains(t, out.String(), "| bolt | sequential |")
	for _, w := range []string{"bare", "parallel", "racing-batch", "growth", "retry"} {
		require.NotContains(t, out.String(), "| bolt | "+w+" |")
	}

	out.Reset()
	errb.Reset()
	require.Equal(t, 2, run([]string{"bench", "--backends", "bolt", "--workloads", "racing,nope"}, &out, &errb))
	require.Contains(t, errb.String(), `unknown workload "nope"`)
	require.Contains(t, errb.String(), "racing-stores-batch")
}
