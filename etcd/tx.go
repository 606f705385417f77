package etcd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"

	"github.com/wfstore/wfstore/backend"
)

// This file holds the transaction types and their reads. A transaction
// reads one etcd revision: the first read of a View or of one run of an
// Update's fn is made at the current revision and fixes it (rev), every
// later read names it (WithRev), so fn sees one consistent snapshot. An
// Update's transaction also records its read set for the commit (commit.go):
//
//   - reads: each key it read from etcd with its ModRevision there (0 for
//     an absent key), compared with "=" at commit;
//   - ranges: each key range a scan read, compared at commit with
//     "ModRevision < rev+1" over the whole range, which fails when any key
//     in the range was put (inserted or changed) after rev: the phantom
//     check. A key deleted from a scanned range leaves it, so the range
//     compare cannot see it; the scans that return records read from
//     their range (record scans) therefore also compare each key they
//     returned, and index scans compare the record each entry names, which
//     changes whenever the entry is deleted (an entry is only deleted with
//     a change to its record, in the same transaction).
//
// Writes are buffered in the transaction and sent with the commit; reads
// see them (read-your-writes): a point read looks in the buffer first, a
// scan merges the buffered keys of its range into what etcd returned.

// entry is a key's state as read: absent when mod is 0.
type entry struct {
	value []byte
	mod   int64
}

// pending is a buffered write: a put of value, or a delete.
type pending struct {
	value []byte
	del   bool
}

// keyRange is a scanned range [from, end).
type keyRange struct{ from, end string }

type readTx struct {
	b     *Backend
	rev   int64            // the snapshot revision; 0 until the first read
	cache map[string]entry // keys read from etcd at rev
	done  bool             // fn returned
	w     *writeSet        // nil in a View
	// transient is the first read error after which fn may run again (a
	// leader change, a compacted revision): Update re-runs fn rather than
	// return fn's error.
	transient error
	// token is the Update's own, naming its key in the turn queue; place
	// is that key when the Update has one; turn is what its first read
	// found at the queue's head (turn.go).
	token string
	place *place
	turn  turnRead
	// gate is the Update's hold of its Backend's commit gate (nil in a
	// View, and for an Update in the turn queue); gateBusy records that a
	// read of a hot key found its queue held by another Update (gate.go):
	// this run never commits.
	gate     *gateHold
	gateBusy bool
}

// writeSet is an Update's buffered writes and read set.
type writeSet struct {
	writes map[string]pending
	reads  map[string]int64
	ranges []keyRange
	wrote  bool  // some write changed the buffer
	broken error // a write failed part-way: never commit
}

type tx struct {
	readTx
	// unanswered is the error of a commit request that got no answer
	// (its outcome then resolved through the commit marker).
	unanswered error
}

var (
	_ backend.ReadTx = (*readTx)(nil)
	_ backend.Tx     = (*tx)(nil)
)

func newReadTx(b *Backend, writable bool) *readTx {
	t := &readTx{b: b, cache: map[string]entry{}}
	if writable {
		t.w = &writeSet{writes: map[string]pending{}, reads: map[string]int64{}}
	}
	return t
}

