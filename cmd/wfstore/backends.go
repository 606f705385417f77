package main

import (
	"context"
	"errors"
	"strings"

	"github.com/wfstore/wfstore/backend"
	wfbench "github.com/wfstore/wfstore/bench"
	"github.com/wfstore/wfstore/bolt"
	"github.com/wfstore/wfstore/conformance"
	"github.com/wfstore/wfstore/postgres"
	"github.com/wfstore/wfstore/sqlite"
	"github.com/wfstore/wfstore/workflow"
)

// This file is the one table of the backends the operator commands know:
// every command that names a store (--backend) takes its valid values, its
// flags, and how to open, migrate, back up and import into a store from
// here. Adding a backend is adding a row.

// locator is the kind of flags that name a store of a backend.
type locator int

const (
	byFile locator = iota // --db PATH
	byDSN                 // --dsn, --schema
	byEtcd                // --endpoints, --prefix, --max-txn-ops
)

// backendSpec is one backend: its name and what the commands do with it.
type backendSpec struct {
	name string
	loc  locator

	// open opens the store read-write, creating it when absent (and
	// migrating an older one). Commands that write use it.
	open func(ctx context.Context, f *storeFlags) (backend.Backend, error)
	// checkExisting refuses, without writing anything, a location that
	// holds no store (errNoStore), a store of an older schema version
	// (errNeedsMigration) or one an import left unfinished
	// (errImportUnfinished); openExisting then opens it with open.
	checkExisting func(ctx context.Context, f *storeFlags) error

	// openCopy opens a file copy of a store (a backup) read-only: nothing
	// can be written through it. The func closes what it opened under the
	// Backend. Nil for backends that are not files.
	openCopy func(ctx context.Context, path string) (backend.Backend, func(), error)

	// migrate reads the store's schema status, and with up migrates it
	// (creating it when absent): before is the version read first, found
	// the version found when migrating (another process may have migrated
	// in between), supported this build's. Nil when the backend has no
	// migration this command applies; noMigrate says why.
	migrate   func(ctx context.Context, f *storeFlags, up bool) (before, found, supported int64, err error)
	noMigrate string

	// backup writes a consistent copy of the store to the new file to;
	// nil when the backend has none, and noBackup says what to use.
	backup   func(ctx context.Context, f *storeFlags, to string) (backupResult, error)
	noBackup string

	// importInto loads a checked stream into the (empty or absent) store.
	importInto func(ctx context.Context, f *storeFlags, st *checkedStream) error

	// harness, when set, is the conformance harness "wfstore conform"
	// certifies the backend with, making its stores where tg says.
	harness func(tg conformTarget) (conformance.Harness, error)

	// benchTarget is the backend's "wfstore bench" target, or why it is
	// skipped.
	benchTarget func(benchSettings) (wfbench.Target, string)

	// maxWrites, when set, bounds the records one transaction may write
	// (etcd: a transaction holds at most --max-txn-ops operations).
	maxWrites func(f *storeFlags) int
}

// writeBatch is the default number of records a command that writes in
// batches (prune) puts in one transaction: 0 (the library's default)
// unless the backend bounds it.
func (s *backendSpec) writeBatch(f *storeFlags) int {
	if s.maxWrites == nil {
		return 0
	}
	return s.maxWrites(f)
}

// backupResult is what a backup checked on its copy before naming it.
type backupResult struct {
	// report is "wfstore verify"'s report of the copy (file backends).
	report *workflow.VerifyReport
	// summary describes the copy in one line, for backends whose copy
	// is not a store the commands open as it is.
	summary string
}

// backends is the table, in the order usage messages list them. (It is
// set in init: its functions refer back to it.)
var backends []backendSpec

func init() { backends = backendTable() }

