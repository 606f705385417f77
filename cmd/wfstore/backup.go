package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
)

// backupper is an adapter with a native, consistent online copy.
type backupper interface {
	Backup(ctx context.Context, dst string) error
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
checked through a read-only handle, and only then given the name --to
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
	if err := backup(ctx, sf, to); err != nil {
		if ctx.Err() != nil {
			return &interruptedError{left: "no backup was written: " + to + " was not created and the partial copy, if any, was removed"}
		}
		return err
	}
	fmt.Fprintf(stdout, "wrote a consistent copy of %s to %s\n", sf.where(), to)
	return nil
}

// backup copies the store sf names to the new file to.
func backup(ctx context.Context, sf storeFlags, to string) error {
	b, err := sf.openExisting(ctx)
	if err != nil {
		return err
	}
	defer b.Close()
	bk, ok := b.(backupper)
	if !ok {
		return fmt.Errorf("the %s adapter has no native backup", sf.backend)
	}
	return bk.Backup(ctx, to)
}
