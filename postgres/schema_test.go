package postgres_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/internal/testkit/pgtest"
	"github.com/wfstore/wfstore/postgres"
	"github.com/wfstore/wfstore/wftype"
)

// catalog lists a schema's objects with their row versions, so a test can
// tell that opening wrote nothing.
func catalog(t testing.TB, schema string) []string {
	t.Helper()
	rows, err := pgtest.Admin(t).Query(ctxT(t), `
		SELECT c.relname || ':' || c.relkind::text || ':' || c.xmin::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1
		UNION ALL SELECT 'schema:' || xmin::text FROM pg_namespace WHERE nspname = $1
		UNION ALL SELECT 'proc:' || p.proname || ':' || p.xmin::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1
		UNION ALL SELECT 'type:' || t.typname || ':' || t.xmin::text FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace WHERE n.nspname = $1`, schema)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	sort.Strings(out)
	return out
}

func metaRow(t testing.TB, schema string) string {
	t.Helper()
	var s string
	require.NoError(t, pgtest.Admin(t).QueryRow(ctxT(t),
		"SELECT xmin::text || ':' || version || ':' || store FROM "+pgx.Identifier{schema, "wfstore_meta"}.Sanitize()).Scan(&s))
	return s
}

func exec1(t testing.TB, sql string) {
	t.Helper()
	_, err := pgtest.Admin(t).Exec(ctxT(t), sql)
	require.NoError(t, err)
}

func tablesOf(t testing.TB, schema string) []string {
	t.Helper()
	rows, err := pgtest.Admin(t).Query(ctxT(t), `SELECT tablename FROM pg_tables WHERE schemaname = $1 ORDER BY 1`, schema)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return out
}

// The adapter's column list and types (which its many-row writes cast
// their array parameters to) are those of the created schema, in order.
func TestTablesMatchTheSchema(t *testing.T) {
	t.Parallel()
	_, _, schema := openFresh(t)
	for table, want := range postgres.SchemaColumns() {
		rows, err := pgtest.Admin(t).Query(ctxT(t), `
			SELECT a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
			FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = $1 AND c.relname = $2 AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`, schema, table)
		require.NoError(t, err)
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		require.Equal(t, want, got, table)
	}
}

func wantTables() []string {
	out := append([]string(nil), postgres.Tables...)
	sort.Strings(out)
	return out
}

func TestOpenCreatesSchemaAndReopenWritesNothing(t *testing.T) {
	t.Parallel()
	dsn, schema := pgtest.SchemaName(t) // does not exist yet
	b := openOn(t, dsn, schema)
	apply(t, b, insertRuns("r"))
	require.Equal(t, wantTables(), tablesOf(t, schema))
	before, meta := catalog(t, schema), metaRow(t, schema)
	require.Contains(t, meta, fmt.Sprintf(":%d:wfstore", postgres.SchemaVersion))
	b2 := openOn(t, dsn, schema)
	require.Equal(t, before, catalog(t, schema))
	require.Equal(t, meta, metaRow(t, schema))
	require.Contains(t, load(t, b2, backend.Lookup{Runs: []string{"r"}}).Runs, "r")
}

func TestRefusesForeignSchemaWithoutWriting(t *testing.T) {
	t.Parallel()
	for name, setup := range map[string]string{
		"table":       "CREATE TABLE %s.users (id int)",
		"sequence":    "CREATE SEQUENCE %s.s",
		"function":    "CREATE FUNCTION %s.f() RETURNS int LANGUAGE sql AS 'SELECT 1'",
		"type":        "CREATE TYPE %s.e AS ENUM ('a')",
		"meta-other":  "CREATE TABLE %[1]s.wfstore_meta (id int PRIMARY KEY, store text, version bigint); INSERT INTO %[1]s.wfstore_meta VALUES (1, 'someone-else', 1)",
		"meta-no-row": "CREATE TABLE %[1]s.wfstore_meta (id int PRIMARY KEY, store text, version bigint)",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dsn, schema := pgtest.Schema(t)
			exec1(t, fmt.Sprintf(setup, pgx.Identifier{schema}.Sanitize()))
			before := catalog(t, schema)
			_, err := postgres.Open(ctxT(t), withMaxConns(dsn, 2), postgres.WithSchema(schema))
			require.ErrorIs(t, err, backend.ErrForeignStore)
			require.Equal(t, before, catalog(t, schema), "nothing written")
		})
	}
}

