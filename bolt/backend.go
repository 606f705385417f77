package bolt

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"sync/atomic"

	"go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/internal/groupcommit"
)

// This file is the Backend: transactions, capabilities, Close.

// Backend is a wfstore store in one bbolt file. One Backend may be used from
// any number of goroutines. bbolt has one writer at a time, so Updates run
// one after another; Views run in parallel with each other and with the
// writer. Do not start a transaction from inside another one's fn: a
// commit that grows the file remaps it, which waits for every open View.
type Backend struct {
	db     *bbolt.DB
	owned  bool // Close closes db
	cfg    config
	closed atomic.Bool
	// writer admits one Update at a time. bbolt's own writer lock cannot be
	// waited for with a ctx; this can.
	writer chan struct{}
	// group queues Updates for group commit (group.go) when enabled.
	group *groupcommit.Queue[func(backend.Tx) error]
	// commits counts write transactions committed; grouped counts fns that
	// ran in a transaction shared with another fn (tests, benchmarks).
	commits, grouped atomic.Int64
	// steps, when set (tests), counts the cursor positions scans visit.
	steps *atomic.Int64
}

var _ backend.Backend = (*Backend)(nil)

func newBackend(db *bbolt.DB, c config, owned bool) (*Backend, error) {
	if err := prepare(db); err != nil {
		return nil, fmt.Errorf("bolt: open %s: %w", db.Path(), err)
	}
	b := &Backend{db: db, owned: owned, cfg: c, writer: make(chan struct{}, 1)}
	if c.groupCommit {
		b.group = &groupcommit.Queue[func(backend.Tx) error]{Lock: b.writer, Max: maxGroup}
	}
	return b, nil
}

// enter checks that a call may start.
func (b *Backend) enter(ctx context.Context, op string) error {
	if b.closed.Load() {
		return fmt.Errorf("bolt: %s: %w", op, backend.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("bolt: %s: %w", op, err)
	}
	return nil
}

// beginError translates an error from bbolt's Begin.
func beginError(op string, err error) error {
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return fmt.Errorf("bolt: %s: %w: %w", op, backend.ErrClosed, err)
	}
	return fmt.Errorf("bolt: %s: %w", op, err)
}

// View runs fn in a bbolt read transaction: one consistent snapshot.
func (b *Backend) View(ctx context.Context, fn func(rtx backend.ReadTx) error) error {
	if err := b.enter(ctx, "view"); err != nil {
		return err
	}
	btx, err := b.db.Begin(false)
	if err != nil {
		return beginError("view", err)
	}
	rtx := &readTx{b: b, btx: btx}
	defer func() {
		rtx.done = true
		_ = btx.Rollback()
	}()
	return fn(rtx)
}

// Update runs fn in bbolt's single read-write transaction. If fn returns
// nil, the transaction commits (fsynced unless WithRelaxedDurability) before
// Update returns; if fn returns an error or panics, it is rolled back and
// the error returned or the panic re-raised. bbolt has no transient
// conflicts, so fn runs exactly once and ErrBusy never occurs.
//
// An Update whose fn wrote nothing (no Apply changed anything) is rolled
// back instead of committed: bbolt would otherwise write a new meta page and
// freelist and fsync them for an unchanged store, which makes a dispatcher
// that loses a race pay a full durable commit.
//
// If a write failed part-way with a storage error (so its record and index
// entries may disagree), Update refuses to commit even if fn returns nil.
//
// By default (see WithoutGroupCommit), concurrent Updates share one transaction and one
// fsync (group.go); the guarantees above hold for each fn, and a fn may
// run twice when another fn of its group failed after writing.
func (b *Backend) Update(ctx context.Context, fn func(tx backend.Tx) error) error {
	if err := b.enter(ctx, "update"); err != nil {
		return err
	}
	if b.group != nil {
		return b.group.Do(ctx, fn, nil, nil, waitError, b.lead)
	}
	select {
	case b.writer <- struct{}{}:
	case <-ctx.Done():
		return waitError(ctx.Err())
	}
	defer func() { <-b.writer }()
	if b.db.NoSync && !b.cfg.noSyncHandle {
		return fmt.Errorf("bolt: update: %w", ErrNoSync)
	}
	btx, err := b.db.Begin(true)
	if err != nil {
		return beginError("update", err)
	}
	t := &tx{readTx: readTx{b: b, btx: btx}}
	finished := false
	defer func() {
		t.done = true
		if !finished {
			_ = btx.Rollback() // also on panic, which then continues
		}
	}()
	if err := fn(t); err != nil {
		return err
	}
	finished = true
	if t.broken != nil {
		_ = btx.Rollback()
		return fmt.Errorf("bolt: update rolled back because a write failed part-way: %w", t.broken)
	}
	if !t.wrote {
		return btx.Rollback()
	}
	if err := btx.Commit(); err != nil {
		return fmt.Errorf("bolt: commit: %w", err)
	}
	b.commits.Add(1)
	return nil
}

// waitError is Update's error when ctx ends while it waits for the writer.
func waitError(err error) error {
	return fmt.Errorf("bolt: update: waiting for the writer: %w", err)
}

// Capabilities: bbolt's exclusive file lock allows one Backend per file,
// so neither several instances nor several processes.
func (b *Backend) Capabilities() backend.Capabilities {
	return backend.Capabilities{MultiInstance: false, MultiProcess: false}
}

// Info describes the adapter and the durability settings in force.
func (b *Backend) Info() backend.Info {
	fsync := "on"
	if b.db.NoSync {
		fsync = "off (relaxed: NoSync, not safe against power loss)"
	}
	return backend.Info{
		Name:    "bolt",
		Version: "go.etcd.io/bbolt " + bboltVersion(),
		Settings: map[string]string{
			"fsync":          fsync,
			"schema_version": strconv.Itoa(SchemaVersion),
			"lock_timeout":   b.cfg.lockTimeout.String(),
			"freelist_sync":  strconv.FormatBool(!b.db.NoFreelistSync),
			"caller_handle":  strconv.FormatBool(!b.owned),
			"read_only":      strconv.FormatBool(b.db.IsReadOnly()),
		},
	}
}

// pinnedBboltVersion is the bbolt version go.mod pins and this package is
// tested with; Info reports it when the binary carries no module list (test
// binaries do not).
const pinnedBboltVersion = "v1.5.0"

func bboltVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "go.etcd.io/bbolt" {
				return d.Version
			}
		}
	}
	return pinnedBboltVersion
}

// Close closes the file if Open opened it, waiting for transactions in
// progress; a handle given to OpenDB stays open. Every later call fails
// with ErrClosed.
func (b *Backend) Close() error {
	if !b.closed.CompareAndSwap(false, true) {
		return fmt.Errorf("bolt: close: %w", backend.ErrClosed)
	}
	if !b.owned {
		return nil
	}
	if err := b.db.Close(); err != nil {
		return fmt.Errorf("bolt: close: %w", err)
	}
	return nil
}
