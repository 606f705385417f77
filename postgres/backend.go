package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/wfstore/wfstore/backend"
)

// DefaultSchema is the schema used when WithSchema is not given.
const DefaultSchema = "wfstore"

// DefaultBusyTimeout is how long Update keeps re-running fn after
// transient failures unless WithBusyTimeout says otherwise. Ten seconds is
// about what the fixed bound of 50 runs it replaces allowed (the backoff
// doubles from 1 ms to its 250 ms cap, with full jitter: 50 runs paused
// about five seconds on average, ten and a half at most), so it rides
// out bursts of contention on hot rows as before, yet a transaction that
// cannot get through (an overloaded server, a livelocking workload) ends
// with ErrBusy before the usual request and RPC deadlines of tens of
// seconds, so that the caller learns why rather than seeing its own
// deadline pass.
const DefaultBusyTimeout = 10 * time.Second

// Option configures Open and OpenPool.
type Option func(*config)

type config struct {
	schema       string
	busyTimeout  time.Duration
	relaxed      bool
	advisoryLock bool
	backoffBase  time.Duration
	backoffMax   time.Duration
	manyRowsFrom int // shortest slice written with one many-row statement
}

// WithSchema sets the schema that holds the store's tables (default
// "wfstore"). The name must match ^[a-z_][a-z0-9_]{0,62}$ and is always
// quoted in SQL.
func WithSchema(name string) Option {
	return func(c *config) { c.schema = name }
}

// WithBusyTimeout bounds how long one Update keeps re-running fn after
// transient failures (serialization failures, deadlocks, a connection lost
// before COMMIT), counted from the start of Update, on top of its ctx
// (default DefaultBusyTimeout). When a transient failure ends a run after
// d has passed, Update fails with an error wrapping backend.ErrBusy and the
// server's last error. Zero or less means: re-run as long as ctx allows.
func WithBusyTimeout(d time.Duration) Option {
	return func(c *config) { c.busyTimeout = max(d, 0) }
}

// WithRelaxedDurability commits with synchronous_commit = off: a commit
// returns before its WAL reaches disk. Safe against a crash of this
// process, NOT against a crash of the database server or the machine (the
// last transactions may be lost, which breaks the never-dispatched proof).
// For tests and benchmarks only.
func WithRelaxedDurability() Option {
	return func(c *config) { c.relaxed = true }
}

// withManyRowsFrom makes Apply write a slice of at least n records (n >=
// 2) with one many-row statement, a shorter one with a statement per
// record (default: smallSlice+1). Tests and benchmarks only: tests use 2
// to exercise the many-row statements on short slices, benchmarks
// math.MaxInt to measure what they save.
func withManyRowsFrom(n int) Option {
	return func(c *config) { c.manyRowsFrom = max(n, 2) }
}

// withoutAdvisoryLock makes migrations rely on the version row's
// compare-and-set alone, as on engines that stub advisory locks. Tests only.
func withoutAdvisoryLock() Option {
	return func(c *config) { c.advisoryLock = false }
}

// Backend is a wfstore store in one PostgreSQL schema. It implements
// backend.Backend and is safe for concurrent use.
type Backend struct {
	pool    *pgxpool.Pool
	ownPool bool
	schema  string
	q       *queries
	cfg     config
	version string
	// settings is sent with BEGIN in every transaction.
	settings string
	// gate is sent first after BEGIN in every read-write transaction, turn
	// instead in one that takes the turn (see turn.go).
	gate []string
	turn []string
	// channel is the store's LISTEN/NOTIFY channel (see workChannel).
	channel string

	mu       sync.Mutex
	closed   bool
	inflight sync.WaitGroup
	closeCtx context.Context
	closeFn  context.CancelCauseFunc

	stats stats
	hooks hooks

	releases atomic.Int64 // Release calls, to purge expired claims now and then
}

