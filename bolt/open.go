package bolt

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/wfstore/wfstore/backend"
)

// This file opens stores: Open for a path, OpenDB for a caller's handle,
// and the options both take.

// DefaultLockTimeout is how long Open waits for bbolt's file lock.
const DefaultLockTimeout = 2 * time.Second

var (
	// ErrLocked: Open could not take the file lock within the lock timeout,
	// because another process or another Backend in this process has the
	// file open. It wraps berrors.ErrTimeout.
	ErrLocked = errors.New("bolt: store file is locked by another process or Backend")
	// ErrNoSync: OpenDB was given a handle with NoSync set. A commit that
	// is not fsynced breaks the never-dispatched proof, so such a handle is
	// refused unless the caller passes WithNoSyncHandle or
	// WithRelaxedDurability.
	ErrNoSync = errors.New("bolt: bbolt handle has NoSync set; commits would not be durable (pass bolt.WithNoSyncHandle() for tests and benchmarks)")
)

// Option configures Open and OpenDB.
type Option func(*config)

type config struct {
	lockTimeout  time.Duration
	relaxed      bool // Open: set NoSync
	noSyncHandle bool // OpenDB, Update: accept a NoSync handle
	groupCommit  bool // Update: concurrent Updates share commits (group.go)
}

// WithLockTimeout sets how long Open waits for the file lock (default
// DefaultLockTimeout; a sooner ctx deadline wins). It must be positive.
func WithLockTimeout(d time.Duration) Option { return func(c *config) { c.lockTimeout = d } }

// WithRelaxedDurability opens the file with bbolt's NoSync: commits are
// written to the operating system but not fsynced. For tests and
// benchmarks only.
//
// What it keeps: a committed transaction survives the process crashing or
// being killed, because its pages are in the kernel's page cache. What it
// gives up: after a power loss or operating-system crash, recent commits may
// be lost, and because bbolt orders its writes with those fsyncs, the file
// itself may be left corrupt (a meta page may reach the disk before the
// pages it points to). The never-dispatched proof of an admission does not
// hold in this mode. With OpenDB it means WithNoSyncHandle and changes
// nothing on the caller's handle.
func WithRelaxedDurability() Option {
	return func(c *config) { c.relaxed, c.noSyncHandle = true, true }
}

// WithNoSyncHandle lets OpenDB accept a caller's handle that has NoSync set
// (see WithRelaxedDurability for what that gives up). For tests and
// benchmarks only.
func WithNoSyncHandle() Option { return func(c *config) { c.noSyncHandle = true } }

// WithoutGroupCommit turns group commit off: every Update runs and commits
// alone. Group commit is on by default: concurrent Updates of one Backend
// that queue for the writer share one transaction and one commit (group.go;
// at most 64 fns, merged from what is queued when the writer becomes free,
// never by waiting for more). Each fn's writes still commit or roll back as
// a unit, a failing fn's writes never commit, and Update returns nil only
// once the commit holding fn's writes is durable. An Update that finds no
// queue and a free writer runs at once, so one caller at a time pays
// nothing for it (measured: no difference on one dispatcher).
func WithoutGroupCommit() Option { return func(c *config) { c.groupCommit = false } }

func newConfig(opts []Option) (config, error) {
	c := config{lockTimeout: DefaultLockTimeout, groupCommit: true}
	for _, o := range opts {
		o(&c)
	}
	if c.lockTimeout <= 0 {
		return c, fmt.Errorf("bolt: lock timeout %v is not positive", c.lockTimeout)
	}
	return c, nil
}

// Open opens the store at path, creating the file and its layout when the
// file does not exist or is empty. An existing non-empty file is first
// inspected through a read-only bbolt handle, so that a file that is not a
// wfstore store (backend.ErrForeignStore) or has another schema version
// (*backend.SchemaVersionError) is refused with its bytes untouched.
//
// bbolt allows one read-write handle per file: while this Backend is open,
// another Open of the same path, in this process or another, fails with an
// error wrapping ErrLocked after the lock timeout.
func Open(ctx context.Context, path string, opts ...Option) (*Backend, error) {
	c, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("bolt: open %s: %w", path, err)
	}
	timeout := c.lockTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = max(min(timeout, time.Until(dl)), time.Millisecond)
	}

	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("bolt: open %s: %w", path, err)
	case fi.Size() > 0:
		if err := inspectFile(path, timeout); err != nil {
			return nil, err
		}
	}

	db, err := bbolt.Open(path, 0o600, boltOptions(timeout, c.relaxed))
	if err != nil {
		return nil, openError(path, timeout, err)
	}
	b, err := newBackend(db, c, true)
	if err != nil {
		_ = db.Close()
		if strings.Contains(err.Error(), path) {
			return nil, err
		}
		return nil, &pathError{path: path, err: err}
	}
	return b, nil
}

