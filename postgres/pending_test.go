package postgres_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/internal/testkit/pgtest"
	"github.com/wfstore/wfstore/postgres"
)

// admissibleAll pages through q (its Limit per page) from q.After.
func admissibleAll(t *testing.T, b backend.Backend, q backend.AdmissibleQuery) []backend.Activation {
	t.Helper()
	var out []backend.Activation
	for {
		var page []backend.Activation
		err := b.View(ctxT(t), func(r backend.ReadTx) error {
			var err error
			page, err = r.AdmissibleActivations(ctxT(t), q)
			return err
		})
		require.NoError(t, err)
		out = append(out, page...)
		if len(page) < q.Limit {
			return out
		}
		q.After, q.AfterRun = page[len(page)-1].Key, false
	}
}

// activationsInEveryStatus returns two runs' activations in every status
// the workflow writes (pending both admissible and not), in statuses it
// never writes, and admissible in statuses it never flags so (a caller of
// the backend contract may store any), with keys interleaving the runs'
// statuses.
func activationsInEveryStatus() []backend.Activation {
	type shape struct {
		status     backend.ActivationStatus
		admissible bool
	}
	shapes := []shape{
		{backend.ActivationPending, true}, {backend.ActivationPending, false},
		{backend.ActivationRunning, false}, {backend.ActivationWaiting, false},
		{backend.ActivationCompleted, false}, {backend.ActivationFailed, false},
		{backend.ActivationCancelled, false},
		{backend.ActivationRunning, true}, {backend.ActivationCompleted, true},
		{"", false}, {"", true}, {"zzz", true}, {"running ", false},
	}
	var acts []backend.Activation
	for i := range 3 * len(shapes) {
		s := shapes[i%len(shapes)]
		k := backend.ActivationKey{RunID: []string{"r1", "r2"}[i%2], NodeID: fmt.Sprintf("node-%d", i%3),
			ActivationID: fmt.Sprintf("act-%02d", i)}
		acts = append(acts, backend.Activation{Key: k, Status: s.status, Admissible: s.admissible,
			Effect: backend.Mutating, Reconciliation: backend.RepairRequired, CreatedMS: int64(i)})
	}
	return acts
}

// requireAdmissibleScans checks every shape of discovery against acts
// (every activation stored): globally and per run, from the start, after
// a key and after a run, paged by several limits, each returns exactly
// the admissible activations in key order.
func requireAdmissibleScans(t *testing.T, b backend.Backend, acts []backend.Activation) {
	t.Helper()
	var admissible []backend.Activation
	for _, a := range acts {
		if a.Admissible {
			admissible = append(admissible, a)
		}
	}
	slices.SortFunc(admissible, func(x, y backend.Activation) int {
		return strings.Compare(x.Key.RunID+"\x00"+x.Key.NodeID+"\x00"+x.Key.ActivationID,
			y.Key.RunID+"\x00"+y.Key.NodeID+"\x00"+y.Key.ActivationID)
	})
	require.NotEmpty(t, admissible)
	after := admissible[len(admissible)/3].Key
	keyLess := func(a, b backend.ActivationKey) bool {
		return a.RunID < b.RunID || a.RunID == b.RunID && (a.NodeID < b.NodeID || a.NodeID == b.NodeID && a.ActivationID < b.ActivationID)
	}
	for _, run := range []string{"", "r1", "r2"} {
		for _, q := range []backend.AdmissibleQuery{
			{RunID: run},
			{RunID: run, After: after},
			{RunID: run, After: backend.ActivationKey{RunID: "r1"}, AfterRun: true},
		} {
			var want []backend.Activation
			for _, a := range admissible {
				switch {
				case run != "" && a.Key.RunID != run:
				case q.AfterRun && a.Key.RunID <= q.After.RunID:
				case !q.AfterRun && q.After != (backend.ActivationKey{}) && !keyLess(q.After, a.Key):
				default:
					want = append(want, a)
				}
			}
			for _, limit := range []int{1, 2, 100} {
				q.Limit = limit
				require.Equal(t, want, admissibleAll(t, b, q), "%+v", q)
			}
		}
	}
}

// Discovery returns exactly the admissible activations, in key order, in
// every shape, whatever the statuses of the others: the pending index
// also holds the activations in flight (running), which every scan passes
// over.
func TestAdmissibleScansReturnOnlyAdmissibleActivations(t *testing.T) {
	t.Parallel()
	b, _, _ := openFresh(t)
	acts := activationsInEveryStatus()
	apply(t, b, backend.Changes{Insert: backend.Inserts{Runs: runs("r1", "r2"), Activations: acts}})
	requireAdmissibleScans(t, b, acts)
}

