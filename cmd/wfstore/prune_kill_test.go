package main

import (
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/event"
	"github.com/wfstore/wfstore/workflow"
)

// copyStore copies the SQLite store at src (and any journal beside it) to
// dst.
func copyStore(t *testing.T, src, dst string) {
	t.Helper()
	names, err := filepath.Glob(src + "*")
	require.NoError(t, err)
	for _, n := range names {
		in, err := os.Open(n)
		require.NoError(t, err)
		out, err := os.OpenFile(dst+strings.TrimPrefix(n, src), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		require.NoError(t, err)
		_, err = io.Copy(out, in)
		require.NoError(t, err)
		require.NoError(t, out.Close())
		in.Close()
	}
}

// killAfter starts bin with args, SIGKILLs it after d (or lets it finish
// first) and reports whether it finished before the kill.
func killAfter(t *testing.T, bin string, d time.Duration, args ...string) bool {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = t.TempDir()
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		_ = cmd.Process.Kill()
		<-done
		return false
	}
}

// verifyClean fails unless Verify finds no violation in the SQLite store
// at path.
func verifyClean(t *testing.T, path, when string) {
	t.Helper()
	withStore(t, path, func(ctx context.Context, s *workflow.Store) {
		rep, err := s.Verify(ctx, workflow.VerifyOptions{})
		require.NoError(t, err, when)
		require.True(t, rep.OK(), "%s: %v", when, rep.Violations)
	})
}

func TestPruneKilledAtRandomPointsLeavesAVerifiedStoreAndARerunCountsEverything(t *testing.T) {
	t.Parallel()
	bin := wfstoreBinary(t, "")
	dir := t.TempDir()
	template := filepath.Join(dir, "template.db")
	stdout, stderr, code := runCLI(t, bin, nil, "demo", "-db", template, "-activations", "60", "-events", "0")
	require.Equal(t, 0, code, stderr)
	m := regexp.MustCompile(`run (\S+) in `).FindStringSubmatch(stdout)
	require.NotNil(t, m, stdout)
	runID := m[1]
	stdout, stderr, code = runCLI(t, bin, nil, "prune", "--db", template, "--run", runID, "--dry-run", "--json")
	require.Equal(t, 0, code, stderr)
	var dry workflow.PruneReport
	require.NoError(t, json.Unmarshal([]byte(stdout), &dry))
	want := dry.Runs[0].Deleted
	require.Greater(t, want.Attempts, 50)

	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	const kills = 24
	interrupted := 0
	for i := range kills {
		db := filepath.Join(dir, "kill"+strings.Repeat("x", i%3)+time.Now().Format("150405.000000")+".db")
		copyStore(t, template, db)
		args := []string{"prune", "--db", db, "--run", runID, "--batch", "3"}
		// Up to two killed invocations before the one that finishes.
		for range 1 + i%2 {
			d := time.Duration(5+rng.IntN(200)) * time.Millisecond
			if !killAfter(t, bin, d, args...) {
				interrupted++
			}
			verifyClean(t, db, "after a prune killed at "+d.String())
		}
		stdout, stderr, code := runCLI(t, bin, nil, append(args, "--json")...)
		require.Equal(t, 0, code, stderr)
		attempts, events := runCounts(t, db, runID)
		assert.Zero(t, attempts)
		require.Equal(t, []string{string(event.RunPruned)}, events, "the rerun finished the prune: %s", stdout)
		withStore(t, db, func(ctx context.Context, s *workflow.Store) {
			evsPage, err := s.Events(ctx, workflow.EventQuery{RunID: runID, Limit: 10})
			require.NoError(t, err)
			evs := evsPage.Items
			p, err := evs[0].Decode()
			require.NoError(t, err)
			assert.Equal(t, want, p.(event.RunPrunedPayload).Deleted, "run_pruned counts everything the run held")
		})
		verifyClean(t, db, "after the rerun")
	}
	t.Logf("%d of the invocations were killed before they finished", interrupted)
	assert.GreaterOrEqual(t, interrupted, 20, "at least 20 kills landed in the middle of a prune")
}
