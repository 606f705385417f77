package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"

	"github.com/wfstore/wfstore/backend"
	sqlite3 "modernc.org/sqlite/lib"
)

// SchemaVersion is the schema version this build creates and understands.
const SchemaVersion = 5

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrations[i] upgrades a store from version i to i+1.
var migrations = loadMigrations()

func loadMigrations() []string {
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		panic(err)
	}
	sort.Strings(names)
	out := make([]string, 0, len(names))
	for _, n := range names {
		b, err := migrationFS.ReadFile(n)
		if err != nil {
			panic(err)
		}
		out = append(out, string(b))
	}
	if len(out) != SchemaVersion {
		panic(fmt.Sprintf("sqlite: %d migrations embedded for schema version %d", len(out), SchemaVersion))
	}
	return out
}

// queryer is what inspect needs: a *sql.Conn or *sql.DB.
type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func foreign(reason string, err error) error {
	if err != nil {
		return fmt.Errorf("sqlite: %s: %w: %w", reason, backend.ErrForeignStore, err)
	}
	return fmt.Errorf("sqlite: %s: %w", reason, backend.ErrForeignStore)
}

// inspect reads (never writes) what the database holds. It returns 0 for an
// empty database (no schema objects, user_version and application_id 0),
// the wfstore schema version for ours, ErrForeignStore for anything else
// and *backend.SchemaVersionError for a version newer than this build.
func inspect(ctx context.Context, q queryer) (int64, error) {
	var objects int64
	if err := q.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&objects); err != nil {
		if sqliteCode(err) == sqlite3.SQLITE_NOTADB {
			return 0, foreign("file is not an SQLite database", err)
		}
		return 0, fmt.Errorf("sqlite: inspect schema: %w", err)
	}
	var hasMeta int64
	if err := q.QueryRowContext(ctx,
		"SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'wfstore_meta'").Scan(&hasMeta); err != nil {
		return 0, fmt.Errorf("sqlite: inspect schema: %w", err)
	}
	if hasMeta == 0 {
		if objects > 0 {
			return 0, foreign("database has tables but no wfstore_meta table", nil)
		}
		var uv, app int64
		if err := q.QueryRowContext(ctx, "PRAGMA user_version").Scan(&uv); err != nil {
			return 0, fmt.Errorf("sqlite: inspect user_version: %w", err)
		}
		if err := q.QueryRowContext(ctx, "PRAGMA application_id").Scan(&app); err != nil {
			return 0, fmt.Errorf("sqlite: inspect application_id: %w", err)
		}
		if uv != 0 || app != 0 {
			return 0, foreign(fmt.Sprintf("empty database with user_version %d, application_id %d", uv, app), nil)
		}
		return 0, nil
	}
	var store, version string
	err := q.QueryRowContext(ctx,
		"SELECT (SELECT value FROM wfstore_meta WHERE key = 'store'), (SELECT value FROM wfstore_meta WHERE key = 'schema_version')").
		Scan(&store, &version)
	if err != nil || store != "wfstore" {
		return 0, foreign("wfstore_meta does not describe a wfstore store", err)
	}
	v, err := strconv.ParseInt(version, 10, 64)
	if err != nil || v < 1 {
		return 0, foreign(fmt.Sprintf("wfstore_meta has schema version %q", version), err)
	}
	if v > SchemaVersion {
		return v, &backend.SchemaVersionError{Found: v, Supported: SchemaVersion}
	}
	return v, nil
}

// inspect retries inspect while another connection holds a lock that
// blocks reading (a writer converting a fresh file, for example).
func (b *Backend) inspect(ctx context.Context, q queryer) (v int64, err error) {
	err = b.retryBusy(ctx, "inspect", func() error {
		var ierr error
		v, ierr = inspect(ctx, q)
		return ierr
	})
	return v, err
}

// migrate brings the store to SchemaVersion inside BEGIN IMMEDIATE,
// re-inspecting under the write lock so that concurrent openers agree.
func (b *Backend) migrate(ctx context.Context, conn *sql.Conn) error {
	// A current store needs no write lock: opening it never waits for a
	// writer elsewhere.
	b.migratedFrom = SchemaVersion
	if v, err := b.inspect(ctx, conn); err != nil || v == SchemaVersion {
		return err
	}
	if err := b.retryBusy(ctx, "migrate: begin immediate", func() error {
		_, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE")
		return err
	}); err != nil {
		return err
	}
	err := func() error {
		v, err := inspect(ctx, conn)
		if err != nil {
			return err
		}
		if v == SchemaVersion {
			return nil
		}
		b.migratedFrom = v
		for i := v; i < SchemaVersion; i++ {
			if _, err := conn.ExecContext(ctx, migrations[i]); err != nil {
				return fmt.Errorf("sqlite: migration to version %d: %w", i+1, err)
			}
		}
		_, err = conn.ExecContext(ctx,
			"INSERT INTO wfstore_meta (key, value) VALUES ('store', 'wfstore'), ('schema_version', ?)"+
				" ON CONFLICT (key) DO UPDATE SET value = excluded.value",
			strconv.Itoa(SchemaVersion))
		if err != nil {
			return fmt.Errorf("sqlite: record schema version: %w", err)
		}
		return nil
	}()
	if err != nil {
		_, rerr := conn.ExecContext(context.Background(), "ROLLBACK")
		if rerr != nil && !isNoTransaction(rerr) {
			err = errors.Join(err, rerr)
		}
		return err
	}
	if err := b.retryBusy(ctx, "migrate: commit", func() error {
		_, err := conn.ExecContext(context.Background(), "COMMIT")
		return err
	}); err != nil {
		_, _ = conn.ExecContext(context.Background(), "ROLLBACK")
		return fmt.Errorf("sqlite: migrate: %w", err)
	}
	return nil
}