// boltOptions are the bbolt options Open uses.
//
// NoFreelistSync: the freelist is not written at each commit. With the
// freelist synced, every commit rewrites it whole (one page per ~500 free
// pages: 10 pages, 40 KB, per commit in a 455 MB store) before its fsync.
// Durability does not depend on it: bbolt never reuses a page freed by a
// transaction a reader may still see, and a file whose freelist was not
// synced has no freelist page recorded, so the next Open rebuilds the
// freelist by walking every bucket's pages (after a crash too). The cost
// moves to Open, which reads the whole tree once (proportional to the file
// size).
//
// FreelistArrayType: the array freelist allocates the lowest free page
// ids first, so a commit's pages sit close together in the file and its
// fsync writes a few runs. The hashmap freelist, which takes single pages
// from a Go map, spread them over the whole file: after loading 100k
// historical attempts (6000 free pages in a 319 MB file) an fsynced
// admission ran at 388/s with it against 496–565/s with the array
// (TestAdmissionPages with WFSTORE_BOLT_PAGES_SYNC=1; 603–667/s at 1k
// history either way). The array's linear scan costs nothing measurable at
// these sizes.
func boltOptions(timeout time.Duration, noSync bool) *bbolt.Options {
	return &bbolt.Options{
		Timeout:        timeout,
		NoSync:         noSync,
		NoFreelistSync: true,
		FreelistType:   bbolt.FreelistArrayType,
	}
}

// OpenDB returns a Backend over a caller's open handle, creating the layout
// when the store has no buckets yet. The handle must not have NoSync set
// (ErrNoSync) unless WithNoSyncHandle or WithRelaxedDurability is passed.
// Close does not close db. A read-only handle serves View; Update on it
// fails with bbolt's ErrDatabaseReadOnly. Do not use db for anything else
// while the Backend is in use: wfstore's invariants live in its buckets.
func OpenDB(ctx context.Context, db *bbolt.DB, opts ...Option) (*Backend, error) {
	c, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if db == nil {
		return nil, errors.New("bolt: OpenDB: nil *bbolt.DB")
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("bolt: open %s: %w", db.Path(), err)
	}
	if db.NoSync && !c.noSyncHandle {
		return nil, fmt.Errorf("bolt: open %s: %w", db.Path(), ErrNoSync)
	}
	return newBackend(db, c, false)
}

// inspectFile opens path read-only (bbolt's shared lock, O_RDONLY: nothing
// can be written) and checks that it is a wfstore store this build reads.
func inspectFile(path string, timeout time.Duration) error {
	db, err := bbolt.Open(path, 0, &bbolt.Options{ReadOnly: true, Timeout: timeout})
	if err != nil {
		return openError(path, timeout, err)
	}
	defer db.Close()
	err = db.View(func(tx *bbolt.Tx) error {
		_, _, err := inspect(tx)
		return err
	})
	if err != nil {
		return &pathError{path: path, err: err}
	}
	return nil
}

// pathError names the file an Open failed on. It unwraps to the cause, so
// errors.Is and errors.As see through it.
type pathError struct {
	path string
	err  error
}

func (e *pathError) Error() string {
	return "bolt: open " + e.path + ": " + strings.TrimPrefix(e.err.Error(), "bolt: ")
}

func (e *pathError) Unwrap() error { return e.err }

// openError translates bbolt's open errors.
func openError(path string, timeout time.Duration, err error) error {
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return fmt.Errorf("%w: %s (waited %v): %w", ErrLocked, path, timeout, err)
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrVersionMismatch), errors.Is(err, berrors.ErrChecksum):
		return fmt.Errorf("bolt: %s is not a bbolt file: %w: %w", path, backend.ErrForeignStore, err)
	}
	return fmt.Errorf("bolt: open %s: %w", path, err)
}
