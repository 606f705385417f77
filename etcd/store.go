package etcd

import (
	"context"

	"github.com/wfstore/wfstore/internal/kvlayout"
)

// This file is the transaction as kvlayout reads and writes it: stored
// keys (kvlayout.Space.Stored) under the prefix, read through the
// transaction's snapshot, cache and read set (tx.go), written to its buffer.

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
