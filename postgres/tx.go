package postgres

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/wfstore/wfstore/backend"
)

const (
	beginRW = "BEGIN ISOLATION LEVEL SERIALIZABLE, READ WRITE"
	beginRO = "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY"
)

// Update implements backend.Backend. Every run of fn is one SERIALIZABLE
// transaction on one pooled connection. BEGIN and the transaction's settings
// travel in the same round trip as fn's first read; Apply sends nothing and
// its writes travel with the next read or with COMMIT, so an fn that reads
// then writes costs two round trips, one that only writes costs one, and
// one that does neither costs none. fn is run again (after a jittered
// pause that grows exponentially from the failed run's duration, for as
// long as WithBusyTimeout allows and ctx allows) when the server reports a
// serialization failure (40001) or deadlock (40P01), or the connection is
// lost before COMMIT was sent; a loss during COMMIT leaves the outcome
// unknown and is returned, never re-run.
func (b *Backend) Update(ctx context.Context, fn func(tx backend.Tx) error) error {
	if fn == nil {
		return errors.New("postgres: Update: nil fn")
	}
	cctx, leave, err := b.enter(ctx)
	if err != nil {
		return err
	}
	defer leave()
	b.stats.updates.Add(1)
	start := time.Now()
	var last error
	pastGate := false // a run waited at the gate for its whole gate wait (turn.go)
	for run := 1; ; run++ {
		if cctx.Err() != nil {
			return ctxErr(cctx, "update", last)
		}
		b.stats.runs.Add(1)
		t := &txn{b: b, ctx: cctx, userCtx: ctx, pastGate: pastGate,
			turn: !pastGate && takesTurn(run, time.Since(start), b.cfg.busyTimeout)}
		if t.turn {
			b.stats.turns.Add(1)
		}
		runStart := time.Now()
		retry, err := t.run(func(t *txn) error { return fn(t) })
		took := time.Since(runStart)
		for m := b.stats.maxRuns.Load(); int64(run) > m && !b.stats.maxRuns.CompareAndSwap(m, int64(run)); m = b.stats.maxRuns.Load() {
		}
		if !retry {
			return err
		}
		switch t.retryKind {
		case "40001":
			b.stats.serialization.Add(1)
		case "40P01":
			b.stats.deadlock.Add(1)
		case lockNotAvailable:
			if t.turn {
				b.stats.turnTimeouts.Add(1)
			} else {
				b.stats.gateTimeouts.Add(1)
				pastGate = true
			}
		default:
			b.stats.connLost.Add(1)
		}
		last = err
		pause := b.backoff(run, took)
		if limit := b.cfg.busyTimeout; limit > 0 {
			left := limit - time.Since(start)
			if left <= 0 {
				b.stats.exhausted.Add(1)
				return fmt.Errorf("postgres: update: %d runs in %v ended in transient failures (busy timeout %v): %w: %w",
					run, time.Since(start).Round(time.Millisecond), limit, backend.ErrBusy, err)
			}
			pause = min(pause, left)
		}
		if err := sleepCtx(cctx, pause); err != nil {
			return ctxErr(cctx, "update", last)
		}
	}
}

// View implements backend.Backend: one REPEATABLE READ READ ONLY
// transaction, so every read in fn sees the snapshot of its first statement.
// View never re-runs fn.
func (b *Backend) View(ctx context.Context, fn func(rtx backend.ReadTx) error) error {
	if fn == nil {
		return errors.New("postgres: View: nil fn")
	}
	cctx, leave, err := b.enter(ctx)
	if err != nil {
		return err
	}
	defer leave()
	if cctx.Err() != nil {
		return ctxErr(cctx, "view", nil)
	}
	t := &txn{b: b, ctx: cctx, userCtx: ctx, readOnly: true}
	_, err = t.run(func(t *txn) error { return fn(t) })
	return err
}

// backoff returns the pause before run+1, whose failed run took took:
// exponential from the longer of backoffBase and took, capped at
// backoffMax, with full jitter in [0, d] so that losers of one conflict do
// not collide again in lockstep.
//
// Scaling by took spreads re-runs over about the time the transactions
// they lost to need to end. A serialization failure is caused by
// transactions that ran alongside the failed run and are often still
// committing when it is reported; a re-run that begins before they end
// overlaps them again and is likely to fail again, while a fixed
// millisecond is far shorter than a transaction of several round trips and
// a durable commit. Measured with wfstore bench (8 dispatchers), this cut
// re-runs per admission by about a fifth and the Updates that needed the
// turn by about a third.
func (b *Backend) backoff(run int, took time.Duration) time.Duration {
	d := max(b.cfg.backoffBase, took) << min(run-1, 16)
	if d > b.cfg.backoffMax || d <= 0 {
		d = b.cfg.backoffMax
	}
	return rand.N(d + 1)
}

