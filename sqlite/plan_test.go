package sqlite

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestScansUseIndexesAndNeverSort checks every read statement's query plan:
// each table access goes through an index (or the primary key) and no
// statement sorts (no temporary b-tree), so a bounded scan reads only the
// rows it returns.
func TestScansUseIndexesAndNeverSort(t *testing.T) {
	t.Parallel()
	ctx, conn := explainConn(t)
	for id := stmtID(0); id < sRunIns; id++ {
		q := stmtSQL[id]
		n := strings.Count(q, "?")
		if strings.Contains(q, "?1") {
			n = 0
			for i := 1; strings.Contains(q, "?"+string(rune('0'+i))); i++ {
				n = i
			}
		}
		plan := queryPlan(t, ctx, conn, q, n)
		if strings.Contains(q, "FROM runs WHERE") && strings.Contains(q, "status = ?") {
			require.Contains(t, strings.Join(plan, "\n"), "runs_by_status", "%s: a status-filtered run scan reads the status index", q)
		}
		for _, line := range plan {
			require.NotContains(t, line, "TEMP B-TREE", q)
			if (strings.HasPrefix(line, "SCAN") || strings.HasPrefix(line, "SEARCH")) && !strings.Contains(line, "(subquery") {
				require.True(t, strings.Contains(line, "INDEX") || strings.Contains(line, "PRIMARY KEY"),
					"%s: %s", q, line)
			}
		}
	}
}

// explainConn returns a read connection of a new store, closed when t
// ends, to explain statements on.
func explainConn(t *testing.T) (context.Context, *sql.Conn) {
	t.Helper()
	ctx := context.Background()
	conn, err := newStore(t).rdb.Conn(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return ctx, conn
}

// queryPlan returns the detail lines of q's EXPLAIN QUERY PLAN, with each
// of its n parameters bound to 1.
func queryPlan(t *testing.T, ctx context.Context, conn *sql.Conn, q string, n int) []string {
	t.Helper()
	args := make([]any, n)
	for i := range args {
		args[i] = int64(1)
	}
	rows, err := conn.QueryContext(ctx, "EXPLAIN QUERY PLAN "+q, args...)
	require.NoError(t, err, q)
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var a, p, u int
		var detail string
		require.NoError(t, rows.Scan(&a, &p, &u, &detail))
		plan = append(plan, detail)
	}
	require.NoError(t, rows.Err())
	return plan
}

// TestManyRowStatementsSearchThePrimaryKey checks the plans of the
// many-row SELECTs and UPDATEs (manyread.go, manyrow.go): the VALUES list
// is the outer loop and each of its rows finds its table row through the
// primary key, so a statement reads only the rows of its keys, however
// large the table.
func TestManyRowStatementsSearchThePrimaryKey(t *testing.T) {
	t.Parallel()
	ctx, conn := explainConn(t)
	var qs []string
	for _, tb := range []*table{&runsT, &activationsT, &attemptsT} {
		qs = append(qs, tb.selectMany(8), tb.updateMany(1|1<<3, 8))
	}
	for _, q := range qs {
		plan := queryPlan(t, ctx, conn, q, strings.Count(q, "?"))
		require.Len(t, plan, 2, q)
		require.Contains(t, plan[0], "VALUES", q)
		require.True(t, strings.HasPrefix(plan[1], "SEARCH") && strings.Contains(plan[1], "sqlite_autoindex_"), "%s: %s", q, plan[1])
	}
}
