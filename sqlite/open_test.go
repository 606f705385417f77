package sqlite

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/wfstore/wfstore/backend"
)

func fileHash(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return sha256.Sum256(b)
}

// rawDB opens path with the driver directly (no wfstore).
// storeOfVersion returns the path of a store holding one run whose
// recorded schema version is v (checkpointed, so the main file has it).
func storeOfVersion(t *testing.T, v int) string {
	t.Helper()
	path := newPath(t)
	b := openAt(t, path)
	update(t, b, insertRuns(backend.Run{ID: "r"}))
	require.NoError(t, b.Close())
	db := rawDB(t, path)
	_, err := db.Exec("UPDATE wfstore_meta SET value = ? WHERE key = 'schema_version'", strconv.Itoa(v))
	require.NoError(t, err)
	_, err = db.Exec("PRAGMA wal_checkpoint(TRUNCATE)")
	require.NoError(t, err)
	require.NoError(t, db.Close())
	return path
}

func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", fileURI(path, url.Values{}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// makeVersion turns the store at path, written by this build, into what
// schema version v wrote: it undoes every migration after v (dropping
// the columns and indexes they added, and so those columns' values) and
// records v.
func makeVersion(t *testing.T, path string, v int) {
	t.Helper()
	undo := map[int][]string{
		5: {"ALTER TABLE activations DROP COLUMN wait_for", "ALTER TABLE activations DROP COLUMN open_waits",
			"ALTER TABLE activations DROP COLUMN joins", "ALTER TABLE fan_out_groups DROP COLUMN fan_in"},
		4: {"ALTER TABLE attempts DROP COLUMN handoff_token", "ALTER TABLE activations DROP COLUMN attempt_timeout_ms"},
		3: {"DROP INDEX runs_by_status"},
		2: {"ALTER TABLE fan_out_groups DROP COLUMN fail_fast"},
	}
	db := rawDB(t, path)
	for from := SchemaVersion; from > v; from-- {
		require.Contains(t, undo, from, "makeVersion knows no undo of migration %d", from)
		for _, stmt := range undo[from] {
			_, err := db.Exec(stmt)
			require.NoError(t, err, stmt)
		}
	}
	_, err := db.Exec("UPDATE wfstore_meta SET value = ? WHERE key = 'schema_version'", strconv.Itoa(v))
	require.NoError(t, err)
	require.NoError(t, db.Close())
}

// requireSchemaVersion checks the version recorded in the store at path.
func requireSchemaVersion(t *testing.T, path string, want int) {
	t.Helper()
	db := rawDB(t, path)
	var v string
	require.NoError(t, db.QueryRow("SELECT value FROM wfstore_meta WHERE key = 'schema_version'").Scan(&v))
	require.Equal(t, strconv.Itoa(want), v)
	require.NoError(t, db.Close())
}

func TestForeignFilesRefusedByteIdentical(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := map[string]func(t *testing.T, path string){
		"not sqlite": func(t *testing.T, path string) {
			require.NoError(t, os.WriteFile(path, []byte("hello, this is not a database at all\n"), 0o644))
		},
		"large non-sqlite": func(t *testing.T, path string) {
			require.NoError(t, os.WriteFile(path, bigJSON(64<<10), 0o644))
		},
		"sqlite with other tables": func(t *testing.T, path string) {
			db := rawDB(t, path)
			_, err := db.Exec("CREATE TABLE accounts (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO accounts VALUES (1, 'x')")
			require.NoError(t, err)
			require.NoError(t, db.Close())
		},
		"sqlite with a look-alike wfstore_meta": func(t *testing.T, path string) {
			db := rawDB(t, path)
			_, err := db.Exec("CREATE TABLE wfstore_meta (k TEXT)")
			require.NoError(t, err)
			require.NoError(t, db.Close())
		},
		"empty sqlite with user_version": func(t *testing.T, path string) {
			db := rawDB(t, path)
			_, err := db.Exec("PRAGMA user_version = 7")
			require.NoError(t, err)
			require.NoError(t, db.Close())
		},
	}
	for name, make := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := newPath(t)
			make(t, path)
			before := fileHash(t, path)
			b, err := Open(ctx, path)
			require.ErrorIs(t, err, backend.ErrForeignStore)
			require.Nil(t, b)
			require.Equal(t, before, fileHash(t, path), "file bytes unchanged")
			// Through a caller's handle too.
			db := rawDB(t, path)
			b, err = OpenDB(ctx, db)
			require.ErrorIs(t, err, backend.ErrForeignStore)
			require.Nil(t, b)
			if err := db.Ping(); err != nil {
				require.NotContains(t, err.Error(), "database is closed", "caller's handle not closed")
			}
			require.NoError(t, db.Close())
			require.Equal(t, before, fileHash(t, path), "file bytes unchanged")
		})
	}
}