// ctxErr explains why a call stopped: Close (ErrClosed) or ctx.
func ctxErr(ctx context.Context, op string, last error) error {
	cause := context.Cause(ctx)
	if errors.Is(cause, backend.ErrClosed) {
		if last != nil {
			return fmt.Errorf("postgres: %s: %w (last transient failure: %w)", op, backend.ErrClosed, last)
		}
		return fmt.Errorf("postgres: %s: %w", op, backend.ErrClosed)
	}
	if last != nil {
		return fmt.Errorf("postgres: %s: %w before a re-run after a transient failure (last: %w)", op, ctx.Err(), last)
	}
	return fmt.Errorf("postgres: %s: %w", op, ctx.Err())
}

// txn is one run of fn: a transaction on one connection, begun lazily.
type txn struct {
	b        *Backend
	ctx      context.Context // the call's context, cancelled by Close too
	userCtx  context.Context // the ctx given to Update/View
	readOnly bool
	// turn: this run takes the turn; pastGate: it goes past the gate;
	// gateTimeout: a statement BEGIN carried ran past its lock_timeout
	// (see turn.go).
	turn, pastGate, gateTimeout bool

	mu        sync.Mutex
	conn      *pgxpool.Conn
	began     bool       // BEGIN was sent
	done      bool       // fn returned; further use fails
	rts       int        // round trips so far
	pending   []write    // writes Apply queued, not yet sent (see Apply)
	known     identities // attempts' Identities the queued writes proved (see identitiesKept)
	signal    bool       // SignalWork was called: a NOTIFY follows COMMIT
	broken    error      // the server transaction is aborted or the connection is gone
	retryErr  error      // a transient failure: this run must be rolled back and re-run
	retryKind string
}

var (
	_ backend.Tx           = (*txn)(nil)
	_ backend.WorkSignaler = (*txn)(nil)
)

// run executes fn and ends the transaction. retry reports a transient
// failure after which fn may run again; whether ctx still allows it is
// Update's to decide (it returns ctx's error, wrapping the failure, when
// not), so a deadline that passes during the failing round trip cannot
// turn the failure into a final answer.
func (t *txn) run(fn func(*txn) error) (retry bool, err error) {
	defer t.release()
	returned := false
	defer func() {
		if !returned { // fn panicked: roll back, let the panic go on
			t.finish()
			t.rollback()
		}
	}()
	ferr := fn(t)
	returned = true
	t.finish()
	switch {
	case t.retryErr != nil && !t.readOnly:
		t.rollback()
		return true, t.retryErr
	case ferr != nil:
		t.rollback() // queued writes are dropped unsent
		return false, ferr
	case t.broken != nil:
		t.rollback()
		return false, fmt.Errorf("postgres: transaction rolled back: fn returned nil after a call failed: %w", t.broken)
	case !t.began && len(t.pending) == 0 && !t.signal:
		return false, nil
	}
	return t.commit()
}

// SignalWork implements backend.WorkSignaler: the commit batch carries,
// after COMMIT and in the same round trip, a notification on the store's
// channel (see queueNotify and ListenWork), which the server runs only if
// COMMIT succeeded. It is sent once however often SignalWork was called; a
// re-run of fn is a new txn, unsignalled. A read-only transaction ignores
// it.
func (t *txn) SignalWork() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.readOnly && !t.done {
		t.signal = true
	}
}

func (t *txn) finish() {
	t.mu.Lock()
	t.done = true
	t.mu.Unlock()
}

