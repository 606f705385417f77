package bolt

import (
	"bytes"
	"context"
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/wfstore/wfstore/backend"
)

// This file is Tx.Apply: the slices of backend.Changes in their fixed
// order, each record's index entries maintained in the same transaction.
//
// Each slice is one generic call on its kind's table (layout.go): a pass
// over the slice, in slice order, that writes into that kind's space and
// its indexes' spaces and nothing else. A slice's type fixes its kind and
// the call fixes its operation, so nothing is decided at run time by a
// record's type, and an operation a kind does not accept has no call.

// Apply applies c: every Expect, then every Delete, then every Insert, then
// every Replace, kinds in the order of backend.Changes's fields and each
// slice in slice order; it stops at the first operation that fails and
// returns its error. An operation that fails with ErrConflict, ErrNotFound
// or ErrChanged has changed nothing (the operations before it in c stay
// applied): every check (existence, uniqueness, key sizes) runs before an
// operation's first Put. So only a storage failure can stop an operation
// part-way; then the transaction is marked broken and Update will not
// commit it.
func (t *tx) Apply(ctx context.Context, c backend.Changes) error {
	if err := t.check(ctx, "apply"); err != nil {
		return err
	}
	if t.broken != nil {
		return fmt.Errorf("bolt: apply after a failed write: %w", t.broken)
	}
	a := &applier{t: t}
	e, d, i, r := &c.Expect, &c.Delete, &c.Insert, &c.Replace

	expectAll(a, "Expect.Runs", kindRun, e.Runs)
	expectAll(a, "Expect.Activations", kindActivation, e.Activations)
	expectAll(a, "Expect.Attempts", kindAttempt, e.Attempts)

	deleteAll(a, "Delete.Events", kindEvent, d.Events)
	deleteAll(a, "Delete.Schedules", kindSchedule, d.Schedules)
	deleteAll(a, "Delete.Leases", kindLease, d.Leases)
	deleteAll(a, "Delete.Attempts", kindAttempt, d.Attempts)

	insertAll(a, "Insert.Runs", kindRun, i.Runs)
	insertAll(a, "Insert.Links", kindLink, i.Links)
	insertAll(a, "Insert.Activations", kindActivation, i.Activations)
	insertAll(a, "Insert.Groups", kindGroup, i.Groups)
	insertAll(a, "Insert.Attempts", kindAttempt, i.Attempts)
	insertAll(a, "Insert.Leases", kindLease, i.Leases)
	insertAll(a, "Insert.Schedules", kindSchedule, i.Schedules)
	insertAll(a, "Insert.Events", kindEvent, i.Events)

	replaceAll(a, "Replace.Runs", kindRun, r.Runs)
	replaceAll(a, "Replace.Activations", kindActivation, r.Activations)
	replaceAll(a, "Replace.Groups", kindGroup, r.Groups)
	replaceAll(a, "Replace.Attempts", kindAttempt, r.Attempts)
	replaceAll(a, "Replace.Leases", kindLease, r.Leases)
	replaceAll(a, "Replace.Schedules", kindSchedule, r.Schedules)
	return a.err
}

// applier carries one Apply's first error: once it is set, every later
// pass does nothing.
type applier struct {
	t   *tx
	err error
}

// fail records the error of element i of the slice named field.
func (a *applier) fail(field string, i int, err error) {
	a.err = fmt.Errorf("bolt: %s[%d]: %w", field, i, err)
}

// expectAll checks that each record of recs is stored exactly as given.
func expectAll[K comparable, R backend.Expectable](a *applier, field string, tb *table[K, R], recs []R) {
	for i, rec := range recs {
		if a.err != nil {
			return
		}
		if err := expect(a.t, tb, rec); err != nil {
			a.fail(field, i, err)
		}
	}
}

// deleteAll deletes the record of each key of keys.
func deleteAll[K comparable, R any](a *applier, field string, tb *table[K, R], keys []K) {
	for i, k := range keys {
		if a.err != nil {
			return
		}
		if err := remove(a.t, tb, k); err != nil {
			a.fail(field, i, err)
		}
	}
}

// insertAll inserts each record of recs.
func insertAll[K comparable, R any](a *applier, field string, tb *table[K, R], recs []R) {
	for i, rec := range recs {
		if a.err != nil {
			return
		}
		if err := insert(a.t, tb, rec); err != nil {
			a.fail(field, i, err)
		}
	}
}

