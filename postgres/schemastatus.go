package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
)

// SchemaStatus is a store's schema version next to the one this build
// writes. Found is 0 when the schema does not exist or is empty (Open would
// create the store in it).
type SchemaStatus struct {
	Found     int64
	Supported int64
}

// Current reports whether the store needs no migration.
func (s SchemaStatus) Current() bool { return s.Found == s.Supported }

// ReadSchemaStatus reports the schema version of the store in schema
// (DefaultSchema when empty), reading the catalog and the store's version
// row only: it writes nothing and takes no lock. A schema holding objects
// wfstore did not create fails with backend.ErrForeignStore; a store written
// by a newer version with a *backend.SchemaVersionError.
func ReadSchemaStatus(ctx context.Context, pool *pgxpool.Pool, schema string) (SchemaStatus, error) {
	st := SchemaStatus{Supported: SchemaVersion}
	if schema == "" {
		schema = DefaultSchema
	}
	if err := validSchema(schema); err != nil {
		return st, err
	}
	state, err := inspect(ctx, pool, schema)
	if err != nil {
		return st, err
	}
	_, from, err := state.verdict(schema)
	if err != nil {
		if state.hasRow {
			st.Found = state.version
		}
		return st, err
	}
	st.Found = from
	return st, nil
}

// Migrate brings the store in schema (DefaultSchema when empty) to
// SchemaVersion, creating it when the schema is missing or empty. It is
// what OpenPool does before it serves a store, done on its own so that an
// operator can migrate ahead of a deployment; concurrent migrators agree
// through an advisory lock and a compare-and-set of the version row. The
// returned Found is the version this call found once it held the lock, so
// exactly one of several concurrent migrators reports the old version: the
// others find SchemaVersion. The pool is the caller's and stays open.
func Migrate(ctx context.Context, pool *pgxpool.Pool, schema string) (SchemaStatus, error) {
	before, err := ReadSchemaStatus(ctx, pool, schema)
	if err != nil {
		return before, err
	}
	opts := []Option{}
	if schema != "" {
		opts = append(opts, WithSchema(schema))
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return before, err
	}
	found, err := ensureSchema(ctx, pool, cfg.schema, cfg.advisoryLock)
	if err != nil {
		return before, fmt.Errorf("postgres: migrate: %w", err)
	}
	b, err := OpenPool(ctx, pool, opts...)
	if err != nil {
		return before, fmt.Errorf("postgres: migrate: %w", err)
	}
	return SchemaStatus{Found: found, Supported: SchemaVersion}, b.Close()
}
