package postgres

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
)

// queueNotify adds a work signal on channel to a commit batch, after its
// COMMIT: a transaction of its own that runs pg_notify with an empty
// payload (the signal says only that work may have arrived) and commits
// without waiting for its WAL flush.
//
// Why not NOTIFY inside the transaction: the server serializes the commits
// of notifying transactions with a database-wide lock taken before the
// commit and held until it ends, WAL flush included, so with durable
// commits every signalled transaction of every store on the server would
// wait for the fsyncs of those before it (BenchmarkSignalledCommits, 16
// goroutines on 2 cores: 330 to 585 µs per signalled commit against 140 to
// 184 µs unsignalled; with the signal after COMMIT, 140 µs against 120 to
// 138 µs). After COMMIT, in the same round trip, the signal
// keeps NOTIFY's guarantees that matter here: the server runs it only when
// COMMIT succeeded (a failed statement makes it skip the rest of the
// batch), so a rolled-back transaction signals nothing; it is sent after
// the work is committed and visible; and its own commit, not waiting for a
// flush, holds that lock only briefly. A crash of the server or a lost
// connection may lose the signal, never the work: listeners find it at
// their next poll, or through the wake-up a reconnected listener sends.
func queueNotify(b *pgx.Batch, channel string) {
	b.Queue("BEGIN")
	b.Queue("SELECT set_config('synchronous_commit', 'off', true), pg_notify($1, '')", channel)
	b.Queue("COMMIT")
}

// channelPrefix starts every store's channel name.
const channelPrefix = "wfstore_work_"

// maxIdentLen is the longest identifier, and so channel name, the server
// keeps (NAMEDATALEN - 1).
const maxIdentLen = 63

// Reconnection pauses of a work listener: from listenBackoffBase, doubling
// per failed attempt up to listenBackoffMax, each with jitter in [d/2, d].
const (
	listenBackoffBase = 100 * time.Millisecond
	listenBackoffMax  = 5 * time.Second
)

// workChannel returns the LISTEN/NOTIFY channel of the store in schema:
// channelPrefix followed by the schema name or, when that would pass the
// server's identifier limit, by 16 hex digits of the name's FNV-1a hash.
// Channels, like schemas, belong to one database, so each store has its
// own; a hash shared by accident would cost its stores spurious wake-ups,
// never a missed one.
func workChannel(schema string) string {
	if len(channelPrefix)+len(schema) <= maxIdentLen {
		return channelPrefix + schema
	}
	h := fnv.New64a()
	h.Write([]byte(schema))
	return fmt.Sprintf("%s%016x", channelPrefix, h.Sum64())
}

// ListenWork implements backend.WorkListener: it runs LISTEN on the
// store's channel (every Backend over the same schema, in any process,
// notifies there when a commit makes work available) on one dedicated
// connection, taken from the pool and then owned by the listener (it no
// longer counts against the pool's size), until ctx ends or the Backend
// is closed; then it closes that connection (Close waits for it).
//
// ListenWork returns once LISTEN is in place, so that every signalled
// commit after it is heard. When it cannot get a connection at once, or
// loses it later (a restart, a network failure, pg_terminate_backend), it
// reconnects with backoff (100ms doubling to 5s, jittered) and then sends
// one value, as work may have committed while it was deaf. Notifications
// coalesce into the channel's one-value buffer.
//
// LISTEN needs a session of its own: behind a pooler in transaction mode
// (PgBouncer's pool_mode=transaction) no notification arrives, and
// runners in other processes find work by polling as on other backends.
func (b *Backend) ListenWork(ctx context.Context) (<-chan struct{}, error) {
	cctx, leave, err := b.enter(ctx)
	if err != nil {
		return nil, err
	}
	if cctx.Err() != nil {
		leave()
		return nil, ctxErr(cctx, "listen", nil)
	}
	l := &listener{b: b, out: make(chan struct{}, 1)}
	conn, err := l.connect(cctx)
	if err != nil && cctx.Err() != nil {
		leave()
		return nil, ctxErr(cctx, "listen", err)
	}
	go func() {
		defer leave()
		l.run(cctx, conn)
	}()
	return l.out, nil
}

// listener is one ListenWork: its connection's loop and its channel.
type listener struct {
	b   *Backend
	out chan struct{}
}

// connect takes a connection from the pool, out of it, and runs LISTEN.
func (l *listener) connect(ctx context.Context) (*pgx.Conn, error) {
	pc, err := l.b.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("postgres: listen: acquire connection: %w", err)
	}
	conn := pc.Hijack()
	if _, err := conn.Exec(ctx, "LISTEN "+quoteIdent(l.b.channel)); err != nil {
		closeConn(conn)
		return nil, fmt.Errorf("postgres: listen: %w", err)
	}
	if h := l.b.hooks.listening; h != nil {
		h(conn.PgConn().PID())
	}
	return conn, nil
}

// run waits for notifications on conn (nil: not connected yet, which
// owes a value once connected) and reconnects after a failure, until ctx
// ends; then it closes the connection.
func (l *listener) run(ctx context.Context, conn *pgx.Conn) {
	failures := 0
	if conn == nil {
		failures = 1
	}
	defer func() {
		if conn != nil {
			closeConn(conn)
		}
	}()
	for {
		if conn == nil {
			if sleepCtx(ctx, listenBackoff(failures)) != nil {
				return
			}
			c, err := l.connect(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				failures++
				continue
			}
			conn, failures = c, 0
			l.wake() // deaf until now: work may have arrived meanwhile
		}
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			closeConn(conn)
			conn, failures = nil, 1
			continue
		}
		if h := l.b.hooks.heard; h != nil {
			h(n.Payload)
		}
		l.wake()
	}
}

// wake sends a value unless one is waiting already.
func (l *listener) wake() {
	select {
	case l.out <- struct{}{}:
	default:
	}
}

// listenBackoff returns the pause before reconnection attempt n (n >= 1).
func listenBackoff(n int) time.Duration {
	d := listenBackoffBase << min(n-1, 16)
	if d > listenBackoffMax || d <= 0 {
		d = listenBackoffMax
	}
	return d/2 + rand.N(d/2+1)
}

// closeConn closes a connection the listener owns, bounded in time.
func closeConn(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = conn.Close(ctx)
}
