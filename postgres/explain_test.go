package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/internal/testkit/pgtest"
	"github.com/wfstore/wfstore/postgres"
)

// The adapter's own statements (the exact strings it sends, under the
// settings it sends after BEGIN) are planned onto their indexes: no
// sequential scan, the intended index. Both plans the server may run are
// checked, since plan_cache_mode = auto lets it switch a statement to its
// cached generic plan: the generic plan made while the tables are still
// empty (the plan that must not stick as they grow), then, with
// 10k+ rows per table, the custom plan for actual arguments and the
// generic plan. (Whether the planner walks an index in order or sorts the
// few rows a bitmap scan found is its cost-based choice; either reads only
// index-selected rows.)
func TestExplainUsesIndexes(t *testing.T) {
	t.Parallel()
	b, _, schema := openFresh(t, postgres.WithManyRowsFrom(2))
	admin := pgtest.Admin(t)
	ctx := ctxT(t)
	s := pgx.Identifier{schema}.Sanitize()
	conn, err := admin.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	stmts := explained(b)
	check := func(phase string, st explainedStmt, plan string) {
		t.Helper()
		if testing.Verbose() {
			t.Logf("%s, %s:\n%s", phase, st.name, plan)
		}
		require.NotContains(t, plan, "Seq Scan", "%s, %s\n%s\n%s", phase, st.name, st.sql, plan)
		if st.index != "" && phase != phaseEmpty {
			require.Contains(t, plan, st.index, "%s, %s\n%s", phase, st.name, plan)
		}
		if st.merged {
			// An unfiltered attempt scan merges the status index's walks,
			// each stopping at LIMIT: it never sorts the attempts of the
			// statuses it walks in order (only a gap between them, which
			// holds none the workflow wrote, is sorted).
			lines := strings.Split(plan, "\n")
			require.True(t, strings.HasPrefix(lines[0], "Limit") && strings.Contains(lines[1], "->  Merge Append"),
				"%s, %s\n%s", phase, st.name, plan)
			require.NotContains(t, plan, "attempts_pkey", "%s, %s\n%s", phase, st.name, plan)
			for i, l := range lines {
				if strings.Contains(l, "Index Cond") && strings.Contains(l, "status_group = '") {
					require.NotContains(t, strings.Join(lines[max(0, i-3):i], "\n"), "Sort", "%s, %s\n%s", phase, st.name, plan)
				}
			}
		}
	}
	for _, st := range stmts {
		check(phaseEmpty, st, explainGeneric(t, ctx, conn.Conn(), b.Settings(), st.sql, st.args))
	}

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
		`INSERT INTO %s.runs (id, root_id, parent_id, depth, status, node_execution_cap, concurrency_cap, cycle_cap, retry_cap,
		   deadline_ms, cancel_requested_ms, created_ms, updated_ms, last_event_seq, attempt_count, active_count,
		   tree_attempt_count, descendant_count, exhaustion_recorded)
		 SELECT 'run-' || r, 'run-' || r, '', 1, CASE WHEN r %% 30 = 0 THEN 'running' ELSE 'succeeded' END, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, false
		 FROM generate_series(1, 12000) r`,
	} {
		_, err := admin.Exec(ctx, fmt.Sprintf(sql, s))
		require.NoError(t, err)
	}
	// Statistics as autovacuum would have them on a table this size.
	_, err = admin.Exec(ctx, fmt.Sprintf("ANALYZE %[1]s.activations, %[1]s.attempts, %[1]s.retry_schedules, %[1]s.leases, %[1]s.run_links, %[1]s.events, %[1]s.runs", s))
	require.NoError(t, err)
	// A status-filtered run listing reads the status index, not every run
	// it passes over (custom plan; the generic one may walk either index).
	runsStatus := explain(t, ctx, conn.Conn(), b.Settings(), b.NamedSQL()["runsScanStatus"], []any{"run-5", "running", int64(50)})
	require.Contains(t, runsStatus, "runs_by_status", runsStatus)

	for _, st := range stmts {
		check("custom plan", st, explain(t, ctx, conn.Conn(), b.Settings(), st.sql, st.args))
		check("generic plan", st, explainGeneric(t, ctx, conn.Conn(), b.Settings(), st.sql, st.args))
	}
}

