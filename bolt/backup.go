package bolt

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"go.etcd.io/bbolt"
)

// Backup writes a consistent copy of the whole store to a new file at dst
// (bbolt's Tx.WriteTo inside one read transaction), while Updates go on.
// The copy is a complete wfstore store that Open accepts, holding every
// commit that finished before Backup began. dst must not exist: Backup never
// overwrites a file. The copy is fsynced before Backup returns; a failed
// Backup removes what it wrote.
func (b *Backend) Backup(ctx context.Context, dst string) (err error) {
	if err := b.enter(ctx, "backup"); err != nil {
		return err
	}
	abs, err := filepath.Abs(dst)
	if err != nil {
		return fmt.Errorf("bolt: backup to %s: %w", dst, err)
	}
	f, err := os.OpenFile(abs, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("bolt: backup to %s: %w", abs, err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("bolt: backup to %s: %w", abs, cerr)
		}
		if err != nil {
			os.Remove(abs)
		}
	}()
	err = b.db.View(func(tx *bbolt.Tx) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		_, err := tx.WriteTo(f)
		return err
	})
	if err != nil {
		return fmt.Errorf("bolt: backup to %s: %w", abs, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("bolt: backup to %s: sync: %w", abs, err)
	}
	return nil
}
