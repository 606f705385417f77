// Package kvlayout is the key-value layout of wfstore's records, shared by
// the bbolt and etcd adapters: how records and index entries are encoded
// as keys and values, which index entries a record has, how a
// backend.Changes becomes key reads, puts and deletes, which key range
// each ordered scan reads, and what Verify checks.
//
// What it guarantees to a backend author:
//
//   - Keys are tuples whose encoding keeps tuple order bytewise, and no
//     encoded tuple is a prefix of another of the same schema (codec.go);
//     so each record kind and each index is one key range, each scan one
//     sub-range, read in the store's key order.
//   - Values round-trip every field, nil and empty kept apart; equal
//     records encode as equal bytes; a value decodes only as its own kind
//     (value.go, records.go).
//   - A record has at most one entry per index, with an empty value, whose
//     key names the record (indexes.go). Layout.Apply writes and deletes
//     them with the record, and checks everything an operation can fail
//     on before its first write (apply.go).
//   - Tags, ids, keys and values are fixed: never renumbered or
//     re-encoded. What a Config may change is where the spaces live (one
//     flat range per kind and index, or per-run groups), whether the
//     run-status index exists, and size limits.
//
// An adapter supplies storage: a Reader or Store (Get, Keys, Put, Delete
// of stored keys, optionally Prefetch for batching), and a Snapshot and a
// walk over its keys for the Verifier. Its transactions, snapshots,
// conflicts and durability are its own.
package kvlayout
