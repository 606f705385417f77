package bolt

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"go.etcd.io/bbolt"

	"github.com/wfstore/wfstore/internal/backupfile"
)

// Backup writes a consistent copy of the whole store to a new file at dst
// (bbolt's Tx.WriteTo inside one read transaction), while Updates go on.
// The copy is a complete wfstore store that Open accepts, holding every
// commit that finished before Backup began.
//
// It is all or nothing: the copy is written to a temporary file in dst's
// folder (".<name>.wfstore-backup-<pid>-<random>", mode 0600), fsynced,
// checked through a read-only bbolt handle (a wfstore store of this
// build's format whose pages pass bbolt's consistency check), and only then
// linked to dst, after which the folder is fsynced. Whenever the process
// stops, dst is either absent or complete; a failed Backup removes its
// temporary file, and the next Backup to dst removes those of killed ones.
// dst must not exist: Backup never overwrites a file (an error wrapping
// os.ErrExist). Each of checks runs, in order, on the checked copy at its
// temporary path before it is given the name dst (wfstore backup opens it
// read-only and runs the Store's Verify there); an error from one fails
// Backup, which removes the copy.
func (b *Backend) Backup(ctx context.Context, dst string, checks ...func(ctx context.Context, path string) error) (err error) {
	if err := b.enter(ctx, "backup"); err != nil {
		return err
	}
	abs, err := filepath.Abs(dst)
	if err != nil {
		return fmt.Errorf("bolt: backup to %s: %w", dst, err)
	}
	tmp, f, err := backupfile.Create(abs)
	if err != nil {
		return fmt.Errorf("bolt: backup to %s: %w", abs, err)
	}
	defer func() {
		if err != nil {
			backupfile.Remove(tmp)
		}
	}()
	err = b.db.View(func(tx *bbolt.Tx) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		_, err := tx.WriteTo(f)
		return err
	})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("bolt: backup to %s: %w", abs, err)
	}
	if err := checkCopy(tmp); err != nil {
		return fmt.Errorf("bolt: backup to %s: the copy fails its check: %w", abs, err)
	}
	for _, check := range checks {
		if err := check(ctx, tmp); err != nil {
			return fmt.Errorf("bolt: backup to %s: the copy fails its check: %w", abs, err)
		}
	}
	if err := backupfile.Publish(tmp, abs); err != nil {
		return fmt.Errorf("bolt: backup to %s: %w", abs, err)
	}
	return nil
}

// checkCopy opens the copy read-only and checks that it is a wfstore store
// this build reads and that bbolt's page check passes.
func checkCopy(path string) error {
	db, err := bbolt.Open(path, 0, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return err
	}
	defer db.Close()
	return db.View(func(tx *bbolt.Tx) error {
		st, _, err := inspect(tx)
		if err != nil {
			return err
		}
		if st == stateFresh {
			return errors.New("the copy holds no store")
		}
		var first error
		for err := range tx.Check() { // drained: Check's goroutine ends with the channel
			if first == nil {
				first = err
			}
		}
		return first
	})
}