func TestRefusesNewerVersionWithoutWriting(t *testing.T) {
	t.Parallel()
	b, dsn, schema := openFresh(t)
	require.NoError(t, b.Close())
	newer := postgres.SchemaVersion + 1
	exec1(t, fmt.Sprintf("UPDATE %s SET version = %d", pgx.Identifier{schema, "wfstore_meta"}.Sanitize(), newer))
	before, meta := catalog(t, schema), metaRow(t, schema)
	_, err := postgres.Open(ctxT(t), withMaxConns(dsn, 2), postgres.WithSchema(schema))
	require.ErrorIs(t, err, backend.ErrSchemaVersion)
	var sv *backend.SchemaVersionError
	require.ErrorAs(t, err, &sv)
	require.Equal(t, backend.SchemaVersionError{Found: int64(newer), Supported: postgres.SchemaVersion}, *sv)
	require.Equal(t, before, catalog(t, schema))
	require.Equal(t, meta, metaRow(t, schema))
}

func TestSchemaNameValidation(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"", "Upper", "1abc", "a-b", "a b", `x"y`, "pg_foo", "public", "information_schema", "ünï", string(make([]byte, 64))} {
		_, err := postgres.Open(context.Background(), "postgres://invalid.invalid/x", postgres.WithSchema(bad))
		require.Error(t, err, "%q", bad)
		require.Contains(t, err.Error(), "schema name", "%q is refused before connecting", bad)
	}
}

// Several Backends opening one new schema at once, half of them without
// the advisory lock (as on engines that stub it): all succeed, one schema
// at SchemaVersion.
func TestConcurrentMigrationInProcess(t *testing.T) {
	t.Parallel()
	dsn, schema := pgtest.SchemaName(t)
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			opts := []postgres.Option{postgres.WithSchema(schema)}
			if i%2 == 1 {
				opts = append(opts, postgres.WithoutAdvisoryLock())
			}
			b, err := postgres.Open(ctxT(t), withMaxConns(dsn, 1), opts...)
			if err == nil {
				err = b.Close()
			}
			errs[i] = err
		}()
	}
	close(start)
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, wantTables(), tablesOf(t, schema))
	require.Contains(t, metaRow(t, schema), fmt.Sprintf(":%d:wfstore", postgres.SchemaVersion))
}

// Only compare-and-set (no advisory lock anywhere): still one schema.
func TestConcurrentMigrationWithoutAdvisoryLocks(t *testing.T) {
	t.Parallel()
	dsn, schema := pgtest.SchemaName(t)
	const n = 6
	var wg sync.WaitGroup
	errs := make([]error, n)
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			b, err := postgres.Open(ctxT(t), withMaxConns(dsn, 1), postgres.WithSchema(schema), postgres.WithoutAdvisoryLock())
			if err == nil {
				err = b.Close()
			}
			errs[i] = err
		}()
	}
	close(start)
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, wantTables(), tablesOf(t, schema))
	t.Logf("migrations that lost a race and looked again (whole binary so far): %d", postgres.MigrationRaces())
}

func init() {
	childRoles["migrate"] = func(ctx context.Context, dsn, schema, arg string) error {
		// Wait for the start time the parent chose, so all children race.
		at, err := strconv.ParseInt(arg, 10, 64)
		if err != nil {
			return err
		}
		time.Sleep(time.Until(time.Unix(0, at)))
		opts := []postgres.Option{postgres.WithSchema(schema)}
		if os.Getpid()%2 == 0 {
			opts = append(opts, postgres.WithoutAdvisoryLock())
		}
		b, err := postgres.Open(ctx, withMaxConns(dsn, 1), opts...)
		if err != nil {
			return err
		}
		return b.Close()
	}
}