// phaseEmpty is the generic plan made on empty tables that were never
// analyzed. It must not be a sequential scan, but which index it uses is
// not checked here: without statistics the planner cannot tell apart
// indexes that share leading columns, and the first autoanalyze
// invalidates the plan, so the server plans the statement again with
// statistics (the phases after it). The statements reading one attempt by
// key are the exception, checked by
// TestAttemptKeyStatementsUseThePrimaryKeyOnEmptyTables: no other index
// of attempts can serve them.
const phaseEmpty = "generic plan on empty tables"

// explainedStmt is one statement the adapter sends, with example arguments
// and the index its plan must use ("" = any).
type explainedStmt struct {
	name, sql string
	args      []any
	index     string
	merged    bool // an unfiltered attempt scan (see check)
}

// explained lists the statements TestExplainUsesIndexes plans.
func explained(b *postgres.Backend) []explainedStmt {
	var stmts []explainedStmt
	add := func(name string, sql string, args []any, index string, _ bool) {
		stmts = append(stmts, explainedStmt{name: name, sql: sql, args: args, index: index})
	}
	for name, q := range map[string]backend.AdmissibleQuery{
		"admissible-start":        {Limit: 100},
		"admissible-after":        {After: backend.ActivationKey{RunID: "run-50", NodeID: "node-3", ActivationID: "act-33"}, Limit: 100},
		"admissible-after-run":    {After: backend.ActivationKey{RunID: "run-50"}, AfterRun: true, Limit: 100},
		"admissible-run":          {RunID: "run-77", Limit: 100},
		"admissible-run-after":    {RunID: "run-77", After: backend.ActivationKey{RunID: "run-77", NodeID: "node-0", ActivationID: "act-30"}, Limit: 100},
		"admissible-run-afterrun": {RunID: "run-77", After: backend.ActivationKey{RunID: "run-7"}, AfterRun: true, Limit: 100},
	} {
		sql, args := b.AdmissibleSQL(q)
		add(name, sql, args, "activations_admissible", q.RunID == "")
	}
	sql, args := b.DueSchedulesSQL(backend.ScheduleQuery{RunID: "run-9", DueBy: 3000, Limit: 100})
	add("due-schedules", sql, args, "retry_schedules_due", false)
	for _, run := range []string{"", "run-5"} {
		for _, st := range []backend.AttemptStatus{"", backend.AttemptPrepared} {
			for _, after := range []backend.AttemptCursor{{}, {PreparedMS: 5030, Identity: "id-5-30"}} {
				for _, desc := range []bool{false, true} {
					sql, args := b.AttemptsSQL(backend.AttemptQuery{RunID: run, Status: st, After: after, Descending: desc, Limit: 50})
					// Every shape walks the status index of its scope:
					// there is no other attempt index in time order.
					index := "attempts_group_order"
					if run != "" {
						index = "attempts_run_group_order"
					}
					stmts = append(stmts, explainedStmt{name: fmt.Sprintf("attempts-run%q-status%q-after%v-desc%v", run, st, after != backend.AttemptCursor{}, desc),
						sql: sql, args: args, index: index, merged: st == ""})
				}
			}
		}
	}
	named := b.NamedSQL()
	add("active-leases", named["activeLeasesStart"], []any{"run-3", int64(100)}, "leases_active", false)
	add("child-runs", named["childRunsStart"], []any{"root-3", int64(100)}, "run_links_root_order", false)
	add("events", named["events"], []any{"run-3", int64(10), int64(100)}, "events_pkey", false)
	add("count-attempts", named["countAttempts"], []any{"run-3", int64(1000)}, "", false)
	add("runs-status", named["runsScanStatus"], []any{"run-5", "running", int64(50)}, "", false)
	add("load-resources", named["loadResources"], []any{[]string{"run-3", "run-4"}, []string{"res-1", "res-2"}}, "leases_active_resource", false)
	add("load-activations", named["loadActivations"], []any{[]string{"run-3"}, []string{"node-1"}, []string{"act-1"}}, "activations_pkey", false)

	for _, k := range []struct {
		name, index string
		args        []any
	}{
		{"loadRun", "runs_pkey", []any{"run-3"}},
		{"loadLink", "run_links_pkey", []any{"child-3-1"}},
		{"loadActivation", "activations_pkey", []any{"run-3", "node-1", "act-1"}},
		{"loadGroup", "fan_out_groups_pkey", []any{"run-3", "node-1", "act-1"}},
		{"loadSchedule", "retry_schedules_pkey", []any{"run-3", "node-1", "act-1"}},
		{"loadAttempt", "attempts_pkey", []any{"run-3", "node-1", "act-1", int64(1)}},
		{"loadIdentity", "attempts_identity", []any{"id-3-1"}},
		{"loadLease", "leases_pkey", []any{"run-3", "node-1", "act-1", int64(1), "res-1", "write"}},
		{"loadResource", "leases_active_resource", []any{"run-3", "res-1"}},
	} {
		add(k.name, named[k.name], k.args, k.index, false)
	}
	// Expect statements, with a row's worth of (made-up) values: one per
	// column of the table.
	cols := postgres.TableColumns()
	vals := func(key []any, table string) []any {
		for len(key) < len(cols[table]) {
			key = append(key, nil)
		}
		return key
	}
	for _, k := range []struct {
		name, index string
		args        []any
	}{
		{"expectRun", "runs_pkey", vals([]any{"run-3"}, "runs")},
		{"expectActivation", "activations_pkey", vals([]any{"run-3", "node-1", "act-1"}, "activations")},
		{"expectAttempt", "attempts_pkey", vals([]any{"run-3", "node-1", "act-1", int64(1)}, "attempts")},
	} {
		add(k.name, named[k.name], k.args, k.index, false)
	}
	// Many-row writes, two rows each: every one finds its rows through
	// the primary key (inserts through ON CONFLICT's arbiter indexes).
	ak := func(i int) backend.ActivationKey {
		return backend.ActivationKey{RunID: fmt.Sprint("run-", i), NodeID: "node-1", ActivationID: fmt.Sprint("act-", i)}
	}
	tk := func(i int) backend.AttemptKey { return backend.AttemptKey{ActivationKey: ak(i), Attempt: 1} }
	lk := func(i int) backend.LeaseKey {
		return backend.LeaseKey{AttemptKey: tk(i), Resource: "res-1", Mode: backend.LeaseWrite}
	}
	acts := []backend.Activation{{Key: ak(1), Claims: []backend.ResourceClaim{{Resource: "res-1", Mode: backend.LeaseRead}}}, {Key: ak(2)}}
	atts := []backend.Attempt{{Key: tk(1), Identity: "id-1-1"}, {Key: tk(2), Identity: "id-2-2"}}
	for _, w := range []struct {
		name, index string
		c           backend.Changes
	}{
		{"expect-runs", "runs_pkey", backend.Changes{Expect: backend.Expected{Runs: []backend.Run{{ID: "run-1"}, {ID: "run-2"}}}}},
		{"expect-activations", "activations_pkey", backend.Changes{Expect: backend.Expected{Activations: acts}}},
		{"expect-attempts", "attempts_pkey", backend.Changes{Expect: backend.Expected{Attempts: atts}}},
		{"delete-events", "events_pkey", backend.Changes{Delete: backend.Deletes{Events: []backend.EventKey{{RunID: "run-1", Seq: 1}, {RunID: "run-2", Seq: 2}}}}},
		{"delete-schedules", "retry_schedules_pkey", backend.Changes{Delete: backend.Deletes{Schedules: []backend.ActivationKey{ak(1), ak(2)}}}},
		{"delete-leases", "leases_pkey", backend.Changes{Delete: backend.Deletes{Leases: []backend.LeaseKey{lk(1), lk(2)}}}},
		{"delete-attempts", "attempts_pkey", backend.Changes{Delete: backend.Deletes{Attempts: []backend.AttemptKey{tk(1), tk(2)}}}},
		{"insert-activations", "", backend.Changes{Insert: backend.Inserts{Activations: acts}}},
		{"insert-attempts", "", backend.Changes{Insert: backend.Inserts{Attempts: atts}}},
		{"replace-runs", "runs_pkey", backend.Changes{Replace: backend.Replaces{Runs: []backend.Run{{ID: "run-1"}, {ID: "run-2"}}}}},
		{"replace-activations", "activations_pkey", backend.Changes{Replace: backend.Replaces{Activations: acts}}},
		{"replace-groups", "fan_out_groups_pkey", backend.Changes{Replace: backend.Replaces{Groups: []backend.FanOutGroup{{Controller: ak(1)}, {Controller: ak(2)}}}}},
		{"replace-leases", "leases_pkey", backend.Changes{Replace: backend.Replaces{Leases: []backend.Lease{{Key: lk(1)}, {Key: lk(2)}}}}},
		{"replace-schedules", "retry_schedules_pkey", backend.Changes{Replace: backend.Replaces{Schedules: []backend.RetrySchedule{{Key: ak(1)}, {Key: ak(2)}}}}},
	} {
		st := b.ChangesSQL(w.c)
		if len(st) != 1 {
			panic(fmt.Sprintf("%s: %d statements, want one", w.name, len(st)))
		}
		add(w.name, st[0].SQL, st[0].Args, w.index, false)
	}
	return stmts
}

