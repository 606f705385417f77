package etcd

import (
	"bytes"
	"context"
	"fmt"

	"github.com/wfstore/wfstore/backend"
)

// This file is Tx.Apply: the slices of backend.Changes in their fixed
// order, each record's index entries maintained in the same transaction,
// as in the bolt adapter. Writes go to the transaction's buffer (tx.go)
// and reach etcd with the commit.

// Apply applies c: every Expect, then every Delete, then every Insert, then
// every Replace, kinds in the order of backend.Changes's fields and each
// slice in slice order; it stops at the first operation that fails and
// returns its error. An operation that fails with ErrConflict, ErrNotFound
// or ErrChanged has changed nothing (the operations before it in c stay
// applied): every check (existence, uniqueness, key sizes) runs before an
// operation's first buffered write. Every key the operations check is read
// first, in one batch of gets.
func (t *tx) Apply(ctx context.Context, c backend.Changes) error {
	if err := t.check(ctx, "apply"); err != nil {
		return err
	}
	if t.w.broken != nil {
		return fmt.Errorf("etcd: apply after a failed write: %w", t.w.broken)
	}
	e, d, i, r := &c.Expect, &c.Delete, &c.Insert, &c.Replace
	if err := t.prefetch(ctx, &c); err != nil {
		return err
	}
	a := &applier{t: t, ctx: ctx}

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
	ctx context.Context
	err error
}

// fail records the error of element i of the slice named field.
func (a *applier) fail(field string, i int, err error) {
	a.err = fmt.Errorf("etcd: %s[%d]: %w", field, i, err)
}

