package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"regexp"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/wfstore/wfstore/backend"
)

var schemaNameRE = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// validSchema reports whether name is a schema name this adapter accepts:
// lower-case ASCII letters, digits and underscores, not starting with a
// digit, at most 63 bytes, and not a reserved pg_ prefix.
func validSchema(name string) error {
	if !schemaNameRE.MatchString(name) {
		return fmt.Errorf("postgres: schema name %q must match %s", name, schemaNameRE)
	}
	if len(name) >= 3 && name[:3] == "pg_" {
		return fmt.Errorf("postgres: schema name %q: the pg_ prefix is reserved", name)
	}
	if name == "information_schema" || name == "public" {
		return fmt.Errorf("postgres: schema name %q is reserved", name)
	}
	return nil
}

// quoteIdent quotes an identifier. Names reaching it are validated, so this
// is belt and braces.
func quoteIdent(s string) string { return pgx.Identifier{s}.Sanitize() }

// storeState is what a read-only look at the schema found.
type storeState struct {
	schemaExists bool
	nonEmpty     bool // any relation, function or type in the schema
	hasMeta      bool
	store        string
	version      int64
	hasRow       bool
}

// lockKey derives the advisory lock key for a schema.
func lockKey(schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("wfstore/migrate/"))
	h.Write([]byte(schema))
	return int64(h.Sum64())
}

// querier is what inspect needs: a pool or a transaction's connection.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

const inspectSQL = `SELECT
	EXISTS (SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = $1),
	EXISTS (SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1)
	OR EXISTS (SELECT 1 FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1)
	OR EXISTS (SELECT 1 FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace WHERE n.nspname = $1),
	EXISTS (SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
	        WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p'))`

// inspect reads the schema's state without writing anything.
func inspect(ctx context.Context, q querier, schema string) (storeState, error) {
	var st storeState
	if err := q.QueryRow(ctx, inspectSQL, schema, metaTable).Scan(&st.schemaExists, &st.nonEmpty, &st.hasMeta); err != nil {
		return st, fmt.Errorf("postgres: inspect schema %q: %w", schema, err)
	}
	if !st.hasMeta {
		return st, nil
	}
	err := q.QueryRow(ctx, "SELECT store, version FROM "+quoteIdent(schema)+"."+metaTable+" WHERE id = 1").
		Scan(&st.store, &st.version)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return st, nil
	case err != nil:
		return st, fmt.Errorf("postgres: read schema version of %q: %w", schema, err)
	}
	st.hasRow = true
	return st, nil
}

// verdict turns a state into: ready (nothing to do), an error refusing the
// store, or the version to migrate from.
func (st storeState) verdict(schema string) (ready bool, from int64, err error) {
	switch {
	case !st.schemaExists || !st.nonEmpty:
		return false, 0, nil
	case !st.hasMeta || !st.hasRow || st.store != storeMark:
		return false, 0, fmt.Errorf("postgres: schema %q holds objects that wfstore did not create: %w", schema, backend.ErrForeignStore)
	case st.version > SchemaVersion:
		return false, 0, fmt.Errorf("postgres: schema %q: %w", schema, &backend.SchemaVersionError{Found: st.version, Supported: SchemaVersion})
	case st.version < 0:
		return false, 0, fmt.Errorf("postgres: schema %q records version %d: %w", schema, st.version, backend.ErrForeignStore)
	case st.version == SchemaVersion:
		return true, st.version, nil
	}
	return false, st.version, nil
}

// errMigrationRaced reports that another migrator changed the schema under
// us (the compare-and-set found another version); the caller re-inspects.
var errMigrationRaced = errors.New("postgres: schema changed by a concurrent migrator")

// migrationRaces counts migrations rolled back because another migrator
// got there first (tests).
var migrationRaces atomic.Int64

// ensureSchema creates or migrates the schema, or refuses it. It first reads
// without writing; only a missing, empty or older schema of ours is written,
// inside one transaction that holds an advisory lock and finishes with a
// compare-and-set of the version row.
func ensureSchema(ctx context.Context, pool *pgxpool.Pool, schema string, useAdvisoryLock bool) (found int64, err error) {
	var lastErr error
	for try := 0; try < 20; try++ {
		if try > 0 {
			if err := sleepCtx(ctx, time.Duration(try)*5*time.Millisecond); err != nil {
				return 0, fmt.Errorf("postgres: migrate schema %q: %w (last: %w)", schema, err, lastErr)
			}
		}
		st, err := inspect(ctx, pool, schema)
		if err != nil {
			return 0, err
		}
		ready, _, err := st.verdict(schema)
		if err != nil {
			return 0, err
		}
		if ready {
			return SchemaVersion, nil
		}
		found, err = migrateOnce(ctx, pool, schema, useAdvisoryLock)
		if err == nil {
			return found, nil
		}
		if !migrationRetryable(err) {
			return 0, err
		}
		migrationRaces.Add(1)
		lastErr = err
	}
	return 0, fmt.Errorf("postgres: migrate schema %q: gave up after concurrent migrators: %w", schema, lastErr)
}

// migrationRetryable: errors a concurrent migrator causes when advisory
// locks do not serialize us (duplicate catalog rows, lost CAS) plus the
// usual transient ones.
func migrationRetryable(err error) bool {
	if errors.Is(err, errMigrationRaced) {
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "23505", // unique_violation (catalog rows of a concurrent CREATE)
			"42P06", // duplicate_schema
			"42P07", // duplicate_table
			"42710", // duplicate_object
			"40001", "40P01":
			return true
		}
	}
	return false
}

// migrateOnce migrates under the lock and returns the version it found
// there (SchemaVersion when another migrator had done the work).
func migrateOnce(ctx context.Context, pool *pgxpool.Pool, schema string, useAdvisoryLock bool) (found int64, err error) {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("postgres: migrate schema %q: begin: %w", schema, err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	if useAdvisoryLock {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", lockKey(schema)); err != nil {
			return 0, fmt.Errorf("postgres: migrate schema %q: advisory lock: %w", schema, err)
		}
	}
	// Look again under the lock: a migrator that held it may have finished.
	st, err := inspect(ctx, tx, schema)
	if err != nil {
		return 0, err
	}
	ready, from, err := st.verdict(schema)
	if err != nil {
		return 0, err
	}
	if ready {
		return SchemaVersion, tx.Commit(ctx) // wrote nothing
	}
	q := quoteIdent(schema)
	if !st.schemaExists {
		if _, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+q); err != nil {
			return 0, fmt.Errorf("postgres: create schema %q: %w", schema, err)
		}
	}
	for v := from; v < SchemaVersion; v++ {
		if _, err := tx.Exec(ctx, migrationSQL(int(v), q)); err != nil {
			return 0, fmt.Errorf("postgres: migrate schema %q to version %d: %w", schema, v+1, err)
		}
	}
	var tag pgconn.CommandTag
	if from == 0 {
		tag, err = tx.Exec(ctx, "INSERT INTO "+q+"."+metaTable+" (id, store, version) VALUES (1, $1, $2) ON CONFLICT DO NOTHING",
			storeMark, int64(SchemaVersion))
	} else {
		tag, err = tx.Exec(ctx, "UPDATE "+q+"."+metaTable+" SET version = $1, updated_at = now() WHERE id = 1 AND store = $2 AND version = $3",
			int64(SchemaVersion), storeMark, from)
	}
	if err != nil {
		return 0, fmt.Errorf("postgres: record schema version of %q: %w", schema, err)
	}
	if tag.RowsAffected() != 1 {
		return 0, errMigrationRaced
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("postgres: migrate schema %q: commit: %w", schema, err)
	}
	return from, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}