// Several OS processes (this test binary re-executed) migrate one new
// schema at the same moment: one schema at SchemaVersion.
func TestConcurrentMigrationAcrossProcesses(t *testing.T) {
	t.Parallel()
	dsn, schema := pgtest.SchemaName(t)
	at := time.Now().Add(1500 * time.Millisecond).UnixNano()
	const n = 4
	cmds := make([]*exec.Cmd, n)
	for i := range cmds {
		cmds[i] = childCmd(t, "migrate", dsn, schema, strconv.FormatInt(at, 10))
		require.NoError(t, cmds[i].Start())
	}
	for i, c := range cmds {
		require.NoError(t, c.Wait(), "child %d: %s", i, c.Stderr)
	}
	require.Equal(t, wantTables(), tablesOf(t, schema))
	require.Contains(t, metaRow(t, schema), fmt.Sprintf(":%d:wfstore", postgres.SchemaVersion))
}

// childCmd re-executes the test binary as a child playing role.
func childCmd(t testing.TB, role, dsn, schema, arg string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(),
		envChild+"="+role, envChildDSN+"="+dsn, envChildSchema+"="+schema, envChildArg+"="+arg,
		pgtest.EnvDSN+"="+dsn)
	cmd.Stderr = &syncBuffer{}
	return cmd
}

type syncBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	return len(p), nil
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// makeVersion turns schema, created by this build, into what schema
// version v created: it undoes every migration after v (dropping the
// columns and indexes they added, and so those columns' values) and
// records v.
func makeVersion(t *testing.T, schema string, v int) {
	t.Helper()
	s := pgx.Identifier{schema}.Sanitize()
	undo := map[int][]string{
		8: {"DROP INDEX " + s + ".attempts_group_order", "DROP INDEX " + s + ".attempts_run_group_order",
			"ALTER TABLE " + s + ".attempts DROP COLUMN status_group",
			"CREATE INDEX attempts_status_order ON " + s + ".attempts (status, prepared_ms, identity)",
			"CREATE INDEX attempts_run_status_order ON " + s + ".attempts (run_id, status, prepared_ms, identity)"},
		7: {"ALTER TABLE " + s + ".attempts RESET (fillfactor)", "ALTER TABLE " + s + ".activations RESET (fillfactor)",
			"CREATE INDEX attempts_order ON " + s + ".attempts (prepared_ms, identity)",
			"CREATE INDEX attempts_run_order ON " + s + ".attempts (run_id, prepared_ms, identity)"},
		6: {"DROP TABLE " + s + ".claims"},
		5: {"ALTER TABLE " + s + ".activations DROP COLUMN wait_for_node_ids, DROP COLUMN wait_for_activation_ids, " +
			"DROP COLUMN open_waits, DROP COLUMN join_node_ids, DROP COLUMN join_activation_ids",
			"ALTER TABLE " + s + ".fan_out_groups DROP COLUMN fan_in"},
		4: {"ALTER TABLE " + s + ".attempts DROP COLUMN handoff_token", "ALTER TABLE " + s + ".activations DROP COLUMN attempt_timeout_ms"},
		3: {"DROP INDEX " + s + ".runs_by_status"},
		2: {"ALTER TABLE " + s + ".fan_out_groups DROP COLUMN fail_fast"},
	}
	for from := postgres.SchemaVersion; from > v; from-- {
		require.Contains(t, undo, from, "makeVersion knows no undo of migration %d", from)
		for _, stmt := range undo[from] {
			exec1(t, stmt)
		}
	}
	exec1(t, fmt.Sprintf("UPDATE %s.wfstore_meta SET version = %d", s, v))
}

func TestVersionTwoSchemaMigratesToTheRunStatusIndex(t *testing.T) {
	t.Parallel()
	b, dsn, schema := openFresh(t)
	apply(t, b, insertRuns("a", "b"))
	require.NoError(t, b.Close())
	makeVersion(t, schema, 2)
	b2 := openOn(t, dsn, schema)
	require.Contains(t, metaRow(t, schema), fmt.Sprintf(":%d:wfstore", postgres.SchemaVersion))
	var n int
	require.NoError(t, pgtest.Admin(t).QueryRow(ctxT(t),
		"SELECT count(*) FROM pg_indexes WHERE schemaname = $1 AND indexname = 'runs_by_status'", schema).Scan(&n))
	require.Equal(t, 1, n, "the migration created the index")
	require.Contains(t, load(t, b2, backend.Lookup{Runs: []string{"a"}}).Runs, "a")
}