// commit ends the transaction in one round trip: BEGIN and the settings
// when nothing was sent yet, the deferred writes, then COMMIT, and after it
// the work signal when fn gave one (SignalWork, queueNotify), in one batch.
// A read-only fn (or a View) pays for the COMMIT alone: under SERIALIZABLE
// what fn read is only known to be consistent once COMMIT succeeds.
//
// Outcomes: the server refusing a statement before COMMIT (a write's
// ErrConflict or ErrNotFound guard, a serialization failure, a FATAL
// termination) makes it skip COMMIT, so nothing committed: the transaction
// is rolled back and the write's error returned, or fn re-run when the
// failure is transient. A serialization failure from COMMIT itself is
// re-run too. Any other failure once the batch may have reached the server
// (connection lost, ctx interrupted) leaves the outcome unknown: that error
// is returned and fn is not run again.
func (t *txn) commit() (retry bool, err error) {
	if err := t.ctx.Err(); err != nil {
		t.rollback()
		return false, ctxWrap(t.ctx, fmt.Errorf("postgres: commit not sent: %w", err))
	}
	if t.conn == nil {
		c, err := t.b.pool.Acquire(t.ctx)
		if err != nil {
			return false, ctxWrap(t.ctx, fmt.Errorf("postgres: acquire connection: %w", err))
		}
		t.conn = c
	}
	writes := t.pending
	t.pending = nil
	batch := &pgx.Batch{}
	prefix := t.queueBegin(batch)
	queueWrites(batch, writes)
	batch.Queue("COMMIT")
	if t.signal {
		queueNotify(batch, t.b.channel)
	}
	br := t.conn.SendBatch(t.ctx, batch)
	var tag pgconn.CommandTag
	var raw error // the server's or connection's error, before mapping
	committing, err := func() (bool, error) {
		for i := 0; i < prefix; i++ {
			if _, err := br.Exec(); err != nil {
				t.gateFailed(err)
				raw = err
				return false, err
			}
		}
		var err error
		if err, raw = readWrites(br, writes); err != nil {
			return false, err
		}
		tag, raw = br.Exec()
		return true, raw
	}()
	// Once COMMIT's answer is read, a failure to read the rest of the
	// stream (the closing Sync) changes nothing.
	_ = br.Close()
	t.rts++
	t.b.stats.roundTrips.Add(1)

	var pe *pgconn.PgError
	switch {
	case err == nil:
		t.began = false
		if tag.String() != "COMMIT" {
			return false, fmt.Errorf("postgres: commit: the server answered %q: the transaction was rolled back", tag.String())
		}
		return false, nil
	case !committing && errors.As(raw, &pe):
		// The server refused a statement before COMMIT and skipped COMMIT:
		// nothing committed.
		werr := ctxWrap(t.ctx, fmt.Errorf("postgres: commit: %w", err))
		if code := pe.Code; code == "40001" || code == "40P01" || (t.gateTimeout && code == lockNotAvailable) {
			t.retryKind = code
			t.rollback()
			return true, werr
		}
		if t.conn.Conn().IsClosed() { // FATAL: the server rolled back and hung up
			t.retryKind = "connection"
			t.rollback()
			return true, werr
		}
		t.rollback()
		return false, werr
	case !committing && pgconn.SafeToRetry(raw) && t.conn.Conn().IsClosed():
		// The batch was never sent and the connection is gone, which rolled
		// back whatever had been sent before: as if lost before COMMIT.
		t.retryKind = "connection"
		return true, ctxWrap(t.ctx, fmt.Errorf("postgres: commit not sent: %w", err))
	case committing && (pgCode(err) == "40001" || pgCode(err) == "40P01"):
		t.retryKind = pgCode(err)
		t.began = false
		return true, fmt.Errorf("postgres: commit: %w", err)
	case t.ctx.Err() != nil:
		return false, ctxWrap(t.ctx, fmt.Errorf("postgres: commit interrupted: %w: %w", backend.ErrOutcomeUnknown, err))
	}
	if t.conn.Conn().IsClosed() {
		return false, fmt.Errorf("postgres: commit failed, connection lost: %w: %w", backend.ErrOutcomeUnknown, err)
	}
	return false, fmt.Errorf("postgres: commit failed, outcome unknown if the connection was lost: %w", err)
}

// rollback ends a begun transaction. A failure closes the connection, which
// makes the server roll back; the pool then discards it.
func (t *txn) rollback() {
	if !t.began || t.conn == nil {
		return
	}
	t.began = false
	if t.conn.Conn().IsClosed() {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.ctx), 5*time.Second)
	defer cancel()
	t.b.stats.roundTrips.Add(1)
	if _, err := t.conn.Exec(ctx, "ROLLBACK"); err != nil {
		_ = t.conn.Conn().Close(ctx)
	}
}

// release returns the connection to the pool. pgxpool destroys a
// connection that is closed or not idle outside a transaction.
func (t *txn) release() {
	if t.conn == nil {
		return
	}
	if t.began && !t.conn.Conn().IsClosed() {
		// Should not happen (every path commits or rolls back); do not hand
		// a connection inside a transaction back to the pool.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = t.conn.Conn().Close(ctx)
		cancel()
	}
	t.conn.Release()
	t.conn = nil
}

// opCtx combines the ctx a method was given with the call's context (so
// that Close interrupts fn's statements too).
//
// A done ctx fails the statement at once with its own error. Go cancels a
// context's children after it closes its Done channel, so t.ctx (a child
// of the ctx given to Update or View) can still look alive to a caller
// that has just seen that ctx end; the statement must not run then.
func (t *txn) opCtx(ctx context.Context) (context.Context, func()) {
	if ctx != nil && ctx.Err() != nil {
		return ctx, func() {}
	}
	if ctx == nil || ctx == t.userCtx {
		return t.ctx, func() {}
	}
	cctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(t.ctx, func() { cancel(context.Cause(t.ctx)) })
	return cctx, func() { stop(); cancel(context.Canceled) }
}

