package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/event"
	"github.com/wfstore/wfstore/sqlite"
	"github.com/wfstore/wfstore/workflow"
)

// storeFiles hashes every file of the store at path (the database and any
// journal beside it).
func storeFiles(t *testing.T, path string) map[string]string {
	t.Helper()
	names, err := filepath.Glob(path + "*")
	require.NoError(t, err)
	sort.Strings(names)
	out := map[string]string{}
	for _, n := range names {
		b, err := os.ReadFile(n)
		require.NoError(t, err)
		sum := sha256.Sum256(b)
		out[filepath.Base(n)] = hex.EncodeToString(sum[:])
	}
	return out
}

// withStore runs fn on a Store over the SQLite file at path.
func withStore(t *testing.T, path string, fn func(ctx context.Context, s *workflow.Store)) {
	t.Helper()
	ctx := context.Background()
	b, err := sqlite.Open(ctx, path)
	require.NoError(t, err)
	defer b.Close()
	fn(ctx, workflow.New(b))
}

// runCounts counts a run's attempts and events (all of them, up to 1000).
func runCounts(t *testing.T, path, runID string) (attempts int, events []string) {
	t.Helper()
	withStore(t, path, func(ctx context.Context, s *workflow.Store) {
		attsPage, err := s.Attempts(ctx, workflow.AttemptQuery{RunID: runID, Limit: workflow.MaxPageLimit})
		require.NoError(t, err)
		atts := attsPage.Items
		attempts = len(atts)
		evsPage, err := s.Events(ctx, workflow.EventQuery{RunID: runID, Limit: workflow.MaxPageLimit})
		require.NoError(t, err)
		evs := evsPage.Items
		for _, e := range evs {
			events = append(events, string(e.Type))
		}
	})
	return attempts, events
}

func TestPruneCommandOnADemoStore(t *testing.T) {
	t.Parallel()
	bin := wfstoreBinary(t, "")
	db := filepath.Join(t.TempDir(), "demo.db")
	stdout, stderr, code := runCLI(t, bin, nil, "demo", "-db", db)
	require.Equal(t, 0, code, stderr)
	m := regexp.MustCompile(`run (\S+) in `).FindStringSubmatch(stdout)
	require.NotNil(t, m, "demo output names its run: %s", stdout)
	done := m[1]
	withStore(t, db, func(ctx context.Context, s *workflow.Store) {
		run, err := s.GetRun(ctx, done)
		require.NoError(t, err)
		require.Equal(t, workflow.RunCompleted, run.Status, "a demo without failures completes")
		_, err = s.CreateRun(ctx, workflow.NewRun{ID: "live"}, time.Now())
		require.NoError(t, err)
		_, err = s.AddActivation(ctx, workflow.NewActivation{Key: workflow.ActivationKey{RunID: "live", NodeID: "n", ActivationID: "a"},
			Input: json.RawMessage(`{}`)}, time.Now())
		require.NoError(t, err)
	})
	attempts, events := runCounts(t, db, done)
	require.NotZero(t, attempts)
	before := storeFiles(t, db)

	// Dry run: the counts, and not a byte changed.
	stdout, stderr, code = runCLI(t, bin, nil, "prune", "--backend", "sqlite", "--db", db, "--run", done, "--dry-run")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "dry run on "+db+": nothing was written")
	assert.Contains(t, stdout, fmt.Sprintf("%s (completed): would delete %d events, %d attempts, ", done, len(events), attempts))
	assert.Equal(t, before, storeFiles(t, db), "a dry run leaves the store's files byte-identical")

	// A live run is refused, alone or beside the finished one: exit 1, nothing written.
	for _, args := range [][]string{{"--run", "live"}, {"--run", done, "--run", "live"}} {
		_, stderr, code = runCLI(t, bin, nil, append([]string{"prune", "--db", db}, args...)...)
		assert.Equal(t, 1, code, "prune %v", args)
		assert.Contains(t, stderr, `run "live" is running`)
	}
	_, stderr, code = runCLI(t, bin, nil, "prune", "--db", db, "--run", "missing")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "not found")
	assert.Equal(t, before, storeFiles(t, db), "refused prunes leave the store's files byte-identical")

	// A real prune, in batches, reported as JSON.
	stdout, stderr, code = runCLI(t, bin, nil, "prune", "--db", db, "--run", done, "--batch", "10", "--json")
	require.Equal(t, 0, code, stderr)
	var rep workflow.PruneReport
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep), stdout)
	require.Len(t, rep.Runs, 1)
	got := rep.Runs[0]
	assert.Equal(t, done, got.RunID)
	assert.Equal(t, len(events), got.Deleted.Events)
	assert.Equal(t, attempts, got.Deleted.Attempts)
	assert.GreaterOrEqual(t, got.Transactions, got.Deleted.Total()/10)
	a, evs := runCounts(t, db, done)
	assert.Zero(t, a, "the run's attempts are gone")
	assert.Equal(t, []string{string(event.RunPruned)}, evs)
	la, _ := runCounts(t, db, "live")
	assert.Zero(t, la)
	withStore(t, db, func(ctx context.Context, s *workflow.Store) {
		run, err := s.GetRun(ctx, "live")
		require.NoError(t, err)
		assert.Equal(t, workflow.RunRunning, run.Status, "the live run is untouched")
	})

	// Again: already pruned, in text.
	stdout, stderr, code = runCLI(t, bin, nil, "prune", "--db", db, "--run", done)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, done+" (completed): already pruned, nothing to delete")

	// A cut-off before the run finished skips it.
	stdout, stderr, code = runCLI(t, bin, nil, "prune", "--db", db, "--run", done, "--finished-before", "2001-01-01T00:00:00Z")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "skipped, finished at or after the cut-off")
}