// A version 3 schema (no attempt timeout, no handoff token) migrates on
// Open: its activations read back with no timeout set and its attempts
// with no token, every other field as written; an Expect of such a
// record passes, a Replace stores both fields, and the migrated columns
// are the adapter's.
func TestVersionThreeSchemaMigratesToTheAttemptTimeoutAndHandoffToken(t *testing.T) {
	t.Parallel()
	b, dsn, schema := openFresh(t)
	run, link, act, group, att, lease, sched, ev := fullRecords("v3")
	act.AttemptTimeoutMS, att.HandoffToken = 0, ""
	act.WaitFor, act.OpenWaits, act.Joins, group.FanIn = nil, 0, nil, false
	apply(t, b, insertAll(run, link, act, group, att, lease, sched, ev))
	require.NoError(t, b.Close())
	makeVersion(t, schema, 3)

	b2 := openOn(t, dsn, schema)
	require.Contains(t, metaRow(t, schema), fmt.Sprintf(":%d:wfstore", postgres.SchemaVersion))
	f := load(t, b2, lookupAll(run, act, att, lease))
	require.Equal(t, act, f.Activations[act.Key], "a version 3 activation reads with no attempt timeout")
	require.Equal(t, att, f.Attempts[att.Key], "a version 3 attempt reads with no handoff token")
	require.Equal(t, att, f.Identities[att.Identity])

	act2, att2 := act, att
	act2.AttemptTimeoutMS, att2.HandoffToken = 45_000, "ffeeddccbbaa99887766554433221100"
	apply(t, b2, backend.Changes{
		Expect:  backend.Expected{Activations: []backend.Activation{act}, Attempts: []backend.Attempt{att}},
		Replace: backend.Replaces{Activations: []backend.Activation{act2}, Attempts: []backend.Attempt{att2}},
	})
	f = load(t, b2, lookupAll(run, act, att, lease))
	require.Equal(t, act2, f.Activations[act.Key])
	require.Equal(t, att2, f.Attempts[att.Key])
	for table, want := range postgres.SchemaColumns() {
		rows, err := pgtest.Admin(t).Query(ctxT(t), `
			SELECT a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
			FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = $1 AND c.relname = $2 AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`, schema, table)
		require.NoError(t, err)
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		require.Equal(t, want, got, table)
	}
}

// A version 4 schema (no join columns, no fan_in) migrates on Open: its
// activations read back as no join, awaited by none, and its groups as
// owner settlement, every other field as written; an Expect of such an
// activation passes and a Replace stores the new fields.
func TestVersionFourSchemaMigratesToJoinsAndFanIn(t *testing.T) {
	t.Parallel()
	b, dsn, schema := openFresh(t)
	run, link, act, group, att, lease, sched, ev := fullRecords("v4")
	full, fullGroup := act, group
	act.WaitFor, act.OpenWaits, act.Joins, group.FanIn = nil, 0, nil, false
	apply(t, b, insertAll(run, link, act, group, att, lease, sched, ev))
	require.NoError(t, b.Close())
	makeVersion(t, schema, 4)

	b2 := openOn(t, dsn, schema)
	require.Contains(t, metaRow(t, schema), fmt.Sprintf(":%d:wfstore", postgres.SchemaVersion))
	lk := backend.Lookup{Activations: []backend.ActivationKey{act.Key}, Groups: []backend.ActivationKey{group.Controller}}
	f := load(t, b2, lk)
	require.Equal(t, act, f.Activations[act.Key], "a version 4 activation reads as no join")
	require.Equal(t, group, f.Groups[group.Controller], "a version 4 group reads as owner settlement")

	apply(t, b2, backend.Changes{
		Expect:  backend.Expected{Activations: []backend.Activation{act}},
		Replace: backend.Replaces{Activations: []backend.Activation{full}, Groups: []backend.FanOutGroup{fullGroup}},
	})
	f = load(t, b2, lk)
	require.Equal(t, full, f.Activations[act.Key])
	require.Equal(t, fullGroup, f.Groups[group.Controller])
}

