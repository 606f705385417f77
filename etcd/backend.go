package etcd

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/wfstore/wfstore/backend"
)

// This file is the Backend: View, Update, Close, Capabilities, Info, Stats.

// Backend is a wfstore store under one key prefix of an etcd cluster. It
// is safe for concurrent use, and any number of Backends, in any number of
// processes, may share one store.
type Backend struct {
	cli    *clientv3.Client
	kv     clientv3.KV
	owned  bool // Close closes cli
	prefix string
	cfg    config
	slots  *slotPool
	hooks  hooks
	guard  *endpointGuard // a Dial-owned client's (endpoints.go); nil otherwise

	turnLease turnLease // for the turn keys of this Backend's Updates (turn.go)
	gate      *gate     // its Updates one at a time while they conflict (gate.go)
	turnSeen  turnSeen  // the turn its Updates last found held (turn.go)
	turnWatch turnWatch // its watch on the turn queue (turn.go)

	claimLease claimLease // for the claim keys it puts (claims.go)

	mu       sync.Mutex
	closed   atomic.Bool
	inflight sync.WaitGroup

	stats stats
}

var _ backend.Backend = (*Backend)(nil)

// hooks are test seams; the zero value is production behaviour.
type hooks struct {
	// commitFn sends an Update's commit Txn (tests wrap it to lose its
	// answer).
	commitFn func(ctx context.Context, kv clientv3.KV, c commitTxn) (*clientv3.TxnResponse, error)
}

// commitTxn is the content of one commit Txn (for test hooks).
type commitTxn struct {
	If         []clientv3.Cmp
	Then, Else []clientv3.Op
}

// send sends c through kv.
func (c commitTxn) send(ctx context.Context, kv clientv3.KV) (*clientv3.TxnResponse, error) {
	return kv.Txn(ctx).If(c.If...).Then(c.Then...).Else(c.Else...).Commit()
}

func (h hooks) commit(ctx context.Context, kv clientv3.KV, c commitTxn) (*clientv3.TxnResponse, error) {
	if h.commitFn != nil {
		return h.commitFn(ctx, kv, c)
	}
	return c.send(ctx, kv)
}

// stats are the counters behind Stats.
type stats struct {
	updates, commits, conflicts, transient, busy    atomic.Int64
	unknown, unknownApplied, unknownFenced, failed  atomic.Int64
	reads, commitRequests, fenceRequests, maxReruns atomic.Int64
	turns, turnWaits, turnsByTime                   atomic.Int64
}

// Stats are counters since Open, for tests, reports and benchmarks.
type Stats struct {
	// Updates counts Update calls that ran fn at least once.
	Updates int64
	// Commits counts Updates whose writes committed.
	Commits int64
	// Conflicts counts commits whose compares failed (another transaction
	// changed what fn read), each followed by a re-run of fn.
	Conflicts int64
	// TransientReads counts runs of fn ended by a transient read error (a
	// leader change, a timeout, a compacted revision) and run again.
	TransientReads int64
	// Busy counts Updates that returned ErrBusy.
	Busy int64
	// Unknown counts commit requests that failed without an answer;
	// UnknownApplied those the fence found applied (Update returned nil),
	// UnknownFenced those it stopped from ever applying (fn ran again),
	// and UnknownFailed those it could not resolve (ErrOutcomeUnknown).
	Unknown, UnknownApplied, UnknownFenced, UnknownFailed int64
	// Reads, CommitRequests and FenceRequests count requests sent.
	Reads, CommitRequests, FenceRequests int64
	// MaxReruns is the most re-runs of fn one Update needed.
	MaxReruns int64
	// Turns counts places taken in the turn queue by Updates whose
	// commits kept failing; TurnWaits counts waits, without committing,
	// for another Update's turn to end, in the queue or out of it
	// (turn.go). TurnsByTime counts the places among Turns taken by
	// Updates that had run for a quarter of their busy timeout before
	// turnAfter failed commits.
	Turns, TurnWaits, TurnsByTime int64
}

// Prefix returns the key prefix of the store.
func (b *Backend) Prefix() string { return b.prefix }

