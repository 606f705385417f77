package etcd

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// This file is the index verifier. Indexes are maintained by hand
// (apply.go), so Verify checks, at one revision, that they agree with the
// records exactly:
//
//   - every record decodes and is stored under its own primary key;
//   - every record has exactly its entries: one in each index whose
//     membership condition it meets, at the key its fields give;
//   - every index entry has an empty value, decodes, names a record that
//     exists, and is that record's entry (so its indexed fields match the
//     record's);
//   - unique index values (Attempt.Identity) are unique;
//   - every key under the prefix is a meta key, a commit marker, a record
//     or an index entry (its tag names a space).

// Discrepancy is one thing Verify found wrong.
type Discrepancy struct {
	// Space is the record kind or the index (ix_...) holding the bad key,
	// or "prefix" for a key that belongs to none.
	Space string
	// Key is the bad key: for a record or index entry its codec key (after
	// the prefix and tag), else the key after the prefix.
	Key     []byte
	KeyText string // the key decoded under the kind's or index's schema
	Problem string // what is wrong
}

func (d Discrepancy) String() string {
	return fmt.Sprintf("%s %s: %s", d.Space, d.KeyText, d.Problem)
}

// VerifyError lists every discrepancy Verify found.
type VerifyError struct {
	Discrepancies []Discrepancy
}

func (e *VerifyError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "etcd: verify found %d discrepancies", len(e.Discrepancies))
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

// verifyPage is how many keys one Verify request reads.
const verifyPage = 256

// Verify checks the store's indexes against its records (see above). It
// returns nil, a *VerifyError listing every discrepancy, or an error that
// stopped it (closed store, cancelled ctx, a failed request). It reads the
// whole store at one revision, in pages bounded by ctx (not by the request
// timeout), and does not block writers.
func (b *Backend) Verify(ctx context.Context) error {
	if err := b.enter(ctx, "verify"); err != nil {
		return err
	}
	defer b.inflight.Done()
	t := newReadTx(b, false)
	store := map[string][]byte{}
	var order []string
	from, end := b.prefix, b.prefixEndKey()
	for {
		// A page of large records is a large answer: bound it by ctx
		// alone, not by the request timeout.
		resp, err := b.kv.Get(ctx, from, t.withRev(false, clientv3.WithRange(end), clientv3.WithLimit(verifyPage))...)
		if err != nil {
			return fmt.Errorf("etcd: verify: %w", err)
		}
		t.pin(resp.Header.Revision)
		for _, kv := range resp.Kvs {
			k := string(kv.Key[len(b.prefix):])
			store[k] = kv.Value
			order = append(order, k)
		}
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	v := &verifier{store: store}
	v.run(order)
	if ds := v.discrepancies(); len(ds) > 0 {
		return &VerifyError{Discrepancies: ds}
	}
	return nil
}

type verifier struct {
	// store maps each key, without the prefix, to its value.
	store map[string][]byte
	found map[any][]Discrepancy
	// unique tracks the last unique value seen per unique index.
	unique map[*index]uniqueSeen
}

type uniqueSeen struct {
	value []byte
	pk    key
}

// discrepancies returns what v found: stray keys first, then for each
// kind its records' and then each of its indexes' entries'.
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

func (v *verifier) report(about any, space string, s schema, k []byte, format string, args ...any) {
	v.add(about, Discrepancy{
		Space:   space,
		Key:     append([]byte(nil), k...),
		KeyText: s.format(k),
		Problem: fmt.Sprintf(format, args...),
	})
}

func (v *verifier) run(order []string) {
	own := map[byte]any{}
	for _, k := range kinds {
		own[k.tag] = k
		for _, ix := range k.indexes {
			own[ix.tag] = ix
		}
	}
	for _, sk := range order {
		if sk == "" {
			v.add(nil, Discrepancy{Space: "prefix", Problem: "a key equal to the prefix"})
			continue
		}
		rest := []byte(sk[1:])
		switch o := own[sk[0]].(type) {
		case *kind:
			v.record(o, rest, v.store[sk])
		case *index:
			v.entry(o, rest, v.store[sk])
		default:
			switch {
			case sk[0] == tagMeta && (string(rest) == "store" || string(rest) == "version"):
			case sk[0] == tagMarker:
			default:
				v.add(nil, Discrepancy{Space: "prefix", Key: []byte(sk), KeyText: fmt.Sprintf("%q", sk),
					Problem: "key belongs to no record kind, index, meta key or commit marker"})
			}
		}
	}
}

// has reports whether the store holds codec key k of space s.
func (v *verifier) has(s space, k []byte) bool {
	_, ok := v.store[string(append([]byte{s.tag}, k...))]
	return ok
}

// record checks one record of k, stored under pk, and that its index
// entries exist.
func (v *verifier) record(k *kind, pk, val []byte) {
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
		if e != nil && !v.has(ix.space, e) {
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
		// An index is one contiguous key range, read in key order, so
		// equal unique values are adjacent.
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
	recV, ok := v.store[string(append([]byte{k.tag}, pk...))]
	if !ok {
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