// A schema one version before the claims table gains it on Open, keeps
// its records, and claims work on it at once.
func TestSchemaBeforeClaimsMigratesToTheClaimsTable(t *testing.T) {
	t.Parallel()
	b, dsn, schema := openFresh(t)
	apply(t, b, insertRuns("a"))
	require.NoError(t, b.Close())
	makeVersion(t, schema, 5)
	require.NotContains(t, tablesOf(t, schema), "claims")

	b2 := openOn(t, dsn, schema)
	require.Contains(t, metaRow(t, schema), fmt.Sprintf(":%d:wfstore", postgres.SchemaVersion))
	require.Equal(t, wantTables(), tablesOf(t, schema))
	var persistence string
	require.NoError(t, pgtest.Admin(t).QueryRow(ctxT(t), `SELECT c.relpersistence::text FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = 'claims'`, schema).Scan(&persistence))
	require.Equal(t, "u", persistence, "claims are unlogged")
	require.Contains(t, load(t, b2, backend.Lookup{Runs: []string{"a"}}).Runs, "a")
	got, err := b2.Claim(ctxT(t), "h", []string{"k"}, time.Minute)
	require.NoError(t, err)
	require.Equal(t, []bool{true}, got)
}

// relSizes returns the size in bytes of schema's table and of each of its
// indexes, by name.
func relSizes(t *testing.T, schema, table string) map[string]int64 {
	t.Helper()
	rows, err := pgtest.Admin(t).Query(ctxT(t), `SELECT c.relname::text, pg_relation_size(c.oid) FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND (c.relname = $2 OR c.oid IN (SELECT indexrelid FROM pg_index i
			JOIN pg_class r ON r.oid = i.indrelid WHERE r.relname = $2 AND r.relnamespace = n.oid))`, schema, table)
	require.NoError(t, err)
	out := map[string]int64{}
	for rows.Next() {
		var name string
		var size int64
		require.NoError(t, rows.Scan(&name, &size))
		out[name] = size
	}
	require.NoError(t, rows.Err())
	return out
}

// blocks returns the heap block of each of the table's rows, by the text of
// its key columns.
func blocks(t *testing.T, schema, table, key string) map[string]string {
	t.Helper()
	rows, err := pgtest.Admin(t).Query(ctxT(t), fmt.Sprintf("SELECT (%s)::text, split_part(ctid::text, ',', 1) FROM %s",
		key, pgx.Identifier{schema, table}.Sanitize()))
	require.NoError(t, err)
	out := map[string]string{}
	for rows.Next() {
		var k, b string
		require.NoError(t, rows.Scan(&k, &b))
		out[k] = b
	}
	require.NoError(t, rows.Err())
	return out
}

// A version 6 schema (tables filled to the brim) migrates on Open to
// tables that leave room in each page: a full page of attempts written
// after the migration takes an update of every row's handoff on the same
// page, without one new entry in any index of attempts (heap-only
// updates), and a page of activations an update of every row's status and
// admissible flag on the same page. Rows written before keep their
// values.
func TestVersionSixSchemaMigratesToFillFactors(t *testing.T) {
	t.Parallel()
	b, dsn, schema := openFresh(t)
	apply(t, b, insertRuns("old"))
	require.NoError(t, b.Close())
	makeVersion(t, schema, 6)

	b2 := openOn(t, dsn, schema)
	require.Contains(t, metaRow(t, schema), fmt.Sprintf(":%d:wfstore", postgres.SchemaVersion))
	var opts []string
	require.NoError(t, pgtest.Admin(t).QueryRow(ctxT(t), `SELECT array_agg(c.relname || ':' || array_to_string(c.reloptions, ',') ORDER BY c.relname)
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.reloptions IS NOT NULL AND c.relkind = 'r'`, schema).Scan(&opts))
	require.Equal(t, []string{"activations:fillfactor=50", "attempts:fillfactor=40"}, opts)
	require.Contains(t, load(t, b2, backend.Lookup{Runs: []string{"old"}}).Runs, "old")

	const n = 120 // more than a page of either table
	acts := make([]backend.Activation, n)
	atts := make([]backend.Attempt, n)
	for i := range n {
		k := backend.ActivationKey{RunID: "run", NodeID: "node", ActivationID: fmt.Sprintf("act-%03d", i)}
		acts[i] = backend.Activation{Key: k, Status: backend.ActivationPending, Admissible: true,
			Input: []byte(`{"input":"` + strings.Repeat("x", 100) + `"}`), Effect: backend.Mutating}
		atts[i] = backend.Attempt{Key: backend.AttemptKey{ActivationKey: k, Attempt: 1},
			Identity: fmt.Sprintf("%064d", i), Status: backend.AttemptPrepared, SideEffect: backend.Mutating,
			Intent: []byte(`{"intent":"` + strings.Repeat("y", 100) + `"}`), IntentChecksum: strings.Repeat("c", 64),
			Handoff: backend.HandoffPending, PreparedMS: int64(i + 1)}
	}
	apply(t, b2, backend.Changes{Insert: backend.Inserts{Runs: runs("run"), Activations: acts, Attempts: atts}})
	attBlocks := blocks(t, schema, "attempts", "activation_id")
	actBlocks := blocks(t, schema, "activations", "activation_id")
	require.Greater(t, len(slices.Compact(slices.Sorted(maps.Values(attBlocks)))), 1, "attempts fill more than a page")
	before := relSizes(t, schema, "attempts")

	next, nextActs := slices.Clone(atts), slices.Clone(acts)
	for i := range next {
		next[i].Handoff, next[i].HandoffToken = backend.HandoffRecorded, fmt.Sprintf("%032d", i)
		nextActs[i].Status, nextActs[i].Admissible = backend.ActivationRunning, false
	}
	apply(t, b2, backend.Changes{Expect: backend.Expected{Attempts: atts},
		Replace: backend.Replaces{Activations: nextActs, Attempts: next}})
	require.Equal(t, attBlocks, blocks(t, schema, "attempts", "activation_id"), "every attempt stays on its page")
	require.Equal(t, actBlocks, blocks(t, schema, "activations", "activation_id"), "every activation stays on its page")
	require.Equal(t, before, relSizes(t, schema, "attempts"), "no index of attempts grows: the updates are heap-only")
	f := load(t, b2, backend.Lookup{Attempts: []backend.AttemptKey{next[0].Key, next[n-1].Key}})
	require.Equal(t, next[0], f.Attempts[next[0].Key])
	require.Equal(t, next[n-1], f.Attempts[next[n-1].Key])
}

