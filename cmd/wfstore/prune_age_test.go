package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/workflow"
)

func TestParseAge(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Duration{"30d": 30 * 24 * time.Hour, "12h": 12 * time.Hour, "90m": 90 * time.Minute, "1m": time.Minute} {
		got, err := parseAge(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "d", "0d", "-1d", "+1d", "30", "30s", "1.5h", "30D", "3 d", "d30", "1w", "99999999999999d"} {
		_, err := parseAge(in)
		assert.ErrorIs(t, err, errBadAge, in)
	}
}

// prune --older-than AGE cuts off at now minus the age: a run updated
// within it is skipped, one updated before it is pruned; a bad age is a
// usage error (exit 2) that lists the accepted forms.
func TestPruneOlderThan(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "p.db")
	now := time.Now()
	withStore(t, db, func(ctx context.Context, s *workflow.Store) {
		for id, at := range map[string]time.Time{"old": now.Add(-48 * time.Hour), "new": now.Add(-2 * time.Hour)} {
			_, err := s.CreateRun(ctx, workflow.NewRun{ID: id}, at)
			require.NoError(t, err)
			st, err := s.RequestCancellation(ctx, id, nil, at)
			require.NoError(t, err)
			require.Equal(t, workflow.RunCancelled, st)
		}
	})
	for _, bad := range []string{"0d", "-30d", "30", "yesterday", "1.5h", "30s"} {
		code, stdout, stderr := runInProcess(t, time.Minute, "prune", "--db", db, "--all-finished", "--older-than", bad)
		assert.Equal(t, 2, code, "%s: %s", bad, stderr)
		assert.Contains(t, stderr, "30d, 12h, 90m", bad)
		assert.Empty(t, stdout, bad)
	}
	code, _, stderr := runInProcess(t, time.Minute, "prune", "--db", db, "--all-finished", "--older-than", "1d", "--finished-before", now.UTC().Format(time.RFC3339))
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "not both")

	code, stdout, stderr := runInProcess(t, time.Minute, "prune", "--db", db, "--run", "old", "--run", "new", "--older-than", "1d", "--json")
	require.Equal(t, 0, code, stderr)
	var rep workflow.PruneReport
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep), stdout)
	require.Len(t, rep.Runs, 2)
	byID := map[string]workflow.PrunedRun{}
	for _, r := range rep.Runs {
		byID[r.RunID] = r
	}
	assert.Empty(t, byID["old"].Skipped, "updated 48h ago: older than 1d, pruned")
	assert.Equal(t, 1, byID["old"].Transactions)
	assert.NotEmpty(t, byID["new"].Skipped, "updated 2h ago: within 1d, skipped")

	code, stdout, stderr = runInProcess(t, time.Minute, "prune", "--db", db, "--all-finished", "--older-than", "90m")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "new (cancelled): pruned")
	assert.Contains(t, stdout, "in 1 transaction\n", "one transaction, not \"1 transactions\"")
}
