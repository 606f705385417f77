package bolt

import (
	"bytes"
	"context"
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/internal/kvlayout"
)

// This file holds the transaction types. readTx implements backend.ReadTx
// (load.go, scans.go) and kvlayout.Reader; tx adds Apply (apply.go) and
// kvlayout.Store.

type readTx struct {
	b    *Backend
	btx  *bbolt.Tx
	done bool // fn returned; the bbolt transaction is gone
	// located is what locate found in this transaction, reused by Get,
	// Keys, Put and Delete: bbolt opens a bucket afresh on each lookup in
	// a read transaction, and each Get starts a new cursor (on a write's
	// path about 30 allocations per admission).
	located located
}

// located caches, for one bbolt transaction, the buckets locate found
// (bbolt never deletes one: the layout has no bucket deletion) and one
// cursor per bucket for point reads and key listings. A cursor is
// repositioned from the bucket's root by every Seek, so a Put or Delete
// between two reads cannot leave it stale; scans, whose visits may read,
// keep cursors of their own. Like bbolt's transaction it serves one
// goroutine at a time.
type located struct {
	groups  map[string]*bbolt.Bucket // by group name
	runs    map[string]runBucket     // by run part
	cursors map[*bbolt.Bucket]*bbolt.Cursor
}

// runBucket is a run's bucket and the group bucket holding it.
type runBucket struct{ group, run *bbolt.Bucket }

// locate is the package's locate through t's cache.
func (t *readTx) locate(s *kvlayout.Space, sk []byte, create bool) (*bbolt.Bucket, []byte, error) {
	c := &t.located
	top := c.groups[string(s.Group)]
	if top == nil {
		if top = t.btx.Bucket(s.Group); top == nil {
			return nil, nil, fmt.Errorf("bolt: bucket %q is missing", s.Group)
		}
		if c.groups == nil {
			c.groups = make(map[string]*bbolt.Bucket, 2)
		}
		c.groups[string(s.Group)] = top
	}
	writable := t.btx.Writable()
	if !s.PerRun {
		if writable {
			top.FillPercent = indexFillPercent
		}
		return top, sk, nil
	}
	if writable {
		top.FillPercent = fillPercent
	}
	n := kvlayout.RunPartLen(sk)
	if n < 0 {
		return nil, nil, fmt.Errorf("bolt: a per-run key without a run part: %x", sk)
	}
	if rb, ok := c.runs[string(sk[:n])]; ok && rb.group == top {
		if writable {
			rb.run.FillPercent = fillPercent
		}
		return rb.run, sk[n:], nil
	}
	rb, k, err := locateRun(t.btx, top, sk, n, create)
	if err != nil || rb == nil {
		return rb, k, err
	}
	if c.runs == nil {
		c.runs = make(map[string]runBucket, 4)
	}
	c.runs[string(sk[:n])] = runBucket{group: top, run: rb}
	return rb, k, nil
}

// cursor returns t's cursor of bk for point reads and key listings.
func (t *readTx) cursor(bk *bbolt.Bucket) *bbolt.Cursor {
	c := &t.located
	cur := c.cursors[bk]
	if cur == nil {
		cur = bk.Cursor()
		if c.cursors == nil {
			c.cursors = make(map[*bbolt.Bucket]*bbolt.Cursor, 4)
		}
		c.cursors[bk] = cur
	}
	return cur
}

type tx struct {
	readTx
	wrote  bool  // some write changed the store: commit is needed
	broken error // a write failed part-way: never commit
}

var (
	_ backend.ReadTx  = (*readTx)(nil)
	_ backend.Tx      = (*tx)(nil)
	_ kvlayout.Reader = (*readTx)(nil)
	_ kvlayout.Store  = (*tx)(nil)
)

