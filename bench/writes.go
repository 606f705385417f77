package bench

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// pgWrites reads what a PostgreSQL store writes: the server's WAL insert
// position, and the rows the tables of the store's schema inserted,
// updated and deleted (pg_stat_user_tables: n_tup_ins + n_tup_upd +
// n_tup_del, which count rows written by transactions that rolled back
// too, since those were written all the same).
//
// The WAL position is server-wide: anything else the server runs meanwhile
// counts too, so the figure is only meaningful on a quiet server. The row
// counters are statistics each server process keeps to itself and flushes
// at most once a second, or after 10 s idle, or when it exits; a process
// can only force its own (pg_stat_force_next_flush). So before and after
// the measured operations the pool's connections are closed and the read
// waits until their server processes are gone from pg_stat_activity
// (every connection of the pool carries application_name appName): a
// process flushes its statistics before it leaves that view, so the
// counters read then are exact. Should one stay (something else holds a
// connection of the pool), the read falls back to waiting until the
// counters have settled (settledRows). Before the operations the pool then
// opens its connections again, so the workload does not pay for them.
type pgWrites struct {
	pool    *pgxpool.Pool
	schema  string
	appName string // the pool's connections' application_name
}

// appNamed sets the application_name of every connection cfg opens, by
// which flushedRows tells the pool's server processes.
func appNamed(cfg *pgxpool.Config, name string) {
	cfg.ConnConfig.RuntimeParams["application_name"] = name
}

// waitGone waits until no server process of the pool but the caller's own
// is left in pg_stat_activity, at most limit.
func (w *pgWrites) waitGone(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		var n int
		err := w.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE application_name = $1 AND pid <> pg_backend_pid()`, w.appName).Scan(&n)
		if err != nil || n == 0 {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d connections of %s still open after %s", n, w.appName, limit)
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// walPos returns the server's current WAL insert position in bytes.
func (w *pgWrites) walPos(ctx context.Context) (int64, error) {
	var pos int64
	err := w.pool.QueryRow(ctx, `SELECT (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint`).Scan(&pos)
	return pos, err
}

// rows returns the rows inserted, updated and deleted so far in the
// schema's tables: the bare commit's table when bare, the store's otherwise.
func (w *pgWrites) rows(ctx context.Context, bare bool) (int64, error) {
	var n int64
	err := w.pool.QueryRow(ctx, `SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0)::bigint
		FROM pg_stat_user_tables WHERE schemaname = $1 AND (relname = 'bare') = $2`, w.schema, bare).Scan(&n)
	return n, err
}

// flushedRows closes the pool's connections (their server processes flush
// their statistics as they exit), reads the row counter once they are
// gone (or once it settled), and
// reopens as many connections as the pool may hold when reopen.
func (w *pgWrites) flushedRows(ctx context.Context, bare, reopen bool) (n int64, err error) {
	w.pool.Reset()
	if w.appName != "" && w.waitGone(ctx, 5*time.Second) == nil {
		n, err = w.rows(ctx, bare)
	} else {
		n, err = w.settledRows(ctx, bare)
	}
	if err != nil || !reopen {
		return n, err
	}
	conns := make([]*pgxpool.Conn, 0, w.pool.Config().MaxConns)
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	for range cap(conns) {
		c, err := w.pool.Acquire(ctx)
		if err != nil {
			return 0, err
		}
		conns = append(conns, c)
	}
	return n, nil
}

// statsSettle is how long the row counters must stay unchanged to count
// as settled: longer than the servers' one-second flush interval.
const statsSettle = 1200 * time.Millisecond

// settledRows polls rows until it has not changed for statsSettle (at most
// 15 s, then it fails: something keeps writing).
func (w *pgWrites) settledRows(ctx context.Context, bare bool) (int64, error) {
	last, err := w.rows(ctx, bare)
	if err != nil {
		return 0, err
	}
	since, deadline := time.Now(), time.Now().Add(15*time.Second)
	for time.Since(since) < statsSettle {
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("row counters of %s still moving after 15 s", w.schema)
		}
		select {
		case <-ctx.Done():
			return 0, context.Cause(ctx)
		case <-time.After(200 * time.Millisecond):
		}
		n, err := w.rows(ctx, bare)
		if err != nil {
			return 0, err
		}
		if n != last {
			last, since = n, time.Now()
		}
	}
	return last, nil
}

// writeCounts is a recorder's count of what its workload wrote: from
// PostgreSQL's statistics (pg), or from a counter of rows written kept in
// this process (local: SQLite's hooks, the etcd client's interceptor).
type writeCounts struct {
	pg    *pgWrites
	local *atomic.Int64
	bare  bool // count the bare commit's table
	// WAL bytes over the measured stretches, and whether any read failed.
	wal    int64
	walErr error
	// Settled row counters before and after the measured stretches.
	rows0, rows1 int64
	rowsErr      error
	started      bool
}

// begin reads the settled row counter before the measured operations.
func (c *writeCounts) begin(ctx context.Context) {
	if c != nil && c.local != nil {
		c.rows0, c.started = c.local.Load(), true
		return
	}
	if c == nil || c.pg == nil {
		return
	}
	c.rows0, c.rowsErr = c.pg.flushedRows(ctx, c.bare, true)
	c.started = true
}

// end reads it after them.
func (c *writeCounts) end(ctx context.Context) {
	if c != nil && c.local != nil && c.started {
		c.rows1 = c.local.Load()
		return
	}
	if c == nil || c.pg == nil || !c.started || c.rowsErr != nil {
		return
	}
	c.rows1, c.rowsErr = c.pg.flushedRows(ctx, c.bare, false)
}

// walBefore and walAfter bracket one measured stretch.
func (c *writeCounts) walBefore(ctx context.Context) int64 {
	if c == nil || c.pg == nil || c.walErr != nil {
		return 0
	}
	p, err := c.pg.walPos(ctx)
	c.walErr = err
	return p
}

func (c *writeCounts) walAfter(ctx context.Context, before int64) {
	if c == nil || c.pg == nil || c.walErr != nil {
		return
	}
	p, err := c.pg.walPos(ctx)
	c.walErr = err
	c.wal += p - before
}

// fill sets the row's per-operation figures, when counted.
func (c *writeCounts) fill(res *Result) {
	if c == nil || res.Ops == 0 {
		return
	}
	if c.pg != nil && c.walErr == nil {
		res.WALBytesPerOp = ptr(float64(c.wal) / float64(res.Ops))
	}
	if c.started && c.rowsErr == nil {
		res.RowsPerOp = ptr(float64(c.rows1-c.rows0) / float64(res.Ops))
	}
}