// indexesOf lists the indexes of schema's table, by name.
func indexesOf(t *testing.T, schema, table string) []string {
	t.Helper()
	rows, err := pgtest.Admin(t).Query(ctxT(t), "SELECT indexname::text FROM pg_indexes WHERE schemaname = $1 AND tablename = $2 ORDER BY 1", schema, table)
	require.NoError(t, err)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return names
}

// A version 6 schema migrates on Open to attempts without the indexes in
// time order alone, its attempts readable by every scan: the unfiltered
// scans merge the status indexes' walks (TestUnfilteredAttemptScans).
func TestVersionSixSchemaMigratesToStatusMergedAttemptScans(t *testing.T) {
	t.Parallel()
	b, dsn, schema := openFresh(t)
	require.NoError(t, b.Close())
	makeVersion(t, schema, 6)
	require.Equal(t, []string{"attempts_identity", "attempts_order", "attempts_pkey", "attempts_run_order",
		"attempts_run_status_order", "attempts_status_order"}, indexesOf(t, schema, "attempts"))

	b2 := openOn(t, dsn, schema)
	require.Equal(t, []string{"attempts_group_order", "attempts_identity", "attempts_pkey", "attempts_run_group_order"},
		indexesOf(t, schema, "attempts"))
	atts := attemptsInEveryStatus()
	apply(t, b2, backend.Changes{Insert: backend.Inserts{Runs: runs("r1", "r2"), Attempts: atts}})
	got := scanAll(t, b2, backend.AttemptQuery{Limit: 4})
	require.Len(t, got, len(atts), "every status is walked")
}

// attemptsInEveryStatus returns two runs' attempts, two in each status
// and two in each of statuses the workflow never writes (before, between
// and after its own), with interleaved (and some equal) prepared times.
func attemptsInEveryStatus() []backend.Attempt {
	statuses := []backend.AttemptStatus{backend.AttemptPrepared, backend.AttemptAdmitted, backend.AttemptRunning,
		backend.AttemptCancelling, backend.AttemptSiblingCancelling, backend.AttemptSucceeded, backend.AttemptFailed,
		backend.AttemptPaused, backend.AttemptCancelled, backend.AttemptRepairRequired, backend.AttemptAbandoned,
		"", "Zed", "aa", "abandoned2", "pending", "prepared ", "zzz", "sibling_cancelling_x"}
	var atts []backend.Attempt
	for i := range 2 * len(statuses) {
		run := []string{"r1", "r2"}[i%2]
		k := backend.ActivationKey{RunID: run, NodeID: "node", ActivationID: fmt.Sprintf("act-%02d", i)}
		atts = append(atts, backend.Attempt{Key: backend.AttemptKey{ActivationKey: k, Attempt: 1},
			Identity: fmt.Sprintf("id-%02d", (i*7)%(2*len(statuses))), Status: statuses[i%len(statuses)],
			SideEffect: backend.Mutating, IntentChecksum: "x", Handoff: backend.HandoffRecorded, PreparedMS: int64(100 + i/3)})
	}
	return atts
}

