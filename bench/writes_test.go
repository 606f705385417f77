package bench

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
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

// TestPostgresRowsWrittenIsExactOnAHandComputedCase writes a known set of
// rows through several connections of a pool, one transaction rolled back,
// and checks the counter's delta against the hand count: 5 inserts (one
// multi-row statement) + 3 updates (one of them HOT) + 2 deletes + 4
// inserts rolled back (PostgreSQL counts rows a rolled-back transaction
// wrote: they were written all the same) + 0 for an update that matches
// nothing and an insert that does nothing on conflict = 14. The bare
// table's 2 rows are counted apart. The WAL in between is positive.
func TestPostgresRowsWrittenIsExactOnAHandComputedCase(t *testing.T) {
	dsn := os.Getenv("WFSTORE_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("WFSTORE_POSTGRES_DSN not set")
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	env, err := openPostgres(ctx, dsn, 3)
	require.NoError(t, err)
	defer env.Close()
	w := env.writes
	q := func(sql string) {
		_, err := w.pool.Exec(ctx, sql)
		require.NoError(t, err, sql)
	}
	table := `"` + w.schema + `".t`
	q(`CREATE TABLE ` + table + ` (id int PRIMARY KEY, v int)`)
	q(`INSERT INTO ` + table + ` VALUES (100, 0)`) // before the count

	store, bare := &writeCounts{pg: w}, &writeCounts{pg: w, bare: true}
	store.begin(ctx)
	bare.begin(ctx)
	wal0 := store.walBefore(ctx)
	// Several connections at once, so that several server processes hold
	// unflushed counters.
	conns := make([]*pgxpool.Conn, 3)
	for i := range conns {
		conns[i], err = w.pool.Acquire(ctx)
		require.NoError(t, err)
	}
	exec := func(c *pgxpool.Conn, sql string) {
		_, err := c.Exec(ctx, sql)
		require.NoError(t, err, sql)
	}
	exec(conns[0], `INSERT INTO `+table+` VALUES (1, 0), (2, 0), (3, 0), (4, 0), (5, 0)`)
	exec(conns[1], `UPDATE `+table+` SET v = 1 WHERE id IN (1, 2)`)
	exec(conns[2], `UPDATE `+table+` SET v = v + 1 WHERE id = 100`)
	exec(conns[0], `DELETE FROM `+table+` WHERE id IN (4, 5)`)
	exec(conns[1], `BEGIN`)
	exec(conns[1], `INSERT INTO `+table+` VALUES (6, 0), (7, 0), (8, 0), (9, 0)`)
	exec(conns[1], `ROLLBACK`)
	exec(conns[2], `UPDATE `+table+` SET v = 9 WHERE id = 12345`)
	exec(conns[2], `INSERT INTO `+table+` VALUES (1, 0) ON CONFLICT DO NOTHING`)
	exec(conns[0], `INSERT INTO "`+w.schema+`".bare VALUES (1, ''), (2, '')`)
	for _, c := range conns {
		c.Release()
	}
	store.walAfter(ctx, wal0)
	store.end(ctx)
	bare.end(ctx)
	require.NoError(t, store.rowsErr)
	require.NoError(t, store.walErr)
	require.Equal(t, int64(14), store.rows1-store.rows0)
	require.Equal(t, int64(2), bare.rows1-bare.rows0)
	require.Positive(t, store.wal)

	var r Result
	r.Ops = 7
	store.fill(&r)
	require.InDelta(t, 2.0, *r.RowsPerOp, 1e-9)
	require.Positive(t, *r.WALBytesPerOp)
}

// TestSQLiteRowsPerAdmission runs a tiny bench on SQLite: every measured
// row reports rows written per operation, and no WAL bytes; the bare
// commit writes exactly one row per commit, and the raw baseline's three
// transactions at least the 10 records they apply (4 + 3 + 3).
func TestSQLiteRowsPerAdmission(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Config{Targets: []Target{SQLite()}, N: 40, BatchN: 200, Workers: 3, Rounds: 2,
		History: 300, SmallHistory: 100,
		Workloads: []string{WBare, WRaw, WSequential, WBatch, WRacingStores, WGrowth}, Dir: t.TempDir()})
	require.NoError(t, err)
	require.Len(t, rep.Results, 6)
	for _, x := range rep.Results {
		require.NotNil(t, x.RowsPerOp, x.Workload)
		require.Positive(t, *x.RowsPerOp, x.Workload)
		require.Nil(t, x.WALBytesPerOp, x.Workload)
		t.Logf("%s: %.2f rows/op", x.Workload, *x.RowsPerOp)
	}
	require.Equal(t, 1.0, *rep.find("sqlite", WBare).RowsPerOp)
	require.GreaterOrEqual(t, *rep.find("sqlite", WRaw).RowsPerOp, 10.0)
	var b bytes.Buffer
	rep.WriteWrites(&b)
	require.Contains(t, b.String(), "sqlite writes: rows written: ")
}
