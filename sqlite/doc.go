// Package sqlite is wfstore's embedded default adapter: it implements
// backend.Backend on SQLite through database/sql with the pure-Go driver
// modernc.org/sqlite (pinned at v1.62.0 in go.mod, SQLite 3.54.x; the driver
// name is "sqlite").
//
// # Guarantees
//
// Every Update runs on one writer connection inside BEGIN IMMEDIATE, so
// Updates are serializable with each other across goroutines (an in-process
// writer lock), across Backend values over the same file (MultiInstance) and
// across processes (MultiProcess): SQLite's file lock admits one writer at a
// time. A View is a read transaction (BEGIN DEFERRED) on a reader connection;
// in WAL mode it reads one consistent snapshot, taken at its first read, and
// never waits for the writer.
//
// When another connection holds the write lock, BEGIN IMMEDIATE is retried
// with jittered exponential backoff (1 ms doubling to 32 ms) for as long as
// ctx allows, and no longer than the optional WithBusyTimeout. SQLite's own
// busy_timeout is kept small (5 ms on the writer) so that the wait is done and
// measured here, never hidden: Stats reports the worst lock wait. SQLITE_BUSY
// never reaches the caller while waiting is allowed; when it is not any more,
// Update returns an error that wraps backend.ErrBusy, the last driver error
// (a *sqlite.Error, reachable with errors.As) and, when ctx ended the wait,
// ctx.Err().
//
// By default (see WithoutGroupCommit), Updates of one Backend that queue for the writer
// share one commit, each fn in a SAVEPOINT of its own that a failure rolls
// back alone (group.go); Stats reports SharedCommits.
//
// A ReadTx or Tx belongs to the goroutine running fn and must not be kept
// after fn returns. fn must not call Update on the same Backend (the writer
// is not re-entrant); a View inside fn is fine unless OpenDB's pool has a
// single connection, in which case Views share the writer too.
//
// # Durability
//
// The file is always in WAL mode (journal_mode=WAL).
//
//   - By default, synchronous=FULL. The WAL is synced on every commit, so a
//     committed Update survives process crash and power loss.
//   - WithRelaxedDurability: synchronous=NORMAL. Safe against process
//     crash, not power loss: the last commits before an operating-system
//     crash or power cut may be lost (the file stays consistent). Meant for
//     tests and benchmarks; the semantics are otherwise identical.
//
// Info().Settings reports "synchronous" (FULL or NORMAL) and "durability"
// (durable or relaxed).
//
// # Opening
//
// Open first inspects an existing file through a read-only connection and
// writes nothing to a file it does not recognise: a non-empty file that is
// not SQLite, or an SQLite database with schema objects but no wfstore_meta
// table, is refused with backend.ErrForeignStore; a wfstore schema newer
// than this build is refused with *backend.SchemaVersionError. (A valid
// SQLite file with no schema objects, user_version 0 and application_id 0 is
// treated as empty, so an open interrupted before its first commit can be
// retried.) Only then is the file switched to WAL and the embedded, versioned
// migrations applied inside BEGIN IMMEDIATE, re-checking the version under
// the write lock, so two processes opening a fresh file at once are safe.
// A new file is created with mode 0600 before SQLite opens it (SQLite gives
// the -wal and -shm files the same mode); an existing file's mode is never
// changed. A path that is not a regular file is refused without opening it.
//
// Backup writes a consistent copy all or nothing: to a temporary file next
// to the destination, fsynced and checked read-only before it is linked to
// the destination's name.
//
// # Schema
//
// One STRICT table per record kind (runs, run_links, activations,
// fan_out_groups, attempts, leases, retry_schedules, events) plus
// wfstore_meta holding the schema version (SchemaVersion). Every record
// field is a column; JSON fields are TEXT (NULL for nil) returned byte for
// byte; an activation's claims and predecessors are BLOBs in a
// length-prefixed encoding; all text compares with the default BINARY
// (bytewise) collation.
// Every scan runs on an index that yields its order (partial indexes for
// admissible activations and unreleased leases) and is bounded by LIMIT, so
// it reads only rows it returns.
//
// # Writes
//
// Tx.Apply writes a backend.Changes in the order it fixes (expects,
// deletes, inserts, replaces; kinds and slices in field order), each slice
// through one prepared statement of the writer connection, row by row, so
// the result is that of applying its elements one by one. An Insert is
// INSERT ... ON CONFLICT DO NOTHING (no row affected: ErrConflict), a
// Replace an UPDATE and a Delete a DELETE by key (no row affected:
// ErrNotFound); an Expect compares with the stored row, read unless the
// transaction knows it (below). The first failure ends Apply with an error
// naming its slice and index ("sqlite: apply Insert.Attempts[2]: ...").
//
// A Replace of a row the same Update loaded (or wrote) sets only the columns
// whose values differ, and writes nothing when none does: SQLite rewrites
// the entry of every index with a column in an UPDATE's SET list even when
// the value is unchanged, so setting every column made a handoff (one
// non-indexed column) rewrite all five attempt indexes. A Replace of a row
// the Update has not read sets every column.
//
// The rows the last committed Update itself loaded, wrote or expected (up
// to 64, copied) are carried to the next Update while nothing else has
// committed to the file: under its write lock each Update reads PRAGMA
// data_version, which changes when any other connection or process
// commits, and starts with those rows only if it has not changed. A Replace or an Expect of such a row then needs no
// read (the handoff and receipt commits of an admission expect the run,
// activation and attempt the commit before wrote). An Update that does not
// commit carries nothing.
//
// # Handles
//
// OpenDB uses a caller's *sql.DB (opened with this driver) as given: writes
// go through one *sql.Conn pinned from it, with busy_timeout and synchronous
// set on that connection (and restored at Close); reads use the rest of its
// pool (or the pinned connection, serialized with writes, when the pool
// allows only one connection). Close never closes the caller's *sql.DB.
package sqlite
