package etcd

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// This file is the turn: how an Update that keeps losing its commit to
// concurrent ones gets to commit, in order.
//
// Optimistic re-runs favour small transactions: a large one (a tree
// cancellation reading and writing a whole run) needs a quiet window as
// long as its reads and its commit, and dispatchers committing every few
// milliseconds on the same run never leave it one. So an Update whose
// commit failed turnAfter times (or that has run for a quarter of its
// busy timeout, not counting its waits at the gate and for turns to
// pass, or that one turn has held back that long) joins the store's turn
// queue: it puts a meta key
// "turn/<token>" of its own, attached to its Backend's lease. The keys'
// CreateRevisions order the queue; the oldest key holds the turn. While
// the queue holds a key, only the holder commits: every Update reads the
// queue's oldest key with its first read (in the same request, at the
// same revision) and its commit compares what it found, so
//
//   - an Update that found the queue empty compares that it still is: one
//     that commits after another joined fails, and runs again;
//   - an Update that found another's key at the head sends no commit: it
//     waits for that key to go (through the Backend's watch) and runs
//     again; it joins the queue only by the rules above (once one turn
//     has held it back for a quarter of its busy timeout at the latest),
//     so that turns passing one after another do not pull every Update
//     into the queue and serialize disjoint ones for good;
//   - a queued Update waits, without running fn, for the key just ahead
//     of it to go (a watch, bounded by turnWait), so each turn wakes one
//     waiter; at the head, it runs fn, skipping its Backend's commit
//     gate, and its commit compares that no key older than its own
//     appeared, and deletes its key in the same Txn, so the turn passes
//     exactly when its writes land;
//   - a queued Update that returns without committing (fn's error, ctx,
//     the busy timeout) deletes its key.
//
// An Update in the queue is not held to its busy timeout while it waits
// there: the queue moves, and each turn ahead of it is bounded. The keys'
// lease is the Backend's, renewed until Close: a process that dies
// holding keys holds the queue back for turnTTL at most, then the lease
// expires and deletes them. A holder alive but stuck (its fn waiting on
// another Update, against the contract) is ignored by each Backend once
// it has held the turn for its own busy timeout, at most turnMaxHold:
// Updates then commit as if it had not taken the turn, comparing that its
// key did not change. An Update that finds its key gone (its lease
// expired) goes on as any other. The turn only decides who sends a
// commit; what commits is still decided by the compares alone, so
// serializability never depends on it. An Update whose fn writes nothing,
// or returns an error, is never held back by the turn.

const (
	// turnAfter is how many failed commits make an Update join the queue.
	turnAfter = 4
	// turnTTL is the turn lease's, in seconds: how long a process that
	// died in the queue holds every other Update back at most.
	turnTTL = 5
	// turnWait bounds one wait in the queue, after which the waiter
	// reads the queue again anyway.
	turnWait = time.Second
	// turnMaxHold is the longest a Backend lets one turn hold its Updates
	// back: a holder still alive but stuck (its fn waiting on an Update
	// that waits for the turn) is then ignored. A holder whose busy
	// timeout is shorter is ignored after that.
	turnMaxHold = 5 * time.Second
)

// turnSeen is the turn a Backend's Updates last found held by another,
// and since when.
type turnSeen struct {
	mu    sync.Mutex
	mod   int64
	since time.Time
}

// turnStale reports whether the turn held by key kv (the queue's head)
// has held this Backend's Updates back for as long as its holder may hold
// it already, and otherwise how long it may still hold it.
func (b *Backend) turnStale(kv *mvccpb.KeyValue) (bool, time.Duration) {
	limit := turnMaxHold
	if _, d, ok := strings.Cut(string(kv.Value), " "); ok {
		if ms, err := strconv.ParseInt(d, 10, 64); err == nil && ms > 0 {
			limit = min(limit, time.Duration(ms)*time.Millisecond)
		}
	}
	s := &b.turnSeen
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mod != kv.ModRevision {
		s.mod, s.since = kv.ModRevision, time.Now()
	}
	left := limit - time.Since(s.since)
	return left <= 0, left
}