// check is the start of every ReadTx and Tx method.
func (t *readTx) check(ctx context.Context, op string) error {
	if t.done {
		return fmt.Errorf("etcd: %s: transaction used after its fn returned: %w", op, backend.ErrClosed)
	}
	if t.b.closed.Load() {
		return fmt.Errorf("etcd: %s: %w", op, backend.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("etcd: %s: %w", op, err)
	}
	return nil
}

// readErr wraps an error of a read request, remembering a transient one.
func (t *readTx) readErr(ctx context.Context, op string, err error) error {
	if ctx.Err() == nil && t.b.closed.Load() {
		return fmt.Errorf("etcd: %s: %w: %w", op, backend.ErrClosed, err)
	}
	if ctx.Err() == nil && isTransient(err) {
		t.b.guard.suspect()
		if t.transient == nil {
			t.transient = err
		}
		if errors.Is(err, context.DeadlineExceeded) || code(err) == codes.DeadlineExceeded {
			return fmt.Errorf("etcd: %s: no answer from the cluster within the request timeout %v: %w", op, t.b.cfg.requestTimeout, err)
		}
	}
	return fmt.Errorf("etcd: %s: %w", op, err)
}

// withRev returns the options that read at t's revision. The first read
// is linearizable (it sees every commit acknowledged before it started);
// once the revision is fixed, reads of it are served by whichever member
// the client asks without a round of the leader (serializable): every
// member that has applied the revision holds the same data at it. A member
// that has not applied it yet refuses (ErrFutureRev) and the read is sent
// again, linearizable (readAt).
func (t *readTx) withRev(serializable bool, opts ...clientv3.OpOption) []clientv3.OpOption {
	if t.rev != 0 {
		opts = append(opts, clientv3.WithRev(t.rev))
		if serializable {
			opts = append(opts, clientv3.WithSerializable())
		}
	}
	return opts
}

// isFutureRev reports a serializable read sent to a member that has not
// applied the revision yet.
func isFutureRev(err error) bool {
	return errors.Is(err, rpctypes.ErrFutureRev) || rpctypes.ErrorDesc(err) == rpctypes.ErrorDesc(rpctypes.ErrFutureRev)
}

// pin fixes t's revision from the header of its first read.
func (t *readTx) pin(rev int64) {
	if t.rev == 0 {
		t.rev = rev
	}
}

// fetch reads from etcd every key of keys that t has not read yet, in
// read-only Txns of at most maxTxnOps gets each.
func (t *readTx) fetch(ctx context.Context, op string, keys []string) error {
	var need []string
	seen := map[string]bool{}
	for _, k := range keys {
		if _, ok := t.cache[k]; ok || seen[k] {
			continue
		}
		seen[k] = true
		need = append(need, k)
	}
	if err := t.gateRead(op, need); err != nil {
		return err
	}
	for len(need) > 0 {
		turn := t.withTurn() // the first read of an Update reads the turn queue's head too
		n := min(len(need), t.b.cfg.maxTxnOps)
		if turn {
			n = min(len(need), max(t.b.cfg.maxTxnOps-1, 1))
		}
		chunk := need[:n]
		need = need[n:]
		var resp *clientv3.TxnResponse
		var err error
		for _, serializable := range []bool{true, false} {
			ops := make([]clientv3.Op, len(chunk), len(chunk)+1)
			for i, k := range chunk {
				ops[i] = clientv3.OpGet(k, t.withRev(serializable)...)
			}
			if turn {
				ops = append(ops, t.b.turnHead())
			}
			rctx, cancel := t.b.requestCtx(ctx)
			resp, err = t.b.kv.Txn(rctx).Then(ops...).Commit()
			cancel()
			t.b.stats.reads.Add(1)
			if !isFutureRev(err) {
				break
			}
		}
		if err != nil {
			return t.readErr(ctx, op, err)
		}
		t.pin(resp.Header.Revision)
		if turn {
			t.noteTurn(resp.Responses[len(chunk)].GetResponseRange().GetKvs())
		}
		for i, r := range resp.Responses[:len(chunk)] {
			rr := r.GetResponseRange()
			e := entry{}
			if rr != nil && len(rr.Kvs) > 0 {
				e = entry{value: rr.Kvs[0].Value, mod: rr.Kvs[0].ModRevision}
			}
			t.cache[chunk[i]] = e
		}
	}
	return nil
}

// gateRead takes the queues of the hot keys among keys (gate.go) before an
// Update reads them, and fails with errGateBusy when another Update holds
// one: the Update then waits for them, with those it held, and runs again.
func (t *readTx) gateRead(op string, keys []string) error {
	if t.gate == nil || len(keys) == 0 {
		return nil
	}
	if !t.gateBusy {
		qs := t.b.gate.hotQueues(keys) &^ t.gate.held
		if qs == 0 || t.gate.try(qs) {
			return nil
		}
		t.gate.want |= t.gate.held | qs
	}
	t.gateBusy = true
	return fmt.Errorf("etcd: %s: %w", op, errGateBusy)
}

// lookup returns the value of stored key k as t sees it (nil: absent),
// after fetch has read it: the buffered write if any, else etcd's value at
// rev, which an Update records in its read set.
func (t *readTx) lookup(k string) []byte {
	if t.w != nil {
		if p, ok := t.w.writes[k]; ok {
			if p.del {
				return nil
			}
			return p.value
		}
	}
	e := t.cache[k]
	t.noteRead(k, e.mod)
	if e.mod == 0 {
		return nil
	}
	return e.value
}

// noteRead records that an Update read key k from etcd at mod.
func (t *readTx) noteRead(k string, mod int64) {
	if t.w == nil {
		return
	}
	if _, ok := t.w.reads[k]; !ok {
		t.w.reads[k] = mod
	}
}

// get reads the keys and returns their values (nil: absent).
func (t *readTx) get(ctx context.Context, op string, keys []string) ([][]byte, error) {
	var fromEtcd []string
	for _, k := range keys {
		if t.w != nil {
			if _, ok := t.w.writes[k]; ok {
				continue
			}
		}
		fromEtcd = append(fromEtcd, k)
	}
	if err := t.fetch(ctx, op, fromEtcd); err != nil {
		return nil, err
	}
	out := make([][]byte, len(keys))
	for i, k := range keys {
		out[i] = t.lookup(k)
	}
	return out, nil
}

// kv is one key and value a scan returned.
type kv struct {
	key   string
	value []byte
}

// scanOpts says how a scan reads and what it records.
type scanOpts struct {
	desc     bool // descending key order
	keysOnly bool // values are not needed
	// perKey records each returned key in the read set (a scan whose
	// results are the records themselves, not index entries).
	perKey bool
}

// scan returns up to limit keys of [from, end) in key order (descending
// with o.desc), as t sees them: etcd's keys at rev merged with t's
// buffered writes. limit < 0 means no limit; limit 0 returns nothing. An
// Update records the range it read (from etcd's point of view: up to the
// last key etcd returned when there may be more) for the phantom check.
func (t *readTx) scan(ctx context.Context, op, from, end string, limit int, o scanOpts) ([]kv, error) {
	if limit == 0 || from >= end {
		return nil, nil
	}
	var buffered []kv // t's buffered writes in range (value nil: deleted)
	dels := 0
	if t.w != nil {
		for k, p := range t.w.writes {
			if k >= from && k < end {
				buffered = append(buffered, kv{key: k, value: p.value})
				if p.del {
					buffered[len(buffered)-1].value = nil
					dels++
				}
			}
		}
	}
	opts := []clientv3.OpOption{clientv3.WithRange(end)}
	if limit > 0 {
		opts = append(opts, clientv3.WithLimit(int64(limit+dels)))
	}
	if o.desc {
		opts = append(opts, clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend))
	}
	if o.keysOnly {
		opts = append(opts, clientv3.WithKeysOnly())
	}
	resp, err := t.rangeGet(ctx, from, opts)
	if err != nil {
		return nil, t.readErr(ctx, op, err)
	}
	got := make([]kv, 0, len(resp.Kvs)+len(buffered))
	for _, e := range resp.Kvs {
		k := string(e.Key)
		if !o.keysOnly {
			if _, ok := t.cache[k]; !ok {
				t.cache[k] = entry{value: e.Value, mod: e.ModRevision}
			}
		}
		if o.perKey {
			t.noteRead(k, e.ModRevision)
		}
		got = append(got, kv{key: k, value: e.Value})
	}
	if t.w != nil {
		r := keyRange{from: from, end: end}
		if resp.More && len(resp.Kvs) > 0 {
			last := string(resp.Kvs[len(resp.Kvs)-1].Key)
			if o.desc {
				r.from = last
			} else {
				r.end = last + "\x00"
			}
		}
		t.w.ranges = append(t.w.ranges, r)
	}
	if len(buffered) > 0 {
		got = merge(got, buffered, o.desc)
	}
	if limit > 0 && len(got) > limit {
		got = got[:limit]
	}
	return got, nil
}

