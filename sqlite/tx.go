package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/wfstore/wfstore/backend"
)

// errTxDone: a ReadTx or Tx was used after its View or Update returned.
var errTxDone = errors.New("sqlite: transaction has ended (fn must not retain it)")

// readTx implements backend.ReadTx. It is not safe for concurrent use.
type readTx struct {
	b     *Backend
	w     *writer // statements on the writer connection (Update, or View on the writer)
	sqlTx *sql.Tx // pooled read transaction (View)
	stmts [sRunIns]*sql.Stmt

	writable bool
	done     bool
	// poison is the first storage error of a read-write transaction. SQLite
	// may have rolled the transaction back on its own (SQLITE_FULL, IOERR,
	// BUSY, INTERRUPT), so nothing more may run in it and it never commits.
	poison error
	busy   bool
	// img holds row images of a read-write transaction (image.go), touched
	// the keys of the rows this transaction itself loaded or wrote.
	img     map[rowKey]image
	touched []rowKey
}

// writeTx implements backend.Tx.
type writeTx struct{ readTx }

func (t *readTx) stmt(ctx context.Context, id stmtID) (*sql.Stmt, error) {
	if t.done {
		return nil, errTxDone
	}
	if t.poison != nil {
		return nil, fmt.Errorf("sqlite: transaction failed earlier: %w", t.poison)
	}
	if t.w != nil {
		return t.w.stmts[id], nil
	}
	if s := t.stmts[id]; s != nil {
		return s, nil
	}
	s := t.sqlTx.StmtContext(ctx, t.b.rstmts[id])
	if ctx.Err() == nil {
		t.stmts[id] = s
	}
	return s, nil
}

// fail records a storage error of a read-write transaction and returns it.
// A constraint violation only undoes its statement and does not count.
func (t *readTx) fail(err error) error {
	if t.writable && t.poison == nil && !isConstraint(err) {
		t.poison = err
		t.busy = isBusy(err)
	}
	return err
}

// lockWriter takes the in-process writer lock.
func (b *Backend) lockWriter(ctx context.Context) error {
	select {
	case b.wsem <- struct{}{}:
		return nil
	default:
	}
	start := time.Now()
	select {
	case b.wsem <- struct{}{}:
		storeMax(&b.stats.maxQueueWait, int64(time.Since(start)))
		return nil
	case <-ctx.Done():
		return waitError(ctx.Err())
	case <-b.closing:
		return errWaitClosed
	}
}

// waitError is the error of a call whose ctx ended while it waited for the
// writer.
func waitError(err error) error { return fmt.Errorf("sqlite: waiting for the writer: %w", err) }

// errWaitClosed: Close began while a call waited for the writer.
var errWaitClosed = fmt.Errorf("sqlite: waiting for the writer: %w", backend.ErrClosed)

func (b *Backend) unlockWriter() { <-b.wsem }

// rollback ends the writer's transaction; a failure other than "no
// transaction is active" leaves the connection in an unknown state, so it
// is replaced before the next use.
func (w *writer) rollback() {
	if _, err := w.conn.ExecContext(context.Background(), "ROLLBACK"); err != nil && !isNoTransaction(err) {
		w.broken = true
	}
}

// Update implements backend.Update: fn runs inside BEGIN IMMEDIATE on the
// writer connection. fn's error is returned as is after rollback; a panic is
// re-raised after rollback. fn runs again only if a statement inside it hit
// SQLITE_BUSY/LOCKED (which BEGIN IMMEDIATE in WAL mode should prevent).
// After a call on tx fails with a storage or context error (anything but
// ErrConflict, ErrNotFound, ErrChanged or a constraint violation) the
// transaction is dead: SQLite may already have rolled it back, so later
// calls fail and Update rolls back and returns an error even if fn returns
// nil. An Update that cannot get the lock while ctx (and WithBusyTimeout)
// allow fails with an error wrapping backend.ErrBusy and the last driver
// error.
func (b *Backend) Update(ctx context.Context, fn func(tx backend.Tx) error) error {
	if err := b.enter(); err != nil {
		return err
	}
	defer b.ops.Done()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sqlite: update: %w", err)
	}
	if b.group != nil {
		return b.group.Do(ctx, fn, b.closing, errWaitClosed, waitError, b.lead)
	}
	if err := b.lockWriter(ctx); err != nil {
		return err
	}
	defer b.unlockWriter()
	return b.updateLocked(ctx, fn)
}

