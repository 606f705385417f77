package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"

	"github.com/wfstore/wfstore/internal/backupfile"
)

// Backup writes a consistent copy of the whole store to a new SQLite file
// at dst (SQLite's VACUUM INTO), while other transactions go on. The copy
// is a complete wfstore store that Open accepts; it holds every commit that
// finished before Backup began and none that started after.
//
// It is all or nothing: the copy is written to a temporary file in dst's
// folder (".<name>.wfstore-backup-<pid>-<random>", mode 0600), fsynced,
// checked through a read-only connection (a wfstore store of this build's
// schema that passes SQLite's integrity check), and only then linked to
// dst, after which the folder is fsynced. Whenever the process stops, dst
// is either absent or complete; a failed Backup removes its temporary
// file, and the next Backup to dst removes those of killed ones. dst must
// not exist: Backup never overwrites a file (an error wrapping
// os.ErrExist). Each of checks runs, in order, on the checked copy at its
// temporary path before it is given the name dst (wfstore backup opens it
// read-only and runs the Store's Verify there); an error from one fails
// Backup, which removes the copy.
func (b *Backend) Backup(ctx context.Context, dst string, checks ...func(ctx context.Context, path string) error) (err error) {
	if err := b.enter(); err != nil {
		return err
	}
	defer b.ops.Done()
	abs, err := filepath.Abs(dst)
	if err != nil {
		return fmt.Errorf("sqlite: backup to %s: %w", dst, err)
	}
	tmp, f, err := backupfile.Create(abs)
	if err != nil {
		return fmt.Errorf("sqlite: backup to %s: %w", abs, err)
	}
	// VACUUM INTO fills an empty file and keeps its mode.
	if err := f.Close(); err != nil {
		backupfile.Remove(tmp)
		return fmt.Errorf("sqlite: backup to %s: %w", abs, err)
	}
	defer func() {
		if err != nil {
			backupfile.Remove(tmp)
		}
	}()
	if b.viewOnWriter {
		if err := b.lockWriter(ctx); err != nil {
			return err
		}
		if b.w.broken {
			if err := b.reconnect(ctx); err != nil {
				b.unlockWriter()
				return err
			}
		}
		_, err = b.w.conn.ExecContext(ctx, "VACUUM INTO ?", tmp)
		b.unlockWriter()
	} else {
		err = vacuumInto(ctx, b.rdb, tmp)
	}
	if err != nil {
		return fmt.Errorf("sqlite: backup to %s: %w", abs, err)
	}
	if err := checkCopy(ctx, tmp); err != nil {
		return fmt.Errorf("sqlite: backup to %s: the copy fails its check: %w", abs, err)
	}
	for _, check := range checks {
		if err := check(ctx, tmp); err != nil {
			return fmt.Errorf("sqlite: backup to %s: the copy fails its check: %w", abs, err)
		}
	}
	if err := backupfile.Publish(tmp, abs); err != nil {
		return fmt.Errorf("sqlite: backup to %s: %w", abs, err)
	}
	return nil
}

// checkCopy opens the copy read-only and checks that it is a wfstore store
// this build reads and that SQLite's integrity check passes.
func checkCopy(ctx context.Context, path string) error {
	// immutable: no lock, no -shm or -wal file next to the copy.
	db, err := sql.Open("sqlite", fileURI(path, pragmas(url.Values{"mode": {"ro"}, "immutable": {"1"}}, "query_only(1)")))
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	v, err := inspect(ctx, db)
	if err != nil {
		return err
	}
	if v == 0 {
		return errors.New("the copy holds no store")
	}
	var res string
	if err := db.QueryRowContext(ctx, "PRAGMA integrity_check(1)").Scan(&res); err != nil {
		return err
	}
	if res != "ok" {
		return fmt.Errorf("integrity check: %s", res)
	}
	return nil
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
