package etcd

import (
	"context"

	"github.com/wfstore/wfstore/internal/kvlayout"
)

// This file is the key layout: the key spaces under a store's prefix.
// Every key of a store is
//
//	prefix | tag | rest
//
// where tag is one byte naming the space (a record kind, an index, the
// meta keys or the commit markers) and rest is a codec key for records
// and index entries. So each record kind and each index is one contiguous
// key range, read in key order by a bounded range request. The record
// kinds and indexes, their tags, keys and values are kvlayout's, in its
// flat form (prefix | kvlayout's stored key), without the run status index.

// Space tags of the adapter's own keys.
const (
	tagMeta   byte = 'm' // meta keys: store marker, schema version
	tagMarker byte = 'x' // commit markers: instance | slot (tx.go)
)

// layout is the etcd store's: every kind and index the flat key range of
// its tag.
var layout = kvlayout.New(kvlayout.Config{Name: "etcd"})

// key returns the etcd key of stored key sk (kvlayout.Space.Stored).
func (b *Backend) key(sk []byte) string { return b.prefix + string(sk) }

// stored returns the stored key of etcd key k, which is under the prefix.
func (b *Backend) stored(k string) []byte { return []byte(k[len(b.prefix):]) }

// store is a transaction as kvlayout reads and writes it; op names the
// operation in read errors.
type store struct {
	t  *readTx
	op string
}

var (
	_ kvlayout.Store      = store{}
	_ kvlayout.Prefetcher = store{}
)

// Get returns the value of stored key sk as the transaction sees it.
func (s store) Get(ctx context.Context, _ *kvlayout.Space, sk []byte) ([]byte, error) {
	vals, err := s.t.get(ctx, s.op, []string{s.t.b.key(sk)})
	if err != nil {
		return nil, err
	}
	return vals[0], nil
}

// Keys returns up to limit stored keys of [from, until), read as a scan
// (an Update records the range for the phantom check).
func (s store) Keys(ctx context.Context, _ *kvlayout.Space, from, until []byte, limit int) ([][]byte, error) {
	got, err := s.t.scan(ctx, s.op, s.t.b.key(from), s.t.b.key(until), limit, scanOpts{keysOnly: true})
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(got))
	for i, e := range got {
		out[i] = s.t.b.stored(e.key)
	}
	return out, nil
}

// Prefetch reads keys in batches of gets, so the Gets after it cost no
// round trip.
func (s store) Prefetch(ctx context.Context, keys []kvlayout.StoredKey) error {
	ks := make([]string, len(keys))
	for i, k := range keys {
		ks[i] = s.t.b.key(k.Key)
	}
	_, err := s.t.get(ctx, s.op, ks)
	return err
}

// Put buffers a put of value under stored key sk (an Update's only).
func (s store) Put(_ *kvlayout.Space, sk, value []byte) error {
	s.t.put(s.t.b.key(sk), value)
	return nil
}

// Delete buffers a delete of stored key sk (an Update's only).
func (s store) Delete(_ *kvlayout.Space, sk []byte) error {
	s.t.del(s.t.b.key(sk))
	return nil
}
