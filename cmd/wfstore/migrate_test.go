package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/wfstore/wfstore/internal/testkit/pgtest"
	"github.com/wfstore/wfstore/postgres"
	"github.com/wfstore/wfstore/sqlite"
)

func TestMigrateCommandOnSQLite(t *testing.T) {
	t.Parallel()
	bin := wfstoreBinary(t, "")
	path := filepath.Join(t.TempDir(), "m.db")
	stdout, stderr, code := runCLI(t, bin, nil, "migrate", "status", "--db", path)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, fmt.Sprintf("%s: no store yet (this build creates schema version %d)\n", path, sqlite.SchemaVersion), stdout)
	_, err := os.Stat(path)
	assert.ErrorIs(t, err, os.ErrNotExist)

	stdout, stderr, code = runCLI(t, bin, nil, "migrate", "up", "--db", path)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, fmt.Sprintf("%s: created the store at schema version %d\n", path, sqlite.SchemaVersion), stdout)
	stdout, _, code = runCLI(t, bin, nil, "migrate", "status", "--db", path)
	require.Equal(t, 0, code)
	assert.Equal(t, fmt.Sprintf("%s: schema version %d, current\n", path, sqlite.SchemaVersion), stdout)

	// A store written by a newer version is refused and left untouched.
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	_, err = db.ExecContext(context.Background(), "UPDATE wfstore_meta SET value = '99' WHERE key = 'schema_version'")
	require.NoError(t, err)
	_, err = db.ExecContext(context.Background(), "PRAGMA wal_checkpoint(TRUNCATE)")
	require.NoError(t, err)
	require.NoError(t, db.Close())
	before, err := os.ReadFile(path)
	require.NoError(t, err)
	for _, verb := range []string{"status", "up"} {
		_, stderr, code = runCLI(t, bin, nil, "migrate", verb, "--db", path)
		assert.Equal(t, 1, code, verb)
		assert.Contains(t, stderr, "schema version 99 is not supported", verb)
	}
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, before, after)

	_, _, code = runCLI(t, bin, nil, "migrate", "sideways", "--db", path)
	assert.Equal(t, 2, code)
	_, stderr, code = runCLI(t, bin, nil, "migrate", "status", "--db", path, "extra")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, `unexpected arguments ["extra"]`)
}

func TestMigrateCommandOnPostgres(t *testing.T) {
	t.Parallel()
	dsn, schema := pgtest.SchemaName(t)
	bin := wfstoreBinary(t, "")
	stdout, stderr, code := runCLI(t, bin, nil, "migrate", "status", "--backend", "postgres", "--dsn", dsn, "--schema", schema)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "no store yet")
	stdout, stderr, code = runCLI(t, bin, nil, "migrate", "up", "--backend", "postgres", "--dsn", dsn, "--schema", schema)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, fmt.Sprintf("created the store at schema version %d", postgres.SchemaVersion))
	assert.Contains(t, stdout, "schema "+schema)
	stdout, _, code = runCLI(t, bin, nil, "migrate", "status", "--backend", "postgres", "--dsn", dsn, "--schema", schema)
	require.Equal(t, 0, code)
	assert.Contains(t, stdout, fmt.Sprintf("schema version %d, current", postgres.SchemaVersion))
}