// expectAll checks that each record of recs is stored exactly as given.
func expectAll[K comparable, R backend.Expectable](a *applier, field string, tb *table[K, R], recs []R) {
	for i, rec := range recs {
		if a.err != nil {
			return
		}
		if err := expect(a.ctx, a.t, tb, rec); err != nil {
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
		if err := remove(a.ctx, a.t, tb, k); err != nil {
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
		if err := insert(a.ctx, a.t, tb, rec); err != nil {
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
		if err := replace(a.ctx, a.t, tb, rec); err != nil {
			a.fail(field, i, err)
		}
	}
}

// prefetch reads, in one batch, the stored keys of every record c names,
// so the checks below cost no further round trip.
func (t *tx) prefetch(ctx context.Context, c *backend.Changes) error {
	e, d, i, r := &c.Expect, &c.Delete, &c.Insert, &c.Replace
	var keys []string
	keys = appendKeys(&t.readTx, keys, kindRun, ids(kindRun, e.Runs))
	keys = appendKeys(&t.readTx, keys, kindActivation, ids(kindActivation, e.Activations))
	keys = appendKeys(&t.readTx, keys, kindAttempt, ids(kindAttempt, e.Attempts))
	keys = appendKeys(&t.readTx, keys, kindEvent, d.Events)
	keys = appendKeys(&t.readTx, keys, kindSchedule, d.Schedules)
	keys = appendKeys(&t.readTx, keys, kindLease, d.Leases)
	keys = appendKeys(&t.readTx, keys, kindAttempt, d.Attempts)
	keys = appendKeys(&t.readTx, keys, kindRun, ids(kindRun, i.Runs))
	keys = appendKeys(&t.readTx, keys, kindLink, ids(kindLink, i.Links))
	keys = appendKeys(&t.readTx, keys, kindActivation, ids(kindActivation, i.Activations))
	keys = appendKeys(&t.readTx, keys, kindGroup, ids(kindGroup, i.Groups))
	keys = appendKeys(&t.readTx, keys, kindAttempt, ids(kindAttempt, i.Attempts))
	keys = appendKeys(&t.readTx, keys, kindLease, ids(kindLease, i.Leases))
	keys = appendKeys(&t.readTx, keys, kindSchedule, ids(kindSchedule, i.Schedules))
	keys = appendKeys(&t.readTx, keys, kindEvent, ids(kindEvent, i.Events))
	keys = appendKeys(&t.readTx, keys, kindRun, ids(kindRun, r.Runs))
	keys = appendKeys(&t.readTx, keys, kindActivation, ids(kindActivation, r.Activations))
	keys = appendKeys(&t.readTx, keys, kindGroup, ids(kindGroup, r.Groups))
	keys = appendKeys(&t.readTx, keys, kindAttempt, ids(kindAttempt, r.Attempts))
	keys = appendKeys(&t.readTx, keys, kindLease, ids(kindLease, r.Leases))
	keys = appendKeys(&t.readTx, keys, kindSchedule, ids(kindSchedule, r.Schedules))
	_, err := t.get(ctx, "apply", keys)
	return err
}

func ids[K comparable, R any](tb *table[K, R], recs []R) []K {
	out := make([]K, len(recs))
	for i, rec := range recs {
		out[i] = tb.id(rec)
	}
	return out
}

// current returns the stored key of pk in tb's space and the value t sees
// there (nil: none).
func current[K comparable, R any](ctx context.Context, t *tx, tb *table[K, R], pk key) (string, []byte, error) {
	spk := t.b.sk(tb.space, pk)
	vals, err := t.get(ctx, "apply", []string{spk})
	if err != nil {
		return spk, nil, err
	}
	return spk, vals[0], nil
}

// expect fails with ErrChanged unless want is stored exactly as given.
func expect[K comparable, R backend.Expectable](ctx context.Context, t *tx, tb *table[K, R], want R) error {
	pk := tb.pk(want)
	_, oldV, err := current(ctx, t, tb, pk)
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
func remove[K comparable, R any](ctx context.Context, t *tx, tb *table[K, R], k K) error {
	pk := tb.key(k)
	spk, oldV, err := current(ctx, t, tb, pk)
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
	changes, err := indexChanges(ctx, t, tb, pk, &old, nil)
	if err != nil {
		return err
	}
	t.write(changes, spk, nil)
	return nil
}

// insert stores rec, which must not exist, and its index entries.
func insert[K comparable, R any](ctx context.Context, t *tx, tb *table[K, R], rec R) error {
	pk := tb.pk(rec)
	spk, oldV, err := current(ctx, t, tb, pk)
	if err != nil {
		return err
	}
	if oldV != nil {
		return fmt.Errorf("insert %s %s: exists: %w", tb.name, tb.schema.format(pk), backend.ErrConflict)
	}
	changes, err := indexChanges(ctx, t, tb, pk, nil, &rec)
	if err != nil {
		return err
	}
	t.write(changes, spk, tb.encode(rec))
	return nil
}

// replace overwrites the stored record with rec's key, moving its index
// entries. A Replace that changes nothing writes nothing.
func replace[K comparable, R any](ctx context.Context, t *tx, tb *table[K, R], rec R) error {
	pk := tb.pk(rec)
	spk, oldV, err := current(ctx, t, tb, pk)
	if err != nil {
		return err
	}
	if oldV == nil {
		return fmt.Errorf("replace %s %s: %w", tb.name, tb.schema.format(pk), backend.ErrNotFound)
	}
	value := tb.encode(rec)
	if bytes.Equal(value, oldV) {
		return nil
	}
	old, err := tb.decode(oldV)
	if err != nil {
		return fmt.Errorf("stored %s %s: %w", tb.name, tb.schema.format(pk), err)
	}
	changes, err := indexChanges(ctx, t, tb, pk, &old, &rec)
	if err != nil {
		return err
	}
	t.write(changes, spk, value)
	return nil
}

// indexChange is one index's part of a write: delete the record's old
// entry, put its new one (either may be ""); stored keys.
type indexChange struct {
	del, put string
}

// indexChanges works out, without writing, how each index of tb changes
// when old (nil: none) becomes rec (nil: deleted), and checks unique
// indexes.
func indexChanges[K comparable, R any](ctx context.Context, t *tx, tb *table[K, R], pk key, old, rec *R) ([]indexChange, error) {
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
		var c indexChange
		if del != nil {
			c.del = t.b.sk(ix.space, del)
		}
		if put != nil {
			c.put = t.b.sk(ix.space, put)
			if ix.unique > 0 {
				if err := t.checkUnique(ctx, ix.index, put, pk); err != nil {
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
func (t *tx) checkUnique(ctx context.Context, ix *index, entry, pk key) error {
	vals, err := ix.schema.decode(entry)
	if err != nil {
		return err
	}
	prefix := ix.schema.encode(vals, firstN(ix.unique))
	got, err := t.scan(ctx, "unique "+ix.name, t.b.sk(ix.space, prefix), t.b.sk(ix.space, prefixEnd(prefix)), 2, scanOpts{keysOnly: true})
	if err != nil {
		return err
	}
	for _, e := range got {
		other, err := ix.primary([]byte(e.key[len(t.b.prefix)+1:]))
		if err != nil {
			return fmt.Errorf("index %s: %w", ix.name, err)
		}
		if !bytes.Equal(other, pk) {
			return fmt.Errorf("%s %s is taken: %w", ix.name, ix.schema[:ix.unique].format(prefix), backend.ErrConflict)
		}
	}
	return nil
}

// write buffers one checked operation's changes: its index entries, then
// the record under stored key spk (value nil: delete it).
func (t *tx) write(changes []indexChange, spk string, value []byte) {
	for _, c := range changes {
		if c.del != "" {
			t.del(c.del)
		}
		if c.put != "" {
			t.put(c.put, []byte{})
		}
	}
	if value == nil {
		t.del(spk)
	} else {
		t.put(spk, value)
	}
}

func firstN(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	return p
}