// check is the start of every ReadTx and Tx method.
func (t *readTx) check(ctx context.Context, op string) error {
	if t.done {
		return fmt.Errorf("bolt: %s: transaction used after its fn returned: %w", op, backend.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("bolt: %s: %w", op, err)
	}
	return nil
}

// bucket returns a bucket of the layout. Open checked that all exist.
func (t *readTx) bucket(name []byte) (*bbolt.Bucket, error) {
	bk := t.btx.Bucket(name)
	if bk == nil {
		return nil, fmt.Errorf("bolt: bucket %q is missing", name)
	}
	if t.btx.Writable() {
		bk.FillPercent = fillPercent
		if bytes.Equal(name, bucketIndex) {
			bk.FillPercent = indexFillPercent
		}
	}
	return bk, nil
}

// Get returns the value under stored key sk of s, or nil (kvlayout.Reader).
func (t *readTx) Get(_ context.Context, s *kvlayout.Space, sk []byte) ([]byte, error) {
	bk, k, err := t.locate(s, sk, false)
	if err != nil || bk == nil {
		return nil, err // no run bucket: the run has no keys
	}
	// bbolt's Get, on t's cursor: the key found, unless it is another key
	// or a bucket (Seek gives a bucket's key a nil value).
	if got, v := t.cursor(bk).Seek(k); bytes.Equal(got, k) {
		return v, nil
	}
	return nil, nil
}

// Keys returns up to limit (< 0: all) stored keys of s in [from, until),
// copied (kvlayout.Reader). It walks a cursor itself, without scanSpace's
// callbacks, which cost allocations on Apply's path (uniqueness checks).
func (t *readTx) Keys(_ context.Context, s *kvlayout.Space, from, until []byte, limit int) ([][]byte, error) {
	if limit == 0 {
		return nil, nil
	}
	bk, bfrom, err := t.locate(s, from, false)
	if err != nil || bk == nil {
		return nil, err // no run bucket: the run has no keys
	}
	runPart := from[:len(from)-len(bfrom)] // empty for a flat space
	buntil := until[len(runPart):]
	var out [][]byte
	c := t.cursor(bk)
	for k, _ := c.Seek(bfrom); k != nil && bytes.Compare(k, buntil) < 0; k, _ = c.Next() {
		t.step()
		out = append(out, append(append(make([]byte, 0, len(runPart)+len(k)), runPart...), k...))
		if len(out) == limit {
			break
		}
	}
	return out, nil
}

// Put stores value under stored key sk of s, making the run's bucket if it
// has none (kvlayout.Store). A failure breaks the transaction.
func (t *tx) Put(s *kvlayout.Space, sk, value []byte) error {
	t.wrote = true
	bk, k, err := t.locate(s, sk, true)
	if err == nil {
		err = bk.Put(k, value)
	}
	if err != nil {
		return t.fail(err)
	}
	return nil
}

// Delete deletes stored key sk of s (kvlayout.Store). A failure breaks the
// transaction.
func (t *tx) Delete(s *kvlayout.Space, sk []byte) error {
	t.wrote = true
	bk, k, err := t.locate(s, sk, false)
	if err == nil && bk != nil {
		err = bk.Delete(k)
	}
	if err != nil {
		return t.fail(err)
	}
	return nil
}

// fail marks the transaction broken after a storage error part-way through
// a write.
func (t *tx) fail(err error) error {
	t.broken = fmt.Errorf("bolt: storage error: %w", err)
	return t.broken
}

// scanSpace visits the stored keys of s in [sfrom, suntil), which for a
// per-run space lie in one run (Space.Range), as scan does; visit gets each
// stored key whole (run part included).
func (t *readTx) scanSpace(s *kvlayout.Space, sfrom, suntil []byte, visit func(sk, v []byte) (more bool, err error)) error {
	return t.scanSpaceDir(s, sfrom, suntil, false, visit)
}

// scanSpaceDir is scanSpace in ascending or (desc) descending key order.
func (t *readTx) scanSpaceDir(s *kvlayout.Space, sfrom, suntil []byte, desc bool, visit func(sk, v []byte) (more bool, err error)) error {
	scan := t.scan
	if desc {
		scan = t.scanDesc
	}
	if !s.PerRun {
		bk, err := t.bucket(s.Group)
		if err != nil {
			return err
		}
		return scan(bk, sfrom, suntil, visit)
	}
	bk, from, err := t.locate(s, sfrom, false)
	if err != nil || bk == nil {
		return err // no run bucket: the run has no keys
	}
	runPart := sfrom[:len(sfrom)-len(from)]
	until := suntil[len(runPart):]
	sk := append([]byte(nil), runPart...)
	return scan(bk, from, until, func(k, v []byte) (bool, error) {
		sk = append(sk[:len(runPart)], k...)
		return visit(sk, v)
	})
}

// step counts one cursor position for tests (see Backend.steps).
func (t *readTx) step() {
	if t.b.steps != nil {
		t.b.steps.Add(1)
	}
}

// fillPercent is how full bbolt packs the pages it splits at commit (its
// default is 0.5). wfstore's keys mostly arrive in key order (runs, events
// and attempt times grow), so half-full pages would stay half full.
var fillPercent = 0.9

// indexFillPercent is fillPercent for bucketIndex, whose identity index is
// keyed by a hash: its entries arrive in random order, one or two per leaf
// per commit, so a leaf split 90/10 is full again after the next insert and
// splits again, leaving a trail of near-empty leaves that later commits
// dirty one insert at a time (measured, 10000 batch admissions: ix 2076
// leaves 45% used, 90 pages written per commit; split 50/50: 1383 leaves
// 68% used, 81 pages per commit).
var indexFillPercent = 0.5
