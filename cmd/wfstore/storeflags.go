package main

import (
	"context"
	"errors"
	"flag"
	"fmt"

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

func (f *storeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.backend, "backend", "sqlite", "the store's backend: sqlite, postgres or bolt")
	fs.StringVar(&f.path, "db", "", "sqlite, bolt: the store's file")
	fs.StringVar(&f.dsn, "dsn", "", "postgres: connection string of the database")
	fs.StringVar(&f.schema, "schema", "", "postgres: the store's schema (default: the adapter's default)")
}

// check validates the combination of flags.
func (f *storeFlags) check() error {
	switch f.backend {
	case "sqlite", "bolt":
		if f.path == "" {
			return fmt.Errorf("--backend %s needs --db PATH", f.backend)
		}
		if f.dsn != "" || f.schema != "" {
			return fmt.Errorf("--dsn and --schema are for --backend postgres, not %s", f.backend)
		}
	case "postgres":
		if f.dsn == "" {
			return errors.New("--backend postgres needs --dsn")
		}
		if f.path != "" {
			return errors.New("--db is for the file backends (sqlite, bolt)")
		}
	default:
		return fmt.Errorf("unknown --backend %q (want sqlite, postgres or bolt)", f.backend)
	}
	return nil
}

// where names the store for messages (a DSN without its password).
func (f *storeFlags) where() string {
	if f.backend == "postgres" {
		s := postgres.RedactDSN(f.dsn)
		if f.schema != "" {
			s += " schema " + f.schema
		}
		return s
	}
	return f.path
}

// open opens the store in its default (durable) mode.
func (f *storeFlags) open(ctx context.Context) (backend.Backend, error) {
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
