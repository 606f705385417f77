package bench

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSQLiteRowsWrittenIsExactOnAHandComputedCase writes a known set of
// rows to a registered file through two connections and checks the count
// against the hand count: 5 inserts (one multi-row statement, a rowid
// table) + 2 inserts into a WITHOUT ROWID table + 4 updates + 2 deletes =
// 13; a rolled-back transaction's 4 inserts, an update that matches
// nothing and an insert that does nothing on conflict add 0. A file not
// registered is not counted, and neither is the registered file once
// counting stopped.
func TestSQLiteRowsWrittenIsExactOnAHandComputedCase(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	path := filepath.Join(dir, "x.db")
	rows, stop, err := countSQLiteRows(path)
	require.NoError(t, err)
	other, stopOther, err := countSQLiteRows(filepath.Join(dir, "other.db"))
	require.NoError(t, err)
	defer stopOther()

	db, err := sql.Open("sqlite", "file:"+filepath.ToSlash(path)+"?_pragma=journal_mode(WAL)")
	require.NoError(t, err)
	defer db.Close()
	db.SetMaxOpenConns(2)
	exec := func(c *sql.Conn, q string) {
		_, err := c.ExecContext(ctx, q)
		require.NoError(t, err, q)
	}
	c1, err := db.Conn(ctx)
	require.NoError(t, err)
	defer c1.Close()
	c2, err := db.Conn(ctx)
	require.NoError(t, err)
	defer c2.Close()
	exec(c1, `CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER)`)
	exec(c1, `CREATE TABLE w (k TEXT PRIMARY KEY, v INTEGER) WITHOUT ROWID`)
	base := rows.Load()
	exec(c1, `INSERT INTO t VALUES (1, 0), (2, 0), (3, 0), (4, 0), (5, 0)`)
	exec(c2, `BEGIN IMMEDIATE`)
	exec(c2, `INSERT INTO w VALUES ('a', 0), ('b', 0)`)
	exec(c2, `UPDATE t SET v = 1 WHERE id IN (1, 2)`)
	exec(c2, `UPDATE w SET v = 1 WHERE k = 'a'`)
	exec(c2, `COMMIT`)
	exec(c1, `DELETE FROM t WHERE id IN (4, 5)`)
	exec(c2, `BEGIN IMMEDIATE`)
	exec(c2, `INSERT INTO t VALUES (6, 0), (7, 0), (8, 0), (9, 0)`)
	exec(c2, `ROLLBACK`)
	exec(c2, `UPDATE t SET v = 2 WHERE id = 3`) // commits on the connection that rolled back
	exec(c1, `UPDATE t SET v = 9 WHERE id = 12345`)
	exec(c1, `INSERT INTO t VALUES (1, 0) ON CONFLICT DO NOTHING`)
	require.Equal(t, int64(13), rows.Load()-base)
	require.Zero(t, other.Load())

	stop()
	db2, err := sql.Open("sqlite", "file:"+filepath.ToSlash(path)) // its connections open after counting stopped
	require.NoError(t, err)
	defer db2.Close()
	c3, err := db2.Conn(ctx)
	require.NoError(t, err)
	defer c3.Close()
	exec(c3, `INSERT INTO t VALUES (10, 0)`)
	require.Equal(t, int64(13), rows.Load()-base)
}