func TestPruneCommandUsage(t *testing.T) {
	t.Parallel()
	bin := wfstoreBinary(t, "")
	_, stderr, code := runCLI(t, bin, nil, "prune", "-help")
	assert.Equal(t, 0, code)
	for _, flag := range []string{"-backend", "-db", "-dsn", "-run", "-finished-before", "-dry-run", "-json", "-batch"} {
		assert.Contains(t, stderr, flag)
	}
	db := filepath.Join(t.TempDir(), "x.db")
	_, stderr, code = runCLI(t, bin, nil, "prune", "--db", db)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "--run ID")
	_, stderr, code = runCLI(t, bin, nil, "prune", "--run", "r")
	assert.Equal(t, 2, code, "a usage error")
	assert.Contains(t, stderr, "--db PATH")
	_, stderr, code = runCLI(t, bin, nil, "prune", "--db", db, "--run", "r", "--finished-before", "yesterday")
	assert.Equal(t, 2, code, "a usage error")
	assert.Contains(t, stderr, "--finished-before")
	_, _, code = runCLI(t, bin, nil, "prune", "--db", db, "--run", "r", "extra")
	assert.Equal(t, 2, code)
	stdout, _, code := runCLI(t, bin, nil, "help")
	assert.Equal(t, 0, code)
	assert.Contains(t, stdout, "wfstore prune")
}

func TestPruneCommandAllFinishedPagesThroughTheStore(t *testing.T) {
	t.Parallel()
	bin := wfstoreBinary(t, "")
	db := filepath.Join(t.TempDir(), "demo.db")
	_, stderr, code := runCLI(t, bin, nil, "demo", "-db", db)
	require.Equal(t, 0, code, stderr)
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)

	_, stderr, code = runCLI(t, bin, nil, "prune", "--db", db, "--all-finished")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "--all-finished needs --finished-before")
	_, stderr, code = runCLI(t, bin, nil, "prune", "--db", db, "--all-finished", "--run", "x", "--finished-before", future)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "not both")

	// One run a call, following the printed cursor; the demo's completed and
	// cancelled runs go, its failed ones stay.
	var pruned []string
	after := ""
	for calls := 0; ; calls++ {
		require.Less(t, calls, 10)
		args := []string{"prune", "--db", db, "--all-finished", "--finished-before", future, "--limit", "1", "--json"}
		if after != "" {
			args = append(args, "--after", after)
		}
		stdout, stderr, code := runCLI(t, bin, nil, args...)
		require.Equal(t, 0, code, stderr)
		var rep workflow.PruneReport
		require.NoError(t, json.Unmarshal([]byte(stdout), &rep), stdout)
		for _, r := range rep.Runs {
			pruned = append(pruned, string(r.Status))
		}
		if rep.Next == "" {
			break
		}
		after = rep.Next
	}
	assert.ElementsMatch(t, []string{"completed", "cancelled"}, pruned)
	stdout, stderr, code := runCLI(t, bin, nil, "verify", "--db", db)
	assert.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, " 0 violations")
}
