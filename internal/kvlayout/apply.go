package kvlayout

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"unsafe"

	"github.com/wfstore/wfstore/backend"
)

// This file is Apply: the slices of backend.Changes in their fixed order,
// each record's index entries maintained with it, as key reads and writes
// of a Store.
//
// Each slice is one generic call on its kind's table (layout.go): a pass
// over the slice, in slice order, that writes into that kind's space and
// its indexes' spaces and nothing else. A slice's type fixes its kind and
// the call fixes its operation, so nothing is decided at run time by a
// record's type, and an operation a kind does not accept has no call.

// Reader is a transaction's view of stored keys (Space.Stored), as Apply
// and Load read them: at the transaction's snapshot, with its own writes.
type Reader interface {
	// Get returns the value under stored key sk of s, or nil when there is
	// none.
	Get(ctx context.Context, s *Space, sk []byte) ([]byte, error)
	// Keys returns up to limit (< 0: no limit) stored keys of s in [from,
	// until), in key order. from and until come from s.Range.
	Keys(ctx context.Context, s *Space, from, until []byte, limit int) ([][]byte, error)
}

// Store is a write transaction as Apply uses it.
type Store interface {
	Reader
	// Put stores value under stored key sk of s, and Delete removes sk
	// (absent: nothing to do). An error of either stops Apply part-way:
	// the Store must then refuse to commit.
	//
	// sk, for Get, Put and Delete alike, is Apply's until the call
	// returns: Apply builds the next operation's keys in its bytes, so a
	// Store copies what it keeps (value it may keep).
	Put(s *Space, sk, value []byte) error
	Delete(s *Space, sk []byte) error
}

// Prefetcher is a Reader that reads many keys in one round trip. Apply and
// Load hand it, first, the keys they are about to Get.
type Prefetcher interface {
	Prefetch(ctx context.Context, keys []StoredKey) error
}

// StoredKey is one stored key of a space.
type StoredKey struct {
	Space *Space
	Key   []byte
}

// empty is the value of every index entry.
var empty = []byte{}

// Apply applies c to st: every Expect, then every Delete, then every
// Insert, then every Replace, kinds in the order of backend.Changes's
// fields and each slice in slice order; it stops at the first operation
// that fails and returns its error, which names the slice and index. An
// operation that fails with ErrConflict, ErrNotFound or ErrChanged has
// changed nothing (the operations before it in c stay applied): every
// check (existence, uniqueness, key and value sizes) runs before an
// operation's first Put. So only an error of st's Put or Delete can stop
// an operation part-way.
func (l *Layout) Apply(ctx context.Context, st Store, c *backend.Changes) error {
	if p, ok := st.(Prefetcher); ok {
		if err := p.Prefetch(ctx, l.changedKeys(c)); err != nil {
			return err
		}
	}
	a := &applier{l: l, ctx: ctx, st: st}
	e, d, i, r := &c.Expect, &c.Delete, &c.Insert, &c.Replace

	expectAll(a, "Expect.Runs", l.Run, e.Runs)
	expectAll(a, "Expect.Activations", l.Activation, e.Activations)
	expectAll(a, "Expect.Attempts", l.Attempt, e.Attempts)

	deleteAll(a, "Delete.Events", l.Event, d.Events)
	deleteAll(a, "Delete.Schedules", l.Schedule, d.Schedules)
	deleteAll(a, "Delete.Leases", l.Lease, d.Leases)
	deleteAll(a, "Delete.Attempts", l.Attempt, d.Attempts)

	insertAll(a, "Insert.Runs", l.Run, i.Runs)
	insertAll(a, "Insert.Links", l.Link, i.Links)
	insertAll(a, "Insert.Activations", l.Activation, i.Activations)
	insertAll(a, "Insert.Groups", l.FanOutGroup, i.Groups)
	insertAll(a, "Insert.Attempts", l.Attempt, i.Attempts)
	insertAll(a, "Insert.Leases", l.Lease, i.Leases)
	insertAll(a, "Insert.Schedules", l.Schedule, i.Schedules)
	insertAll(a, "Insert.Events", l.Event, i.Events)

	replaceAll(a, "Replace.Runs", l.Run, r.Runs)
	replaceAll(a, "Replace.Activations", l.Activation, r.Activations)
	replaceAll(a, "Replace.Groups", l.FanOutGroup, r.Groups)
	replaceAll(a, "Replace.Attempts", l.Attempt, r.Attempts)
	replaceAll(a, "Replace.Leases", l.Lease, r.Leases)
	replaceAll(a, "Replace.Schedules", l.Schedule, r.Schedules)
	return a.err
}

