package bolt

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

	"go.etcd.io/bbolt"
)

// This file is the index verifier. Indexes are maintained by hand
// (apply.go), so Verify checks, in one read transaction, that they agree
// with the records exactly:
//
//   - every record decodes and is stored under its own primary key;
//   - every record has exactly its entries: one in each index whose
//     membership condition it meets, at the key its fields give;
//   - every index entry has an empty value, decodes, names a record that
//     exists, and is that record's entry (so its indexed fields — status,
//     times, run, identity... — match the record);
//   - unique index values (Attempt.Identity) are unique;
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

func (d Discrepancy) String() string {
	return fmt.Sprintf("%s %s: %s", d.Bucket, d.KeyText, d.Problem)
}

// VerifyError lists every discrepancy Verify found.
type VerifyError struct {
	Discrepancies []Discrepancy
}

func (e *VerifyError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "bolt: verify found %d discrepancies", len(e.Discrepancies))
	for i, d := range e.Discrepancies {
		if i == 10 {
			fmt.Fprintf(&b, "; and %d more", len(e.Discrepancies)-i)
			break
		}
		b.WriteString("; ")
		b.WriteString(d.String())
	}
	return b.String()
}

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
	v := &verifier{ctx: ctx, tx: btx}
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
	// found collects discrepancies by what they concern (nil: the layout,
	// else a *kind's records or an *index's entries), reported in order.
	found map[any][]Discrepancy
	// unique tracks the last unique value seen per unique index.
	unique map[*index]uniqueSeen
}

type uniqueSeen struct {
	value []byte
	pk    key
}

// discrepancies returns what v found: the layout's problems first, then
// for each kind its records' and then each of its indexes' entries'.
func (v *verifier) discrepancies() []Discrepancy {
	out := v.found[nil]
	for _, k := range kinds {
		out = append(out, v.found[k]...)
		for _, ix := range k.indexes {
			out = append(out, v.found[ix]...)
		}
	}
	return out
}

func (v *verifier) add(about any, d Discrepancy) {
	if v.found == nil {
		v.found = map[any][]Discrepancy{}
	}
	v.found[about] = append(v.found[about], d)
}

func (v *verifier) report(about any, bucket string, s schema, k []byte, format string, args ...any) {
	v.add(about, Discrepancy{
		Bucket:  bucket,
		Key:     append([]byte(nil), k...),
		KeyText: s.format(k),
		Problem: fmt.Sprintf(format, args...),
	})
}

// tick checks ctx now and then.
func (v *verifier) tick() error {
	v.n++
	if v.n%1024 == 0 {
		return v.ctx.Err()
	}
	return nil
}

// owners maps each bucket's tag bytes to the kind or index stored there.
func owners() map[string]map[byte]any {
	out := map[string]map[byte]any{string(bucketRuns): {}, string(bucketIndex): {}}
	for _, k := range kinds {
		out[string(k.bucket)][k.tag] = k
		for _, ix := range k.indexes {
			out[string(ix.bucket)][ix.tag] = ix
		}
	}
	return out
}

func (v *verifier) run() error {
	if _, err := inspect(v.tx); err != nil {
		v.add(nil, Discrepancy{Bucket: string(bucketMeta), Problem: err.Error()})
		return nil // without a sound layout the rest would only repeat it
	}
	known := map[string]bool{}
	for _, name := range allBuckets() {
		known[string(name)] = true
	}
	_ = v.tx.ForEach(func(name []byte, _ *bbolt.Bucket) error {
		if !known[string(name)] {
			v.add(nil, Discrepancy{Bucket: string(name), Problem: "unknown bucket"})
		}
		return nil
	})
	own := owners()
	for _, name := range [][]byte{bucketRuns, bucketIndex} {
		if err := v.bucket(name, own[string(name)]); err != nil {
			return err
		}
	}
	return nil
}

// bucket checks every key of one bucket, as a record or an index entry of
// the kind or index its tag names. In bucketRuns every key is a run's
// bucket, whose keys are tag | rest.
func (v *verifier) bucket(name []byte, own map[byte]any) error {
	c := v.tx.Bucket(name).Cursor()
	for sk, val := c.First(); sk != nil; sk, val = c.Next() {
		if err := v.tick(); err != nil {
			return err
		}
		if bytes.Equal(name, bucketIndex) {
			v.key(name, own, sk, 0, val)
			continue
		}
		rb := v.tx.Bucket(name).Bucket(sk)
		if val != nil || rb == nil || runPartLen(sk) != len(sk) {
			v.add(nil, Discrepancy{Bucket: string(name), Key: append([]byte(nil), sk...),
				KeyText: fmt.Sprintf("%x", sk), Problem: "is not a run's bucket (a nested bucket named by an encoded run id)"})
			continue
		}
		runPart := append([]byte(nil), sk...)
		rc := rb.Cursor()
		for k, val := rc.First(); k != nil; k, val = rc.Next() {
			if err := v.tick(); err != nil {
				return err
			}
			v.key(name, own, append(runPart[:len(runPart):len(runPart)], k...), len(runPart), val)
		}
	}
	return nil
}

