package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/bolt"
	"github.com/wfstore/wfstore/postgres"
	"github.com/wfstore/wfstore/sqlite"
)

// storeFlags are the flags every operator command takes to name a store.
type storeFlags struct {
	backend string
	path    string
	dsn     string
	schema  string
}

// backends are the values --backend takes.
const backendValues = "sqlite, postgres or bolt"

func (f *storeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.backend, "backend", "sqlite", "the store's backend: "+backendValues)
	fs.StringVar(&f.path, "db", "", "sqlite, bolt: the store's file")
	fs.StringVar(&f.dsn, "dsn", "", "postgres: connection string of the database")
	fs.StringVar(&f.schema, "schema", "", "postgres: the store's schema (default: the adapter's default)")
}

// check validates the combination of flags; what it refuses is a usage
// error (exit status 2).
func (f *storeFlags) check() error {
	switch f.backend {
	case "sqlite", "bolt":
		if f.path == "" {
			return usageErrorf("--backend %s needs --db PATH", f.backend)
		}
		if f.dsn != "" || f.schema != "" {
			return usageErrorf("--dsn and --schema are for --backend postgres, not %s", f.backend)
		}
	case "postgres":
		if f.dsn == "" {
			return usageErrorf("--backend postgres needs --dsn")
		}
		if f.path != "" {
			return usageErrorf("--db is for the file backends (sqlite, bolt)")
		}
	default:
		return usageErrorf("unknown --backend %q (valid values: %s)", f.backend, backendValues)
	}
	return nil
}

// where names the store for messages (a DSN without its password).
func (f *storeFlags) where() string {
	if f.backend == "postgres" {
		s := redactDSN(f.dsn)
		if f.schema != "" {
			s += " schema " + f.schema
		}
		return s
	}
	return f.path
}

// open opens the store in its default (durable) mode, creating it when it
// does not exist. Only commands that write (migrate up, import, prune, the
// demo) open a store this way; the others use openExisting.
func (f *storeFlags) open(ctx context.Context) (backend.Backend, error) {
	b, err := f.openAdapter(ctx)
	return b, redactErr(err, f.dsn)
}

func (f *storeFlags) openAdapter(ctx context.Context) (backend.Backend, error) {
	switch f.backend {
	case "sqlite":
		return sqlite.Open(ctx, f.path)
	case "bolt":
		return bolt.Open(ctx, f.path)
	case "postgres":
		var opts []postgres.Option
		if f.schema != "" {
			opts = append(opts, postgres.WithSchema(f.schema))
		}
		return postgres.Open(ctx, f.dsn, opts...)
	}
	return nil, fmt.Errorf("unknown backend %q", f.backend)
}

// errNoStore: a command that only reads was pointed at a file or schema
// that holds no store.
var errNoStore = errors.New("no wfstore store")

// openExisting opens the store for a command that only reads it (verify,
// inspect, backup, the source of export). It never creates a store: a file
// that does not exist or is empty, and a Postgres schema that does not
// exist or holds no store, are refused with an error wrapping errNoStore
// that names the path or schema, and nothing is written. Nor does it
// migrate one: an SQLite or Postgres store of an older schema version is
// refused with an error wrapping errNeedsMigration. A path that is not a regular
// file (a directory, a FIFO, a device) is refused at once, without opening
// it.
func (f *storeFlags) openExisting(ctx context.Context) (backend.Backend, error) {
	switch f.backend {
	case "sqlite", "bolt":
		fi, err := os.Stat(f.path)
		switch {
		case errors.Is(err, os.ErrNotExist):
			return nil, fmt.Errorf("%w at %q: the file does not exist (check the path; this command never creates a store)", errNoStore, f.path)
		case err != nil:
			return nil, err // names the path
		case !fi.Mode().IsRegular():
			return nil, fmt.Errorf("%w at %q: not a regular file (%s)", errNoStore, f.path, fileKind(fi.Mode()))
		case fi.Size() == 0:
			return nil, fmt.Errorf("%w at %q: the file is empty", errNoStore, f.path)
		}
		if f.backend == "sqlite" {
			st, err := sqlite.ReadSchemaStatus(ctx, f.path)
			if err != nil {
				return nil, err // names the path
			}
			if err := needsMigration(f.where(), st.Found, st.Supported); err != nil {
				return nil, err
			}
		}
	case "postgres":
		if err := f.checkSchemaHasStore(ctx); err != nil {
			return nil, redactErr(err, f.dsn)
		}
	}
	return f.open(ctx)
}

// checkSchemaHasStore refuses a schema that does not exist or is empty,
// reading the catalog only.
func (f *storeFlags) checkSchemaHasStore(ctx context.Context) error {
	pool, err := pgxpool.New(ctx, f.dsn)
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", redactDSN(f.dsn), err)
	}
	defer pool.Close()
	st, err := postgres.ReadSchemaStatus(ctx, pool, f.schema)
	if err != nil {
		return fmt.Errorf("%s: %w", f.where(), err)
	}
	if st.Found > 0 {
		return needsMigration(f.where(), st.Found, st.Supported)
	}
	schema := f.schema
	if schema == "" {
		schema = postgres.DefaultSchema
	}
	var exists bool
	if err := pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", schema).Scan(&exists); err != nil {
		return fmt.Errorf("%s: %w", f.where(), err)
	}
	why := "the schema does not exist"
	if exists {
		why = "the schema is empty"
	}
	return fmt.Errorf("%w at %s schema %q: %s (check --dsn and --schema; this command never creates a store)", errNoStore, redactDSN(f.dsn), schema, why)
}

// errNeedsMigration: a command that only reads was pointed at a store of
// an older schema version, which opening would migrate.
var errNeedsMigration = errors.New("the store needs a migration")

func needsMigration(where string, found, supported int64) error {
	if found == 0 || found >= supported {
		return nil
	}
	return fmt.Errorf("%w: %s is at schema version %d and this build reads %d; this command writes nothing, so run \"wfstore migrate up\" first",
		errNeedsMigration, where, found, supported)
}

// fileKind names a non-regular file's type for messages.
func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return m.Type().String()
}
