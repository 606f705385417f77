package bench

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPostgresRowsAndWALPerAdmission runs a tiny bench on PostgreSQL: every
// measured row (bare, raw, sequential, batch, their interleaved rounds, and
// a single-store workload) reports rows written and WAL bytes per
// operation, both positive, in the JSON and the table.
func TestPostgresRowsAndWALPerAdmission(t *testing.T) {
	dsn := os.Getenv("WFSTORE_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("WFSTORE_POSTGRES_DSN not set")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Config{Targets: []Target{Postgres(dsn)}, N: 40, BatchN: 200, Workers: 3, Rounds: 2,
		Workloads: []string{WBare, WRaw, WSequential, WBatch, WRacingStores}, Dir: t.TempDir()})
	require.NoError(t, err)
	require.Len(t, rep.Results, 5)
	for _, x := range rep.Results {
		require.NotNil(t, x.RowsPerOp, x.Workload)
		require.NotNil(t, x.WALBytesPerOp, x.Workload)
		require.Positive(t, *x.RowsPerOp, x.Workload)
		require.Positive(t, *x.WALBytesPerOp, x.Workload)
		t.Logf("%s: %.2f rows/op, %.0f WAL B/op", x.Workload, *x.RowsPerOp, *x.WALBytesPerOp)
	}
	// The bare commit writes one row; its table is counted apart from raw's.
	require.InDelta(t, 1.0, *rep.find("postgres", WBare).RowsPerOp, 0.01)
	var b bytes.Buffer
	rep.WriteTable(&b)
	require.Contains(t, b.String(), "| rows written/op | WAL B/op |")
	require.NotContains(t, b.String(), "n/a")
}

// Backends that do not tell what they wrote show n/a, never 0.
func TestRowsWrittenNotCountedShowsNA(t *testing.T) {
	r := &Report{Results: []Result{{Backend: "bolt", Workload: WBatch, Ops: 10, OpsPerSec: 1}}}
	var b bytes.Buffer
	r.WriteTable(&b)
	row := strings.Split(strings.TrimSpace(b.String()), "\n")[2]
	require.Contains(t, row, "| n/a | n/a |")
}
