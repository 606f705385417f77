package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/internal/groupcommit"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Backend is a wfstore store in one SQLite file. It implements
// backend.Backend; every method is safe for concurrent use.
type Backend struct {
	cfg config

	wdb      *sql.DB // writer pool of one connection (Open); nil for OpenDB
	rdb      *sql.DB // reader pool: ours (Open) or the caller's (OpenDB)
	ownsRDB  bool
	callerDB *sql.DB // OpenDB's handle, nil for Open

	// viewOnWriter: the caller's pool has room for one connection only, so
	// Views run on the writer connection under the writer lock.
	viewOnWriter bool

	wsem chan struct{} // the in-process writer lock; guards w
	// group queues Updates for group commit (group.go) when enabled.
	group *groupcommit.Queue[func(backend.Tx) error]
	w     *writer

	rstmts [numStmts]*sql.Stmt // prepared on rdb (unless viewOnWriter)

	mu      sync.Mutex
	closed  bool
	ops     sync.WaitGroup
	closing chan struct{}

	info    backend.Info
	restore []string // PRAGMAs restoring a caller's pinned connection
	// migratedFrom: the schema version setup found under the write lock
	// (SchemaVersion when there was nothing to migrate).
	migratedFrom int64
	stats        stats
}

// writer is the one connection every Update runs on.
type writer struct {
	conn  *sql.Conn
	stmts [numStmts]*sql.Stmt
	// partial: UPDATEs of a subset of a table's columns, prepared on first
	// use (see image.go).
	partial map[partialKey]*sql.Stmt
	// many: multi-row SELECTs, prepared on first use (see manyread.go).
	many map[manyKey]*sql.Stmt
	// writes: multi-row INSERTs and UPDATEs, prepared on the driver's
	// connection on first use (see writeStmt); nv and args are the lists
	// their runs bind, reused and cleared after each run.
	writes map[manyKey]driver.Stmt
	nv     []driver.NamedValue
	args   []any
	broken bool // a ROLLBACK failed: replace the connection before reuse
	// carried: the row images of the last committed Update, valid while
	// no other connection has committed (see image.go).
	carried carried
	// touchedHint: how many row keys the last committed Update touched
	// (the capacity the next one's list starts with).
	touchedHint int
}

var _ backend.Backend = (*Backend)(nil)

// fileURI returns an SQLite URI for an absolute path with query params.
func fileURI(abs string, params url.Values) string {
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: params.Encode()}
	return u.String()
}

func pragmas(p url.Values, list ...string) url.Values {
	for _, s := range list {
		p.Add("_pragma", s)
	}
	return p
}

