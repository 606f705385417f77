// Package bolt is the wfstore backend on go.etcd.io/bbolt: one file, one
// process, one writer at a time, with secondary indexes built by hand and
// a verifier that proves them.
//
// Open opens or creates a store file; OpenDB uses a caller's *bbolt.DB.
// Options: WithLockTimeout, WithRelaxedDurability, WithNoSyncHandle,
// WithoutGroupCommit. Backend.Verify checks every index entry against its
// record; Backend.Backup writes a consistent copy, all or nothing.
//
// The key layout (key codec, values, record kinds, index entries, which
// range each scan reads, what Verify checks) is internal/kvlayout's,
// shared with the etcd adapter; this package holds the bbolt side. It is
// meant to be read by whoever writes the next key-value adapter.
//
// # Guarantees
//
//   - Updates are serializable: bbolt runs one read-write transaction at a
//     time, and any number of goroutines may call View and Update.
//   - A committed Update is fsynced before Update returns nil.
//     WithRelaxedDurability (bbolt's NoSync) survives a process crash, not
//     power loss; OpenDB refuses a NoSync handle unless told otherwise.
//   - An operation that fails with ErrConflict, ErrNotFound or ErrChanged
//     has changed nothing: every check runs before its first write. A
//     record and its index entries are written in the same transaction.
//   - Each scan is one key range, so it reads only the entries it returns.
//   - A store written by an older supported schema version is migrated by
//     Open in one transaction; any other version is refused, not written.
//
// # Caveats
//
//   - bbolt locks the file: a store has one Backend in one process
//     (Capabilities reports neither MultiInstance nor MultiProcess).
//   - Open walks the whole file to rebuild bbolt's free list (it is not
//     synced at each commit), so opening a large store reads all of it.
//   - Indexes are hand-built: run Verify (or `wfstore verify`) after
//     touching the layout.
//
// The buckets, key tables, value encoding and the measurements behind
// them are in the repository's docs/internals/bolt.md.
package bolt