// turnPrefix is the queue's key range's start (meta keys "turn/...").
func (b *Backend) turnPrefix() string { return b.metaKey("turn/") }

// turnEntry is the queue key of the Update with token.
func (b *Backend) turnEntry(token string) string { return b.turnPrefix() + token }

// turnHead reads the queue's oldest key.
func (b *Backend) turnHead() clientv3.Op {
	p := b.turnPrefix()
	return clientv3.OpGet(p, clientv3.WithRange(clientv3.GetPrefixRangeEnd(p)),
		clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend), clientv3.WithLimit(1))
}

// turnAhead reads the newest queue key created before revision rev.
func (b *Backend) turnAhead(rev int64) clientv3.Op {
	p := b.turnPrefix()
	return clientv3.OpGet(p, clientv3.WithRange(clientv3.GetPrefixRangeEnd(p)), clientv3.WithMaxCreateRev(rev-1),
		clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortDescend), clientv3.WithLimit(1), clientv3.WithKeysOnly())
}

// turnRead is what an Update's first read learned of the turn queue.
type turnRead struct {
	read bool             // the first read included the queue's head
	head *mvccpb.KeyValue // the queue's oldest key (nil: the queue was empty)
	held bool             // head is another Update's
	cmp  clientv3.Cmp     // what the commit compares of the queue
	rev  int64            // the revision of that read
}

// noteTurn records the queue's head as the first read returned it (kvs
// empty: the queue was empty), and the compare the commit makes of it.
func (t *readTx) noteTurn(kvs []*mvccpb.KeyValue) {
	if t.w == nil || t.turn.read {
		return
	}
	t.turn.read = true
	t.turn.rev = t.rev
	p := t.b.turnPrefix()
	end := clientv3.GetPrefixRangeEnd(p)
	if len(kvs) == 0 {
		// Still empty at the commit: nobody joined meanwhile.
		t.turn.cmp = clientv3.Compare(clientv3.Version(p), "=", 0).WithRange(end)
		return
	}
	h := kvs[0]
	t.turn.head = h
	if string(h.Key) == t.b.turnEntry(t.token) {
		// Ours: no older key appeared (none can: revisions only grow).
		t.turn.cmp = clientv3.Compare(clientv3.CreateRevision(p), ">", h.CreateRevision-1).WithRange(end)
		return
	}
	t.turn.held = true
	// Another's, committed past only once stale: it must not have changed.
	t.turn.cmp = clientv3.Compare(clientv3.ModRevision(string(h.Key)), "=", h.ModRevision)
}

// withTurn reports whether a read of t must also read the queue's head:
// the first read of an Update.
func (t *readTx) withTurn() bool { return t.w != nil && t.rev == 0 && !t.turn.read }

// turnLease is the Backend's lease for the queue keys its Updates put,
// granted at the first turn and kept alive until Close: a key outlives
// its Update only when the whole process (or its link to the cluster)
// dies, and then by turnTTL at most.
type turnLease struct {
	mu     sync.Mutex
	id     clientv3.LeaseID // 0: none
	cancel context.CancelFunc
}

// turnLeaseID returns the Backend's turn lease, granting it when needed.
func (b *Backend) turnLeaseID(ctx context.Context) (clientv3.LeaseID, error) {
	l := &b.turnLease
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.id != 0 {
		return l.id, nil
	}
	rctx, cancel := b.requestCtx(ctx)
	g, err := b.cli.Grant(rctx, turnTTL)
	cancel()
	if err != nil {
		return 0, err
	}
	kctx, kcancel := context.WithCancel(context.Background())
	ch, err := b.cli.KeepAlive(kctx, g.ID)
	if err != nil {
		kcancel()
		return 0, err
	}
	l.id, l.cancel = g.ID, kcancel
	go func() {
		for range ch { // the client renews the lease; drain its answers
		}
		// The lease expired or Close stopped it: the next turn grants anew.
		l.mu.Lock()
		if l.id == g.ID {
			l.id = 0
			l.cancel()
		}
		l.mu.Unlock()
	}()
	return g.ID, nil
}

