package bolt

import (
	"bytes"
	"context"
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/wfstore/wfstore/backend"
)

// This file is Tx.Apply: the operation table of backend's package doc,
// with each record's index entries maintained in the same transaction.

// Apply applies writes in order and stops at the first that fails. A write
// that fails with ErrConflict, ErrNotFound or ErrUnsupported has changed
// nothing. Every check (existence, uniqueness, key sizes) runs before a
// write's first Put, so only a storage failure can stop a write part-way;
// then the transaction is marked broken and Update will not commit it.
func (t *tx) Apply(ctx context.Context, writes ...backend.Write) error {
	if err := t.check(ctx, "apply"); err != nil {
		return err
	}
	if t.broken != nil {
		return fmt.Errorf("bolt: apply after a failed write: %w", t.broken)
	}
	for i, w := range writes {
		if err := t.apply(w); err != nil {
			return fmt.Errorf("bolt: write %d (%s %s): %w", i, w.Op, recordKind(w.Record), err)
		}
	}
	return nil
}

func recordKind(r backend.Record) string {
	if r == nil {
		return "nil record"
	}
	return r.Kind()
}

// indexChange is one index's part of a write: delete the record's old
// entry, put its new one (either may be nil); stored keys of ix's bucket.
type indexChange struct {
	ix       *index
	del, put []byte
}

func (t *tx) apply(w backend.Write) error {
	if w.Record == nil {
		return fmt.Errorf("bolt: nil record: %w", backend.ErrUnsupported)
	}
	k, err := kindOf(w.Record)
	if err != nil {
		return err
	}
	if !(w.Op == backend.Insert || w.Op == backend.Replace && k.replace || w.Op == backend.Delete && k.delete || w.Op == backend.Expect && k.expect) {
		return fmt.Errorf("bolt: %s does not accept %s: %w", k.name, w.Op, backend.ErrUnsupported)
	}
	pk := k.key(w.Record)
	spk := k.stored(pk)
	bk, bkey, err := t.at(&k.space, spk, false)
	if err != nil {
		return err
	}

	// The stored record, whose index entries the write replaces.
	var old backend.Record
	var oldV []byte
	if bk != nil {
		oldV = bk.Get(bkey)
	}
	if w.Op == backend.Expect {
		// The codec writes equal records as equal bytes and unequal ones
		// (nil and empty slices included) as unequal bytes.
		if oldV == nil || !bytes.Equal(k.encode(w.Record), oldV) {
			return fmt.Errorf("bolt: %s %s is missing or differs: %w", k.name, k.schema.format(pk), backend.ErrChanged)
		}
		return nil
	}
	switch {
	case w.Op == backend.Insert && oldV != nil:
		return fmt.Errorf("bolt: %s %s exists: %w", k.name, k.schema.format(pk), backend.ErrConflict)
	case w.Op != backend.Insert && oldV == nil:
		return fmt.Errorf("bolt: %s %s: %w", k.name, k.schema.format(pk), backend.ErrNotFound)
	case oldV != nil:
		if old, err = k.decode(oldV); err != nil {
			return fmt.Errorf("bolt: stored %s %s: %w", k.name, k.schema.format(pk), err)
		}
	}
	var rec backend.Record
	var value []byte
	if w.Op != backend.Delete {
		rec, value = w.Record, k.encode(w.Record)
		if bytes.Equal(value, oldV) {
			return nil // a Replace that changes nothing writes nothing
		}
		if len(spk) > bbolt.MaxKeySize || len(value) > bbolt.MaxValueSize {
			return fmt.Errorf("bolt: %s key is %d bytes, value %d bytes: too large for bbolt", k.name, len(pk), len(value))
		}
	}

	changes, err := t.indexChanges(k, pk, old, rec)
	if err != nil {
		return err
	}

	// From here on the store changes.
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
	if rec == nil {
		err = t.del(&k.space, spk)
	} else {
		err = t.put(&k.space, spk, value)
	}
	if err != nil {
		return t.fail(err)
	}
	return nil
}

// indexChanges works out, without writing, how each index of k changes
// when old (nil: none) becomes rec (nil: deleted), and checks unique
// indexes.
func (t *tx) indexChanges(k *kind, pk key, old, rec backend.Record) ([]indexChange, error) {
	changes := make([]indexChange, 0, len(k.indexes))
	for _, ix := range k.indexes {
		var del, put key
		if old != nil {
			if e, ok := ix.entry(old); ok {
				del = e
			}
		}
		if rec != nil {
			if e, ok := ix.entry(rec); ok {
				put = e
			}
		}
		if bytes.Equal(del, put) {
			continue // unchanged, or in neither
		}
		if len(put)+1 > bbolt.MaxKeySize {
			return nil, fmt.Errorf("bolt: %s entry is %d bytes: too large for bbolt", ix.name, len(put))
		}
		c := indexChange{ix: ix}
		if del != nil {
			c.del = ix.stored(del)
		}
		if put != nil {
			c.put = ix.stored(put)
			if ix.unique > 0 {
				b, err := t.bucket(ix.bucket)
				if err != nil {
					return nil, err
				}
				if err := t.checkUnique(ix, b, put, pk); err != nil {
					return nil, err
				}
			}
		}
		changes = append(changes, c)
	}
	return changes, nil
}

// checkUnique fails with ErrConflict when another record has an entry in
// ix with the same leading unique parts as entry.
func (t *tx) checkUnique(ix *index, b *bbolt.Bucket, entry, pk key) error {
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
			return fmt.Errorf("bolt: index %s: %w", ix.name, err)
		}
		if !bytes.Equal(other, pk) {
			return fmt.Errorf("bolt: %s %s is taken: %w", ix.name, ix.schema[:ix.unique].format(prefix), backend.ErrConflict)
		}
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