// changedKeys returns the stored key of every record c names, in the
// order Apply reads them.
func (l *Layout) changedKeys(c *backend.Changes) []StoredKey {
	e, d, i, r := &c.Expect, &c.Delete, &c.Insert, &c.Replace
	var out []StoredKey
	out = appendRecs(out, l.Run, e.Runs)
	out = appendRecs(out, l.Activation, e.Activations)
	out = appendRecs(out, l.Attempt, e.Attempts)
	out = appendKeys(out, l.Event, d.Events)
	out = appendKeys(out, l.Schedule, d.Schedules)
	out = appendKeys(out, l.Lease, d.Leases)
	out = appendKeys(out, l.Attempt, d.Attempts)
	out = appendRecs(out, l.Run, i.Runs)
	out = appendRecs(out, l.Link, i.Links)
	out = appendRecs(out, l.Activation, i.Activations)
	out = appendRecs(out, l.FanOutGroup, i.Groups)
	out = appendRecs(out, l.Attempt, i.Attempts)
	out = appendRecs(out, l.Lease, i.Leases)
	out = appendRecs(out, l.Schedule, i.Schedules)
	out = appendRecs(out, l.Event, i.Events)
	out = appendRecs(out, l.Run, r.Runs)
	out = appendRecs(out, l.Activation, r.Activations)
	out = appendRecs(out, l.FanOutGroup, r.Groups)
	out = appendRecs(out, l.Attempt, r.Attempts)
	out = appendRecs(out, l.Lease, r.Leases)
	out = appendRecs(out, l.Schedule, r.Schedules)
	return out
}

func appendKeys[K comparable, R any](out []StoredKey, tb *Table[K, R], keys []K) []StoredKey {
	for _, k := range keys {
		out = append(out, StoredKey{Space: &tb.Space, Key: tb.Stored(tb.key(k))})
	}
	return out
}

func appendRecs[K comparable, R any](out []StoredKey, tb *Table[K, R], recs []R) []StoredKey {
	for _, rec := range recs {
		out = append(out, StoredKey{Space: &tb.Space, Key: tb.Stored(tb.PK(rec))})
	}
	return out
}

// applier carries one Apply's first error: once it is set, every later
// pass does nothing.
type applier struct {
	l   *Layout
	ctx context.Context
	st  Store
	err error
	// entries is where indexChanges works out index entries: most of a
	// Replace's are unchanged and dropped, so only the changed ones are
	// copied out (as stored keys).
	entries Key
	// changes is indexChanges's result, reused: write consumes it before
	// the next operation works out its own.
	changes []indexChange
	// keys holds the keys one operation builds (its record's primary and
	// stored keys, its index entries'), reset by the next one's opKey: a
	// Store keeps no key past its call (Store).
	keys []byte
}

// keysCap is the room an applier keeps for one operation's stored keys;
// an operation whose keys do not fit allocates the rest.
const keysCap = 2048

// stored returns the stored key of k in s, built in a.keys when it fits
// (valid until the next operation's opKey).
func (a *applier) stored(s *Space, k Key) []byte {
	if a.keys == nil {
		a.keys = make([]byte, 0, keysCap)
	}
	start := len(a.keys)
	if cap(a.keys)-start < 1+len(k) {
		return s.Stored(k)
	}
	a.keys = s.AppendStored(a.keys, k)
	return a.keys[start:len(a.keys):len(a.keys)]
}

