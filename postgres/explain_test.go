package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/internal/pgtest"
)

// With 10k+ rows per table the adapter's own statements (the exact strings
// it sends) are planned onto their indexes: no sequential scan, the
// intended index. (Whether the planner then walks the index in order or
// sorts the few rows a bitmap scan found is its cost-based choice; either
// reads only index-selected rows.)
func TestExplainUsesIndexes(t *testing.T) {
	t.Parallel()
	b, _, schema := openFresh(t)
	admin := pgtest.Admin(t)
	ctx := ctxT(t)
	s := pgx.Identifier{schema}.Sanitize()
	// 200 runs × 60 activations, 1 in 30 admissible; attempts, schedules,
	// leases, links and events likewise.
	for _, sql := range []string{
		`INSERT INTO %s.activations (run_id, node_id, activation_id, generation, status, admissible, effect, reconciliation, has_successors, last_attempt, created_ms, updated_ms)
		 SELECT 'run-' || r, 'node-' || (a %% 6), 'act-' || a, 1, 'pending', a %% 30 = 0, 'mutating', 'repair_required', false, 0, 1, 1
		 FROM generate_series(1, 200) r, generate_series(1, 60) a`,
		`INSERT INTO %s.attempts (run_id, node_id, activation_id, attempt, identity, status, side_effect, intent_checksum, handoff, prepared_ms, admitted_ms, terminal_ms)
		 SELECT 'run-' || r, 'node-' || (a %% 6), 'act-' || a, 1, 'id-' || r || '-' || a, CASE WHEN a %% 20 = 0 THEN 'prepared' ELSE 'succeeded' END, 'mutating', 'x', 'recorded', r * 1000 + a, 0, 0
		 FROM generate_series(1, 200) r, generate_series(1, 60) a`,
		`INSERT INTO %s.retry_schedules (run_id, node_id, activation_id, failed_attempt, next_attempt, failure_kind, backoff_ms, due_ms, scheduled_ms)
		 SELECT 'run-' || r, 'node-' || (a %% 6), 'act-' || a, 1, 2, 'k', 10, a * 100, 1
		 FROM generate_series(1, 200) r, generate_series(1, 60) a`,
		`INSERT INTO %s.leases (run_id, node_id, activation_id, attempt, resource, mode, acquired_ms, released_ms)
		 SELECT 'run-' || r, 'node-' || (a %% 6), 'act-' || a, 1, 'res-' || (a %% 7), 'write', 1, CASE WHEN a %% 10 = 0 THEN 0 ELSE 5 END
		 FROM generate_series(1, 200) r, generate_series(1, 60) a`,
		`INSERT INTO %s.run_links (child_run_id, root_run_id, parent_run_id, parent_node_id, parent_activation_id, parent_attempt, depth, created_ms)
		 SELECT 'child-' || r || '-' || a, 'root-' || r, 'p', 'n', 'a', 1, 2, a
		 FROM generate_series(1, 200) r, generate_series(1, 60) a`,
		`INSERT INTO %s.events (run_id, seq, type, created_ms)
		 SELECT 'run-' || r, a, 't', 1 FROM generate_series(1, 200) r, generate_series(1, 60) a`,
	} {
		_, err := admin.Exec(ctx, fmt.Sprintf(sql, s))
		require.NoError(t, err)
	}
	// Statistics as autovacuum would have them on a table this size.
	_, err := admin.Exec(ctx, fmt.Sprintf("ANALYZE %[1]s.activations, %[1]s.attempts, %[1]s.retry_schedules, %[1]s.leases, %[1]s.run_links, %[1]s.events", s))
	require.NoError(t, err)

	type stmt struct {
		name  string
		sql   string
		args  []any
		index string // the index the plan must use ("" = any)
	}
	var stmts []stmt
	add := func(name string, sql string, args []any, index string, _ bool) {
		stmts = append(stmts, stmt{name, sql, args, index})
	}
	for name, q := range map[string]backend.PendingQuery{
		"pending-start":        {Limit: 100},
		"pending-after":        {After: backend.ActivationKey{RunID: "run-50", NodeID: "node-3", ActivationID: "act-33"}, Limit: 100},
		"pending-after-run":    {After: backend.ActivationKey{RunID: "run-50"}, AfterRun: true, Limit: 100},
		"pending-run":          {RunID: "run-77", Limit: 100},
		"pending-run-after":    {RunID: "run-77", After: backend.ActivationKey{RunID: "run-77", NodeID: "node-0", ActivationID: "act-30"}, Limit: 100},
		"pending-run-afterrun": {RunID: "run-77", After: backend.ActivationKey{RunID: "run-7"}, AfterRun: true, Limit: 100},
	} {
		sql, args := b.PendingSQL(q)
		add(name, sql, args, "activations_admissible", q.RunID == "")
	}
	sql, args := b.DueSchedulesSQL(backend.ScheduleQuery{RunID: "run-9", DueBy: 3000, Limit: 100})
	add("due-schedules", sql, args, "retry_schedules_due", false)
	for _, run := range []string{"", "run-5"} {
		for _, st := range []backend.AttemptStatus{"", backend.AttemptPrepared} {
			for _, after := range []*backend.AttemptCursor{nil, {PreparedMS: 5030, Identity: "id-5-30"}} {
				sql, args := b.AttemptsSQL(backend.AttemptQuery{RunID: run, Status: st, After: after, Limit: 50})
				add(fmt.Sprintf("attempts-run%q-status%q-after%v", run, st, after != nil), sql, args, "attempts_", run == "")
			}
		}
	}
	named := b.NamedSQL()
	add("active-leases", named["activeLeasesStart"], []any{"run-3", int64(100)}, "leases_active", false)
	add("child-runs", named["childRunsStart"], []any{"root-3", int64(100)}, "run_links_root_order", false)
	add("events", named["events"], []any{"run-3", int64(10), int64(100)}, "events_pkey", false)
	add("count-attempts", named["countAttempts"], []any{"run-3", int64(1000)}, "", false)
	add("load-resources", named["loadResources"], []any{[]string{"run-3", "run-4"}, []string{"res-1", "res-2"}}, "leases_active_resource", false)
	add("load-activations", named["loadActivations"], []any{[]string{"run-3"}, []string{"node-1"}, []string{"act-1"}}, "activations_pkey", false)

	conn, err := admin.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	for _, st := range stmts {
		plan := explain(t, ctx, conn.Conn(), st.sql, st.args)
		if testing.Verbose() {
			t.Logf("%s:\n%s", st.name, plan)
		}
		require.NotContains(t, plan, "Seq Scan", "%s\n%s\n%s", st.name, st.sql, plan)
		if st.index != "" {
			require.Contains(t, plan, st.index, "%s\n%s", st.name, plan)
		}
	}
}

// explain plans sql as the adapter's transactions do (force_custom_plan).
func explain(t *testing.T, ctx context.Context, conn *pgx.Conn, sql string, args []any) string {
	t.Helper()
	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	_, err = tx.Exec(ctx, "SET LOCAL plan_cache_mode = force_custom_plan")
	require.NoError(t, err)
	rows, err := tx.Query(ctx, "EXPLAIN "+sql, args...)
	require.NoError(t, err)
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return strings.Join(lines, "\n")
}