// stats counts transaction re-runs by cause (tests and reports).
type stats struct {
	updates       atomic.Int64 // Update calls
	runs          atomic.Int64 // fn executions in Update
	serialization atomic.Int64 // re-runs after 40001
	deadlock      atomic.Int64 // re-runs after 40P01
	connLost      atomic.Int64 // re-runs after a connection lost before commit
	exhausted     atomic.Int64 // Updates that returned ErrBusy
	maxRuns       atomic.Int64 // most runs one Update needed
	roundTrips    atomic.Int64 // round trips of transactions (reads, commits, rollbacks)
	turns         atomic.Int64 // runs that took the turn
	turnTimeouts  atomic.Int64 // re-runs after the turn's request waited turnLockWait
	gateTimeouts  atomic.Int64 // re-runs past the gate after waiting there for a turn
}

// hooks are test hooks; nil in production.
type hooks struct {
	// afterRoundTrip is called after every completed round trip inside a
	// transaction with the server pid holding it and the round trip's number
	// (1 = the one that carried BEGIN).
	afterRoundTrip func(pid uint32, n int)
	// listening is called each time a work listener's LISTEN succeeds, with
	// the server pid of its connection, before it sends the value a
	// reconnection owes.
	listening func(pid uint32)
	// heard is called with the payload of each notification a work
	// listener receives, before it sends its value.
	heard func(payload string)
}

var (
	_ backend.Backend      = (*Backend)(nil)
	_ backend.WorkListener = (*Backend)(nil)
)

// Open connects to the database at dsn (a pgx connection string; pool
// settings such as pool_max_conns are honoured), creates or migrates the
// store's schema, and returns the Backend. The pool is closed by Close.
func Open(ctx context.Context, dsn string, opts ...Option) (*Backend, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	oe := &openError{dsn: RedactDSN(dsn), raw: dsn, schema: cfg.schema}
	pcfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		oe.err = fmt.Errorf("parse dsn: %w", err)
		return nil, oe
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		oe.err = fmt.Errorf("create pool: %w", err)
		return nil, oe
	}
	b, err := open(ctx, pool, true, cfg)
	if err != nil {
		pool.Close()
		oe.err = err
		return nil, oe
	}
	return b, nil
}

