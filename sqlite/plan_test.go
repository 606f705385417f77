package sqlite

import (
	"context"
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
	b := newStore(t)
	ctx := context.Background()
	conn, err := b.rdb.Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()
	for id := stmtID(0); id < sRunIns; id++ {
		q := stmtSQL[id]
		n := strings.Count(q, "?")
		if strings.Contains(q, "?1") {
			n = 0
			for i := 1; strings.Contains(q, "?"+string(rune('0'+i))); i++ {
				n = i
			}
		}
		args := make([]any, n)
		for i := range args {
			args[i] = int64(1)
		}
		rows, err := conn.QueryContext(ctx, "EXPLAIN QUERY PLAN "+q, args...)
		require.NoError(t, err, q)
		var plan []string
		for rows.Next() {
			var a, p, u int
			var detail string
			require.NoError(t, rows.Scan(&a, &p, &u, &detail))
			plan = append(plan, detail)
		}
		require.NoError(t, rows.Err())
		rows.Close()
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
