package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/etcd"
	"github.com/wfstore/wfstore/postgres"
)

// storeFlags are the flags every operator command takes to name a store.
// Which of them a backend needs is its row's locator (backends.go).
type storeFlags struct {
	backend string
	path    string
	dsn     string
	schema  string
	// etcd
	endpoints string
	prefix    string
	maxTxnOps int
}

func (f *storeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.backend, "backend", "sqlite", "the store's backend: "+backendNames(nil))
	fs.StringVar(&f.path, "db", "", namesWith(byFile)+": the store's file")
	fs.StringVar(&f.dsn, "dsn", "", namesWith(byDSN)+": connection string of the database")
	fs.StringVar(&f.schema, "schema", "", namesWith(byDSN)+": the store's schema (default: the adapter's default)")
	fs.StringVar(&f.endpoints, "endpoints", "", namesWith(byEtcd)+": the cluster's client URLs, comma-separated")
	fs.StringVar(&f.prefix, "prefix", etcd.DefaultPrefix, namesWith(byEtcd)+": the key prefix of the store")
	fs.IntVar(&f.maxTxnOps, "max-txn-ops", etcd.DefaultMaxTxnOps, namesWith(byEtcd)+": the cluster's --max-txn-ops (the most operations one transaction may hold)")
}

// spec is the row of f.backend; check has accepted it.
func (f *storeFlags) spec() *backendSpec {
	s, ok := lookupBackend(f.backend)
	if !ok {
		panic("wfstore: storeFlags used before check: backend " + f.backend)
	}
	return s
}

// check validates the combination of flags; what it refuses is a usage
// error (exit status 2).
func (f *storeFlags) check() error {
	s, ok := lookupBackend(f.backend)
	if !ok {
		return errUnknownBackend(f.backend, nil)
	}
	var foreign []string
	if s.loc != byFile && f.path != "" {
		foreign = append(foreign, "--db is for "+namesWith(byFile))
	}
	if s.loc != byDSN && (f.dsn != "" || f.schema != "") {
		foreign = append(foreign, "--dsn and --schema are for --backend "+namesWith(byDSN))
	}
	if s.loc != byEtcd && (f.endpoints != "" || f.prefix != etcd.DefaultPrefix || f.maxTxnOps != etcd.DefaultMaxTxnOps) {
		foreign = append(foreign, "--endpoints, --prefix and --max-txn-ops are for --backend "+namesWith(byEtcd))
	}
	if len(foreign) > 0 {
		return usageErrorf("%s, not %s", strings.Join(foreign, "; "), f.backend)
	}
	switch s.loc {
	case byFile:
		if f.path == "" {
			return usageErrorf("--backend %s needs --db PATH", f.backend)
		}
	case byDSN:
		if f.dsn == "" {
			return usageErrorf("--backend %s needs --dsn", f.backend)
		}
	case byEtcd:
		if len(f.endpointList()) == 0 {
			return usageErrorf("--backend %s needs --endpoints URL[,URL...]", f.backend)
		}
		if f.maxTxnOps < 1 {
			return usageErrorf("--max-txn-ops must be at least 1, not %d", f.maxTxnOps)
		}
	}
	return nil
}

// endpointList is --endpoints split at commas, without empty entries.
func (f *storeFlags) endpointList() []string {
	var eps []string
	for _, e := range strings.Split(f.endpoints, ",") {
		if e = strings.TrimSpace(e); e != "" {
			eps = append(eps, e)
		}
	}
	return eps
}

// where names the store for messages (a DSN without its password).
func (f *storeFlags) where() string {
	switch f.spec().loc {
	case byDSN:
		s := redactDSN(f.dsn)
		if f.schema != "" {
			s += " schema " + f.schema
		}
		return s
	case byEtcd:
		return fmt.Sprintf("etcd %s prefix %q", redactDSN(strings.Join(f.endpointList(), ",")), f.prefix)
	}
	return f.path
}

// open opens the store in its default (durable) mode, creating it when it
// does not exist. Only commands that write (migrate up, import, prune, the
// demo) open a store this way; the others use openExisting.
func (f *storeFlags) open(ctx context.Context) (backend.Backend, error) {
	b, err := f.spec().open(ctx, f)
	return b, redactErr(err, f.dsn)
}

// errNoStore: a command that only reads was pointed at a file, schema or
// prefix that holds no store.
var errNoStore = errors.New("no wfstore store")

// openExisting opens the store for a command that only reads it (verify,
// inspect, backup, the source of export) or changes what is there (the
// console). It never creates a store: a file that does not exist or is
// empty, a Postgres schema that does not exist or holds no store, and an
// etcd prefix that holds no key are refused with an error wrapping
// errNoStore that names the path, schema or prefix, and nothing is
// written. Nor does it migrate one: a store of an older schema version is
// refused with an error wrapping errNeedsMigration. An etcd prefix an
// import left unfinished is refused with an error wrapping
// errImportUnfinished. A path that is not a regular file (a directory, a
// FIFO, a device) is refused at once, without opening it.
func (f *storeFlags) openExisting(ctx context.Context) (backend.Backend, error) {
	if err := f.spec().checkExisting(ctx, f); err != nil {
		return nil, redactErr(err, f.dsn)
	}
	return f.open(ctx)
}

// checkStoreFile refuses a path that is not a non-empty regular file.
func checkStoreFile(path string) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%w at %q: the file does not exist (check the path; this command never creates a store)", errNoStore, path)
	case err != nil:
		return err // names the path
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%w at %q: not a regular file (%s)", errNoStore, path, fileKind(fi.Mode()))
	case fi.Size() == 0:
		return fmt.Errorf("%w at %q: the file is empty", errNoStore, path)
	}
	return nil
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