// fail records the error of element i of the slice named field.
func (a *applier) fail(field string, i int, err error) {
	a.err = fmt.Errorf("%s: %s[%d]: %w", a.l.cfg.Name, field, i, err)
}

// expectAll checks that each record of recs is stored exactly as given.
func expectAll[K comparable, R backend.Expectable](a *applier, field string, tb *Table[K, R], recs []R) {
	for i, rec := range recs {
		if a.err != nil {
			return
		}
		if err := expect(a, tb, rec); err != nil {
			a.fail(field, i, err)
		}
	}
}

// deleteAll deletes the record of each key of keys.
func deleteAll[K comparable, R any](a *applier, field string, tb *Table[K, R], keys []K) {
	for i, k := range keys {
		if a.err != nil {
			return
		}
		if err := remove(a, tb, k); err != nil {
			a.fail(field, i, err)
		}
	}
}

// insertAll inserts each record of recs.
func insertAll[K comparable, R any](a *applier, field string, tb *Table[K, R], recs []R) {
	for i, rec := range recs {
		if a.err != nil {
			return
		}
		if err := insert(a, tb, rec); err != nil {
			a.fail(field, i, err)
		}
	}
}

// replaceAll replaces each record of recs.
func replaceAll[K comparable, R any](a *applier, field string, tb *Table[K, R], recs []R) {
	for i, rec := range recs {
		if a.err != nil {
			return
		}
		if err := replace(a, tb, rec); err != nil {
			a.fail(field, i, err)
		}
	}
}

// opKey starts an operation on the record named k: the keys of the one
// before are done with, and its primary key is built in a.keys when it
// fits (valid, like stored's keys, until the next operation).
func opKey[K comparable, R any](a *applier, tb *Table[K, R], k K) Key {
	if a.keys == nil {
		a.keys = make([]byte, 0, keysCap)
	}
	a.keys = a.keys[:0]
	pk := tb.appendKey(a.keys, k)
	if unsafe.SliceData(pk) != unsafe.SliceData(a.keys) {
		return pk // it did not fit: its own allocation
	}
	a.keys = pk
	return pk[:len(pk):len(pk)]
}

// current returns the stored key of pk in tb's space and the value stored
// there (nil: none).
func current[K comparable, R any](a *applier, tb *Table[K, R], pk Key) (spk, value []byte, err error) {
	spk = a.stored(&tb.Space, pk)
	value, err = a.st.Get(a.ctx, &tb.Space, spk)
	return spk, value, err
}

// expect fails with ErrChanged unless want is stored exactly as given.
// The codec writes equal records as equal bytes, so equal bytes are the
// common answer; otherwise the stored record is decoded and compared field
// by field, so that the answer never depends on the encoding.
func expect[K comparable, R backend.Expectable](a *applier, tb *Table[K, R], want R) error {
	pk := opKey(a, tb, tb.ID(want))
	_, oldV, err := current(a, tb, pk)
	switch {
	case err != nil:
		return err
	case oldV == nil:
		return fmt.Errorf("expected %s %s is missing: %w", tb.Name, tb.Schema.Format(pk), backend.ErrChanged)
	case bytes.Equal(tb.encode(want), oldV):
		return nil
	}
	stored, err := tb.Decode(oldV)
	if err != nil {
		return fmt.Errorf("stored %s %s: %w", tb.Name, tb.Schema.Format(pk), err)
	}
	if err := backend.CompareExpected(stored, want); err != nil {
		return fmt.Errorf("%s %s: %w", tb.Name, tb.Schema.Format(pk), err)
	}
	return nil
}

