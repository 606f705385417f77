package main

import (
	"context"
	"errors"
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
refused and left as it is. SQLite and Postgres have schema migrations this
command shows and applies; a bbolt store of an older format version is
migrated by any writable open of it.

  wfstore migrate status --db wfstore-demo.db
  wfstore migrate up --backend postgres --dsn 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable'

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
	var found, supported int64
	var err error
	switch sf.backend {
	case "bolt":
		return errors.New("bolt stores are migrated by any writable open of them, not by this command; opening one checks its format version")
	case "sqlite":
		var st sqlite.SchemaStatus
		if verb == "status" {
			st, err = sqlite.ReadSchemaStatus(ctx, sf.path)
		} else {
			st, err = sqlite.Migrate(ctx, sf.path)
		}
		found, supported = st.Found, st.Supported
	case "postgres":
		pool, perr := pgxpool.New(ctx, sf.dsn)
		if perr != nil {
			return fmt.Errorf("connecting to %s: %w", postgres.RedactDSN(sf.dsn), perr)
		}
		defer pool.Close()
		var st postgres.SchemaStatus
		if verb == "status" {
			st, err = postgres.ReadSchemaStatus(ctx, pool, sf.schema)
		} else {
			st, err = postgres.Migrate(ctx, pool, sf.schema)
		}
		found, supported = st.Found, st.Supported
	}
	if err != nil {
		return err
	}
	switch {
	case verb == "status" && found == 0:
		fmt.Fprintf(stdout, "%s: no store yet (this build creates schema version %d)\n", sf.where(), supported)
	case verb == "status" && found == supported:
		fmt.Fprintf(stdout, "%s: schema version %d, current\n", sf.where(), found)
	case verb == "status":
		fmt.Fprintf(stdout, "%s: schema version %d; this build migrates it to %d (wfstore migrate up)\n", sf.where(), found, supported)
	case found == supported:
		fmt.Fprintf(stdout, "%s: schema version %d, already current\n", sf.where(), found)
	case found == 0:
		fmt.Fprintf(stdout, "%s: created the store at schema version %d\n", sf.where(), supported)
	default:
		fmt.Fprintf(stdout, "%s: migrated from schema version %d to %d\n", sf.where(), found, supported)
	}
	return nil
}
