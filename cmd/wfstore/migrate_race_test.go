package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/wfstore/wfstore/internal/testkit/pgtest"
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

// exactlyOneCreated: of two concurrent "migrate up" of a store that does
// not exist yet, one says it created the store and the other that it found
// the work done (or the store current, when it looked after the first had
// finished). The same holds for migrating an older version: each reports
// the version it found under the migration lock.
func exactlyOneCreated(t *testing.T, out [2]string, version int, round int) {
	t.Helper()
	created := fmt.Sprintf("created the store at schema version %d\n", version)
	found := fmt.Sprintf("found the store already created at schema version %d (by another process while this one waited for the lock)\n", version)
	current := fmt.Sprintf("schema version %d, already current\n", version)
	n := 0
	for _, o := range out {
		if strings.HasSuffix(o, ": "+created) {
			n++
		} else {
			assert.True(t, strings.HasSuffix(o, ": "+found) || strings.HasSuffix(o, ": "+current), "round %d: %q", round, o)
		}
	}
	assert.Equal(t, 1, n, "round %d: %q", round, out)
}

func TestConcurrentMigrateUpReportsOneMigrationOnSQLite(t *testing.T) {
	t.Parallel()
	for round := range 10 {
		path := filepath.Join(t.TempDir(), "m.db")
		exactlyOneCreated(t, raceMigrateUp(t, "--db", path), sqlite.SchemaVersion, round)
	}
}

func TestConcurrentMigrateUpReportsOneMigrationOnPostgres(t *testing.T) {
	t.Parallel()
	for round := range 10 {
		dsn, schema := pgtest.SchemaName(t)
		exactlyOneCreated(t, raceMigrateUp(t, "--backend", "postgres", "--dsn", dsn, "--schema", schema), postgres.SchemaVersion, round)
	}
}
