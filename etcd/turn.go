package etcd

import (
	"context"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// This file is the turn: how an Update that keeps losing its commit to
// concurrent ones gets to commit.
//
// Optimistic re-runs favour small transactions: a large one (a tree
// cancellation reading and writing a whole run) needs a quiet window as
// long as its reads and its commit, and dispatchers committing every few
// milliseconds on the same run never leave it one. So an Update whose
// commit failed (or that waited for another's turn) turnAfter times takes
// the store's turn: one meta key,
// put only if absent, attached to a lease of turnTTL, holding the
// Update's token. While the key holds another Update's token, no Update
// commits: every Update reads the turn key with its first read (in the
// same request, at the same revision) and keeps it in its read set like
// any key it read, so
//
//   - an Update that read the key absent and commits after the turn was
//     taken fails its compare on it, and runs again;
//   - an Update that read the key holding another's token does not send
//     its commit: it waits until the key is deleted (a watch, bounded by
//     turnWait) and runs again;
//   - the holder's commit deletes the key in the same Txn, so the turn
//     ends exactly when its writes land; a holder that returns without
//     committing (fn's error, ctx, the busy timeout) deletes it if it
//     still holds its token.
//
// The key's lease is the Backend's, renewed until Close: a process that
// dies holding the turn holds the others back for turnTTL at most, then
// the lease expires and deletes the key. A holder alive but stuck (its fn
// waiting on another Update, against the contract) is ignored by each
// Backend after turnMaxHold. An Update that finds it lost the
// turn (its first read no longer sees its token) goes on as any other. The turn only decides who sends a commit; what commits is
// still decided by the compares alone, so serializability never depends
// on it. An Update whose fn writes nothing, or returns an error, is never
// held back by the turn.

const (
	// turnAfter is how many failed commits make an Update take the turn.
	turnAfter = 4
	// turnTTL is the turn lease's, in seconds: how long a process that
	// died holding the turn holds every other Update back at most.
	turnTTL = 5
	// turnWait bounds one wait for the turn to end, after which the
	// waiter reads again anyway.
	turnWait = time.Second
	// turnMaxHold is how long a Backend lets one turn hold its Updates
	// back: a holder still alive but stuck (its fn waiting on an Update
	// that waits for the turn) is then ignored, and Updates commit as if
	// the key were absent (their compare on it still holds).
	turnMaxHold = 5 * time.Second
)

// turnSeen is the turn a Backend's Updates last found held by another,
// and since when.
type turnSeen struct {
	mu    sync.Mutex
	mod   int64
	since time.Time
}

// turnStale reports whether the turn held at ModRevision mod has held this
// Backend's Updates back for turnMaxHold already.
func (b *Backend) turnStale(mod int64) bool {
	s := &b.turnSeen
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mod != mod {
		s.mod, s.since = mod, time.Now()
		return false
	}
	return time.Since(s.since) >= turnMaxHold
}

// turnKey is the store's turn key (a meta key).
func (b *Backend) turnKey() string { return b.metaKey("turn") }

// turnRead is what an Update's first read learned of the turn key.
type turnRead struct {
	read  bool   // the first read included the turn key
	held  bool   // the key holds another Update's token
	mod   int64  // the key's ModRevision (0: absent)
	rev   int64  // the revision of that read
	value string // the token held
}

// noteTurn records the turn key as the first read returned it (kvs empty:
// absent): in the read set, and whether another Update holds the turn.
func (t *readTx) noteTurn(kvs []*mvccpb.KeyValue) {
	if t.w == nil || t.turn.read {
		return
	}
	t.turn.read = true
	t.turn.rev = t.rev
	var mod int64
	if len(kvs) > 0 {
		mod = kvs[0].ModRevision
		t.turn.mod = mod
		t.turn.value = string(kvs[0].Value)
		t.turn.held = t.turn.value != t.token
	}
	t.noteRead(t.b.turnKey(), mod)
}

// withTurn reports whether a read of t must also read the turn key: the
// first read of an Update.
func (t *readTx) withTurn() bool { return t.w != nil && t.rev == 0 && !t.turn.read }

// turnLease is the Backend's lease for the turn keys its Updates put,
// granted at the first turn and kept alive until Close: a turn outlives
// its holder only when the whole process (or its link to the cluster)
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

// takeTurn tries to take the turn for token, reporting whether it did:
// false when another Update holds it, or when a request failed (the Update
// then runs again without it).
func (b *Backend) takeTurn(ctx context.Context, token string) bool {
	id, err := b.turnLeaseID(ctx)
	if err != nil {
		return false
	}
	k := b.turnKey()
	rctx, cancel := b.requestCtx(ctx)
	defer cancel()
	resp, err := b.kv.Txn(rctx).If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
		Then(clientv3.OpPut(k, token, clientv3.WithLease(id))).Commit()
	if err != nil || !resp.Succeeded {
		return false
	}
	b.stats.turns.Add(1)
	return true
}

// releaseTurn ends the turn of a holder that returns without committing:
// it deletes the turn key if it still holds token. Best effort: a key left
// behind holds others back until the lease expires.
func (b *Backend) releaseTurn(token string) {
	k := b.turnKey()
	ctx, cancel := context.WithTimeout(context.Background(), b.cfg.requestTimeout)
	defer cancel()
	_, _ = b.kv.Txn(ctx).If(clientv3.Compare(clientv3.Value(k), "=", token)).Then(clientv3.OpDelete(k)).Commit()
}

// waitTurn waits until the turn key, held at revision rev, is deleted (its
// holder committed or released it, or its lease expired), for at most
// turnWait or until ctx ends. It reports whether it saw the delete.
func (b *Backend) waitTurn(ctx context.Context, rev int64) bool {
	b.stats.turnWaits.Add(1)
	wctx, cancel := context.WithTimeout(clientv3.WithRequireLeader(ctx), turnWait)
	defer cancel()
	for resp := range b.cli.Watch(wctx, b.turnKey(), clientv3.WithRev(rev+1)) {
		if resp.Err() != nil || resp.Canceled {
			return false
		}
		for _, ev := range resp.Events {
			if ev.Type == clientv3.EventTypeDelete {
				return true
			}
		}
	}
	return false
}