// OpenPool uses the caller's pool as given (its connections get every
// setting per transaction, with set_config(..., true); no connection hook
// is needed) and never closes it. It creates or migrates the store's schema.
func OpenPool(ctx context.Context, pool *pgxpool.Pool, opts ...Option) (*Backend, error) {
	if pool == nil {
		return nil, errors.New("postgres: OpenPool: nil pool")
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	return open(ctx, pool, false, cfg)
}

func newConfig(opts []Option) (config, error) {
	cfg := config{
		schema:       DefaultSchema,
		busyTimeout:  DefaultBusyTimeout,
		advisoryLock: true,
		manyRowsFrom: smallSlice + 1,
		backoffBase:  time.Millisecond,
		backoffMax:   250 * time.Millisecond,
	}
	for _, o := range opts {
		o(&cfg)
	}
	if err := validSchema(cfg.schema); err != nil {
		return cfg, err
	}
	return cfg, nil
}

func open(ctx context.Context, pool *pgxpool.Pool, own bool, cfg config) (*Backend, error) {
	if _, err := ensureSchema(ctx, pool, cfg.schema, cfg.advisoryLock); err != nil {
		return nil, err
	}
	var version string
	if err := pool.QueryRow(ctx, "SHOW server_version").Scan(&version); err != nil {
		return nil, fmt.Errorf("postgres: read server version: %w", err)
	}
	b := &Backend{
		pool:    pool,
		ownPool: own,
		schema:  cfg.schema,
		q:       buildQueries(quoteIdent(cfg.schema), cfg.manyRowsFrom),
		cfg:     cfg,
		version: version,
		channel: workChannel(cfg.schema),
	}
	sync := "on"
	if cfg.relaxed {
		sync = "off"
	}
	// One statement after BEGIN sets, for this transaction only:
	// synchronous_commit, the durability of COMMIT; plan_cache_mode = auto,
	// so that a statement whose generic plan is as good as its custom plan
	// (every key lookup and write) is planned a few times per connection and
	// then runs from the cached plan, while a statement whose generic plan
	// looks worse (the array forms of Load) keeps being planned for its
	// actual parameters, whatever the pool's own setting (Apply switches to
	// force_generic_plan around many-row writes, see genericPlans);
	// enable_seqscan = off, so that no plan, generic or custom, made on
	// small or empty tables is a sequential scan: every statement has an
	// index path, and under SERIALIZABLE a sequential scan takes a
	// relation-wide predicate lock (the PostgreSQL manual, "Serializable
	// Isolation Level"), which turns every concurrent write to the table
	// into a serialization failure.
	b.settings = "SELECT set_config('synchronous_commit', '" + sync + "', true), " +
		"set_config('plan_cache_mode', 'auto', true), set_config('enable_seqscan', 'off', true)"
	b.gate, b.turn = gates(quoteIdent(cfg.schema), cfg.busyTimeout)
	b.closeCtx, b.closeFn = context.WithCancelCause(context.Background())
	return b, nil
}

func busyTimeout(d time.Duration) string {
	if d <= 0 {
		return "none (re-runs as long as ctx allows)"
	}
	return d.String()
}

// Schema returns the schema holding the store.
func (b *Backend) Schema() string { return b.schema }

// Reruns implements backend.RerunCounter.
func (b *Backend) Reruns() backend.Reruns {
	return backend.Reruns{
		Conflict:  b.stats.serialization.Load(),
		Deadlock:  b.stats.deadlock.Load(),
		Transient: b.stats.connLost.Load(),
		Exhausted: b.stats.exhausted.Load(),
	}
}

// Capabilities implements backend.Backend: every Update is SERIALIZABLE in
// one database, so instances and processes are serializable with each other.
func (b *Backend) Capabilities() backend.Capabilities {
	return backend.Capabilities{MultiInstance: true, MultiProcess: true}
}

// Info implements backend.Backend.
func (b *Backend) Info() backend.Info {
	sync := "on"
	if b.cfg.relaxed {
		sync = "off (relaxed: not durable against server or machine crash)"
	}
	return backend.Info{
		Name:    "postgres",
		Version: b.version,
		Settings: map[string]string{
			"driver":             "github.com/jackc/pgx/v5",
			"schema":             b.schema,
			"schema_version":     strconv.Itoa(SchemaVersion),
			"isolation":          "serializable",
			"view_isolation":     "repeatable read, read only",
			"synchronous_commit": sync,
			"plan_cache_mode":    "auto",
			"enable_seqscan":     "off",
			"busy_timeout":       busyTimeout(b.cfg.busyTimeout),
		},
	}
}

// Close implements backend.Backend. It makes new calls fail with
// ErrClosed, cancels calls in flight (they fail with ErrClosed and roll
// back), waits for them, and closes the pool if Open created it.
func (b *Backend) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	b.mu.Unlock()
	b.closeFn(backend.ErrClosed)
	b.inflight.Wait()
	if b.ownPool {
		b.pool.Close()
	}
	return nil
}

// enter registers a call; it fails when the Backend is closed. The
// returned context is ctx, also cancelled (with cause ErrClosed) by Close.
func (b *Backend) enter(ctx context.Context) (context.Context, func(), error) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, nil, fmt.Errorf("postgres: %w", backend.ErrClosed)
	}
	b.inflight.Add(1)
	b.mu.Unlock()
	cctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(b.closeCtx, func() { cancel(backend.ErrClosed) })
	return cctx, func() {
		stop()
		cancel(context.Canceled)
		b.inflight.Done()
	}, nil
}