// replaceAll replaces each record of recs.
func replaceAll[K comparable, R any](a *applier, field string, tb *table[K, R], recs []R) {
	for i, rec := range recs {
		if a.err != nil {
			return
		}
		if err := replace(a.t, tb, rec); err != nil {
			a.fail(field, i, err)
		}
	}
}

// current returns the stored key of pk in tb's space and the value stored
// there (nil: none).
func current[K comparable, R any](t *tx, tb *table[K, R], pk key) (spk, value []byte, err error) {
	spk = tb.stored(pk)
	bk, bkey, err := t.at(&tb.space, spk, false)
	if err != nil || bk == nil {
		return spk, nil, err
	}
	return spk, bk.Get(bkey), nil
}

// expect fails with ErrChanged unless want is stored exactly as given.
// The codec writes equal records as equal bytes, so equal bytes are the
// common answer; otherwise the stored record is decoded and compared field
// by field, so that the answer never depends on the encoding.
func expect[K comparable, R backend.Expectable](t *tx, tb *table[K, R], want R) error {
	pk := tb.pk(want)
	_, oldV, err := current(t, tb, pk)
	switch {
	case err != nil:
		return err
	case oldV == nil:
		return fmt.Errorf("expected %s %s is missing: %w", tb.name, tb.schema.format(pk), backend.ErrChanged)
	case bytes.Equal(tb.encode(want), oldV):
		return nil
	}
	stored, err := tb.decode(oldV)
	if err != nil {
		return fmt.Errorf("stored %s %s: %w", tb.name, tb.schema.format(pk), err)
	}
	if err := backend.CompareExpected(stored, want); err != nil {
		return fmt.Errorf("%s %s: %w", tb.name, tb.schema.format(pk), err)
	}
	return nil
}

// remove deletes the record under k and its index entries.
func remove[K comparable, R any](t *tx, tb *table[K, R], k K) error {
	pk := tb.key(k)
	spk, oldV, err := current(t, tb, pk)
	if err != nil {
		return err
	}
	if oldV == nil {
		return fmt.Errorf("delete %s %s: %w", tb.name, tb.schema.format(pk), backend.ErrNotFound)
	}
	old, err := tb.decode(oldV)
	if err != nil {
		return fmt.Errorf("stored %s %s: %w", tb.name, tb.schema.format(pk), err)
	}
	changes, err := indexChanges(t, tb, pk, &old, nil)
	if err != nil {
		return err
	}
	return t.write(changes, &tb.space, spk, nil)
}

// insert stores rec, which must not exist, and its index entries.
func insert[K comparable, R any](t *tx, tb *table[K, R], rec R) error {
	pk := tb.pk(rec)
	spk, oldV, err := current(t, tb, pk)
	if err != nil {
		return err
	}
	if oldV != nil {
		return fmt.Errorf("insert %s %s: exists: %w", tb.name, tb.schema.format(pk), backend.ErrConflict)
	}
	value, err := encodeFor(tb, spk, rec)
	if err != nil {
		return err
	}
	changes, err := indexChanges(t, tb, pk, nil, &rec)
	if err != nil {
		return err
	}
	return t.write(changes, &tb.space, spk, value)
}

// replace overwrites the stored record with rec's key, moving its index
// entries. A Replace that changes nothing writes nothing.
func replace[K comparable, R any](t *tx, tb *table[K, R], rec R) error {
	pk := tb.pk(rec)
	spk, oldV, err := current(t, tb, pk)
	if err != nil {
		return err
	}
	if oldV == nil {
		return fmt.Errorf("replace %s %s: %w", tb.name, tb.schema.format(pk), backend.ErrNotFound)
	}
	value, err := encodeFor(tb, spk, rec)
	if err != nil || bytes.Equal(value, oldV) {
		return err
	}
	old, err := tb.decode(oldV)
	if err != nil {
		return fmt.Errorf("stored %s %s: %w", tb.name, tb.schema.format(pk), err)
	}
	changes, err := indexChanges(t, tb, pk, &old, &rec)
	if err != nil {
		return err
	}
	return t.write(changes, &tb.space, spk, value)
}