// An activation's admission (pending and admissible -> running, not
// admissible, with its last attempt and update time) changes no indexed
// column of activations, and its run's counters none of runs: each such
// update is heap-only, on the row's own page, so it writes no entry in any
// index. A SERIALIZABLE Update reading an activation or a run by key holds
// a predicate lock on its primary key's leaf page; an entry another
// transaction wrote there (as every admission did while the pending index
// was partial on the admissible flag) fails one of the two as a
// serialization failure though they touched different runs.
func TestActivationAdmissionsAreHeapOnly(t *testing.T) {
	t.Parallel()
	b, _, schema := openFresh(t)
	const nRuns, perRun = 100, 4 // several pages of every table and index
	var rs []backend.Run
	var acts []backend.Activation
	for r := range nRuns {
		run := runs(fmt.Sprintf("run-%03d", r))[0]
		run.Status, run.CreatedMS, run.UpdatedMS = backend.RunRunning, 1, 1
		rs = append(rs, run)
		for i := range perRun {
			k := backend.ActivationKey{RunID: run.ID, NodeID: fmt.Sprintf("node-%d", i), ActivationID: fmt.Sprintf("act-%03d", i)}
			acts = append(acts, backend.Activation{Key: k, Status: backend.ActivationPending, Admissible: true,
				Input: []byte(`{"input":"` + strings.Repeat("x", 100) + `"}`), Effect: backend.Mutating,
				Reconciliation: backend.RepairRequired, CreatedMS: 1, UpdatedMS: 1})
		}
	}
	apply(t, b, backend.Changes{Insert: backend.Inserts{Runs: rs, Activations: acts}})
	requireAdmissibleScans(t, b, acts)
	actSizes, actBlocks := relSizes(t, schema, "activations"), blocks(t, schema, "activations", "activation_id || run_id")
	runSizes, runBlocks := relSizes(t, schema, "runs"), blocks(t, schema, "runs", "id")
	require.Greater(t, len(slices.Compact(slices.Sorted(maps.Values(runBlocks)))), 1, "runs fill more than a page")

	// Admit every activation, each run's counters following. One Update
	// admits them all, so that no row version it replaces is dead to
	// every transaction before it commits: an entry it wrote in an index
	// cannot have been deleted again to make room.
	next, nextRuns := slices.Clone(acts), slices.Clone(rs)
	for i := range next {
		next[i].Status, next[i].Admissible, next[i].LastAttempt, next[i].UpdatedMS = backend.ActivationRunning, false, 1, 2
		run := &nextRuns[i/perRun]
		run.AttemptCount++
		run.ActiveCount++
		run.TreeAttemptCount++
		run.LastEventSeq += 2
		run.UpdatedMS = 2
	}
	apply(t, b, backend.Changes{Expect: backend.Expected{Runs: rs},
		Replace: backend.Replaces{Runs: nextRuns, Activations: next}})
	acts = next
	require.Equal(t, actBlocks, blocks(t, schema, "activations", "activation_id || run_id"), "every activation stays on its page")
	require.Equal(t, actSizes, relSizes(t, schema, "activations"), "no index of activations grows: the admissions are heap-only")
	require.Equal(t, runBlocks, blocks(t, schema, "runs", "id"), "every run stays on its page")
	require.Equal(t, runSizes, relSizes(t, schema, "runs"), "no index of runs grows: the counter updates are heap-only")

	// Discovery passes over them all now; a requeue brings one back.
	require.Empty(t, admissibleAll(t, b, backend.AdmissibleQuery{Limit: 7}))
	back := acts[5]
	back.Status, back.Admissible, back.UpdatedMS = backend.ActivationPending, true, 3
	apply(t, b, backend.Changes{Replace: backend.Replaces{Activations: []backend.Activation{back}}})
	acts[5] = back
	requireAdmissibleScans(t, b, acts)
}