// closeTurnLease stops renewing the turn lease and revokes it (Close).
func (b *Backend) closeTurnLease() {
	l := &b.turnLease
	l.mu.Lock()
	id, cancel := l.id, l.cancel
	l.id = 0
	l.mu.Unlock()
	if id == 0 {
		return
	}
	cancel()
	ctx, ccancel := context.WithTimeout(context.Background(), b.cfg.requestTimeout)
	defer ccancel()
	_, _ = b.cli.Revoke(ctx, id)
}

// place is an Update's key in the turn queue.
type place struct {
	key string
	rev int64 // its CreateRevision
	// head: the join found the key at the head (the queue was empty);
	// the first wait in line returns at once.
	head bool
}

// joinTurn puts the Update's key at the end of the turn queue, reading
// the queue's head and the key ahead in the same Txn; nil when a request
// failed (the Update then runs again without a place).
func (b *Backend) joinTurn(ctx context.Context, token string, busy time.Duration) *place {
	id, err := b.turnLeaseID(ctx)
	if err != nil {
		return nil
	}
	k := b.turnEntry(token)
	rctx, cancel := b.requestCtx(ctx)
	defer cancel()
	// The value names how long its holder may hold the turn: its busy
	// timeout (turnStale).
	v := fmt.Sprintf("%s %d", token, max(busy.Milliseconds(), 1))
	resp, err := b.kv.Txn(rctx).Then(clientv3.OpPut(k, v, clientv3.WithLease(id)), b.turnHead()).Commit()
	if err != nil {
		return nil
	}
	b.stats.turns.Add(1)
	p := &place{key: k, rev: resp.Header.Revision}
	if h := resp.Responses[1].GetResponseRange().GetKvs(); len(h) > 0 && string(h[0].Key) == k {
		p.head = true
	}
	return p
}

// leaveTurn deletes the queue key of an Update that returns without
// committing. Best effort: a key left behind holds others back until its
// holder is found stale or its lease expires.
func (b *Backend) leaveTurn(p *place) {
	ctx, cancel := context.WithTimeout(context.Background(), b.cfg.requestTimeout)
	defer cancel()
	_, _ = b.kv.Delete(ctx, p.key)
}

// queueState is where a queued Update stands after waiting in line.
type queueState int

const (
	atHead    queueState = iota + 1 // its key is the oldest: its turn
	headGone                        // the head is stale: run as if the turn were free
	placeLost                       // its key is gone (its lease expired)
)

// waitInLine waits, without running fn, until p's key is the queue's
// oldest, the head has held the turn too long (turnStale), or p's key is
// gone; between reads it waits for the key just ahead of p's to be
// deleted (at most turnWait, or until the head turns stale). It returns
// ctx's error when ctx ends first.
func (b *Backend) waitInLine(ctx context.Context, p *place) (queueState, error) {
	if p.head {
		p.head = false
		return atHead, nil
	}
	for {
		b.turnWatch.start(ctx, b) // before the read, so that it covers its revision
		rctx, cancel := b.requestCtx(ctx)
		resp, err := b.kv.Txn(rctx).Then(clientv3.OpGet(p.key, clientv3.WithKeysOnly()), b.turnHead(), b.turnAhead(p.rev)).Commit()
		cancel()
		b.stats.reads.Add(1)
		if err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return 0, cerr
			}
			return headGone, nil // let fn's reads retry the cluster
		}
		if len(resp.Responses[0].GetResponseRange().GetKvs()) == 0 {
			return placeLost, nil
		}
		heads := resp.Responses[1].GetResponseRange().GetKvs()
		if len(heads) == 0 || string(heads[0].Key) == p.key {
			return atHead, nil
		}
		stale, left := b.turnStale(heads[0])
		if stale {
			return headGone, nil
		}
		ahead := resp.Responses[2].GetResponseRange().GetKvs()
		if len(ahead) == 0 {
			continue // cannot be: the head is ahead; read again
		}
		b.stats.turnWaits.Add(1)
		gone := b.awaitDelete(ctx, string(ahead[0].Key), resp.Header.Revision, min(turnWait, left))
		if cerr := ctx.Err(); cerr != nil {
			return 0, cerr
		}
		if gone && string(ahead[0].Key) == string(heads[0].Key) {
			// The key ahead held the turn and has gone: ours, unless one
			// ahead left meanwhile too (fn's first read tells).
			return atHead, nil
		}
	}
}