// scanAll pages through q (its Limit per page) from the start.
func scanAll(t *testing.T, b backend.Backend, q backend.AttemptQuery) []backend.Attempt {
	t.Helper()
	var out []backend.Attempt
	for {
		var page []backend.Attempt
		err := b.View(ctxT(t), func(r backend.ReadTx) error {
			var err error
			page, err = r.Attempts(ctxT(t), q)
			return err
		})
		require.NoError(t, err)
		out = append(out, page...)
		if len(page) < q.Limit {
			return out
		}
		last := page[len(page)-1]
		q.After = backend.AttemptCursor{PreparedMS: last.PreparedMS, Identity: last.Identity}
	}
}

// Every attempt scan, paged in either direction, globally or per run,
// with or without a status, returns exactly the attempts it matches in
// (prepared_ms, identity) order: the unfiltered ones merge one walk per
// status.
func TestUnfilteredAttemptScans(t *testing.T) {
	t.Parallel()
	b, _, _ := openFresh(t)
	atts := attemptsInEveryStatus()
	apply(t, b, backend.Changes{Insert: backend.Inserts{Runs: runs("r1", "r2"), Attempts: atts}})
	for _, run := range []string{"", "r1", "r2"} {
		for _, st := range []backend.AttemptStatus{"", backend.AttemptPrepared, backend.AttemptAdmitted, backend.AttemptAbandoned} {
			for _, desc := range []bool{false, true} {
				var want []backend.Attempt
				for _, a := range atts {
					if (run == "" || a.Key.RunID == run) && (st == "" || a.Status == st) {
						want = append(want, a)
					}
				}
				sort.Slice(want, func(i, j int) bool {
					x, y := want[i], want[j]
					less := x.PreparedMS < y.PreparedMS || x.PreparedMS == y.PreparedMS && x.Identity < y.Identity
					return less != desc
				})
				for _, limit := range []int{1, 3, 100} {
					got := scanAll(t, b, backend.AttemptQuery{RunID: run, Status: st, Descending: desc, Limit: limit})
					require.Equal(t, want, got, "run %q status %q desc %v limit %d", run, st, desc, limit)
				}
			}
		}
	}
}

// The statuses an unfiltered attempt scan walks in order are every status
// the workflow writes, in bytewise order (the order of the gaps between
// them, which the scan also reads).
func TestAttemptStatusesAreTheWorkflowsInOrder(t *testing.T) {
	want := []string{}
	for _, s := range []wftype.AttemptStatus{wftype.AttemptPrepared, wftype.AttemptAdmitted, wftype.AttemptRunning,
		wftype.AttemptCancelling, wftype.AttemptSiblingCancelling, wftype.AttemptSucceeded, wftype.AttemptFailed,
		wftype.AttemptPaused, wftype.AttemptCancelled, wftype.AttemptRepairRequired, wftype.AttemptAbandoned} {
		want = append(want, string(s))
	}
	slices.Sort(want)
	require.Equal(t, want, postgres.AttemptStatuses)
}

