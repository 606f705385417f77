// Package sqlite is wfstore's embedded default backend: backend.Backend on
// one SQLite file, through database/sql and the pure-Go driver
// modernc.org/sqlite (driver name "sqlite"; no cgo, no server).
//
// Open opens or creates a store file; OpenDB uses a caller's *sql.DB
// opened with this driver and never closes it. Options: WithBusyTimeout,
// WithRelaxedDurability, WithoutGroupCommit. Stats reports lock waits and
// shared commits; Backup writes a consistent copy.
//
// # Guarantees
//
//   - Every Update runs in BEGIN IMMEDIATE on one writer connection, so
//     Updates are serializable with each other across goroutines, Backend
//     values over one file and processes (SQLite admits one writer at a
//     time). A View reads one consistent snapshot (WAL mode) and never
//     waits for the writer.
//   - A committed Update survives process crash and power loss: the file
//     is always in WAL mode with synchronous=FULL. WithRelaxedDurability
//     (synchronous=NORMAL) survives a process crash, not power loss.
//   - A busy write lock is waited for here, with jittered backoff, as long
//     as ctx and WithBusyTimeout allow; after that Update returns an error
//     wrapping backend.ErrBusy.
//   - Open writes nothing to a file it does not recognise
//     (backend.ErrForeignStore) or that a newer build wrote
//     (*backend.SchemaVersionError); migrations are embedded and safe when
//     several processes open one new file at once. A new file gets mode
//     0600; an existing file's mode is never changed.
//   - Backup is all or nothing: a temporary file next to the destination,
//     fsynced and checked before it takes the destination's name.
//
// # Caveats
//
//   - One writer at a time: throughput is bounded by one file's commits.
//     By default Updates queued behind the writer share one commit, each in
//     a savepoint of its own that a failure rolls back alone.
//   - A ReadTx or Tx belongs to the goroutine running fn and must not be
//     kept after fn returns; fn must not call Update on the same Backend.
//     With OpenDB on a pool of one connection, Views share the writer.
//
// The schema, the write path and the cache of rows carried between
// Updates are described in the repository's docs/internals/sqlite.md.
package sqlite
