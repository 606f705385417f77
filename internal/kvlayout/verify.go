package kvlayout

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
)

// This file is the index verifier. Indexes are maintained by hand
// (apply.go), so a verifier checks, over one snapshot the adapter walks key
// by key, that they agree with the records exactly:
//
//   - every record decodes and is stored under its own primary key;
//   - every record has exactly its entries: one in each index whose
//     membership condition it meets, at the key its fields give;
//   - every index entry has an empty value, decodes, names a record that
//     exists, and is that record's entry (so its indexed fields — status,
//     times, run, identity... — match the record);
//   - unique index values (Attempt.Identity) are unique.
//
// What else a store may hold (meta keys, buckets, commit markers) is the
// adapter's to check: Key says when a key is no record's or entry's.

// Discrepancy is one thing a verifier found wrong.
type Discrepancy struct {
	// Space is the record kind or the index (ix_...) holding the bad key,
	// or what the adapter names a key that belongs to neither.
	Space string
	// Key is the bad key: for a record or index entry, its codec key.
	Key     []byte
	KeyText string // the key decoded under the kind's or index's schema
	Problem string // what is wrong
}

// String renders d on one line: space, decoded key, problem.
func (d Discrepancy) String() string {
	return fmt.Sprintf("%s %s: %s", d.Space, d.KeyText, d.Problem)
}

// VerifyMessage is the message of an error that lists ds: how many, then
// the first ten.
func VerifyMessage[D fmt.Stringer](name string, ds []D) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: verify found %d discrepancies", name, len(ds))
	for i, d := range ds {
		if i == 10 {
			fmt.Fprintf(&b, "; and %d more", len(ds)-i)
			break
		}
		b.WriteString("; ")
		b.WriteString(d.String())
	}
	return b.String()
}

// Snapshot is the store as a verifier reads it: one consistent view.
type Snapshot interface {
	// Has reports whether stored key sk of s exists (an index entry's
	// value is empty, so this cannot go by Get's nil).
	Has(s *Space, sk []byte) bool
	// Get returns the value under stored key sk of s, or nil when there is
	// none.
	Get(s *Space, sk []byte) []byte
}

// Verifier checks the keys an adapter hands it (Key) and collects what it
// finds.
type Verifier struct {
	l    *Layout
	snap Snapshot
	// found collects discrepancies by what they concern (nil: none of the
	// layout's kinds and indexes, else a *Kind's records or an *Index's
	// entries), reported in order.
	found map[any][]Discrepancy
	// unique tracks the last unique value seen per unique index.
	unique map[*Index]uniqueSeen
	owners map[string]map[byte]any // group → tag → *Kind or *Index
}

type uniqueSeen struct {
	value []byte
	pk    Key
}

// NewVerifier returns a verifier of the store snap reads.
func (l *Layout) NewVerifier(snap Snapshot) *Verifier {
	own := map[string]map[byte]any{}
	add := func(s *Space, o any) {
		g := string(s.Group)
		if own[g] == nil {
			own[g] = map[byte]any{}
		}
		own[g][s.Tag] = o
	}
	for _, k := range l.Kinds {
		add(&k.Space, k)
		for _, ix := range k.Indexes {
			add(&ix.Space, ix)
		}
	}
	return &Verifier{l: l, snap: snap, owners: own}
}

// Key checks stored key sk of group, which holds val, as a record or an
// index entry of the kind or index its tag names, in key order (a unique
// index's equal values are adjacent). It returns false, having checked
// nothing, when sk's tag names none: the adapter reports the key or knows
// it for one of its own.
func (v *Verifier) Key(group, sk, val []byte) bool {
	at := 0
	if v.l.cfg.RunGroup != nil && bytes.Equal(group, v.l.cfg.RunGroup) {
		at = RunPartLen(sk)
	}
	if at < 0 || at >= len(sk) {
		return false
	}
	switch o := v.owners[string(group)][sk[at]].(type) {
	case *Kind:
		k, _ := o.Unstored(sk)
		v.record(o, k, val)
	case *Index:
		e, _ := o.Unstored(sk)
		v.entry(o, e, val)
	default:
		return false
	}
	return true
}