// updateLocked is Update once the writer lock is held.
func (b *Backend) updateLocked(ctx context.Context, fn func(tx backend.Tx) error) error {
	start := time.Now()
	for run := 0; ; run++ {
		if b.w.broken {
			if err := b.reconnect(ctx); err != nil {
				return err
			}
		}
		if run > 0 {
			b.stats.reruns.Add(1)
		}
		rerun, err := b.updateOnce(ctx, fn)
		if !rerun {
			return err
		}
		waited := time.Since(start)
		if cerr := ctx.Err(); cerr != nil {
			b.stats.busyFailures.Add(1)
			return fmt.Errorf("sqlite: update: transient conflict after %d runs: %w: %w: %w", run+1, backend.ErrBusy, cerr, err)
		}
		if lim := b.cfg.busyTimeout; lim > 0 && waited >= lim {
			b.stats.busyFailures.Add(1)
			return fmt.Errorf("sqlite: update: transient conflict after %d runs (busy timeout %v): %w: %w", run+1, lim, backend.ErrBusy, err)
		}
		select {
		case <-time.After(backoff(run)):
		case <-b.closing:
			return fmt.Errorf("sqlite: update: %w", backend.ErrClosed)
		}
	}
}

// updateOnce runs fn in one transaction. rerun reports a transient conflict
// after which fn may run again.
func (b *Backend) updateOnce(ctx context.Context, fn func(tx backend.Tx) error) (rerun bool, err error) {
	w := b.w
	if err := b.retryBusy(ctx, "update: begin immediate", func() error {
		_, err := w.conn.ExecContext(context.Background(), "BEGIN IMMEDIATE")
		return err
	}); err != nil {
		if !errors.Is(err, backend.ErrBusy) && !errors.Is(err, backend.ErrClosed) {
			w.rollback() // whatever happened, leave no transaction open
			err = fmt.Errorf("sqlite: update: begin: %w", err)
		}
		return false, err
	}
	t := &writeTx{readTx{b: b, w: w, writable: true}}
	var version int64
	var carry bool
	t.img, version, carry = w.takeImages()
	if w.touchedHint > 0 { // sized as the last: a batch's steps touch alike
		t.touched = make([]rowKey, 0, w.touchedHint)
	}
	ended := false
	defer func() {
		t.done = true
		if !ended { // fn panicked: roll back, the panic goes on
			w.rollback()
		}
	}()
	ferr := fn(t)
	if ferr != nil || t.poison != nil {
		ended = true
		w.rollback()
		if ferr == nil {
			ferr = fmt.Errorf("sqlite: update: rolled back after a failed statement: %w", t.poison)
		}
		return t.busy, ferr
	}
	cerr := b.retryBusy(ctx, "update: commit", func() error {
		_, err := w.conn.ExecContext(context.Background(), "COMMIT")
		return err
	})
	ended = true
	if cerr != nil {
		w.rollback()
		if errors.Is(cerr, backend.ErrBusy) || errors.Is(cerr, backend.ErrClosed) {
			return false, cerr
		}
		return false, fmt.Errorf("sqlite: update: commit: %w", cerr)
	}
	b.stats.commits.Add(1)
	w.touchedHint = min(len(t.touched), 4*maxCarried)
	if carry {
		w.keepImages(t.img, t.touched, version)
	}
	return false, nil
}

// View implements backend.View: fn reads one snapshot in a read
// transaction on a reader connection (BEGIN DEFERRED; in WAL mode the
// snapshot is fixed by the first read and never waits for writers). The
// error fn returns is returned as is; a panic is re-raised after rollback.
func (b *Backend) View(ctx context.Context, fn func(rtx backend.ReadTx) error) error {
	if err := b.enter(); err != nil {
		return err
	}
	defer b.ops.Done()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sqlite: view: %w", err)
	}
	if b.viewOnWriter {
		return b.viewOnWriterConn(ctx, fn)
	}
	tx, err := b.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("sqlite: view: begin: %w", err)
	}
	t := &readTx{b: b, sqlTx: tx}
	defer func() {
		t.done = true
		_ = tx.Rollback()
	}()
	return fn(t)
}

func (b *Backend) viewOnWriterConn(ctx context.Context, fn func(rtx backend.ReadTx) error) error {
	if err := b.lockWriter(ctx); err != nil {
		return err
	}
	defer b.unlockWriter()
	if b.w.broken {
		if err := b.reconnect(ctx); err != nil {
			return err
		}
	}
	w := b.w
	if _, err := w.conn.ExecContext(context.Background(), "BEGIN"); err != nil {
		w.rollback()
		return fmt.Errorf("sqlite: view: begin: %w", err)
	}
	t := &readTx{b: b, w: w}
	defer func() {
		t.done = true
		w.rollback()
	}()
	return fn(t)
}