func TestNewerSchemaVersionRefusedByteIdentical(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := storeOfVersion(t, SchemaVersion+1)
	before := fileHash(t, path)

	_, err := Open(ctx, path)
	require.ErrorIs(t, err, backend.ErrSchemaVersion)
	var sv *backend.SchemaVersionError
	require.ErrorAs(t, err, &sv)
	require.Equal(t, backend.SchemaVersionError{Found: SchemaVersion + 1, Supported: SchemaVersion}, *sv)
	require.Equal(t, before, fileHash(t, path))
	if st, err := os.Stat(path + "-wal"); err == nil {
		require.Zero(t, st.Size(), "nothing written to the WAL")
	}
}

func TestFreshAndEmptyFilesAreInitialised(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.db")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	for _, p := range []string{empty, filepath.Join(dir, "new.db"), filepath.Join(dir, "spaces and ?#% chars.db")} {
		b := openAt(t, p)
		update(t, b, insertRuns(backend.Run{ID: "r"}))
		require.NoError(t, b.Close())
		b = openAt(t, p) // reopen: same version, data kept
		require.True(t, runExists(t, b, "r"))
	}
	_, err := os.Stat(filepath.Join(dir, "spaces and ?#% chars.db"))
	require.NoError(t, err, "URI escaping kept the file name")
}

func TestInfoReportsSettings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	durable, err := Open(ctx, newPath(t)) // default
	require.NoError(t, err)
	defer durable.Close()
	info := durable.Info()
	require.Equal(t, "sqlite", info.Name)
	require.Regexp(t, `^3\.\d+\.\d+$`, info.Version)
	require.Equal(t, "wal", info.Settings["journal_mode"])
	require.Equal(t, "FULL", info.Settings["synchronous"])
	require.Equal(t, "durable", info.Settings["durability"])
	info.Settings["synchronous"] = "changed"
	require.Equal(t, "FULL", durable.Info().Settings["synchronous"], "Info returns a copy")

	relaxed := newStore(t)
	require.Equal(t, "NORMAL", relaxed.Info().Settings["synchronous"])
	require.Equal(t, "relaxed", relaxed.Info().Settings["durability"])

	// Every reader connection has the settings too.
	require.NoError(t, relaxed.View(ctx, func(backend.ReadTx) error { return nil }))
	var sync int
	require.NoError(t, relaxed.rdb.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync))
	require.Equal(t, 1, sync)
	var qo int
	require.NoError(t, relaxed.rdb.QueryRowContext(ctx, "PRAGMA query_only").Scan(&qo))
	require.Equal(t, 1, qo)
}

func TestDurableModeCommitsAndReopens(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := newPath(t)
	b, err := Open(ctx, path)
	require.NoError(t, err)
	incrementers(t, []*Backend{b}, 2, 10)
	require.NoError(t, b.Close())
	b2, err := Open(ctx, path)
	require.NoError(t, err)
	defer b2.Close()
	require.Equal(t, int64(20), counter(t, b2))
}

func TestOpenDBUsesTheCallersHandle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := newPath(t)
	db := rawDB(t, path)
	var before int
	require.NoError(t, db.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&before))
	b, err := OpenDB(ctx, db, WithRelaxedDurability())
	require.NoError(t, err)
	require.Equal(t, "caller *sql.DB", b.Info().Settings["handle"])
	require.Equal(t, "wal", b.Info().Settings["journal_mode"])
	incrementers(t, []*Backend{b}, 4, 10)
	// A Backend opened by path shares the store.
	other := openAt(t, path)
	require.Equal(t, int64(40), counter(t, other))
	require.NoError(t, b.Close())
	require.NoError(t, db.PingContext(ctx), "Close leaves the caller's handle open")
	var n int
	require.NoError(t, db.QueryRowContext(ctx, "SELECT count(*) FROM runs").Scan(&n))
	require.Equal(t, 1, n)
}