// Open opens (creating it if needed) the store in the SQLite file at path.
// An existing file is first inspected read-only; a foreign file
// (backend.ErrForeignStore) or a newer schema (*backend.SchemaVersionError)
// is refused without writing to it, and so is a path that is not a regular
// file (a directory, a FIFO, a device), without opening it. A new file is
// created with mode 0600 (SQLite gives its -wal and -shm files the same
// mode); an existing file's mode is never changed.
func Open(ctx context.Context, path string, opts ...Option) (*Backend, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if path == "" {
		return nil, errors.New("sqlite: open: empty path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	if st, err := os.Stat(abs); err == nil {
		if st.IsDir() {
			return nil, fmt.Errorf("sqlite: open %s: is a directory", abs)
		}
		if !st.Mode().IsRegular() {
			return nil, fmt.Errorf("sqlite: open %s: not a regular file (%v)", abs, st.Mode().Type())
		}
		if err := newBackend(cfg).inspectFile(ctx, abs); err != nil {
			return nil, err
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("sqlite: open %s: %w", abs, err)
	} else if err := createPrivate(abs); err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", abs, err)
	}

	syncMode := cfg.synchronous()
	wdb, err := sql.Open("sqlite", fileURI(abs, pragmas(url.Values{},
		fmt.Sprintf("busy_timeout(%d)", writerBusyTimeoutMS),
		"synchronous("+syncMode+")")))
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", abs, err)
	}
	wdb.SetMaxOpenConns(1)
	wdb.SetMaxIdleConns(1)
	wdb.SetConnMaxLifetime(0)
	wdb.SetConnMaxIdleTime(0)

	b := newBackend(cfg)
	b.wdb = wdb
	if err := b.setup(ctx, true); err != nil {
		b.abort()
		return nil, &openError{path: abs, err: err}
	}

	rdb, err := sql.Open("sqlite", fileURI(abs, pragmas(url.Values{},
		fmt.Sprintf("busy_timeout(%d)", readerBusyTimeoutMS),
		"journal_mode(WAL)",
		"synchronous("+syncMode+")",
		"query_only(1)")))
	if err != nil {
		b.abort()
		return nil, fmt.Errorf("sqlite: open readers %s: %w", abs, err)
	}
	rdb.SetMaxOpenConns(cfg.readers)
	rdb.SetMaxIdleConns(cfg.readers)
	rdb.SetConnMaxLifetime(0)
	rdb.SetConnMaxIdleTime(0)
	b.rdb, b.ownsRDB = rdb, true
	if err := b.prepareReaders(ctx); err != nil {
		b.abort()
		return nil, &openError{path: abs, err: err}
	}
	b.info.Settings["path"] = abs
	return b, nil
}

// createPrivate creates the empty file at abs with mode 0600 (owner only:
// the store holds intents and receipts) before SQLite opens it, which
// would create it with 0644. A file another opener created meanwhile is
// left as it is.
func createPrivate(abs string) error {
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return fmt.Errorf("create: %w", pe.Err)
		}
		return err
	}
	return f.Close()
}

// openError names the file an Open failed on. It unwraps to the cause, so
// errors.Is and errors.As see through it.
type openError struct {
	path string
	err  error
}

func (e *openError) Error() string {
	return "sqlite: open " + e.path + ": " + strings.TrimPrefix(e.err.Error(), "sqlite: ")
}

func (e *openError) Unwrap() error { return e.err }