// Add records a discrepancy that concerns none of the layout's kinds and
// indexes (a stray key, a missing bucket).
func (v *Verifier) Add(d Discrepancy) { v.add(nil, d) }

// Discrepancies returns what v found: Add's first, then for each kind its
// records' and then each of its indexes' entries'.
func (v *Verifier) Discrepancies() []Discrepancy {
	out := v.found[nil]
	for _, k := range v.l.Kinds {
		out = append(out, v.found[k]...)
		for _, ix := range k.Indexes {
			out = append(out, v.found[ix]...)
		}
	}
	return out
}

func (v *Verifier) add(about any, d Discrepancy) {
	if v.found == nil {
		v.found = map[any][]Discrepancy{}
	}
	v.found[about] = append(v.found[about], d)
}

func (v *Verifier) report(about any, space string, s Schema, k []byte, format string, args ...any) {
	v.add(about, Discrepancy{
		Space:   space,
		Key:     append([]byte(nil), k...),
		KeyText: s.Format(k),
		Problem: fmt.Sprintf(format, args...),
	})
}

// record checks one record of k, stored under pk, and that its index
// entries exist.
func (v *Verifier) record(k *Kind, pk, val []byte) {
	if val == nil {
		v.report(k, k.Name, k.Schema, pk, "is a nested bucket, not a record")
		return
	}
	own, entries, err := k.check(val)
	if err != nil {
		v.report(k, k.Name, k.Schema, pk, "value does not decode: %v", err)
		return
	}
	if !bytes.Equal(own, pk) {
		v.report(k, k.Name, k.Schema, pk, "record's key fields give %s: stored under the wrong key", k.Schema.Format(own))
	}
	for i, ix := range k.Indexes {
		e := entries[i]
		if e != nil && !v.snap.Has(&ix.Space, ix.Stored(e)) {
			v.report(k, k.Name, k.Schema, pk, "missing its %s entry %s", ix.Name, ix.Schema.Format(e))
		}
	}
}

// entry checks one entry e of index ix.
func (v *Verifier) entry(ix *Index, e, val []byte) {
	k := ix.Owner
	if len(val) != 0 {
		v.report(ix, ix.Name, ix.Schema, e, "entry has a %d-byte value; index values are empty", len(val))
	}
	pk, err := ix.Primary(e)
	if err != nil {
		v.report(ix, ix.Name, ix.Schema, e, "entry does not decode: %v", err)
		return
	}
	if ix.Unique > 0 {
		// A unique index is one contiguous key range, read in key order,
		// so equal unique values are adjacent.
		u, _ := ix.UniquePrefix(e)
		if v.unique == nil {
			v.unique = map[*Index]uniqueSeen{}
		}
		if prev := v.unique[ix]; prev.value != nil && bytes.Equal(u, prev.value) {
			v.report(ix, ix.Name, ix.Schema, e, "%s is shared by %s %s and %s %s", ix.Schema[:ix.Unique].Format(u), k.Name, k.Schema.Format(prev.pk), k.Name, k.Schema.Format(pk))
		}
		v.unique[ix] = uniqueSeen{value: u, pk: pk}
	}
	recV := v.snap.Get(&k.Space, k.Stored(pk))
	if recV == nil {
		v.report(ix, ix.Name, ix.Schema, e, "names %s %s, which does not exist", k.Name, k.Schema.Format(pk))
		return
	}
	_, entries, err := k.check(recV)
	if err != nil {
		return // reported by record
	}
	want := entries[slices.Index(k.Indexes, ix)]
	switch {
	case want == nil:
		v.report(ix, ix.Name, ix.Schema, e, "names %s %s, which is not in this index (members have %s)", k.Name, k.Schema.Format(pk), ix.Member)
	case !bytes.Equal(want, e):
		v.report(ix, ix.Name, ix.Schema, e, "stale: %s %s has indexed fields %s", k.Name, k.Schema.Format(pk), ix.Schema.Format(want))
	}
}