// exchange sends one batch (BEGIN and the transaction's settings first when the
// transaction has not begun, then the writes Apply deferred, then queue's
// statements) and reads its results with read. It is one round trip once
// the connection's statements are prepared. A deferred write that fails
// fails the exchange with that write's error (ErrConflict, ErrNotFound, see
// readWrites) before read runs. Errors from the server or the connection,
// deferred writes' included, mark the transaction broken (and, when
// transient, to be re-run); read's own errors (errDecode) do not.
func (t *txn) exchange(ctx context.Context, queue func(*pgx.Batch), read func(pgx.BatchResults) error) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		return errors.New("postgres: transaction used after its fn returned")
	}
	if t.broken != nil {
		return fmt.Errorf("postgres: transaction is aborted by an earlier failure: %w", t.broken)
	}
	ctx, stop := t.opCtx(ctx)
	defer stop()
	if err := ctx.Err(); err != nil {
		return ctxWrap(ctx, fmt.Errorf("postgres: %w", err))
	}
	if t.conn == nil {
		c, err := t.b.pool.Acquire(ctx)
		if err != nil {
			err = ctxWrap(ctx, fmt.Errorf("postgres: acquire connection: %w", err))
			t.broken = err
			return err
		}
		t.conn = c
	}
	batch := &pgx.Batch{}
	prefix := t.queueBegin(batch)
	writes := t.pending
	t.pending = nil
	queueWrites(batch, writes)
	queue(batch)
	br := t.conn.SendBatch(ctx, batch)
	var readErr error
	dbErr := func() error {
		for i := 0; i < prefix; i++ {
			if _, err := br.Exec(); err != nil {
				t.gateFailed(err)
				return err
			}
		}
		if err, _ := readWrites(br, writes); err != nil {
			return err
		}
		readErr = read(br)
		return nil
	}()
	cerr := br.Close()
	t.rts++
	t.b.stats.roundTrips.Add(1)
	switch {
	case dbErr != nil:
	case readErr != nil && isDBError(readErr):
		dbErr, readErr = readErr, nil
	case cerr != nil:
		dbErr = cerr
	}
	if dbErr != nil {
		return t.fail(ctx, dbErr)
	}
	if h := t.b.hooks.afterRoundTrip; h != nil {
		h(t.conn.Conn().PgConn().PID(), t.rts)
	}
	return readErr
}

// queueBegin adds BEGIN and the transaction's settings to b when the
// transaction has not begun, and returns how many statements it added.
func (t *txn) queueBegin(b *pgx.Batch) int {
	if t.began {
		return 0
	}
	if t.readOnly {
		b.Queue(beginRO)
	} else {
		b.Queue(beginRW)
		t.queueGate(b)
	}
	b.Queue(t.b.settings)
	t.began = true
	return b.Len()
}

// fail records a server or connection error and returns it wrapped.
func (t *txn) fail(ctx context.Context, err error) error {
	werr := ctxWrap(ctx, fmt.Errorf("postgres: %w", err))
	t.broken = werr
	if ctx.Err() != nil {
		return werr
	}
	if code := pgCode(err); code == "40001" || code == "40P01" || (t.gateTimeout && code == lockNotAvailable) {
		t.retryErr, t.retryKind = werr, code
	} else if t.conn == nil || t.conn.Conn().IsClosed() {
		t.retryErr, t.retryKind = werr, "connection"
	}
	return werr
}

// ctxWrap makes an error caused by ctx (or by Close) match ctx.Err() and
// its cause (or backend.ErrClosed) with errors.Is.
func ctxWrap(ctx context.Context, err error) error {
	if ctx.Err() == nil {
		return err
	}
	if cause := context.Cause(ctx); errors.Is(cause, backend.ErrClosed) && !errors.Is(err, backend.ErrClosed) {
		return fmt.Errorf("%w: %w", backend.ErrClosed, err)
	}
	if !errors.Is(err, ctx.Err()) {
		err = fmt.Errorf("%w: %w", ctx.Err(), err)
	}
	// A method's ctx merged with the call's (opCtx) is cancelled with the
	// call's cause: a deadline of Update's ctx must match
	// context.DeadlineExceeded too.
	if cause := context.Cause(ctx); !errors.Is(err, cause) {
		err = fmt.Errorf("%w: %w", cause, err)
	}
	return err
}

// isDBError reports whether err came from the server or the connection
// rather than from the adapter's own checks.
func isDBError(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return true
	}
	for _, s := range []error{backend.ErrConflict, backend.ErrNotFound, backend.ErrChanged, errDecode} {
		if errors.Is(err, s) {
			return false
		}
	}
	// Anything else out of pgx (I/O errors, protocol errors) leaves the
	// connection or transaction in an unknown state.
	return true
}

// errDecode marks a row that could not be decoded into a record.
var errDecode = errors.New("postgres: decode row")

func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}
