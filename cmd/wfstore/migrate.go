package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/wfstore/wfstore/postgres"
	"github.com/wfstore/wfstore/sqlite"
)

func migrateCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var sf storeFlags
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sf.register(fs)
	fs.Usage = func() {
		fmt.Fprint(stderr, `wfstore migrate: show or apply a store's schema migrations.

  wfstore migrate status [flags]   the store's schema version and this build's; writes nothing
  wfstore migrate up [flags]       migrate the store to this build's version (creating it if absent)

Opening a store migrates it too; "up" does it ahead of a deployment. A store
written by a newer wfstore, or a file or schema wfstore did not create, is
refused and left as it is. SQLite, Postgres and etcd have schema
migrations this command shows and applies (etcd's: one compare-and-set
transaction on the store's version key); a bbolt store of an older format
version is migrated by any writable open of it.

  wfstore migrate status --db wfstore-demo.db
  wfstore migrate up --backend postgres --dsn 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable'
  wfstore migrate status --backend etcd --endpoints http://127.0.0.1:2379 --prefix wfstore/

Flags:
`)
		fs.PrintDefaults()
	}
	if len(args) == 0 || (args[0] != "status" && args[0] != "up") {
		if len(args) > 0 && (args[0] == "-help" || args[0] == "-h" || args[0] == "--help") {
			fs.Usage()
			return nil
		}
		fs.Usage()
		return errUsage
	}
	verb := args[0]
	if ok, err := parseFlags(fs, args[1:], stderr); !ok {
		return err
	}
	if err := sf.check(); err != nil {
		return err
	}
	spec := sf.spec()
	if spec.migrate == nil {
		return unsupported(spec.noMigrate)
	}
	// before: the version read before migrating; found: the version
	// found under the migration lock (another migrator may have done the
	// work in between).
	before, found, supported, err := spec.migrate(ctx, &sf, verb == "up")
	if err != nil && ctx.Err() != nil {
		if verb == "status" {
			return &interruptedError{left: "nothing was written (status only reads the store)"}
		}
		return &interruptedError{left: "the migration is one transaction, so " + sf.where() +
			" is either as it was or fully migrated; \"wfstore migrate status\" shows which, and \"wfstore migrate up\" finishes it"}
	}
	if err != nil {
		return redactErr(err, sf.dsn)
	}
	switch {
	case verb == "status" && found == 0:
		fmt.Fprintf(stdout, "%s: no store yet (this build creates schema version %d)\n", sf.where(), supported)
	case verb == "status" && found == supported:
		fmt.Fprintf(stdout, "%s: schema version %d, current\n", sf.where(), found)
	case verb == "status":
		fmt.Fprintf(stdout, "%s: schema version %d; this build migrates it to %d (wfstore migrate up)\n", sf.where(), found, supported)
	case found == supported && before == 0:
		fmt.Fprintf(stdout, "%s: found the store already created at schema version %d (by another process while this one waited for the lock)\n", sf.where(), found)
	case found == supported && before != supported:
		fmt.Fprintf(stdout, "%s: found the store already migrated from schema version %d to %d (by another process while this one waited for the lock)\n", sf.where(), before, found)
	case found == supported:
		fmt.Fprintf(stdout, "%s: schema version %d, already current\n", sf.where(), found)
	case found == 0:
		fmt.Fprintf(stdout, "%s: created the store at schema version %d\n", sf.where(), supported)
	default:
		fmt.Fprintf(stdout, "%s: migrated from schema version %d to %d\n", sf.where(), found, supported)
	}
	return nil
}

func migrateSQLite(ctx context.Context, sf *storeFlags, up bool) (before, found, supported int64, err error) {
	st, err := sqlite.ReadSchemaStatus(ctx, sf.path)
	before = st.Found
	if up && err == nil {
		st, err = sqlite.Migrate(ctx, sf.path)
	}
	return before, st.Found, st.Supported, err
}

func migratePostgres(ctx context.Context, sf *storeFlags, up bool) (before, found, supported int64, err error) {
	pool, err := pgxpool.New(ctx, sf.dsn)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("connecting to %s: %w", redactDSN(sf.dsn), err)
	}
	defer pool.Close()
	st, err := postgres.ReadSchemaStatus(ctx, pool, sf.schema)
	before = st.Found
	if up && err == nil {
		st, err = postgres.Migrate(ctx, pool, sf.schema)
	}
	return before, st.Found, st.Supported, err
}
