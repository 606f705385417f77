package etcd

import (
	"context"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/wfstore/wfstore/internal/kvlayout"
)

// This file is the index verifier. Indexes are maintained by hand
// (kvlayout's apply.go), so Verify checks, at one revision, that they
// agree with the records exactly (kvlayout.Verifier: every record decodes,
// sits under its own key and has exactly its entries; every entry is its
// record's; unique values are unique), and that the prefix holds nothing
// else:
//
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

// String renders d on one line: space, decoded key, problem.
func (d Discrepancy) String() string { return kvlayout.Discrepancy(d).String() }

// VerifyError lists every discrepancy Verify found.
type VerifyError struct {
	Discrepancies []Discrepancy
}

func (e *VerifyError) Error() string { return kvlayout.VerifyMessage("etcd", e.Discrepancies) }

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
	store := snapshot{}
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
			store[k] = append([]byte{}, kv.Value...) // never nil: nil is "no value"
			order = append(order, k)
		}
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	if ds := verify(store, order); len(ds) > 0 {
		return &VerifyError{Discrepancies: ds}
	}
	return nil
}

// snapshot is the store at one revision, each key without the prefix
// mapped to its value (never nil), as kvlayout.Verifier reads it.
type snapshot map[string][]byte

func (m snapshot) Has(_ *kvlayout.Space, sk []byte) bool {
	_, ok := m[string(sk)]
	return ok
}

func (m snapshot) Get(_ *kvlayout.Space, sk []byte) []byte { return m[string(sk)] }

// verify checks every key of the store, in key order: a record or an
// index entry (kvlayout.Verifier), a meta key, a commit marker, or stray.
func verify(store snapshot, order []string) []Discrepancy {
	v := layout.NewVerifier(store)
	for _, sk := range order {
		if sk == "" {
			v.Add(kvlayout.Discrepancy{Space: "prefix", Problem: "a key equal to the prefix"})
			continue
		}
		if v.Key(nil, []byte(sk), store[sk]) {
			continue
		}
		switch rest := sk[1:]; {
		case sk[0] == tagMeta && (rest == "store" || rest == "version" || rest == "turn" || strings.HasPrefix(rest, "turn/")):
		case sk[0] == tagMarker, sk[0] == tagClaim:
		default:
			v.Add(kvlayout.Discrepancy{Space: "prefix", Key: []byte(sk), KeyText: fmt.Sprintf("%q", sk),
				Problem: "key belongs to no record kind, index, meta key or commit marker"})
		}
	}
	var out []Discrepancy
	for _, d := range v.Discrepancies() {
		out = append(out, Discrepancy(d))
	}
	return out
}