// remove deletes the record under k and its index entries.
func remove[K comparable, R any](a *applier, tb *Table[K, R], k K) error {
	pk := opKey(a, tb, k)
	spk, oldV, err := current(a, tb, pk)
	if err != nil {
		return err
	}
	if oldV == nil {
		return fmt.Errorf("delete %s %s: %w", tb.Name, tb.Schema.Format(pk), backend.ErrNotFound)
	}
	old, err := tb.decodeView(oldV)
	if err != nil {
		return fmt.Errorf("stored %s %s: %w", tb.Name, tb.Schema.Format(pk), err)
	}
	changes, err := indexChanges(a, tb, pk, &old, nil)
	if err != nil {
		return err
	}
	return a.write(changes, &tb.Space, spk, nil)
}

// insert stores rec, which must not exist, and its index entries.
func insert[K comparable, R any](a *applier, tb *Table[K, R], rec R) error {
	pk := opKey(a, tb, tb.ID(rec))
	spk, oldV, err := current(a, tb, pk)
	if err != nil {
		return err
	}
	if oldV != nil {
		return fmt.Errorf("insert %s %s: exists: %w", tb.Name, tb.Schema.Format(pk), backend.ErrConflict)
	}
	value, err := encodeFor(a.l, tb, spk, rec)
	if err != nil {
		return err
	}
	changes, err := indexChanges(a, tb, pk, nil, &rec)
	if err != nil {
		return err
	}
	return a.write(changes, &tb.Space, spk, value)
}

// replace overwrites the stored record with rec's key, moving its index
// entries. A Replace that changes nothing writes nothing.
func replace[K comparable, R any](a *applier, tb *Table[K, R], rec R) error {
	pk := opKey(a, tb, tb.ID(rec))
	spk, oldV, err := current(a, tb, pk)
	if err != nil {
		return err
	}
	if oldV == nil {
		return fmt.Errorf("replace %s %s: %w", tb.Name, tb.Schema.Format(pk), backend.ErrNotFound)
	}
	value, err := encodeFor(a.l, tb, spk, rec)
	if err != nil || bytes.Equal(value, oldV) {
		return err
	}
	old, err := tb.decodeView(oldV)
	if err != nil {
		return fmt.Errorf("stored %s %s: %w", tb.Name, tb.Schema.Format(pk), err)
	}
	changes, err := indexChanges(a, tb, pk, &old, &rec)
	if err != nil {
		return err
	}
	return a.write(changes, &tb.Space, spk, value)
}

// encodeFor encodes rec and checks that it and its stored key spk fit the
// layout's limits.
func encodeFor[K comparable, R any](l *Layout, tb *Table[K, R], spk []byte, rec R) ([]byte, error) {
	value := tb.encode(rec)
	if l.cfg.MaxKeySize > 0 && len(spk) > l.cfg.MaxKeySize || l.cfg.MaxValueSize > 0 && len(value) > l.cfg.MaxValueSize {
		return nil, fmt.Errorf("%s key is %d bytes, value %d bytes: over the store's limits (%d, %d)",
			tb.Name, len(spk), len(value), l.cfg.MaxKeySize, l.cfg.MaxValueSize)
	}
	return value, nil
}

// indexChange is one index's part of a write: delete the record's old
// entry, put its new one (either may be nil); stored keys of ix's space.
type indexChange struct {
	ix       *Index
	del, put []byte
}

// indexChanges works out, without writing, how each index of tb changes
// when old (nil: none) becomes rec (nil: deleted), and checks unique
// indexes.
func indexChanges[K comparable, R any](a *applier, tb *Table[K, R], pk Key, old, rec *R) ([]indexChange, error) {
	if a.entries == nil {
		a.entries = make(Key, 0, 512)
		a.changes = make([]indexChange, 0, 8) // a kind has at most 6 indexes
	}
	changes := a.changes[:0]
	for _, ix := range tb.Indexed {
		// del and put share a.entries (put after del), which the next
		// index reuses: what outlives this iteration is copied by Stored.
		var del, put Key
		buf := a.entries[:0]
		if old != nil {
			if e, ok := ix.entry(buf, *old); ok {
				del = e
				buf = e[len(e):]
			}
		}
		if rec != nil {
			if e, ok := ix.entry(buf, *rec); ok {
				put = e
			}
		}
		if bytes.Equal(del, put) {
			continue // unchanged, or in neither
		}
		if lim := a.l.cfg.MaxKeySize; lim > 0 && len(put)+1 > lim {
			return nil, fmt.Errorf("%s entry is %d bytes: over the store's key limit (%d)", ix.Name, len(put), lim)
		}
		c := indexChange{ix: ix.Index}
		if del != nil {
			c.del = a.stored(&ix.Space, del)
		}
		if put != nil {
			c.put = a.stored(&ix.Space, put)
			if ix.Unique > 0 {
				if err := a.checkUnique(ix.Index, put, pk); err != nil {
					return nil, err
				}
			}
		}
		changes = append(changes, c)
	}
	a.changes = changes
	return changes, nil
}