// key checks stored key sk of bucket name, whose tag is at sk[tagAt].
func (v *verifier) key(name []byte, own map[byte]any, sk []byte, tagAt int, val []byte) {
	var about any
	if tagAt < len(sk) {
		about = own[sk[tagAt]]
	}
	switch o := about.(type) {
	case *kind:
		k, _ := o.unstored(sk)
		v.record(o, k, val)
	case *index:
		e, _ := o.unstored(sk)
		v.entry(o, e, val)
	default:
		problem := "key belongs to no index (unknown index id)"
		if !bytes.Equal(name, bucketIndex) {
			problem = "key belongs to no record kind or index (unknown tag)"
		}
		v.add(nil, Discrepancy{Bucket: string(name), Key: append([]byte(nil), sk...),
			KeyText: fmt.Sprintf("%x", sk), Problem: problem})
	}
}

// has reports whether s holds stored key sk (index values are empty, so
// this does not go by Get's nil).
func (v *verifier) has(s *space, sk []byte) bool {
	bk, k, err := locate(v.tx, s, sk, false)
	return err == nil && bk != nil && has(bk, k)
}

// get returns the value under stored key sk of s, or nil.
func (v *verifier) get(s *space, sk []byte) []byte {
	bk, k, err := locate(v.tx, s, sk, false)
	if err != nil || bk == nil {
		return nil
	}
	return bk.Get(k)
}

// record checks one record of k, stored under pk, and that its index
// entries exist.
func (v *verifier) record(k *kind, pk, val []byte) {
	if val == nil {
		v.report(k, k.name, k.schema, pk, "is a nested bucket, not a record")
		return
	}
	own, entries, err := k.check(val)
	if err != nil {
		v.report(k, k.name, k.schema, pk, "value does not decode: %v", err)
		return
	}
	if !bytes.Equal(own, pk) {
		v.report(k, k.name, k.schema, pk, "record's key fields give %s: stored under the wrong key", k.schema.format(own))
	}
	for i, ix := range k.indexes {
		e := entries[i]
		if e != nil && !v.has(&ix.space, ix.stored(e)) {
			v.report(k, k.name, k.schema, pk, "missing its %s entry %s", ix.name, ix.schema.format(e))
		}
	}
}

// entry checks one entry e of index ix.
func (v *verifier) entry(ix *index, e, val []byte) {
	k := ix.owner
	if len(val) != 0 {
		v.report(ix, ix.name, ix.schema, e, "entry has a %d-byte value; index values are empty", len(val))
	}
	pk, err := ix.primary(e)
	if err != nil {
		v.report(ix, ix.name, ix.schema, e, "entry does not decode: %v", err)
		return
	}
	if ix.unique > 0 {
		// A global index is one contiguous range of its bucket, so equal
		// unique values are adjacent.
		vals, _ := ix.schema.decode(e)
		u := ix.schema.encode(vals, firstN(ix.unique))
		if v.unique == nil {
			v.unique = map[*index]uniqueSeen{}
		}
		if prev := v.unique[ix]; prev.value != nil && bytes.Equal(u, prev.value) {
			v.report(ix, ix.name, ix.schema, e, "%s is shared by %s %s and %s %s", ix.schema[:ix.unique].format(u), k.name, k.schema.format(prev.pk), k.name, k.schema.format(pk))
		}
		v.unique[ix] = uniqueSeen{value: u, pk: pk}
	}
	recV := v.get(&k.space, k.stored(pk))
	if recV == nil {
		v.report(ix, ix.name, ix.schema, e, "names %s %s, which does not exist", k.name, k.schema.format(pk))
		return
	}
	_, entries, err := k.check(recV)
	if err != nil {
		return // reported by record
	}
	want := entries[slices.Index(k.indexes, ix)]
	switch {
	case want == nil:
		v.report(ix, ix.name, ix.schema, e, "names %s %s, which is not in this index (members have %s)", k.name, k.schema.format(pk), ix.member)
	case !bytes.Equal(want, e):
		v.report(ix, ix.name, ix.schema, e, "stale: %s %s has indexed fields %s", k.name, k.schema.format(pk), ix.schema.format(want))
	}
}

// has reports whether bucket b holds key k.
func has(b *bbolt.Bucket, k []byte) bool {
	got, _ := b.Cursor().Seek(k)
	return got != nil && bytes.Equal(got, k)
}

func firstN(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	return p
}
