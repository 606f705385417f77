package bench

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// TestRiverDrainsFromATempDirInItsOwnSchema runs the River peer from a
// working directory outside the repository, as an installed binary would
// be: it drains, reports its version, rate, rows and WAL per job, and
// drops the schema it created.
func TestRiverDrainsFromATempDirInItsOwnSchema(t *testing.T) {
	dsn := os.Getenv("WFSTORE_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("WFSTORE_POSTGRES_DSN not set")
	}
	t.Chdir(t.TempDir())
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	p := RunRiver(ctx, dsn, 300, nil)
	require.Empty(t, p.Skipped)
	require.Equal(t, "v0.51.2", p.Version)
	require.Equal(t, 300, p.Jobs)
	require.Positive(t, p.JobsPerSec)
	require.True(t, strings.HasPrefix(p.Schema, "riverbench_"), p.Schema)
	require.NotNil(t, p.RowsPerJob)
	require.NotNil(t, p.WALBytesPerJob)
	// The backlog is inserted before the count starts; then each job is
	// updated at least once, when it completes.
	require.GreaterOrEqual(t, *p.RowsPerJob, 1.0)
	require.Positive(t, *p.WALBytesPerJob)
	t.Logf("river: %.0f jobs/s, %.2f rows/job, %.0f WAL B/job", p.JobsPerSec, *p.RowsPerJob, *p.WALBytesPerJob)

	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var n int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM pg_namespace WHERE nspname = $1`, p.Schema).Scan(&n))
	require.Zero(t, n, "schema %s left behind", p.Schema)
}

// A drain that cannot reach its database is reported with the reason,
// never fatal.
func TestRiverUnreachableSaysWhy(t *testing.T) {
	p := RunRiver(t.Context(), "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=2", 10, nil)
	require.Equal(t, "river", p.Name)
	require.Contains(t, p.Skipped, "the River drain failed: ")
	require.Contains(t, p.Skipped, "127.0.0.1")
	require.Zero(t, p.JobsPerSec)
}

// The version reported is the one go.mod requires.
func TestRiverRequiredIsGoMods(t *testing.T) {
	b, err := os.ReadFile("../go.mod")
	require.NoError(t, err)
	require.Contains(t, string(b), "\t"+riverModule+" "+riverRequired+"\n")
}