// checkUnique fails with ErrConflict when another record has an entry in
// ix with the same leading unique parts as entry.
func (a *applier) checkUnique(ix *Index, entry, pk Key) error {
	n, err := ix.Schema.prefixLen(entry, ix.Unique) // UniquePrefix, not copied
	if err != nil {
		return err
	}
	prefix := entry[:n]
	// The stored keys under the prefix's stored key are exactly the
	// entries whose unique parts are prefix's (for a per-run index too:
	// its first part is the run). Two are enough: at most one is pk's.
	from := a.stored(&ix.Space, prefix)
	until := prefixEndOf(a.stored(&ix.Space, prefix))
	keys, err := a.st.Keys(a.ctx, &ix.Space, from, until, 2)
	if err != nil {
		return err
	}
	for _, sk := range keys {
		e, _ := ix.Unstored(sk)
		other, err := ix.Primary(e)
		if err != nil {
			return fmt.Errorf("index %s: %w", ix.Name, err)
		}
		if !bytes.Equal(other, pk) {
			return fmt.Errorf("%s %s is taken: %w", ix.Name, ix.Schema[:ix.Unique].Format(prefix), backend.ErrConflict)
		}
	}
	return nil
}

// write makes one checked operation's changes: its index entries, then
// the record under stored key spk of s (value nil: delete it).
func (a *applier) write(changes []indexChange, s *Space, spk, value []byte) error {
	for _, c := range changes {
		if c.del != nil {
			if err := a.st.Delete(&c.ix.Space, c.del); err != nil {
				return err
			}
		}
		if c.put != nil {
			if err := a.st.Put(&c.ix.Space, c.put, empty); err != nil {
				return err
			}
		}
	}
	if value == nil {
		return a.st.Delete(s, spk)
	}
	return a.st.Put(s, spk, value)
}

// SwapAttempts is backend.Swapper over st: for each swap in order, Old is
// compared with the stored attempt as Expect compares it and, when equal,
// the attempt is replaced by New (as Replace writes it) and reported true;
// otherwise it is left as stored and reported false. Only an error of st
// (or an invalid call, before anything is written) is returned.
func (l *Layout) SwapAttempts(ctx context.Context, st Store, swaps []backend.AttemptSwap) ([]bool, error) {
	if err := backend.CheckSwaps(swaps); err != nil {
		return nil, fmt.Errorf("%s: %w", l.cfg.Name, err)
	}
	if p, ok := st.(Prefetcher); ok {
		keys := make([]StoredKey, len(swaps))
		for i, s := range swaps {
			keys[i] = StoredKey{Space: &l.Attempt.Space, Key: l.Attempt.Stored(l.Attempt.PK(s.Old))}
		}
		if err := p.Prefetch(ctx, keys); err != nil {
			return nil, err
		}
	}
	a := &applier{l: l, ctx: ctx, st: st}
	out := make([]bool, len(swaps))
	for i, s := range swaps {
		err := expect(a, l.Attempt, s.Old)
		if errors.Is(err, backend.ErrChanged) {
			continue
		}
		if err == nil {
			err = replace(a, l.Attempt, s.New)
		}
		if err != nil {
			a.fail("swaps", i, err)
			return nil, a.err
		}
		out[i] = true
	}
	return out, nil
}