// inspectFile checks an existing file through a read-only connection.
func (b *Backend) inspectFile(ctx context.Context, abs string) error {
	db, err := sql.Open("sqlite", fileURI(abs, pragmas(url.Values{"mode": {"ro"}},
		fmt.Sprintf("busy_timeout(%d)", readerBusyTimeoutMS), "query_only(1)")))
	if err != nil {
		return fmt.Errorf("sqlite: inspect %s: %w", abs, err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err = b.inspect(ctx, db); err != nil {
		return &openError{path: abs, err: err}
	}
	return nil
}

// OpenDB opens the store in a database the caller already opened with this
// driver (modernc.org/sqlite). The handle is used as given and never
// closed: writes go through one *sql.Conn pinned from it, on which
// busy_timeout and synchronous are set (and restored by Close); reads use
// the rest of its pool. Give the pool room for at least two connections
// (SetMaxOpenConns 0 or >= 2) so that Views do not wait for writers. A
// ":memory:" database only works with SetMaxOpenConns(1), since every
// connection of a pool would see its own empty database otherwise.
func OpenDB(ctx context.Context, db *sql.DB, opts ...Option) (*Backend, error) {
	if db == nil {
		return nil, errors.New("sqlite: OpenDB: nil *sql.DB")
	}
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	b := newBackend(cfg)
	b.callerDB = db
	b.rdb = db
	b.viewOnWriter = db.Stats().MaxOpenConnections == 1
	if err := b.setup(ctx, false); err != nil {
		b.abort()
		return nil, err
	}
	if !b.viewOnWriter {
		if err := b.prepareReaders(ctx); err != nil {
			b.abort()
			return nil, err
		}
	}
	return b, nil
}

func newBackend(cfg config) *Backend {
	b := &Backend{
		cfg:     cfg,
		wsem:    make(chan struct{}, 1),
		closing: make(chan struct{}),
		info: backend.Info{
			Name:     "sqlite",
			Settings: map[string]string{},
		},
	}
	if cfg.groupCommit {
		b.group = &groupcommit.Queue[func(backend.Tx) error]{Lock: b.wsem, Max: maxGroup}
	}
	return b
}

// setup pins the writer connection, inspects the store (refusing before any
// write), switches it to WAL, migrates and prepares the writer statements.
func (b *Backend) setup(ctx context.Context, owned bool) error {
	db := b.wdb
	if !owned {
		db = b.callerDB
	}
	conn, err := b.pinWriter(ctx, db)
	if err != nil {
		return err
	}
	b.w = &writer{conn: conn}
	if _, err := b.inspect(ctx, conn); err != nil {
		return err
	}
	if !owned {
		var busy, syn, temp int64
		if err := conn.QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&busy); err != nil {
			return fmt.Errorf("sqlite: read busy_timeout: %w", err)
		}
		if err := conn.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&syn); err != nil {
			return fmt.Errorf("sqlite: read synchronous: %w", err)
		}
		if err := conn.QueryRowContext(ctx, "PRAGMA temp_store").Scan(&temp); err != nil {
			return fmt.Errorf("sqlite: read temp_store: %w", err)
		}
		b.restore = []string{
			"PRAGMA busy_timeout = " + strconv.FormatInt(busy, 10),
			"PRAGMA synchronous = " + strconv.FormatInt(syn, 10),
			"PRAGMA temp_store = " + strconv.FormatInt(temp, 10),
		}
	}
	if err := b.configureWriter(ctx, conn); err != nil {
		return err
	}

	var mode string
	if err := b.retryBusy(ctx, "set journal_mode=WAL", func() error {
		return conn.QueryRowContext(context.Background(), "PRAGMA journal_mode = WAL").Scan(&mode)
	}); err != nil {
		return fmt.Errorf("sqlite: journal_mode: %w", err)
	}
	mode = strings.ToLower(mode)
	if owned && mode != "wal" {
		return fmt.Errorf("sqlite: journal_mode is %q, want wal", mode)
	}
	if err := b.migrate(ctx, conn); err != nil {
		return err
	}
	if err := b.prepare(ctx, b.w); err != nil {
		return err
	}

	var version string
	var syn int64
	if err := conn.QueryRowContext(ctx, "SELECT sqlite_version()").Scan(&version); err != nil {
		return fmt.Errorf("sqlite: sqlite_version: %w", err)
	}
	if err := b.retrySetup(ctx, "read synchronous", func() error {
		return conn.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&syn)
	}); err != nil {
		return err
	}
	synNames := map[int64]string{0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}
	b.info.Version = version
	s := b.info.Settings
	s["journal_mode"] = mode
	s["synchronous"] = synNames[syn]
	s["durability"] = b.cfg.durability()
	s["sqlite_busy_timeout_ms"] = strconv.Itoa(writerBusyTimeoutMS)
	s["busy_timeout"] = "ctx"
	if b.cfg.busyTimeout > 0 {
		s["busy_timeout"] = b.cfg.busyTimeout.String()
	}
	s["locking"] = "BEGIN IMMEDIATE on one writer connection, jittered retry"
	s["isolation"] = "serializable"
	s["schema_version"] = strconv.Itoa(SchemaVersion)
	s["driver"] = driverVersion()
	if owned {
		s["handle"] = "path"
	} else {
		s["handle"] = "caller *sql.DB"
	}
	return nil
}

// pinWriter takes the writer connection from db. Opening a connection
// applies its PRAGMAs, which read the schema and so can find the file
// locked by another opener creating or migrating it: retried like a busy
// write lock.
func (b *Backend) pinWriter(ctx context.Context, db *sql.DB) (conn *sql.Conn, err error) {
	err = b.retrySetup(ctx, "writer connection", func() (err error) {
		conn, err = db.Conn(ctx)
		return err
	})
	return conn, err
}

