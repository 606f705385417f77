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

// TestProbeAdmitsTheBacklogInItsOwnSchema runs the hand-written probe: it
// admits the whole backlog, writes exactly the rows it claims per
// admission (an activation update, an attempt insert and two updates,
// three events, and the run's counters once per transaction of each
// batch), and drops the schema it created.
func TestProbeAdmitsTheBacklogInItsOwnSchema(t *testing.T) {
	dsn := os.Getenv("WFSTORE_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("WFSTORE_POSTGRES_DSN not set")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	const n = 250 // three runs: two full batches and a half one
	p := RunProbe(ctx, dsn, n, nil)
	require.Empty(t, p.Skipped)
	require.Equal(t, "probe", p.Name)
	require.Equal(t, n, p.Jobs)
	require.Positive(t, p.JobsPerSec)
	require.True(t, strings.HasPrefix(p.Schema, "probebench_"), p.Schema)
	require.NotNil(t, p.RowsPerJob)
	require.NotNil(t, p.WALBytesPerJob)
	// 7 rows per admission, and 3 run updates per batch (3 batches).
	require.InDelta(t, 7+float64(3*3)/n, *p.RowsPerJob, 1e-9)
	require.Positive(t, *p.WALBytesPerJob)
	t.Logf("probe: %.0f admissions/s, %.2f rows, %.0f WAL B per admission", p.JobsPerSec, *p.RowsPerJob, *p.WALBytesPerJob)

	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var k int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM pg_namespace WHERE nspname = $1`, p.Schema).Scan(&k))
	require.Zero(t, k, "schema %s left behind", p.Schema)
}
