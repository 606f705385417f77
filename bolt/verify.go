package bolt

import (
	"bytes"
	"context"
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/wfstore/wfstore/internal/kvlayout"
)

// This file is the index verifier. Indexes are maintained by hand
// (kvlayout's apply.go), so Verify checks, in one read transaction, that
// they agree with the records exactly (kvlayout.Verifier: every record
// decodes, sits under its own key and has exactly its entries; every
// entry is its record's; unique values are unique), and that the buckets
// hold nothing else:
//
//   - every key of the ix bucket starts with the id of a cross-run index,
//     every key of the runs bucket is a run's bucket, named by an encoded
//     run id, and every key in one starts with the tag of a record kind or
//     per-run index;
//   - the meta bucket is intact and no unknown bucket exists.

// Discrepancy is one thing Verify found wrong.
type Discrepancy struct {
	// Bucket is the record kind or the index (ix_...) holding the bad key,
	// or the bucket ("runs", "ix") for a key that belongs to neither.
	Bucket string
	// Key is the bad key: for a record or index entry, its codec key,
	// without the tag or id byte it is stored with; else the stored key
	// (in a run's bucket: run part | the key in the run's bucket).
	Key     []byte
	KeyText string // the key decoded under the bucket's or index's schema
	Problem string // what is wrong
}

// String renders d on one line: bucket (kind or index), decoded key,
// problem.
func (d Discrepancy) String() string {
	return kvlayout.Discrepancy{Space: d.Bucket, KeyText: d.KeyText, Problem: d.Problem}.String()
}

// VerifyError lists every discrepancy Verify found.
type VerifyError struct {
	Discrepancies []Discrepancy
}

func (e *VerifyError) Error() string { return kvlayout.VerifyMessage("bolt", e.Discrepancies) }

// Verify checks the store's indexes against its records (see above). It
// returns nil, a *VerifyError listing every discrepancy, or an error that
// stopped it (closed store, cancelled ctx). It reads the whole store in one
// read transaction and does not block writers.
func (b *Backend) Verify(ctx context.Context) error {
	if err := b.enter(ctx, "verify"); err != nil {
		return err
	}
	btx, err := b.db.Begin(false)
	if err != nil {
		return beginError("verify", err)
	}
	defer func() { _ = btx.Rollback() }()
	v := &verifier{ctx: ctx, tx: btx, Verifier: layout.NewVerifier(snapshot{btx})}
	if err := v.run(); err != nil {
		return err
	}
	if ds := v.discrepancies(); len(ds) > 0 {
		return &VerifyError{Discrepancies: ds}
	}
	return nil
}

type verifier struct {
	ctx context.Context
	tx  *bbolt.Tx
	n   int
	*kvlayout.Verifier
}

// discrepancies returns what v found, in kvlayout.Verifier's order.
func (v *verifier) discrepancies() []Discrepancy {
	var out []Discrepancy
	for _, d := range v.Discrepancies() {
		out = append(out, Discrepancy{Bucket: d.Space, Key: d.Key, KeyText: d.KeyText, Problem: d.Problem})
	}
	return out
}

// tick checks ctx now and then.
func (v *verifier) tick() error {
	v.n++
	if v.n%1024 == 0 {
		return v.ctx.Err()
	}
	return nil
}

func (v *verifier) run() error {
	if _, _, err := inspect(v.tx); err != nil {
		v.Add(kvlayout.Discrepancy{Space: string(bucketMeta), Problem: err.Error()})
		return nil // without a sound layout the rest would only repeat it
	}
	known := map[string]bool{}
	for _, name := range allBuckets() {
		known[string(name)] = true
	}
	_ = v.tx.ForEach(func(name []byte, _ *bbolt.Bucket) error {
		if !known[string(name)] {
			v.Add(kvlayout.Discrepancy{Space: string(name), Problem: "unknown bucket"})
		}
		return nil
	})
	for _, name := range [][]byte{bucketRuns, bucketIndex} {
		if err := v.bucket(name); err != nil {
			return err
		}
	}
	return nil
}

// bucket checks every key of one bucket, as a record or an index entry of
// the kind or index its tag names. In bucketRuns every key is a run's
// bucket, whose keys are tag | rest.
func (v *verifier) bucket(name []byte) error {
	c := v.tx.Bucket(name).Cursor()
	for sk, val := c.First(); sk != nil; sk, val = c.Next() {
		if err := v.tick(); err != nil {
			return err
		}
		if bytes.Equal(name, bucketIndex) {
			v.key(name, sk, val)
			continue
		}
		rb := v.tx.Bucket(name).Bucket(sk)
		if val != nil || rb == nil || kvlayout.RunPartLen(sk) != len(sk) {
			v.Add(kvlayout.Discrepancy{Space: string(name), Key: append([]byte(nil), sk...),
				KeyText: fmt.Sprintf("%x", sk), Problem: "is not a run's bucket (a nested bucket named by an encoded run id)"})
			continue
		}
		runPart := append([]byte(nil), sk...)
		rc := rb.Cursor()
		for k, val := rc.First(); k != nil; k, val = rc.Next() {
			if err := v.tick(); err != nil {
				return err
			}
			v.key(name, append(runPart[:len(runPart):len(runPart)], k...), val)
		}
	}
	return nil
}

// key checks stored key sk of bucket name.
func (v *verifier) key(name, sk, val []byte) {
	if v.Key(name, sk, val) {
		return
	}
	problem := "key belongs to no index (unknown index id)"
	if !bytes.Equal(name, bucketIndex) {
		problem = "key belongs to no record kind or index (unknown tag)"
	}
	v.Add(kvlayout.Discrepancy{Space: string(name), Key: append([]byte(nil), sk...),
		KeyText: fmt.Sprintf("%x", sk), Problem: problem})
}

// snapshot is a read transaction as kvlayout.Verifier reads it.
type snapshot struct{ tx *bbolt.Tx }

// Has reports whether s holds stored key sk (index values are empty, so
// this does not go by Get's nil).
func (s snapshot) Has(sp *kvlayout.Space, sk []byte) bool {
	bk, k, err := locate(s.tx, sp, sk, false)
	if err != nil || bk == nil {
		return false
	}
	got, _ := bk.Cursor().Seek(k)
	return got != nil && bytes.Equal(got, k)
}

// Get returns the value under stored key sk of s, or nil.
func (s snapshot) Get(sp *kvlayout.Space, sk []byte) []byte {
	bk, k, err := locate(s.tx, sp, sk, false)
	if err != nil || bk == nil {
		return nil
	}
	return bk.Get(k)
}
