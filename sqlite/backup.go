package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Backup writes a consistent copy of the whole store to a new SQLite file
// at dst (SQLite's VACUUM INTO), while other transactions go on. The copy
// is a complete wfstore store that Open accepts; it holds every commit that
// finished before Backup began and none that started after. dst must not
// exist: Backup never overwrites a file. The copy is written with the
// durability of a normal SQLite write and fsynced before Backup returns.
func (b *Backend) Backup(ctx context.Context, dst string) error {
	if err := b.enter(); err != nil {
		return err
	}
	defer b.ops.Done()
	abs, err := filepath.Abs(dst)
	if err != nil {
		return fmt.Errorf("sqlite: backup to %s: %w", dst, err)
	}
	if _, err := os.Lstat(abs); err == nil {
		return fmt.Errorf("sqlite: backup to %s: %w", abs, os.ErrExist)
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("sqlite: backup to %s: %w", abs, err)
	}
	if b.viewOnWriter {
		if err := b.lockWriter(ctx); err != nil {
			return err
		}
		defer b.unlockWriter()
		if b.w.broken {
			if err := b.reconnect(ctx); err != nil {
				return err
			}
		}
		_, err = b.w.conn.ExecContext(ctx, "VACUUM INTO ?", abs)
	} else {
		err = vacuumInto(ctx, b.rdb, abs)
	}
	if err != nil {
		return fmt.Errorf("sqlite: backup to %s: %w", abs, err)
	}
	return syncFile(abs)
}

// vacuumInto runs VACUUM INTO on one reader connection. Our readers are
// query_only, which would make the copy read-only too, so the connection is
// made writable for the statement and restored afterwards (or discarded
// when it cannot be).
func vacuumInto(ctx context.Context, db *sql.DB, abs string) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var queryOnly int
	if err := conn.QueryRowContext(ctx, "PRAGMA query_only").Scan(&queryOnly); err != nil {
		return err
	}
	if queryOnly != 0 {
		if _, err := conn.ExecContext(ctx, "PRAGMA query_only(0)"); err != nil {
			return err
		}
		defer func() {
			if _, err := conn.ExecContext(context.Background(), "PRAGMA query_only(1)"); err != nil {
				// Never hand a writable connection back to the reader pool.
				_ = conn.Raw(func(any) error { return driver.ErrBadConn })
			}
		}()
	}
	_, err = conn.ExecContext(ctx, "VACUUM INTO ?", abs)
	return err
}

// syncFile fsyncs the file at path and its directory entry.
func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("sqlite: backup: sync %s: %w", path, err)
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sqlite: backup: sync %s: %w", path, err)
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync() // best effort: not every filesystem syncs directories
		d.Close()
	}
	return nil
}