// awaitDelete waits until key, a queue key that exists at revision rev,
// is deleted, for at most d or until ctx ends, through the Backend's
// watch on the queue (turnWatch).
func (b *Backend) awaitDelete(ctx context.Context, key string, rev int64, d time.Duration) bool {
	return b.turnWatch.await(ctx, b, key, rev, d)
}

// turnWatch is a Backend's one watch on the turn queue's deletes, started
// at its first wait and kept until Close (or until etcd ends it: the next
// wait starts it again). Waiting through one watch that is in sync, rather
// than a watch per wait from the revision the waiter read, matters: etcd
// delivers the events of a watch that starts in the past only on its
// periodic resync, every 100 ms, which would hold every turn back that
// long.
type turnWatch struct {
	mu      sync.Mutex
	from    int64            // it sees every delete after this revision (0: not running)
	deleted map[string]int64 // queue keys deleted since from: the delete's revision
	changed chan struct{}    // closed at each batch of deletes and when the watch ends
	cancel  context.CancelFunc
	closed  bool
}

// maxDeletesKept bounds turnWatch.deleted; past it the map starts afresh
// (and waiters that read before read again).
const maxDeletesKept = 4096

// start starts the watch unless it runs, waiting for etcd to create it;
// it reports whether it runs.
func (w *turnWatch) start(ctx context.Context, b *Backend) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.from != 0 {
		return true
	}
	if w.closed {
		return false
	}
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(context.Background()))
	ch := b.cli.Watch(wctx, b.turnPrefix(), clientv3.WithPrefix(), clientv3.WithFilterPut(), clientv3.WithCreatedNotify())
	var first clientv3.WatchResponse
	var ok bool
	select {
	case first, ok = <-ch:
	case <-ctx.Done():
	case <-time.After(b.cfg.requestTimeout):
	}
	if !ok || first.Err() != nil || !first.Created {
		cancel()
		return false
	}
	w.from, w.cancel = first.Header.Revision, cancel
	w.deleted, w.changed = map[string]int64{}, make(chan struct{})
	go w.run(ch, cancel)
	return true
}

// run records the deletes the watch reports until it ends.
func (w *turnWatch) run(ch clientv3.WatchChan, cancel context.CancelFunc) {
	defer cancel()
	for resp := range ch {
		if resp.Err() != nil || resp.Canceled {
			break
		}
		w.mu.Lock()
		for _, ev := range resp.Events {
			if ev.Type == clientv3.EventTypeDelete {
				if len(w.deleted) >= maxDeletesKept {
					w.deleted, w.from = map[string]int64{}, ev.Kv.ModRevision-1
				}
				w.deleted[string(ev.Kv.Key)] = ev.Kv.ModRevision
			}
		}
		close(w.changed)
		w.changed = make(chan struct{})
		w.mu.Unlock()
	}
	w.mu.Lock()
	w.from = 0
	close(w.changed)
	w.changed = make(chan struct{})
	w.mu.Unlock()
}

// await waits until key, which exists at revision rev, is deleted, for at
// most d or until ctx ends, and reports whether it saw the delete. It
// returns at once when the watch does not cover every delete after rev
// (the caller then reads again).
func (w *turnWatch) await(ctx context.Context, b *Backend, key string, rev int64, d time.Duration) bool {
	if !w.start(ctx, b) {
		return false
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		w.mu.Lock()
		if w.deleted[key] > rev {
			w.mu.Unlock()
			return true
		}
		if w.from == 0 || w.from > rev {
			w.mu.Unlock()
			return false
		}
		ch := w.changed
		w.mu.Unlock()
		select {
		case <-ch:
		case <-timer.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// stop ends the watch for good (Close).
func (w *turnWatch) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	if w.cancel != nil {
		w.cancel()
	}
}

// turnHeldTooLong reports whether the turn held by head has held this
// Backend's Updates back as long as its holder may hold it.
func (b *Backend) turnHeldTooLong(head *mvccpb.KeyValue) bool {
	stale, _ := b.turnStale(head)
	return stale
}