// Stats returns the Backend's counters.
func (b *Backend) Stats() Stats {
	s := &b.stats
	return Stats{
		Updates: s.updates.Load(), Commits: s.commits.Load(), Conflicts: s.conflicts.Load(),
		TransientReads: s.transient.Load(), Busy: s.busy.Load(),
		Unknown: s.unknown.Load(), UnknownApplied: s.unknownApplied.Load(),
		UnknownFenced: s.unknownFenced.Load(), UnknownFailed: s.failed.Load(),
		Reads: s.reads.Load(), CommitRequests: s.commitRequests.Load(), FenceRequests: s.fenceRequests.Load(),
		MaxReruns: s.maxReruns.Load(), Turns: s.turns.Load(), TurnWaits: s.turnWaits.Load(),
		TurnsByTime: s.turnsByTime.Load(),
	}
}

// enter checks that a call may start and counts it in flight.
func (b *Backend) enter(ctx context.Context, op string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed.Load() {
		return fmt.Errorf("etcd: %s: %w", op, backend.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("etcd: %s: %w", op, err)
	}
	b.inflight.Add(1)
	return nil
}

// requestCtx bounds one request by the request timeout.
func (b *Backend) requestCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, b.cfg.requestTimeout)
}

// View runs fn against one revision of the store: its first read fixes the
// revision and every later read names it. The error fn returns is
// returned as is.
func (b *Backend) View(ctx context.Context, fn func(rtx backend.ReadTx) error) error {
	if err := b.enter(ctx, "view"); err != nil {
		return err
	}
	defer b.inflight.Done()
	t := newReadTx(b, false)
	defer func() { t.done = true }()
	return fn(t)
}