// rangeGet reads the range from with opts at t's revision (the first read
// of an Update reads the turn queue's head with it, in one read-only Txn) and pins
// the revision.
func (t *readTx) rangeGet(ctx context.Context, from string, opts []clientv3.OpOption) (*clientv3.GetResponse, error) {
	if t.withTurn() {
		rctx, cancel := t.b.requestCtx(ctx)
		tr, err := t.b.kv.Txn(rctx).Then(clientv3.OpGet(from, opts...), t.b.turnHead()).Commit()
		cancel()
		t.b.stats.reads.Add(1)
		if err != nil {
			return nil, err
		}
		t.pin(tr.Header.Revision)
		t.noteTurn(tr.Responses[1].GetResponseRange().GetKvs())
		return (*clientv3.GetResponse)(tr.Responses[0].GetResponseRange()), nil
	}
	var resp *clientv3.GetResponse
	var err error
	for _, serializable := range []bool{true, false} {
		rctx, cancel := t.b.requestCtx(ctx)
		resp, err = t.b.kv.Get(rctx, from, t.withRev(serializable, opts...)...)
		cancel()
		t.b.stats.reads.Add(1)
		if !isFutureRev(err) {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	t.pin(resp.Header.Revision)
	return resp, nil
}

// merge overlays buffered writes (value nil: deleted) on keys read from
// etcd, keeping the scan's order.
func merge(got, buffered []kv, desc bool) []kv {
	over := make(map[string][]byte, len(buffered))
	for _, p := range buffered {
		over[p.key] = p.value
	}
	out := got[:0:0]
	for _, e := range got {
		if v, ok := over[e.key]; ok {
			if v != nil {
				out = append(out, kv{key: e.key, value: v})
			}
			delete(over, e.key)
			continue
		}
		out = append(out, e)
	}
	// Buffered puts of keys etcd did not return. When etcd returned only
	// part of the range they may lie beyond its last key: they then sort
	// after every key kept, and the caller's limit cuts them off (it asked
	// etcd for limit plus the buffered deletes, so at least limit keys of
	// etcd's survive).
	for k, v := range over {
		if v != nil {
			out = append(out, kv{key: k, value: v})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if desc {
			return out[i].key > out[j].key
		}
		return out[i].key < out[j].key
	})
	return out
}

// put buffers a put of value under key k (an Update only).
func (t *readTx) put(k string, value []byte) {
	t.w.writes[k] = pending{value: value}
	t.w.wrote = true
}

// del buffers a delete of key k (an Update only).
func (t *readTx) del(k string) {
	t.w.writes[k] = pending{del: true}
	t.w.wrote = true
}

// cmps returns the compares of t's read set (commit.go adds the marker's).
func (w *writeSet) cmps(rev int64) []clientv3.Cmp {
	keys := make([]string, 0, len(w.reads))
	for k := range w.reads {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]clientv3.Cmp, 0, len(keys)+len(w.ranges)+1)
	for _, k := range keys {
		out = append(out, clientv3.Compare(clientv3.ModRevision(k), "=", w.reads[k]))
	}
	for _, r := range w.ranges {
		out = append(out, clientv3.Compare(clientv3.ModRevision(r.from), "<", rev+1).WithRange(r.end))
	}
	return out
}

// ops returns the Then ops of t's buffered writes, in key order.
func (w *writeSet) ops() []clientv3.Op {
	keys := make([]string, 0, len(w.writes))
	for k := range w.writes {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]clientv3.Op, 0, len(keys)+1)
	for _, k := range keys {
		p := w.writes[k]
		if p.del {
			out = append(out, clientv3.OpDelete(k))
		} else {
			out = append(out, clientv3.OpPut(k, string(p.value)))
		}
	}
	return out
}