func TestOpenDBSingleConnectionPoolRunsViewsOnTheWriter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := sql.Open("sqlite", ":memory:")
	require.NoError(t, err)
	defer db.Close()
	db.SetMaxOpenConns(1)
	b, err := OpenDB(ctx, db)
	require.NoError(t, err)
	defer b.Close()
	require.True(t, b.viewOnWriter)
	incrementers(t, []*Backend{b}, 3, 10)
	run, _, act, _, _, _, _, _ := fullRecords("x", []byte(`{}`))
	update(t, b, backend.Changes{Insert: backend.Inserts{Runs: []backend.Run{run}, Activations: []backend.Activation{act}}})
	view(t, b, func(r backend.ReadTx) {
		got, err := r.AdmissibleActivations(ctx, backend.AdmissibleQuery{Limit: 10})
		require.NoError(t, err)
		require.Equal(t, []backend.Activation{act}, got)
	})
}

func TestVersionOneStoreMigratesToTheFanOutPolicy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := newPath(t)
	b := openAt(t, path)
	c := backend.ActivationKey{RunID: "r", NodeID: "ctl", ActivationID: "c"}
	group := backend.FanOutGroup{Controller: c, Size: 3, MaxConcurrency: 2, Promoted: 2, CreatedMS: 1_700_000_000_000}
	update(t, b, backend.Changes{Insert: backend.Inserts{Groups: []backend.FanOutGroup{group}}})
	require.NoError(t, b.Close())
	makeVersion(t, path, 1)

	b = openAt(t, path)
	read := func() backend.FanOutGroup {
		var g backend.FanOutGroup
		require.NoError(t, b.View(ctx, func(r backend.ReadTx) error {
			f, err := r.Load(ctx, backend.Lookup{Groups: []backend.ActivationKey{c}})
			g = f.Groups[c]
			return err
		}))
		return g
	}
	require.Equal(t, group, read(), "a version 1 group reads as wait-all")
	group.FailFast = true
	update(t, b, backend.Changes{Replace: backend.Replaces{Groups: []backend.FanOutGroup{group}}})
	require.Equal(t, group, read())
	require.NoError(t, b.Close())
	requireSchemaVersion(t, path, SchemaVersion)
}

func TestVersionTwoStoreMigratesToTheRunStatusIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := newPath(t)
	b := openAt(t, path)
	runs := []backend.Run{{ID: "a", Status: backend.RunRunning}, {ID: "b", Status: backend.RunCompleted}, {ID: "c", Status: backend.RunRunning}}
	update(t, b, insertRuns(runs...))
	require.NoError(t, b.Close())
	makeVersion(t, path, 2)

	b = openAt(t, path)
	view(t, b, func(r backend.ReadTx) {
		got, err := r.Runs(ctx, backend.RunQuery{Status: backend.RunRunning, Limit: 10})
		require.NoError(t, err)
		require.Equal(t, []backend.Run{runs[0], runs[2]}, got)
	})
	require.NoError(t, b.Close())
	requireSchemaVersion(t, path, SchemaVersion)
	db := rawDB(t, path)
	var n int
	require.NoError(t, db.QueryRow("SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND name = 'runs_by_status'").Scan(&n))
	require.Equal(t, 1, n, "the migration created the index")
	require.NoError(t, db.Close())
}

