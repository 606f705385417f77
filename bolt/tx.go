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