// Update runs fn against one revision of the store, buffering its writes,
// and commits them in one Txn whose compares check that nothing fn read
// (keys, and key ranges for scans) changed since that revision (tx.go,
// commit.go). A failed compare runs fn again, after a jittered pause,
// against a newer revision; so does a transient read error, and a commit
// whose answer was lost and whose fence proved it did not apply. Re-runs
// go on while ctx allows and for at most the busy timeout (WithBusyTimeout)
// from the start of Update, not counting the time spent waiting at the
// Backend's commit gate for its other Updates (gate.go) or for another
// Update's turn to pass (turn.go): each such wait ends with another's
// commit or is bounded; then Update fails with an error wrapping
// backend.ErrBusy. fn's error is returned as is and nothing is written; a
// panic in fn is re-raised (nothing was written either). An Update whose
// fn wrote nothing commits nothing. Update returns nil only once etcd has
// acknowledged the commit (or, after a lost answer, once the commit marker
// shows it applied); it never reports a commit whose outcome it does not
// know as failed or succeeded: it returns an error wrapping
// ErrOutcomeUnknown instead.
func (b *Backend) Update(ctx context.Context, fn func(tx backend.Tx) error) error {
	if err := b.enter(ctx, "update"); err != nil {
		return err
	}
	defer b.inflight.Done()
	b.stats.updates.Add(1)
	s := b.slots.get()
	defer func() {
		if s.rev >= 0 {
			b.slots.put(s)
		}
	}()
	// start is when Update began, moved later by each wait at the gate
	// and for another's turn to pass: waiting counts neither toward the
	// busy timeout nor toward the turn's time rule. Counted, it made
	// Updates that merely waited (at a busy gate, or through turns that
	// each passed quickly) take the turn, and the turns then held every
	// other Update of the store back until they too had waited long
	// enough to take one: all one at a time. An Update held back by one
	// turn (heldBy, the head's key, since heldSince) for a quarter of the
	// busy timeout joins the queue all the same, so that Updates waiting
	// for a long turn commit in their order after it.
	start := time.Now()
	var heldBy string
	var heldSince time.Time
	var why retries // why fn ran again, for the error that ends the re-runs
	token := nonce()
	// The turn queue (turn.go): an Update joins it after turnAfter failed
	// commits, or once a quarter of the busy timeout has passed (from
	// start); it leaves
	// it with its commit or its return.
	var queued *place
	defer func() {
		if queued != nil {
			b.leaveTurn(queued)
		}
	}()
	// The commit gate (gate.go): the queues held for one run of fn and its
	// commit.
	hold := &gateHold{g: b.gate}
	defer hold.leave()
	leaveGate := hold.leave
	for run := 0; ; run++ {
		if run > 0 {
			storeMax(&b.stats.maxReruns, int64(run))
		}
		if queued == nil && run > 0 && (why.conflicts >= turnAfter || time.Since(start) >= b.cfg.busyTimeout/4 ||
			(heldBy != "" && time.Since(heldSince) >= b.cfg.busyTimeout/4)) {
			queued = b.joinTurn(ctx, token, b.cfg.busyTimeout)
			if queued != nil && why.conflicts < turnAfter {
				b.stats.turnsByTime.Add(1)
			}
		}
		if queued != nil {
			st, werr := b.waitInLine(ctx, queued)
			if werr != nil {
				b.stats.busy.Add(1)
				return fmt.Errorf("etcd: update: waiting for the turn after %d runs (%s): %w: %w", run, why, backend.ErrBusy, werr)
			}
			if st == placeLost {
				queued = nil // its lease expired: join again when needed
			}
		}
		// An Update in the queue never waits at the gate. One whose commit
		// failed, or whose read of a hot key found its queue held, runs
		// again holding those queues; every Update holds them all while
		// the gate is closed.
		if want := hold.want; queued == nil && (want != 0 || b.gate.closed()) {
			if b.gate.closed() {
				want = allQueues
			}
			entered := time.Now()
			gerr := hold.enter(ctx, want)
			start = start.Add(time.Since(entered))
			if gerr != nil {
				b.stats.busy.Add(1)
				return fmt.Errorf("etcd: update: waiting for the Backend's other Updates after %d runs (%s): %w: %w", run, why, backend.ErrBusy, gerr)
			}
		}
		t := &tx{readTx: *newReadTx(b, true)}
		t.token, t.place = token, queued
		if queued == nil {
			t.gate = hold
		}
		err := b.runFn(t, fn)
		if !t.turn.held {
			heldBy = ""
		}
		var out outcome
		waited := false
		switch {
		case t.gateBusy:
			// A read of a hot key found another Update holding the gate
			// (fn returned that read's error, or against the contract
			// swallowed it): commit nothing, wait for the gate, run again.
			why.gated++
			why.last = "another Update of this Backend held the gate on what fn read"
			waited = true
		case err != nil && t.transient == nil:
			return err
		case t.transient != nil:
			// A read failed transiently; fn returned its error (or, against
			// the contract, swallowed it): never commit what it wrote.
			b.stats.transient.Add(1)
			why.reads++
			why.last = fmt.Sprintf("a read failed (request timeout %v): %v", b.cfg.requestTimeout, t.transient)
		case t.w.broken != nil:
			return fmt.Errorf("etcd: update not committed because a write failed part-way: %w", t.w.broken)
		case len(t.w.writes) == 0:
			return nil
		case t.turn.held && !b.turnHeldTooLong(t.turn.head):
			// Another Update holds the turn: commit nothing. One in the
			// queue waits in line; another waits for the turn to pass
			// (waits do not make it join the queue unless one turn holds
			// it back long: under load that would queue every Update and
			// serialize disjoint ones too).
			leaveGate()
			b.stats.turnWaits.Add(1)
			why.waits++
			why.last = "another Update held the turn"
			waited = true
			if k := string(t.turn.head.Key); k != heldBy {
				heldBy, heldSince = k, time.Now()
			}
			if queued == nil {
				// Until the turn passes, but no later than when this
				// Update joins the queue anyway.
				_, left := b.turnStale(t.turn.head)
				join := b.cfg.busyTimeout/4 - time.Since(heldSince)
				waiting := time.Now()
				b.awaitDelete(ctx, string(t.turn.head.Key), t.turn.rev, max(min(turnWait, left, join), 0))
				start = start.Add(time.Since(waiting))
			}
		default:
			out, err = b.commit(ctx, t, s)
			switch {
			case err != nil:
				if errors.Is(err, ErrOutcomeUnknown) {
					b.stats.failed.Add(1)
				}
				return err
			case out == committed:
				b.stats.commits.Add(1)
				queued = nil // the commit deleted its key in the queue
				return nil
			case out == conflicted:
				hold.want |= b.gate.conflicted(t.w.reads)
				b.stats.conflicts.Add(1)
				why.conflicts++
				why.last = "a concurrent commit changed what fn read"
			case out == fenced:
				why.fenced++
				why.last = fmt.Sprintf("a commit request got no answer (request timeout %v: %v); the commit marker's fence proved it never applied", b.cfg.requestTimeout, t.unanswered)
			}
		}
		leaveGate()
		if cerr := ctx.Err(); cerr != nil {
			if out == fenced {
				return fmt.Errorf("etcd: update: not committed: %w", cerr)
			}
			b.stats.busy.Add(1)
			return fmt.Errorf("etcd: update: re-runs stopped after %d runs (%s): %w: %w", run+1, why, backend.ErrBusy, cerr)
		}
		// An Update in the turn queue that found the turn taken waits in
		// line instead: the queue moves, and each turn ahead of it is
		// bounded (turn.go).
		if lim := b.cfg.busyTimeout; lim > 0 && (!waited || queued == nil) && time.Since(start) >= lim {
			b.stats.busy.Add(1)
			return fmt.Errorf("etcd: update: not committed after %d runs in the busy timeout %v (%s): %w", run+1, lim, why, backend.ErrBusy)
		}
		if b.closed.Load() {
			return fmt.Errorf("etcd: update: %w", backend.ErrClosed)
		}
		if waited {
			continue // the turn passed, or wait in line: run at once
		}
		select {
		case <-time.After(backoff(run)):
		case <-ctx.Done():
		}
	}
}