// encodeFor encodes rec and checks that it and its stored key spk fit
// bbolt's limits.
func encodeFor[K comparable, R any](tb *table[K, R], spk []byte, rec R) ([]byte, error) {
	value := tb.encode(rec)
	if len(spk) > bbolt.MaxKeySize || len(value) > bbolt.MaxValueSize {
		return nil, fmt.Errorf("%s key is %d bytes, value %d bytes: too large for bbolt", tb.name, len(spk), len(value))
	}
	return value, nil
}

// indexChange is one index's part of a write: delete the record's old
// entry, put its new one (either may be nil); stored keys of ix's space.
type indexChange struct {
	ix       *index
	del, put []byte
}

// indexChanges works out, without writing, how each index of tb changes
// when old (nil: none) becomes rec (nil: deleted), and checks unique
// indexes.
func indexChanges[K comparable, R any](t *tx, tb *table[K, R], pk key, old, rec *R) ([]indexChange, error) {
	changes := make([]indexChange, 0, len(tb.indexed))
	for _, ix := range tb.indexed {
		var del, put key
		if old != nil {
			if e, ok := ix.entry(*old); ok {
				del = e
			}
		}
		if rec != nil {
			if e, ok := ix.entry(*rec); ok {
				put = e
			}
		}
		if bytes.Equal(del, put) {
			continue // unchanged, or in neither
		}
		if len(put)+1 > bbolt.MaxKeySize {
			return nil, fmt.Errorf("%s entry is %d bytes: too large for bbolt", ix.name, len(put))
		}
		c := indexChange{ix: ix.index}
		if del != nil {
			c.del = ix.stored(del)
		}
		if put != nil {
			c.put = ix.stored(put)
			if ix.unique > 0 {
				if err := t.checkUnique(ix.index, put, pk); err != nil {
					return nil, err
				}
			}
		}
		changes = append(changes, c)
	}
	return changes, nil
}

// checkUnique fails with ErrConflict when another record has an entry in
// ix with the same leading unique parts as entry. Unique indexes are global
// (bucketIndex).
func (t *tx) checkUnique(ix *index, entry, pk key) error {
	b, err := t.bucket(ix.bucket)
	if err != nil {
		return err
	}
	vals, err := ix.schema.decode(entry)
	if err != nil {
		return err
	}
	prefix := ix.schema.encode(vals, firstN(ix.unique))
	sprefix := ix.stored(prefix)
	c := b.Cursor()
	for k, _ := c.Seek(sprefix); k != nil && bytes.HasPrefix(k, sprefix); k, _ = c.Next() {
		e, _ := ix.unstored(k)
		other, err := ix.primary(e)
		if err != nil {
			return fmt.Errorf("index %s: %w", ix.name, err)
		}
		if !bytes.Equal(other, pk) {
			return fmt.Errorf("%s %s is taken: %w", ix.name, ix.schema[:ix.unique].format(prefix), backend.ErrConflict)
		}
	}
	return nil
}

// write makes one checked operation's changes: its index entries, then
// the record under stored key spk of s (value nil: delete it). From here
// on the store changes; a storage error breaks the transaction.
func (t *tx) write(changes []indexChange, s *space, spk, value []byte) error {
	t.wrote = true
	for _, c := range changes {
		if c.del != nil {
			if err := t.del(&c.ix.space, c.del); err != nil {
				return t.fail(err)
			}
		}
		if c.put != nil {
			if err := t.put(&c.ix.space, c.put, nil); err != nil {
				return t.fail(err)
			}
		}
	}
	var err error
	if value == nil {
		err = t.del(s, spk)
	} else {
		err = t.put(s, spk, value)
	}
	if err != nil {
		return t.fail(err)
	}
	return nil
}

// put stores value under stored key sk of s, making the run's bucket if
// it has none.
func (t *tx) put(s *space, sk, value []byte) error {
	bk, k, err := t.at(s, sk, true)
	if err != nil {
		return err
	}
	return bk.Put(k, value)
}

// del deletes stored key sk of s.
func (t *tx) del(s *space, sk []byte) error {
	bk, k, err := t.at(s, sk, false)
	if err != nil || bk == nil {
		return err
	}
	return bk.Delete(k)
}

// fail marks the transaction broken after a storage error part-way through
// a write.
func (t *tx) fail(err error) error {
	t.broken = fmt.Errorf("bolt: storage error: %w", err)
	return t.broken
}
