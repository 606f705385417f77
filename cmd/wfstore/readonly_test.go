package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/internal/testkit/pgtest"
	"github.com/wfstore/wfstore/sqlite"
)

// readOnlyCommands are the commands that only read a store, with the
// arguments that precede the store flags.
var readOnlyCommands = [][]string{
	{"verify"},
	{"inspect", "runs"},
	{"inspect", "run", "r1"},
	{"inspect", "events", "r1"},
}

// A mistyped path given to a command that only reads is refused, names the
// path, and creates nothing: no store, no journal, no empty file.
func TestReadOnlyCommandsNeverCreateAFileStore(t *testing.T) {
	t.Parallel()
	for _, be := range []string{"sqlite", "bolt"} {
		for _, cmd := range readOnlyCommands {
			dir := t.TempDir()
			path := filepath.Join(dir, "srcc.db")
			args := append(append([]string{}, cmd...), "--backend", be, "--db", path)
			code, stdout, stderr := runInProcess(t, time.Minute, args...)
			assert.Equal(t, 1, code, "%v: stdout %q stderr %q", args, stdout, stderr)
			assert.Contains(t, stderr, `no wfstore store at "`+path+`"`, "%v", args)
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			assert.Empty(t, entries, "%v created files", args)

			// An empty file is no store either, and stays empty.
			require.NoError(t, os.WriteFile(path, nil, 0o600))
			code, _, stderr = runInProcess(t, time.Minute, args...)
			assert.Equal(t, 1, code, "%v on an empty file: %s", args, stderr)
			assert.Contains(t, stderr, `no wfstore store at "`+path+`": the file is empty`, "%v", args)
			fi, err := os.Stat(path)
			require.NoError(t, err)
			assert.Zero(t, fi.Size(), "%v wrote to an empty file", args)
			entries, err = os.ReadDir(dir)
			require.NoError(t, err)
			assert.Len(t, entries, 1, "%v created files next to an empty one", args)
		}
	}
}

// verify (and every command that only reads) refuses a FIFO or another
// file that is not a regular file at once, without opening it (opening a
// FIFO blocks until a writer comes).
func TestReadOnlyCommandsRefuseANonRegularFileAtOnce(t *testing.T) {
	t.Parallel()
	for _, be := range []string{"sqlite", "bolt"} {
		fifo := filepath.Join(t.TempDir(), "store.fifo")
		require.NoError(t, syscall.Mkfifo(fifo, 0o600))
		for _, cmd := range readOnlyCommands {
			args := append(append([]string{}, cmd...), "--backend", be, "--db", fifo)
			code, _, stderr := runInProcess(t, 10*time.Second, args...)
			assert.Equal(t, 1, code, "%v: %s", args, stderr)
			assert.Contains(t, stderr, `no wfstore store at "`+fifo+`": not a regular file (a FIFO)`, "%v", args)
		}
		// The commands that write refuse it too.
		for _, args := range [][]string{{"migrate", "up"}, {"migrate", "status"}, {"prune", "--run", "r1"}, {"backup", "--to", fifo + ".bak"}} {
			if be == "bolt" && args[0] == "migrate" {
				continue // bolt has no migrations
			}
			args = append(args, "--backend", be, "--db", fifo)
			code, _, stderr := runInProcess(t, 10*time.Second, args...)
			assert.Equal(t, 1, code, "%v: %s", args, stderr)
			assert.Contains(t, stderr, "not a regular file", "%v", args)
		}
		dir := t.TempDir()
		code, _, stderr := runInProcess(t, 10*time.Second, "verify", "--backend", be, "--db", dir)
		assert.Equal(t, 1, code, stderr)
		assert.Contains(t, stderr, `not a regular file (a directory)`)
	}
}

// A mistyped or empty schema given to a command that only reads is refused,
// names the schema, and creates nothing.
func TestReadOnlyCommandsNeverCreateAPostgresStore(t *testing.T) {
	t.Parallel()
	dsn, missing := pgtest.SchemaName(t)
	_, empty := pgtest.Schema(t)
	admin := pgtest.Admin(t)
	ctx := context.Background()
	for _, cmd := range readOnlyCommands {
		args := append(append([]string{}, cmd...), "--backend", "postgres", "--dsn", dsn, "--schema", missing)
		code, _, stderr := runInProcess(t, time.Minute, args...)
		assert.Equal(t, 1, code, "%v: %s", args, stderr)
		assert.Contains(t, stderr, `schema "`+missing+`": the schema does not exist`, "%v", args)
		var n int
		require.NoError(t, admin.QueryRow(ctx, "SELECT count(*) FROM pg_namespace WHERE nspname = $1", missing).Scan(&n))
		assert.Zero(t, n, "%v created the schema", args)

		args = append(append([]string{}, cmd...), "--backend", "postgres", "--dsn", dsn, "--schema", empty)
		code, _, stderr = runInProcess(t, time.Minute, args...)
		assert.Equal(t, 1, code, "%v: %s", args, stderr)
		assert.Contains(t, stderr, `schema "`+empty+`": the schema is empty`, "%v", args)
		require.NoError(t, admin.QueryRow(ctx, "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1", empty).Scan(&n))
		assert.Zero(t, n, "%v created objects in the empty schema", args)
	}
}

// A command that only reads does not migrate an older store either: it
// refuses it, saying how to migrate, and leaves the file as it was.
func TestReadOnlyCommandsNeverMigrateAStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	b, err := sqlite.Open(ctx, path)
	require.NoError(t, err)
	require.NoError(t, b.Close())
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	// The recorded version is what opening reads first: an older one makes
	// Open migrate.
	older := strconv.Itoa(sqlite.SchemaVersion - 1)
	for _, q := range []string{"UPDATE wfstore_meta SET value = '" + older + "' WHERE key = 'schema_version'", "PRAGMA wal_checkpoint(TRUNCATE)"} {
		_, err = db.ExecContext(ctx, q)
		require.NoError(t, err)
	}
	require.NoError(t, db.Close())
	before, err := os.ReadFile(path)
	require.NoError(t, err)
	for _, cmd := range readOnlyCommands {
		args := append(append([]string{}, cmd...), "--db", path)
		code, _, stderr := runInProcess(t, time.Minute, args...)
		assert.Equal(t, 1, code, "%v: %s", args, stderr)
		assert.Contains(t, stderr, fmt.Sprintf(`%s is at schema version %d and this build reads %d; this command writes nothing, so run "wfstore migrate up" first`,
			path, sqlite.SchemaVersion-1, sqlite.SchemaVersion), "%v", args)
	}
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, before, after, "the store was written to")
}