// Discovery finds its activations through the pending index even in the
// generic plan made on empty tables never analyzed (which the server
// caches and runs until the first autoanalyze), and every statement
// reading or writing one activation by key through the primary key alone:
// a read of one activation through the pending index would hold a
// predicate lock on every page of its walk under SERIALIZABLE.
func TestActivationStatementsOnEmptyTables(t *testing.T) {
	t.Parallel()
	b, _, _ := openFresh(t)
	ctx := ctxT(t)
	conn, err := pgtest.Admin(t).Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	for name, q := range map[string]backend.AdmissibleQuery{
		"start":        {Limit: 100},
		"after":        {After: backend.ActivationKey{RunID: "run-50", NodeID: "node-3", ActivationID: "act-33"}, Limit: 100},
		"after-run":    {After: backend.ActivationKey{RunID: "run-50"}, AfterRun: true, Limit: 100},
		"run":          {RunID: "run-77", Limit: 100},
		"run-after":    {RunID: "run-77", After: backend.ActivationKey{RunID: "run-77", NodeID: "node-0", ActivationID: "act-30"}, Limit: 100},
		"run-afterrun": {RunID: "run-77", After: backend.ActivationKey{RunID: "run-7"}, AfterRun: true, Limit: 100},
	} {
		sql, args := b.AdmissibleSQL(q)
		for phase, plan := range map[string]string{
			"generic": explainGeneric(t, ctx, conn.Conn(), b.Settings(), sql, args),
			"custom":  explain(t, ctx, conn.Conn(), b.Settings(), sql, args),
		} {
			require.Contains(t, plan, "activations_admissible_group", "%s, %s\n%s", name, phase, plan)
			require.NotContains(t, plan, "Seq Scan", "%s, %s\n%s", name, phase, plan)
		}
	}

	k := backend.ActivationKey{RunID: "run-3", NodeID: "node-1", ActivationID: "act-1"}
	act := backend.Activation{Key: k, Status: backend.ActivationRunning}
	stmts := map[string]postgres.Statement{
		"load":   {SQL: b.NamedSQL()["loadActivation"], Args: []any{"run-3", "node-1", "act-1"}},
		"expect": b.ChangesSQL(backend.Changes{Expect: backend.Expected{Activations: []backend.Activation{act}}})[0],
	}
	for name, c := range map[string]backend.Changes{
		"replace": {Replace: backend.Replaces{Activations: []backend.Activation{act}}},
	} {
		st := b.ChangesSQL(c)
		require.Len(t, st, 1, name)
		stmts[name] = st[0]
	}
	for name, st := range stmts {
		plan := explainGeneric(t, ctx, conn.Conn(), b.Settings(), st.SQL, st.Args)
		require.Contains(t, plan, "activations_pkey", "%s\n%s", name, plan)
		require.NotContains(t, plan, "activations_admissible", "%s\n%s", name, plan)
	}
}

// A version 8 schema (the pending index partial on the admissible flag)
// migrates on Open to the pending index partial on admissible_group: the
// server computes every stored activation's group, discovery returns
// exactly the admissible activations it did, and after an admission of
// the pending ones exactly those left.
func TestVersionEightSchemaMigratesToAdmissibleGroups(t *testing.T) {
	t.Parallel()
	b, dsn, schema := openFresh(t)
	acts := activationsInEveryStatus()
	apply(t, b, backend.Changes{Insert: backend.Inserts{Runs: runs("r1", "r2"), Activations: acts}})
	require.NoError(t, b.Close())
	makeVersion(t, schema, 8)
	require.Equal(t, []string{"activations_admissible", "activations_pkey"}, indexesOf(t, schema, "activations"))

	b2 := openOn(t, dsn, schema)
	require.Contains(t, metaRow(t, schema), fmt.Sprintf(":%d:wfstore", postgres.SchemaVersion))
	require.Equal(t, []string{"activations_admissible_group", "activations_pkey"}, indexesOf(t, schema, "activations"))
	rows, err := pgtest.Admin(t).Query(ctxT(t), "SELECT status, admissible, admissible_group FROM "+pgx.Identifier{schema, "activations"}.Sanitize())
	require.NoError(t, err)
	groups, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct {
		Status            string
		Admissible, Group bool
	}])
	require.NoError(t, err)
	require.Len(t, groups, len(acts))
	for _, g := range groups {
		require.Equal(t, g.Admissible || g.Status == string(backend.ActivationRunning), g.Group, "status %q admissible %v", g.Status, g.Admissible)
	}
	requireAdmissibleScans(t, b2, acts)
	f := load(t, b2, backend.Lookup{Activations: []backend.ActivationKey{acts[0].Key, acts[1].Key}})
	require.Equal(t, acts[0], f.Activations[acts[0].Key])
	require.Equal(t, acts[1], f.Activations[acts[1].Key])

	// Admitting the pending activations migrated so takes them out of
	// discovery.
	var next []backend.Activation
	for i, a := range acts {
		if a.Admissible && a.Status == backend.ActivationPending {
			a.Status, a.Admissible, a.LastAttempt = backend.ActivationRunning, false, 1
			next, acts[i] = append(next, a), a
		}
	}
	require.NotEmpty(t, next)
	apply(t, b2, backend.Changes{Replace: backend.Replaces{Activations: next}})
	requireAdmissibleScans(t, b2, acts)
}
