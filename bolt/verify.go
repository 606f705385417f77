package bolt

import (
	"bytes"
	"context"
	"fmt"
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
//   - every key of the ix bucket starts with a known index id;
//   - the meta bucket is intact and no unknown bucket exists.

// Discrepancy is one thing Verify found wrong.
type Discrepancy struct {
	// Bucket is the record bucket or the index (ix_...) holding the bad
	// key; index entries all live in the bucket "ix", under their index's
	// id byte.
	Bucket string
	// Key is the bad key, raw: for an index entry, its index key, without
	// the id byte that prefixes it in the ix bucket.
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
	if len(v.found) > 0 {
		return &VerifyError{Discrepancies: v.found}
	}
	return nil
}

type verifier struct {
	ctx   context.Context
	tx    *bbolt.Tx
	n     int
	found []Discrepancy
}

func (v *verifier) report(bucket string, s schema, k []byte, format string, args ...any) {
	v.found = append(v.found, Discrepancy{
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

func (v *verifier) run() error {
	if _, err := inspect(v.tx); err != nil {
		v.found = append(v.found, Discrepancy{Bucket: string(bucketMeta), Problem: err.Error()})
		return nil // without a sound layout the rest would only repeat it
	}
	known := map[string]bool{}
	for _, name := range allBuckets() {
		known[string(name)] = true
	}
	_ = v.tx.ForEach(func(name []byte, _ *bbolt.Bucket) error {
		if !known[string(name)] {
			v.found = append(v.found, Discrepancy{Bucket: string(name), Problem: "unknown bucket"})
		}
		return nil
	})
	if err := v.indexIDs(); err != nil {
		return err
	}
	for _, k := range kinds {
		if err := v.records(k); err != nil {
			return err
		}
		for _, ix := range k.indexes {
			if err := v.entries(k, ix); err != nil {
				return err
			}
		}
	}
	return nil
}

// records checks each record of k and that its index entries exist.
func (v *verifier) records(k *kind) error {
	bk := v.tx.Bucket(k.bucket)
	ixb := v.tx.Bucket(bucketIndex)
	c := bk.Cursor()
	for pk, val := c.First(); pk != nil; pk, val = c.Next() {
		if err := v.tick(); err != nil {
			return err
		}
		if val == nil {
			v.report(k.name, k.schema, pk, "is a nested bucket, not a record")
			continue
		}
		rec, err := k.decode(val)
		if err != nil {
			v.report(k.name, k.schema, pk, "value does not decode: %v", err)
			continue
		}
		if own := k.key(rec); !bytes.Equal(own, pk) {
			v.report(k.name, k.schema, pk, "record's key fields give %s: stored under the wrong key", k.schema.format(own))
		}
		for _, ix := range k.indexes {
			e, ok := ix.entry(rec)
			if ok && !has(ixb, ix.stored(e)) {
				v.report(k.name, k.schema, pk, "missing its %s entry %s", ix.name, ix.schema.format(e))
			}
		}
	}
	return nil
}

// entries checks each entry of index ix of kind k.
func (v *verifier) entries(k *kind, ix *index) error {
	bk := v.tx.Bucket(k.bucket)
	c := v.tx.Bucket(bucketIndex).Cursor()
	var prevUnique []byte
	var prevPK key
	for se, val := c.Seek([]byte{ix.id}); se != nil && se[0] == ix.id; se, val = c.Next() {
		if err := v.tick(); err != nil {
			return err
		}
		e := se[1:]
		if len(val) != 0 {
			v.report(ix.name, ix.schema, e, "entry has a %d-byte value; index values are empty", len(val))
		}
		pk, err := ix.primary(e)
		if err != nil {
			v.report(ix.name, ix.schema, e, "entry does not decode: %v", err)
			continue
		}
		if ix.unique > 0 {
			vals, _ := ix.schema.decode(e)
			u := ix.schema.encode(vals, firstN(ix.unique))
			if bytes.Equal(u, prevUnique) {
				v.report(ix.name, ix.schema, e, "%s is shared by %s %s and %s %s", ix.schema[:ix.unique].format(u), k.name, k.schema.format(prevPK), k.name, k.schema.format(pk))
			}
			prevUnique, prevPK = u, pk
		}
		recV := bk.Get(pk)
		if recV == nil {
			v.report(ix.name, ix.schema, e, "names %s %s, which does not exist", k.name, k.schema.format(pk))
			continue
		}
		rec, err := k.decode(recV)
		if err != nil {
			continue // reported by records
		}
		want, ok := ix.entry(rec)
		switch {
		case !ok:
			v.report(ix.name, ix.schema, e, "names %s %s, which is not in this index (members have %s)", k.name, k.schema.format(pk), ix.member)
		case !bytes.Equal(want, e):
			v.report(ix.name, ix.schema, e, "stale: %s %s has indexed fields %s", k.name, k.schema.format(pk), ix.schema.format(want))
		}
	}
	return nil
}

// indexIDs reports keys of the ix bucket that belong to no index.
func (v *verifier) indexIDs() error {
	c := v.tx.Bucket(bucketIndex).Cursor()
	for k, _ := c.First(); k != nil; {
		if err := v.tick(); err != nil {
			return err
		}
		if len(k) > 0 && indexByID(k[0]) != nil {
			k, _ = c.Seek([]byte{k[0] + 1}) // skip the whole index
			continue
		}
		v.found = append(v.found, Discrepancy{Bucket: string(bucketIndex), Key: append([]byte(nil), k...),
			KeyText: fmt.Sprintf("%x", k), Problem: "key belongs to no index (unknown index id)"})
		k, _ = c.Next()
	}
	return nil
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
