package bolt

import (
	"context"
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/wfstore/wfstore/backend"
)

// This file holds the transaction types. readTx implements backend.ReadTx
// (load.go, scans.go); tx adds Apply (apply.go).

type readTx struct {
	b    *Backend
	btx  *bbolt.Tx
	done bool // fn returned; the bbolt transaction is gone
}

type tx struct {
	readTx
	wrote  bool  // some write changed the store: commit is needed
	broken error // a write failed part-way: never commit
}

var (
	_ backend.ReadTx = (*readTx)(nil)
	_ backend.Tx     = (*tx)(nil)
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
	}
	return bk, nil
}

// at returns the bucket that holds stored key sk of s and sk's key in it
// (locate); create is for writes.
func (t *readTx) at(s *space, sk []byte, create bool) (*bbolt.Bucket, []byte, error) {
	return locate(t.btx, s, sk, create)
}

// scanSpace visits the stored keys of s in [sfrom, suntil), which for a
// per-run space lie in one run (runSpan), as scan does; visit gets each
// stored key whole (run part included).
func (t *readTx) scanSpace(s *space, sfrom, suntil []byte, visit func(sk, v []byte) (more bool, err error)) error {
	return t.scanSpaceDir(s, sfrom, suntil, false, visit)
}

// scanSpaceDir is scanSpace in ascending or (desc) descending key order.
func (t *readTx) scanSpaceDir(s *space, sfrom, suntil []byte, desc bool, visit func(sk, v []byte) (more bool, err error)) error {
	scan := t.scan
	if desc {
		scan = t.scanDesc
	}
	if !s.perRun {
		bk, err := t.bucket(s.bucket)
		if err != nil {
			return err
		}
		return scan(bk, sfrom, suntil, visit)
	}
	bk, from, err := t.at(s, sfrom, false)
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