// A version 3 store (no attempt timeout, no handoff token) migrates on
// Open: its activations read back with no timeout set and its attempts
// with no token, every other field as written; an Expect of such a
// record passes, and a Replace stores both fields.
func TestVersionThreeStoreMigratesToTheAttemptTimeoutAndHandoffToken(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := newPath(t)
	b := openAt(t, path)
	run, _, act, _, att, _, _, _ := fullRecords("v3", []byte(`{"v":3}`))
	act.AttemptTimeoutMS, att.HandoffToken = 0, ""
	act.WaitFor, act.OpenWaits, act.Joins = nil, 0, nil
	update(t, b, backend.Changes{Insert: backend.Inserts{Runs: []backend.Run{run}, Activations: []backend.Activation{act}, Attempts: []backend.Attempt{att}}})
	require.NoError(t, b.Close())
	makeVersion(t, path, 3)

	b = openAt(t, path)
	defer b.Close()
	read := func() (backend.Activation, backend.Attempt) {
		var f backend.Found
		view(t, b, func(r backend.ReadTx) {
			var err error
			f, err = r.Load(ctx, backend.Lookup{Activations: []backend.ActivationKey{act.Key}, Attempts: []backend.AttemptKey{att.Key}})
			require.NoError(t, err)
		})
		return f.Activations[act.Key], f.Attempts[att.Key]
	}
	gotAct, gotAtt := read()
	require.Equal(t, act, gotAct, "a version 3 activation reads with no attempt timeout")
	require.Equal(t, att, gotAtt, "a version 3 attempt reads with no handoff token")
	requireSchemaVersion(t, path, SchemaVersion)

	act2, att2 := act, att
	act2.AttemptTimeoutMS, att2.HandoffToken = 45_000, "ffeeddccbbaa99887766554433221100"
	update(t, b, backend.Changes{
		Expect:  backend.Expected{Activations: []backend.Activation{act}, Attempts: []backend.Attempt{att}},
		Replace: backend.Replaces{Activations: []backend.Activation{act2}, Attempts: []backend.Attempt{att2}},
	})
	gotAct, gotAtt = read()
	require.Equal(t, act2, gotAct)
	require.Equal(t, att2, gotAtt)
}

// A version 4 store (no join fields, no FanIn) migrates on Open: its
// activations read back as no join, awaited by none, and its groups as
// owner settlement, every other field as written; an Expect of such an
// activation passes, and a Replace stores the new fields.
func TestVersionFourStoreMigratesToJoinsAndFanIn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := newPath(t)
	b := openAt(t, path)
	run, _, act, group, _, _, _, _ := fullRecords("v4", []byte(`{"v":4}`))
	full, fullGroup := act, group
	act.WaitFor, act.OpenWaits, act.Joins, group.FanIn = nil, 0, nil, false
	update(t, b, backend.Changes{Insert: backend.Inserts{Runs: []backend.Run{run}, Activations: []backend.Activation{act}, Groups: []backend.FanOutGroup{group}}})
	require.NoError(t, b.Close())
	makeVersion(t, path, 4)

	b = openAt(t, path)
	defer b.Close()
	read := func() (backend.Activation, backend.FanOutGroup) {
		var f backend.Found
		view(t, b, func(r backend.ReadTx) {
			var err error
			f, err = r.Load(ctx, backend.Lookup{Activations: []backend.ActivationKey{act.Key}, Groups: []backend.ActivationKey{group.Controller}})
			require.NoError(t, err)
		})
		return f.Activations[act.Key], f.Groups[group.Controller]
	}
	gotAct, gotGroup := read()
	require.Equal(t, act, gotAct, "a version 4 activation reads as no join")
	require.Equal(t, group, gotGroup, "a version 4 group reads as owner settlement")
	requireSchemaVersion(t, path, SchemaVersion)

	update(t, b, backend.Changes{
		Expect:  backend.Expected{Activations: []backend.Activation{act}},
		Replace: backend.Replaces{Activations: []backend.Activation{full}, Groups: []backend.FanOutGroup{fullGroup}},
	})
	gotAct, gotGroup = read()
	require.Equal(t, full, gotAct)
	require.Equal(t, fullGroup, gotGroup)
}

// The writer keeps its statement journal in memory (temp_store=MEMORY, see
// configureWriter), and a caller's connection gets its own setting back at
// Close.
func TestWriterKeepsStatementJournalInMemory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := openAt(t, newPath(t))
	var temp int
	require.NoError(t, b.w.conn.QueryRowContext(ctx, "PRAGMA temp_store").Scan(&temp))
	require.Equal(t, 2, temp, "temp_store on the writer of Open")

	db := rawDB(t, newPath(t))
	db.SetMaxOpenConns(1)
	require.NoError(t, db.QueryRowContext(ctx, "PRAGMA temp_store").Scan(&temp))
	require.Equal(t, 0, temp)
	ob, err := OpenDB(ctx, db)
	require.NoError(t, err)
	require.NoError(t, ob.w.conn.QueryRowContext(ctx, "PRAGMA temp_store").Scan(&temp))
	require.Equal(t, 2, temp, "temp_store on the writer of OpenDB")
	require.NoError(t, ob.Close())
	require.NoError(t, db.QueryRowContext(ctx, "PRAGMA temp_store").Scan(&temp))
	require.Equal(t, 0, temp, "Close restores the caller's temp_store")
}
