package etcd

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wfstore/wfstore/backend"
)

// This file is the commit of an Update and the resolution of a commit whose
// outcome is unknown.
//
// One Txn commits an Update: If compares its read set (tx.go) and the
// commit marker's ModRevision, Then applies its buffered writes and puts
// the commit marker, Else reads the marker. A failed compare is a conflict:
// fn runs again.
//
// A commit marker is a key of its own per concurrent Update: each Backend
// keeps a pool of marker slots (prefix | 'x' | instance id | '/' | slot
// number), and an Update holds one slot for its whole run, so no one else
// writes that key while it does. The Backend knows the slot's ModRevision
// (from the last commit or fence that wrote it) and every commit compares
// it; the commit puts "c:<nonce>" there, a fresh nonce per commit request.
//
// When the commit request fails without an answer (a timeout, a lost
// leader, a dropped connection, a cancelled ctx) the Txn may or may not
// have been applied, and may still be applied later. The Update then
// fences: a second Txn that puts "f:<nonce>" in the slot if its
// ModRevision is still the one the commit compared, and otherwise reads
// it. If the fence applies, the commit can never apply (its compare on the
// slot now fails): nothing was written, and fn runs again. If the slot
// holds "c:<nonce>", the commit applied: Update returns nil. If it holds
// "f:<nonce>", an earlier fence request, itself unanswered, applied. A
// fence that gets no answer is sent again until ctx's deadline (or, when
// ctx is already done, for the request timeout) passes; only then does
// Update return an error wrapping ErrOutcomeUnknown, and the slot is
// dropped.

// ErrOutcomeUnknown: a commit request failed without an answer and the
// fence that decides its outcome could not be completed in time either:
// the transaction may or may not have committed. The Backend stays usable.
// It matches backend.ErrOutcomeUnknown.
var ErrOutcomeUnknown = fmt.Errorf("etcd: no answer from the cluster: %w", backend.ErrOutcomeUnknown)

// slot is a commit marker key held by one Update at a time.
type slot struct {
	key string
	rev int64 // the marker's ModRevision (0: never written)
}

// slotPool hands out marker slots.
type slotPool struct {
	mu       sync.Mutex
	free     []*slot
	next     int
	prefix   string // prefix | 'x' | instance | '/'
	instance string
}

func newSlotPool(storePrefix string) *slotPool {
	var id [8]byte
	_, _ = crand.Read(id[:])
	inst := hex.EncodeToString(id[:])
	return &slotPool{prefix: storePrefix + string([]byte{tagMarker}) + inst + "/", instance: inst}
}

func (p *slotPool) get() *slot {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.free); n > 0 {
		s := p.free[n-1]
		p.free = p.free[:n-1]
		return s
	}
	p.next++
	return &slot{key: p.prefix + strconv.Itoa(p.next)}
}

func (p *slotPool) put(s *slot) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.free = append(p.free, s)
}

// outcome is what one commit request came to.
type outcome int

const (
	committed outcome = iota + 1
	conflicted
	fenced // the outcome was unknown; the fence applied: nothing committed
)