// explain plans sql for its actual arguments (a custom plan) under the
// adapter's transaction settings.
func explain(t *testing.T, ctx context.Context, conn *pgx.Conn, settings, sql string, args []any) string {
	t.Helper()
	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	_, err = tx.Exec(ctx, settings)
	require.NoError(t, err)
	rows, err := tx.Query(ctx, "EXPLAIN "+sql, args...)
	require.NoError(t, err)
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return strings.Join(lines, "\n")
}

// explainGeneric returns the generic plan of sql (the plan the server caches
// for a prepared statement and may reuse for any arguments) under the
// adapter's transaction settings.
func explainGeneric(t *testing.T, ctx context.Context, conn *pgx.Conn, settings, sql string, args []any) string {
	t.Helper()
	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	for _, s := range []string{settings, "SET LOCAL plan_cache_mode = force_generic_plan", "PREPARE wf_generic AS " + sql} {
		_, err = tx.Exec(ctx, s)
		require.NoError(t, err, s)
	}
	// A prepared statement belongs to the session, not the transaction.
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), "DEALLOCATE wf_generic") }()
	lits := make([]string, len(args))
	for i, a := range args {
		lits[i] = literal(t, a)
	}
	rows, err := tx.Query(ctx, "EXPLAIN EXECUTE wf_generic("+strings.Join(lits, ", ")+")")
	require.NoError(t, err)
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return strings.Join(lines, "\n")
}

