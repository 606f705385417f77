package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
)

// SchemaStatus is a store's schema version next to the one this build
// writes. Found is 0 for a file that does not exist or is an empty
// database (Open would create the schema).
type SchemaStatus struct {
	Found     int64
	Supported int64
}

// Current reports whether the store needs no migration.
func (s SchemaStatus) Current() bool { return s.Found == s.Supported }

// ReadSchemaStatus reports the schema version of the store in the file at
// path, reading it through a read-only connection: it never creates,
// changes or locks the file for writing. A foreign file fails with
// backend.ErrForeignStore; a store written by a newer version fails with a
// *backend.SchemaVersionError (and the status says what was found).
func ReadSchemaStatus(ctx context.Context, path string) (SchemaStatus, error) {
	st := SchemaStatus{Supported: SchemaVersion}
	abs, err := filepath.Abs(path)
	if err != nil {
		return st, fmt.Errorf("sqlite: schema status of %s: %w", path, err)
	}
	if fi, err := os.Stat(abs); errors.Is(err, os.ErrNotExist) {
		return st, nil
	} else if err != nil {
		return st, fmt.Errorf("sqlite: schema status of %s: %w", abs, err)
	} else if fi.IsDir() {
		return st, fmt.Errorf("sqlite: schema status of %s: is a directory", abs)
	} else if !fi.Mode().IsRegular() {
		return st, fmt.Errorf("sqlite: schema status of %s: not a regular file (%v)", abs, fi.Mode().Type())
	}
	db, err := sql.Open("sqlite", fileURI(abs, pragmas(url.Values{"mode": {"ro"}},
		fmt.Sprintf("busy_timeout(%d)", readerBusyTimeoutMS), "query_only(1)")))
	if err != nil {
		return st, fmt.Errorf("sqlite: schema status of %s: %w", abs, err)
	}
	defer db.Close()
	b := newBackend(defaultConfig())
	v, err := b.inspect(ctx, db)
	st.Found = v
	if err != nil {
		return st, fmt.Errorf("sqlite: schema status of %s: %w", abs, err)
	}
	return st, nil
}

// Migrate brings the store in the file at path to SchemaVersion (creating
// it when the file does not exist). It is what Open does before it serves a
// store, done on its own so that an operator can migrate ahead of a
// deployment; it is safe while other processes open the same file. A
// foreign or newer store is refused without writing to it. The returned
// Found is the version this call found once it held the write lock, so
// exactly one of several concurrent migrators reports the old version: the
// others find SchemaVersion.
func Migrate(ctx context.Context, path string, opts ...Option) (SchemaStatus, error) {
	before, err := ReadSchemaStatus(ctx, path)
	if err != nil {
		return before, err
	}
	b, err := Open(ctx, path, opts...)
	if err != nil {
		return before, err
	}
	return SchemaStatus{Found: b.migratedFrom, Supported: SchemaVersion}, b.Close()
}
