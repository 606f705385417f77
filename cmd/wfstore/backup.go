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

etcd: the copy is the cluster's snapshot (etcd's Maintenance API: one
member's whole database at one revision, taken while the cluster keeps
working), written all or nothing the same way; before it gets its name
its SHA-256 trailer is checked and its database read: the store under
--prefix must be there, complete (no unfinished import) and of this
build's schema version. It holds every key of the cluster; restore it
with "etcdutl snapshot restore".

  wfstore backup --db wfstore-demo.db --to copy.db
  wfstore backup --backend bolt --db store.bolt --to copy.bolt
  wfstore backup --backend etcd --endpoints http://127.0.0.1:2379 --to cluster.snapshot

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
	spec := sf.spec()
	if spec.backup == nil {
		return unsupported(spec.noBackup)
	}
	if to == "" {
		return errors.New("--to PATH is required")
	}
	p := newProgress(stderr, "backup")
	p.begin("copying "+sf.where()+" and verifying the copy", "")
	res, err := spec.backup(ctx, &sf, to)
	p.finish()
	if err != nil {
		if ctx.Err() != nil {
			return &interruptedError{left: "no backup was written: " + to + " was not created and the partial copy, if any, was removed"}
		}
		return err
	}
	if res.report == nil {
		fmt.Fprintf(stdout, "wrote a consistent copy of %s to %s (%s)\n", sf.where(), to, res.summary)
		return nil
	}
	rep := *res.report
	fmt.Fprintf(stdout, "wrote a consistent copy of %s to %s (verified before it got its name: %d runs checked, %d violations)\n",
		sf.where(), to, rep.Runs, len(rep.Violations))
	if !rep.OK() {
		fmt.Fprintf(stdout, "the copy has the source's invariant violations: wfstore verify --backend %s --db %s lists them\n", sf.backend, to)
	}
	return nil
}

// backupFile copies the file store sf names to the new file to with the
// adapter's Backup, and returns the Verify report of the copy, made
// read-only before the copy got its name. Violations do not fail the
// backup (a copy of a store with violations has them too, and is worth
// keeping); a copy Verify cannot read does.
func backupFile(ctx context.Context, sf *storeFlags, to string) (backupResult, error) {
	b, err := sf.openExisting(ctx)
	if errors.Is(err, errNeedsMigration) {
		return backupResult{}, fmt.Errorf("%w; to keep a copy of the old version, copy the file (cp) while no process has the store open", err)
	}
	if err != nil {
		return backupResult{}, err
	}
	defer b.Close()
	bk, ok := b.(backupper)
	if !ok {
		return backupResult{}, fmt.Errorf("the %s adapter has no native backup", sf.backend)
	}
	var rep workflow.VerifyReport
	err = bk.Backup(ctx, to, func(ctx context.Context, path string) error {
		var err error
		rep, err = verifyReadOnly(ctx, sf.backend, path)
		return err
	})
	return backupResult{report: &rep}, err
}

// verifyReadOnly runs the Store's Verify on the file store at path through
// a read-only handle (the row's openCopy): nothing can be written to it.
func verifyReadOnly(ctx context.Context, backendName, path string) (workflow.VerifyReport, error) {
	spec, ok := lookupBackend(backendName)
	if !ok || spec.openCopy == nil {
		return workflow.VerifyReport{}, fmt.Errorf("no read-only verify for %s", backendName)
	}
	b, closeCopy, err := spec.openCopy(ctx, path)
	if err != nil {
		return workflow.VerifyReport{}, err
	}
	defer closeCopy()
	defer b.Close()
	return workflow.New(b).Verify(ctx, workflow.VerifyOptions{})
}

// openSQLiteCopy opens the SQLite file at path read-only and immutable.
func openSQLiteCopy(ctx context.Context, path string) (backend.Backend, func(), error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, nil, err
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs),
		RawQuery: url.Values{"mode": {"ro"}, "immutable": {"1"}, "_pragma": {"query_only(1)"}}.Encode()}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return nil, nil, err
	}
	db.SetMaxOpenConns(2)
	sb, err := sqlite.OpenDB(ctx, db)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return sb, func() { db.Close() }, nil
}

// openBoltCopy opens the bbolt file at path read-only.
func openBoltCopy(ctx context.Context, path string) (backend.Backend, func(), error) {
	db, err := bbolt.Open(path, 0, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return nil, nil, err
	}
	bb, err := bolt.OpenDB(ctx, db)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return bb, func() { db.Close() }, nil
}