// literal writes a as an SQL literal (the generic plan does not depend on
// the values; EXECUTE needs some).
func literal(t *testing.T, a any) string {
	t.Helper()
	quote := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	switch v := a.(type) {
	case string:
		return quote(v)
	case int64:
		return fmt.Sprint(v)
	case nil:
		return "NULL"
	case []string:
		q := make([]string, len(v))
		for i, s := range v {
			q[i] = quote(s)
		}
		return "ARRAY[" + strings.Join(q, ", ") + "]::text[]"
	case []int32, []int64, []*int64, []*string, []bool, [][]byte:
		return "NULL" // the statement casts it to its array type
	case []byte:
		return "NULL"
	}
	t.Fatalf("literal: unsupported %T", a)
	return ""
}

// Every statement reading or writing one attempt by key finds it through
// the primary key alone, even in the generic plan made on empty tables
// never analyzed, which the server caches and runs until the first
// autoanalyze. An index scan holds a predicate lock on every page it reads
// under SERIALIZABLE: a read of one attempt through the run's stretch of
// another index would lock the pages of all the run's attempts (as it did
// while the run-scoped status index led with run_id).
func TestAttemptKeyStatementsUseThePrimaryKeyOnEmptyTables(t *testing.T) {
	t.Parallel()
	b, _, _ := openFresh(t)
	ctx := ctxT(t)
	conn, err := pgtest.Admin(t).Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	k := backend.AttemptKey{ActivationKey: backend.ActivationKey{RunID: "run-3", NodeID: "node-1", ActivationID: "act-1"}, Attempt: 1}
	att := backend.Attempt{Key: k, Identity: "id-3-1", Status: backend.AttemptAdmitted}
	stmts := map[string]postgres.Statement{
		"load":   {SQL: b.NamedSQL()["loadAttempt"], Args: []any{"run-3", "node-1", "act-1", int64(1)}},
		"expect": b.ChangesSQL(backend.Changes{Expect: backend.Expected{Attempts: []backend.Attempt{att}}})[0],
	}
	for name, c := range map[string]backend.Changes{
		"replace": {Replace: backend.Replaces{Attempts: []backend.Attempt{att}}},
		"delete":  {Delete: backend.Deletes{Attempts: []backend.AttemptKey{k}}},
	} {
		st := b.ChangesSQL(c)
		require.Len(t, st, 1, name)
		stmts[name] = st[0]
	}
	for name, st := range stmts {
		plan := explainGeneric(t, ctx, conn.Conn(), b.Settings(), st.SQL, st.Args)
		require.Contains(t, plan, "attempts_pkey", "%s\n%s", name, plan)
		for _, other := range []string{"attempts_group_order", "attempts_run_group_order", "attempts_identity"} {
			require.NotContains(t, plan, other, "%s\n%s", name, plan)
		}
	}
}
