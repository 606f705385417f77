package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"time"

	"go.etcd.io/bbolt"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/bolt"
	"github.com/wfstore/wfstore/sqlite"
	"github.com/wfstore/wfstore/workflow"
)

// backupper is an adapter with a native, consistent online copy, all or
// nothing, that runs checks on the copy before giving it its name.
type backupper interface {
	Backup(ctx context.Context, dst string, checks ...func(ctx context.Context, path string) error) error
}

func backupCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var sf storeFlags
	var to string
	fs := flag.NewFlagSet("backup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sf.register(fs)
	fs.StringVar(&to, "to", "", "the new file to write the copy to (must not exist)")
	fs.Usage = func() {
		fmt.Fprint(stderr, `wfstore backup: write a consistent copy of a store with the store's own tool.

SQLite uses VACUUM INTO and bbolt a read transaction's WriteTo; both run
while other processes keep working and give a complete store that wfstore
opens as it is. The copy is all or nothing: it is written to a temporary
file next to --to (".NAME.wfstore-backup-PID-RANDOM", mode 0600), fsynced,
checked through a read-only handle (the backend's integrity check, then
"wfstore verify"'s checks; a copy that cannot be read fails the backup, and
violations the source has too are reported), and only then given the name --to
(never over an existing file), and the folder is fsynced. If the command
is stopped, --to is absent or complete; the next backup to the same name
removes a killed run's temporary file. For Postgres use the server's own
tools (pg_dump -n <schema>, or a physical backup): they are made for it.

  wfstore backup --db wfstore-demo.db --to copy.db
  wfstore backup --backend bolt --db store.bolt --to copy.bolt

Flags:
`)
		fs.PrintDefaults()
	}
	if ok, err := parseFlags(fs, args, stderr); !ok {
		return err
	}
	if err := sf.check(); err != nil {
		return err
	}
	if sf.backend == "postgres" {
		return errors.New("postgres: use the server's own backup tools (pg_dump -n <schema>, or a physical backup); wfstore backup covers sqlite and bolt")
	}
	if to == "" {
		return errors.New("--to PATH is required")
	}
	p := newProgress(stderr, "backup")
	p.begin("copying "+sf.where()+" and verifying the copy", "")
	rep, err := backup(ctx, sf, to)
	p.finish()
	if err != nil {
		if ctx.Err() != nil {
			return &interruptedError{left: "no backup was written: " + to + " was not created and the partial copy, if any, was removed"}
		}
		return err
	}
	fmt.Fprintf(stdout, "wrote a consistent copy of %s to %s (verified before it got its name: %d runs checked, %d violations)\n",
		sf.where(), to, rep.Runs, len(rep.Violations))
	if !rep.OK() {
		fmt.Fprintf(stdout, "the copy has the source's invariant violations: wfstore verify --backend %s --db %s lists them\n", sf.backend, to)
	}
	return nil
}

// backup copies the store sf names to the new file to, and returns the
// Verify report of the copy, made read-only before the copy got its name.
// Violations do not fail the backup (a copy of a store with violations has
// them too, and is worth keeping); a copy Verify cannot read does.
func backup(ctx context.Context, sf storeFlags, to string) (rep workflow.VerifyReport, err error) {
	b, err := sf.openExisting(ctx)
	if errors.Is(err, errNeedsMigration) {
		return rep, fmt.Errorf("%w; to keep a copy of the old version, copy the file (cp) while no process has the store open", err)
	}
	if err != nil {
		return rep, err
	}
	defer b.Close()
	bk, ok := b.(backupper)
	if !ok {
		return rep, fmt.Errorf("the %s adapter has no native backup", sf.backend)
	}
	err = bk.Backup(ctx, to, func(ctx context.Context, path string) error {
		var err error
		rep, err = verifyReadOnly(ctx, sf.backend, path)
		return err
	})
	return rep, err
}

// verifyReadOnly runs the Store's Verify on the file store at path through
// a read-only handle: nothing can be written to it.
func verifyReadOnly(ctx context.Context, backendName, path string) (workflow.VerifyReport, error) {
	var b backend.Backend
	switch backendName {
	case "sqlite":
		abs, err := filepath.Abs(path)
		if err != nil {
			return workflow.VerifyReport{}, err
		}
		u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs),
			RawQuery: url.Values{"mode": {"ro"}, "immutable": {"1"}, "_pragma": {"query_only(1)"}}.Encode()}
		db, err := sql.Open("sqlite", u.String())
		if err != nil {
			return workflow.VerifyReport{}, err
		}
		defer db.Close()
		db.SetMaxOpenConns(2)
		sb, err := sqlite.OpenDB(ctx, db)
		if err != nil {
			return workflow.VerifyReport{}, err
		}
		b = sb
	case "bolt":
		db, err := bbolt.Open(path, 0, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
		if err != nil {
			return workflow.VerifyReport{}, err
		}
		defer db.Close()
		bb, err := bolt.OpenDB(ctx, db)
		if err != nil {
			return workflow.VerifyReport{}, err
		}
		b = bb
	default:
		return workflow.VerifyReport{}, fmt.Errorf("no read-only verify for %s", backendName)
	}
	defer b.Close()
	return workflow.New(b).Verify(ctx, workflow.VerifyOptions{})
}