// nonce returns a fresh random token for a marker value.
func nonce() string {
	var b [12]byte
	_, _ = crand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// commit sends t's Txn. It returns committed, conflicted or fenced, or an
// error: a definite failure of the request (too many operations, a request
// too large), ctx's error when ctx ended before the request was sent, or
// one wrapping ErrOutcomeUnknown.
func (b *Backend) commit(ctx context.Context, t *tx, s *slot) (outcome, error) {
	w := t.w
	cmps := append(w.cmps(t.rev), clientv3.Compare(clientv3.ModRevision(s.key), "=", s.rev))
	if t.turn.read {
		cmps = append(cmps, t.turn.cmp) // the turn queue as fn found it (turn.go)
	}
	n := nonce()
	ops := append(w.ops(), clientv3.OpPut(s.key, "c:"+n))
	if t.place != nil {
		// This Update is in the turn queue: its commit leaves it, ending
		// its turn.
		ops = append(ops, clientv3.OpDelete(t.place.key))
	}
	rctx, cancel := b.requestCtx(ctx)
	resp, err := b.hooks.commit(rctx, b.kv, commitTxn{If: cmps, Then: ops, Else: []clientv3.Op{clientv3.OpGet(s.key)}})
	cancel()
	b.stats.commitRequests.Add(1)
	if err == nil {
		if resp.Succeeded {
			s.rev = resp.Header.Revision
			return committed, nil
		}
		// The marker is ours alone, so a failed compare is the read set's;
		// refresh the slot's revision all the same.
		if rr := resp.Responses[0].GetResponseRange(); rr != nil && len(rr.Kvs) > 0 {
			s.rev = rr.Kvs[0].ModRevision
		}
		return conflicted, nil
	}
	if definite(err) {
		return 0, fmt.Errorf("etcd: commit: %w", err)
	}
	b.stats.unknown.Add(1)
	b.guard.suspect()
	t.unanswered = err
	return b.resolve(ctx, s, n, err)
}

// resolve learns the outcome of the commit that put "c:"+n in s, or makes
// sure it never applies (the fence; see the top of this file).
func (b *Backend) resolve(ctx context.Context, s *slot, n string, cause error) (outcome, error) {
	rctx := context.WithoutCancel(ctx)
	var cancel context.CancelFunc
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) > b.cfg.requestTimeout {
		rctx, cancel = context.WithDeadline(rctx, dl)
	} else {
		rctx, cancel = context.WithTimeout(rctx, max(b.cfg.requestTimeout, b.cfg.busyTimeout))
	}
	defer cancel()
	for try := 0; ; try++ {
		reqCtx, reqCancel := context.WithTimeout(rctx, b.cfg.requestTimeout)
		resp, err := b.kv.Txn(reqCtx).
			If(clientv3.Compare(clientv3.ModRevision(s.key), "=", s.rev)).
			Then(clientv3.OpPut(s.key, "f:"+n)).
			Else(clientv3.OpGet(s.key)).Commit()
		reqCancel()
		b.stats.fenceRequests.Add(1)
		if err != nil {
			b.guard.suspect()
		}
		if err == nil {
			if resp.Succeeded {
				s.rev = resp.Header.Revision
				b.stats.unknownFenced.Add(1)
				return fenced, nil
			}
			rr := resp.Responses[0].GetResponseRange()
			if rr == nil || len(rr.Kvs) == 0 {
				return 0, fmt.Errorf("etcd: commit marker %q vanished while its commit was unresolved: %w (after %w)", s.key, ErrOutcomeUnknown, cause)
			}
			s.rev = rr.Kvs[0].ModRevision
			switch string(rr.Kvs[0].Value) {
			case "c:" + n:
				b.stats.unknownApplied.Add(1)
				return committed, nil
			case "f:" + n:
				b.stats.unknownFenced.Add(1)
				return fenced, nil
			}
			return 0, fmt.Errorf("etcd: commit marker %q holds %q, written by no request of this commit: %w (after %w)",
				s.key, rr.Kvs[0].Value, ErrOutcomeUnknown, cause)
		}
		if definite(err) || rctx.Err() != nil {
			s.rev = -1 // unknown: the caller drops the slot
			return 0, fmt.Errorf("etcd: commit: %w: %w (fence: %w)", ErrOutcomeUnknown, cause, err)
		}
		select {
		case <-time.After(backoff(try)):
		case <-rctx.Done():
		}
	}
}

// definite reports whether a failed request certainly did not apply: the
// server refused it as malformed or too large, before proposing it.
func definite(err error) bool {
	for _, e := range []error{rpctypes.ErrTooManyOps, rpctypes.ErrRequestTooLarge, rpctypes.ErrDuplicateKey,
		rpctypes.ErrKeyNotFound, rpctypes.ErrEmptyKey, rpctypes.ErrCompacted, rpctypes.ErrFutureRev, rpctypes.ErrPermissionDenied,
		rpctypes.ErrNoSpace} {
		if errors.Is(err, e) || rpctypes.ErrorDesc(err) == rpctypes.ErrorDesc(e) {
			return true
		}
	}
	switch code(err) {
	case codes.InvalidArgument, codes.ResourceExhausted, codes.PermissionDenied, codes.FailedPrecondition, codes.OutOfRange:
		return !strings.Contains(err.Error(), "timed out")
	}
	return false
}

// code returns the gRPC code of an error the client returned: an
// rpctypes.EtcdError for the server's own errors, a gRPC status for the
// others; codes.Unknown when it is neither.
func code(err error) codes.Code {
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		return ee.Code()
	}
	if st, ok := status.FromError(err); ok {
		return st.Code()
	}
	return codes.Unknown
}

// isTransient reports whether a failed read may succeed when fn runs
// again: the cluster lost or changed its leader, timed out, or compacted
// the transaction's revision.
func isTransient(err error) bool {
	if errors.Is(err, rpctypes.ErrCompacted) || rpctypes.ErrorDesc(err) == rpctypes.ErrorDesc(rpctypes.ErrCompacted) {
		return true
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return true // the request timeout, not the caller's ctx (checked by the caller)
	}
	switch code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Aborted, codes.Canceled:
		return true
	}
	return false
}

const (
	minBackoff = time.Millisecond
	maxBackoff = 128 * time.Millisecond
)

// backoff returns the jittered pause before re-run n (0-based): uniform in
// [d/2, d] with d = 1 ms << n, capped at 128 ms.
func backoff(n int) time.Duration {
	d := maxBackoff
	if n < 7 {
		d = minBackoff << n
	}
	return d/2 + rand.N(d/2+1)
}