func backendTable() []backendSpec {
	return []backendSpec{
		{
			name: "sqlite", loc: byFile,
			open: func(ctx context.Context, f *storeFlags) (backend.Backend, error) {
				return sqlite.Open(ctx, f.path)
			},
			checkExisting: func(ctx context.Context, f *storeFlags) error {
				if err := checkStoreFile(f.path); err != nil {
					return err
				}
				st, err := sqlite.ReadSchemaStatus(ctx, f.path)
				if err != nil {
					return err // names the path
				}
				return needsMigration(f.where(), st.Found, st.Supported)
			},
			openCopy:    openSQLiteCopy,
			migrate:     migrateSQLite,
			backup:      backupFile,
			importInto:  importFile,
			harness:     sqliteHarness,
			benchTarget: benchSQLite,
		},
		{
			name: "postgres", loc: byDSN,
			open: func(ctx context.Context, f *storeFlags) (backend.Backend, error) {
				var opts []postgres.Option
				if f.schema != "" {
					opts = append(opts, postgres.WithSchema(f.schema))
				}
				return postgres.Open(ctx, f.dsn, opts...)
			},
			checkExisting: func(ctx context.Context, f *storeFlags) error { return f.checkSchemaHasStore(ctx) },
			migrate:       migratePostgres,
			noBackup:      "postgres: use the server's own backup tools (pg_dump -n <schema>, or a physical backup); wfstore backup covers sqlite, bolt and etcd",
			importInto:    importOpened,
			harness:       postgresHarness,
			benchTarget:   benchPostgres,
		},
		{
			name: "bolt", loc: byFile,
			open: func(ctx context.Context, f *storeFlags) (backend.Backend, error) {
				return bolt.Open(ctx, f.path)
			},
			checkExisting: func(_ context.Context, f *storeFlags) error { return checkStoreFile(f.path) },
			openCopy:      openBoltCopy,
			noMigrate:     "bolt stores are migrated by any writable open of them, not by this command; opening one checks its format version",
			backup:        backupFile,
			importInto:    importFile,
			harness:       boltHarness,
			benchTarget:   benchBolt,
		},
		{
			name: "etcd", loc: byEtcd,
			open:          openEtcd,
			checkExisting: checkEtcdStore,
			migrate:       migrateEtcd,
			backup:        backupEtcd,
			importInto:    importEtcd,
			maxWrites:     etcdRecordsPerTxn,
			harness:       etcdHarness,
			benchTarget:   benchEtcd,
		},
	}
}

// conformable are the rows "wfstore conform" certifies.
func conformable(s *backendSpec) bool { return s.harness != nil }

// lookupBackend returns the row named name.
func lookupBackend(name string) (*backendSpec, bool) {
	for i := range backends {
		if backends[i].name == name {
			return &backends[i], true
		}
	}
	return nil, false
}

// backendNames lists the names of the rows keep accepts, for messages:
// "a, b or c".
func backendNames(keep func(*backendSpec) bool) string {
	var names []string
	for i := range backends {
		if keep == nil || keep(&backends[i]) {
			names = append(names, backends[i].name)
		}
	}
	return orList(names)
}

// namesWith lists the names of the backends named by loc.
func namesWith(loc locator) string {
	return backendNames(func(s *backendSpec) bool { return s.loc == loc })
}

func orList(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// errUnknownBackend is a --backend no row names.
func errUnknownBackend(name string, keep func(*backendSpec) bool) error {
	return usageErrorf("unknown --backend %q (valid values: %s)", name, backendNames(keep))
}

// errNoSupport: the backend cannot do what the command asks. Errors that
// wrap it say why and what to use instead.
var errNoSupport = errors.New("not supported for this backend")

// unsupportedError is an errNoSupport whose message is the reason alone.
type unsupportedError struct{ why string }

func (e *unsupportedError) Error() string        { return e.why }
func (e *unsupportedError) Is(target error) bool { return target == errNoSupport }

// unsupported returns an error wrapping errNoSupport that reads why.
func unsupported(why string) error { return &unsupportedError{why: why} }