// An attempt's receipt (prepared -> admitted, with its receipt, admission
// time and handoff) changes no indexed column: each such update is
// heap-only, so it writes no entry in any index of attempts. A
// SERIALIZABLE Update reading an attempt holds a predicate lock on its
// primary key's leaf page; an entry another transaction wrote there (as
// every receipt did while the status indexes held status) fails one of
// the two as a serialization failure though they touched different
// attempts.
func TestReceiptsAreHeapOnly(t *testing.T) {
	t.Parallel()
	b, _, schema := openFresh(t)
	const n = 400 // several pages of every index of attempts
	atts := make([]backend.Attempt, n)
	for i := range n {
		k := backend.ActivationKey{RunID: "run", NodeID: "node", ActivationID: fmt.Sprintf("act-%03d", i)}
		atts[i] = backend.Attempt{Key: backend.AttemptKey{ActivationKey: k, Attempt: 1},
			Identity: fmt.Sprintf("%064d", i), Status: backend.AttemptPrepared, SideEffect: backend.Mutating,
			Intent: []byte(`{"intent":"` + strings.Repeat("y", 100) + `"}`), IntentChecksum: strings.Repeat("c", 64),
			Handoff: backend.HandoffRecorded, HandoffToken: fmt.Sprintf("%032d", i), PreparedMS: int64(i + 1)}
	}
	apply(t, b, backend.Changes{Insert: backend.Inserts{Runs: runs("run"), Attempts: atts}})
	before, blocksBefore := relSizes(t, schema, "attempts"), blocks(t, schema, "attempts", "activation_id")

	next := slices.Clone(atts)
	for i := range next {
		next[i].Status, next[i].Receipt, next[i].AdmittedMS = backend.AttemptAdmitted, []byte(`{"receipt":"r"}`), int64(n+i)
	}
	apply(t, b, backend.Changes{Expect: backend.Expected{Attempts: atts}, Replace: backend.Replaces{Attempts: next}})
	require.Equal(t, blocksBefore, blocks(t, schema, "attempts", "activation_id"), "every attempt stays on its page")
	require.Equal(t, before, relSizes(t, schema, "attempts"), "no index of attempts grows: the receipts are heap-only")

	// Both statuses of the group still scan exactly.
	require.Empty(t, scanAll(t, b, backend.AttemptQuery{Status: backend.AttemptPrepared, Limit: 50}))
	require.Equal(t, next, scanAll(t, b, backend.AttemptQuery{Status: backend.AttemptAdmitted, Limit: 50}))
	require.Equal(t, next, scanAll(t, b, backend.AttemptQuery{RunID: "run", Status: backend.AttemptAdmitted, Limit: 50}))
}

// A version 7 schema (status indexes holding status) migrates on Open to
// the status_group indexes: the server computes every stored attempt's
// group, and every scan returns exactly the attempts it matches.
func TestVersionSevenSchemaMigratesToStatusGroups(t *testing.T) {
	t.Parallel()
	b, dsn, schema := openFresh(t)
	atts := attemptsInEveryStatus()
	apply(t, b, backend.Changes{Insert: backend.Inserts{Runs: runs("r1", "r2"), Attempts: atts}})
	require.NoError(t, b.Close())
	makeVersion(t, schema, 7)
	require.Equal(t, []string{"attempts_identity", "attempts_pkey", "attempts_run_status_order", "attempts_status_order"},
		indexesOf(t, schema, "attempts"))

	b2 := openOn(t, dsn, schema)
	require.Contains(t, metaRow(t, schema), fmt.Sprintf(":%d:wfstore", postgres.SchemaVersion))
	require.Equal(t, []string{"attempts_group_order", "attempts_identity", "attempts_pkey", "attempts_run_group_order"},
		indexesOf(t, schema, "attempts"))
	rows, err := pgtest.Admin(t).Query(ctxT(t), "SELECT status, status_group FROM "+pgx.Identifier{schema, "attempts"}.Sanitize())
	require.NoError(t, err)
	groups, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct{ Status, Group string }])
	require.NoError(t, err)
	require.Len(t, groups, len(atts))
	for _, g := range groups {
		require.Equal(t, postgres.StatusGroup(g.Status), g.Group, "status %q", g.Status)
	}
	for _, st := range []backend.AttemptStatus{"", backend.AttemptPrepared, backend.AttemptAdmitted, backend.AttemptRunning, "aa"} {
		var want []backend.Attempt
		for _, a := range atts {
			if st == "" || a.Status == st {
				want = append(want, a)
			}
		}
		sort.Slice(want, func(i, j int) bool {
			x, y := want[i], want[j]
			return x.PreparedMS < y.PreparedMS || x.PreparedMS == y.PreparedMS && x.Identity < y.Identity
		})
		require.Equal(t, want, scanAll(t, b2, backend.AttemptQuery{Status: st, Limit: 3}), "status %q", st)
	}
}
