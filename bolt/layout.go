package bolt

import (
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/wfstore/wfstore/internal/kvlayout"
)

// This file is the store's layout (kvlayout, grouped by run): the bucket
// "runs" holds a bucket per run with the run's records and per-run index
// entries, keyed tag | rest of the key, so what one admission writes to
// its run lands on a few leaves of one small tree; the bucket "ix" holds
// the indexes that order across runs, and "meta" the marker and version
// (meta.go). A stored key of a per-run space is run part | tag | rest;
// locate splits it into the run's bucket and the key in it.

var (
	// bucketRuns holds a bucket per run, named by the encoded run id, with
	// every record and per-run index entry of the run.
	bucketRuns = []byte("runs")
	// bucketIndex holds the entries of the indexes that order across runs.
	bucketIndex = []byte("ix")
)

// layout is the bolt store's: per-run spaces in bucketRuns, the others in
// bucketIndex, the run status index (schema version 3), bbolt's limits.
var layout = kvlayout.New(kvlayout.Config{
	Name:           "bolt",
	RunGroup:       bucketRuns,
	FlatGroup:      bucketIndex,
	RunStatusIndex: true,
	MaxKeySize:     bbolt.MaxKeySize,
	MaxValueSize:   bbolt.MaxValueSize,
})

// locate returns the bucket that holds stored key sk of space s, and sk's
// key in it. A per-run space's keys live in the run's own bucket inside
// bucketRuns, named by the run part and keyed tag | rest: nil when the run
// has no keys yet, unless create (a write transaction) makes it.
func locate(tx *bbolt.Tx, s *kvlayout.Space, sk []byte, create bool) (*bbolt.Bucket, []byte, error) {
	top := tx.Bucket(s.Group)
	if top == nil {
		return nil, nil, fmt.Errorf("bolt: bucket %q is missing", s.Group)
	}
	if !s.PerRun {
		if tx.Writable() {
			top.FillPercent = indexFillPercent
		}
		return top, sk, nil
	}
	if tx.Writable() {
		top.FillPercent = fillPercent
	}
	n := kvlayout.RunPartLen(sk)
	if n < 0 {
		return nil, nil, fmt.Errorf("bolt: a per-run key without a run part: %x", sk)
	}
	return locateRun(tx, top, sk, n, create)
}

// locateRun is locate's per-run part: the bucket in top of the run whose
// part is sk[:n], and sk's key in it.
func locateRun(tx *bbolt.Tx, top *bbolt.Bucket, sk []byte, n int, create bool) (*bbolt.Bucket, []byte, error) {
	rb := top.Bucket(sk[:n])
	if rb == nil && create {
		var err error
		if rb, err = top.CreateBucket(sk[:n]); err != nil {
			return nil, nil, fmt.Errorf("bolt: create run bucket %x: %w", sk[:n], err)
		}
	}
	if rb != nil && tx.Writable() {
		rb.FillPercent = fillPercent
	}
	return rb, sk[n:], nil
}

// allBuckets lists every bucket of a store.
func allBuckets() [][]byte {
	return [][]byte{bucketMeta, bucketRuns, bucketIndex}
}