// runFn runs fn on t; t is done when fn returns or panics.
func (b *Backend) runFn(t *tx, fn func(tx backend.Tx) error) error {
	defer func() { t.done = true }()
	return fn(t)
}

func storeMax(a *atomic.Int64, v int64) {
	for {
		old := a.Load()
		if v <= old || a.CompareAndSwap(old, v) {
			return
		}
	}
}

// Capabilities: every Backend over a store, in any process, commits
// through the same cluster's compares, so both are true.
func (b *Backend) Capabilities() backend.Capabilities {
	return backend.Capabilities{MultiInstance: true, MultiProcess: true}
}

// Info describes the adapter and its settings. Durability is the
// cluster's: etcd fsyncs its write-ahead log before it acknowledges a
// commit unless its members run with --unsafe-no-fsync.
func (b *Backend) Info() backend.Info {
	return backend.Info{
		Name:    "etcd",
		Version: "go.etcd.io/etcd/client/v3 " + clientVersion(),
		Settings: map[string]string{
			"prefix":          strconv.Quote(b.prefix),
			"schema_version":  strconv.Itoa(SchemaVersion),
			"busy_timeout":    b.cfg.busyTimeout.String(),
			"request_timeout": b.cfg.requestTimeout.String(),
			"max_txn_ops":     strconv.Itoa(b.cfg.maxTxnOps),
			"caller_client":   strconv.FormatBool(!b.owned),
			"durability":      "the cluster's (etcd fsyncs its WAL before acknowledging unless --unsafe-no-fsync)",
		},
	}
}

// pinnedClientVersion is the client version go.mod pins; Info reports it
// when the binary carries no module list.
const pinnedClientVersion = "v3.7.3"

func clientVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "go.etcd.io/etcd/client/v3" {
				return d.Version
			}
		}
	}
	return pinnedClientVersion
}

// Close waits for the calls in progress, deletes this Backend's commit
// markers and, when Dial made the client, closes it. Every later call
// fails with ErrClosed; a second Close returns an error wrapping it.
func (b *Backend) Close() error {
	b.mu.Lock()
	if b.closed.Load() {
		b.mu.Unlock()
		return fmt.Errorf("etcd: close: %w", backend.ErrClosed)
	}
	b.closed.Store(true)
	b.mu.Unlock()
	b.inflight.Wait()
	b.turnWatch.stop()
	b.closeTurnLease()
	b.closeClaimLease()
	ctx, cancel := context.WithTimeout(context.Background(), b.cfg.requestTimeout)
	_, derr := b.kv.Delete(ctx, b.slots.prefix, clientv3.WithPrefix())
	cancel()
	b.guard.close()
	if b.owned {
		if err := b.cli.Close(); err != nil {
			return fmt.Errorf("etcd: close: %w", err)
		}
	}
	if derr != nil {
		return fmt.Errorf("etcd: close: deleting commit markers: %w", derr)
	}
	return nil
}

// retries counts why an Update ran fn again, so that the error ending its
// re-runs says what happened (conflicts, or a cluster that did not answer).
type retries struct {
	conflicts, reads, fenced, waits, gated int
	last                                   string
}

func (r retries) String() string {
	if r.last == "" {
		r.last = "none"
	}
	return fmt.Sprintf("%d conflicts, %d failed reads, %d unanswered commits fenced, %d waits for another's turn, %d for the gate; last: %s", r.conflicts, r.reads, r.fenced, r.waits, r.gated, r.last)
}
