package main

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/internal/pgtest"
	"github.com/wfstore/wfstore/postgres"
	"github.com/wfstore/wfstore/sqlite"
)

// raceMigrateUp runs two "migrate up" at once and returns their stdouts.
func raceMigrateUp(t *testing.T, args ...string) [2]string {
	t.Helper()
	var out [2]string
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			code, stdout, stderr := runInProcess(t, time.Minute, append([]string{"migrate", "up"}, args...)...)
			assert.Equal(t, 0, code, stderr)
			out[i] = stdout
		}()
	}
	close(start)
	wg.Wait()
	return out
}

// exactlyOneMigrated: of two concurrent migrations of a version 2 store,
// one says it migrated and the other that it found the work done (or the
// store current, when it looked after the first had finished).
func exactlyOneMigrated(t *testing.T, out [2]string, round int) {
	t.Helper()
	const migrated = "migrated from schema version 2 to 3\n"
	const found = "found the store already migrated from schema version 2 to 3 (by another process while this one waited for the lock)\n"
	n := 0
	for _, o := range out {
		if strings.HasSuffix(o, ": "+migrated) {
			n++
		} else {
			// It found the work done under the lock, or (started late) before.
			assert.True(t, strings.HasSuffix(o, ": "+found) || strings.HasSuffix(o, ": schema version 3, already current\n"), "round %d: %q", round, o)
		}
	}
	assert.Equal(t, 1, n, "round %d: %q", round, out)
}

func TestConcurrentMigrateUpReportsOneMigrationOnSQLite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for round := range 10 {
		path := filepath.Join(t.TempDir(), "m.db")
		b, err := sqlite.Open(ctx, path)
		require.NoError(t, err)
		require.NoError(t, b.Close())
		// Make the file what version 2 wrote.
		db, err := sql.Open("sqlite", path)
		require.NoError(t, err)
		for _, q := range []string{"DROP INDEX runs_by_status", "UPDATE wfstore_meta SET value = '2' WHERE key = 'schema_version'"} {
			_, err = db.ExecContext(ctx, q)
			require.NoError(t, err)
		}
		require.NoError(t, db.Close())
		exactlyOneMigrated(t, raceMigrateUp(t, "--db", path), round)
	}
}

func TestConcurrentMigrateUpReportsOneMigrationOnPostgres(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	admin := pgtest.Admin(t)
	for round := range 10 {
		dsn, schema := pgtest.SchemaName(t)
		b, err := postgres.Open(ctx, dsn, postgres.WithSchema(schema))
		require.NoError(t, err)
		require.NoError(t, b.Close())
		s := pgx.Identifier{schema}.Sanitize()
		for _, q := range []string{"DROP INDEX " + s + ".runs_by_status", "UPDATE " + s + ".wfstore_meta SET version = 2"} {
			_, err := admin.Exec(ctx, q)
			require.NoError(t, err, fmt.Sprint(q))
		}
		exactlyOneMigrated(t, raceMigrateUp(t, "--backend", "postgres", "--dsn", dsn, "--schema", schema), round)
	}
}