// retrySetup runs one step of opening the writer through retryBusy and
// names the step in an error retryBusy did not already explain.
func (b *Backend) retrySetup(ctx context.Context, what string, f func() error) error {
	err := b.retryBusy(ctx, what, f)
	if err != nil && !errors.Is(err, backend.ErrBusy) && !errors.Is(err, backend.ErrClosed) {
		return fmt.Errorf("sqlite: %s: %w", what, err)
	}
	return err
}

// configureWriter sets the writer's busy_timeout, synchronous and
// temp_store. Setting synchronous reads the schema, so it retries while
// another connection holds the file locked.
//
// temp_store=MEMORY keeps the statement journal in memory: a many-row
// statement inside a transaction (manyrow.go) journals every page it
// changes so that it can be undone alone, and past 64 KiB SQLite spills
// that journal to a temporary file, one write system call per page. The
// statement journal never serves crash recovery (the WAL does), so
// durability is unchanged.
func (b *Backend) configureWriter(ctx context.Context, conn *sql.Conn) error {
	for _, p := range []string{
		"PRAGMA busy_timeout = " + strconv.Itoa(writerBusyTimeoutMS),
		"PRAGMA synchronous = " + b.cfg.synchronous(),
		"PRAGMA temp_store = MEMORY",
	} {
		if err := b.retrySetup(ctx, p, func() error {
			_, err := conn.ExecContext(ctx, p)
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

func driverVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "modernc.org/sqlite" {
				return d.Path + " " + d.Version
			}
		}
	}
	return "modernc.org/sqlite"
}

// prepare prepares the writer's statements. Preparing reads the schema,
// so each retries while another connection holds the file locked.
func (b *Backend) prepare(ctx context.Context, w *writer) error {
	for i, q := range stmtSQL {
		if err := b.retrySetup(ctx, fmt.Sprintf("prepare %q", q), func() (err error) {
			w.stmts[i], err = w.conn.PrepareContext(ctx, q)
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

func (w *writer) closeStmts() {
	for i, s := range w.stmts {
		if s != nil {
			_ = s.Close()
			w.stmts[i] = nil
		}
	}
	for k, s := range w.partial {
		_ = s.Close()
		delete(w.partial, k)
	}
	for k, s := range w.many {
		_ = s.Close()
		delete(w.many, k)
	}
	w.closeWrites()
}

func (b *Backend) prepareReaders(ctx context.Context) error {
	for i, q := range stmtSQL {
		if i >= int(sRunIns) { // writes never run on readers
			break
		}
		s, err := b.rdb.PrepareContext(ctx, q)
		if err != nil {
			return fmt.Errorf("sqlite: prepare reader %q: %w", q, err)
		}
		b.rstmts[i] = s
	}
	return nil
}

// reconnect replaces a writer connection whose state is unknown.
func (b *Backend) reconnect(ctx context.Context) error {
	w := b.w
	w.closeStmts()
	_ = w.conn.Raw(func(any) error { return driver.ErrBadConn }) // discard it
	_ = w.conn.Close()
	db := b.wdb
	if db == nil {
		db = b.callerDB
	}
	conn, err := b.pinWriter(ctx, db)
	if err != nil {
		return err
	}
	nw := &writer{conn: conn, broken: true}
	b.w = nw
	if err := b.configureWriter(ctx, conn); err != nil {
		return err
	}
	if err := b.prepare(ctx, nw); err != nil {
		return err
	}
	nw.broken = false
	return nil
}

// abort releases what a failed Open acquired.
func (b *Backend) abort() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	_ = b.release()
}

// release closes statements and connections (never a caller's *sql.DB).
func (b *Backend) release() error {
	var errs []error
	for i, s := range b.rstmts {
		if s != nil {
			errs = append(errs, s.Close())
			b.rstmts[i] = nil
		}
	}
	if w := b.w; w != nil {
		w.closeStmts()
		if b.callerDB != nil && !w.broken {
			for _, p := range b.restore {
				if _, err := w.conn.ExecContext(context.Background(), p); err != nil {
					errs = append(errs, err)
				}
			}
		}
		errs = append(errs, w.conn.Close())
		b.w = nil
	}
	if b.wdb != nil {
		errs = append(errs, b.wdb.Close())
	}
	if b.ownsRDB && b.rdb != nil {
		errs = append(errs, b.rdb.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("sqlite: close: %w", err)
	}
	return nil
}

// Close waits for running Views and Updates, then releases the store;
// Updates still waiting for the write lock fail with backend.ErrClosed.
// Calls after Close (Close included) fail with backend.ErrClosed. Close does
// not close a *sql.DB given to OpenDB.
func (b *Backend) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return fmt.Errorf("sqlite: close: %w", backend.ErrClosed)
	}
	b.closed = true
	close(b.closing)
	b.mu.Unlock()
	b.ops.Wait()
	return b.release()
}

// enter registers a call; it fails once Close has begun.
func (b *Backend) enter() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return fmt.Errorf("sqlite: %w", backend.ErrClosed)
	}
	b.ops.Add(1)
	return nil
}

// Capabilities implements backend.Backend: SQLite's file lock serializes
// writers across Backend values and processes.
func (b *Backend) Capabilities() backend.Capabilities {
	return backend.Capabilities{MultiInstance: true, MultiProcess: true}
}

// Info implements backend.Backend: name "sqlite", sqlite_version() and the
// settings in force (journal_mode, synchronous, durability, ...).
func (b *Backend) Info() backend.Info {
	s := make(map[string]string, len(b.info.Settings))
	for k, v := range b.info.Settings {
		s[k] = v
	}
	return backend.Info{Name: b.info.Name, Version: b.info.Version, Settings: s}
}

// Stats returns counters since Open, including the worst write-lock wait.
func (b *Backend) Stats() Stats { return b.stats.snapshot() }

// Reruns implements backend.RerunCounter: SQLite re-runs fn only when
// another writer held the database.
func (b *Backend) Reruns() backend.Reruns {
	s := b.Stats()
	return backend.Reruns{Busy: s.Reruns, Exhausted: s.BusyFailures}
}

// retryBusy runs f until it does not report SQLITE_BUSY/LOCKED, sleeping a
// jittered backoff in between, for as long as ctx, Close and the busy
// timeout allow. The final error wraps backend.ErrBusy and the last driver error
// (and ctx.Err() when ctx ended the wait).
func (b *Backend) retryBusy(ctx context.Context, what string, f func() error) error {
	start := time.Now()
	var last error
	for n := 0; ; n++ {
		err := f()
		if err == nil {
			storeMax(&b.stats.maxLockWait, int64(time.Since(start)))
			return nil
		}
		if !isBusy(err) {
			return err
		}
		last = err
		b.stats.busyRetries.Add(1)
		waited := time.Since(start)
		d := backoff(n)
		if lim := b.cfg.busyTimeout; lim > 0 {
			if waited >= lim {
				b.stats.busyFailures.Add(1)
				storeMax(&b.stats.maxLockWait, int64(waited))
				return fmt.Errorf("sqlite: %s: lock held by another connection for %v (%d tries, busy timeout %v): %w: %w",
					what, waited.Round(time.Microsecond), n+1, lim, backend.ErrBusy, last)
			}
			d = min(d, lim-waited)
		}
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			waited = time.Since(start)
			b.stats.busyFailures.Add(1)
			storeMax(&b.stats.maxLockWait, int64(waited))
			return fmt.Errorf("sqlite: %s: lock held by another connection for %v (%d tries): %w: %w: %w",
				what, waited.Round(time.Microsecond), n+1, backend.ErrBusy, ctx.Err(), last)
		case <-b.closing:
			t.Stop()
			return fmt.Errorf("sqlite: %s: %w", what, backend.ErrClosed)
		}
	}
}
