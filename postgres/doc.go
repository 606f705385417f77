// Package postgres is the wfstore backend on PostgreSQL, through
// github.com/jackc/pgx/v5 (pgxpool): the backend for many processes and
// machines sharing one store.
//
// Open takes a pgx connection string; OpenPool takes the caller's
// *pgxpool.Pool, uses it as given and never closes it. All objects live in
// one schema (WithSchema, default "wfstore"), so several stores, and
// parallel tests, share one database. Other options: WithBusyTimeout,
// WithRelaxedDurability.
//
// # Guarantees
//
//   - Update runs fn in one SERIALIZABLE transaction, so every Update is
//     serializable with every other over the whole store: across
//     goroutines, pools, processes and machines. No row or advisory lock
//     carries correctness; the server detects conflicts.
//   - A commit is durable (synchronous_commit = on) before Update returns
//     nil. WithRelaxedDurability trades that for speed in tests.
//   - A serialization failure or deadlock, or a connection lost before
//     COMMIT was sent, re-runs fn with backoff for as long as ctx and the
//     busy timeout allow; after that the error wraps backend.ErrBusy.
//   - An Update that keeps losing to concurrent ones (4 failed runs, or a
//     quarter of its busy timeout) takes the turn: its runs wait for the
//     store's read-write transactions in flight and hold back the ones
//     that start after, so a large transaction racing many small ones
//     still commits. The turn orders runs only; every wait it causes is
//     bounded (see the repository's docs/internals/postgres.md).
//   - View runs fn in one REPEATABLE READ, READ ONLY transaction and is
//     never re-run.
//   - Opening writes nothing to a newer schema (*backend.SchemaVersionError)
//     or a foreign one (backend.ErrForeignStore). Migrations are embedded
//     and safe when several processes open one schema at once.
//   - Close fails new calls with backend.ErrClosed, interrupts calls in
//     flight (they roll back) and waits for them.
//   - The adapter implements backend.WorkListener: a commit that adds work
//     wakes runners in every process on the same schema (LISTEN/NOTIFY);
//     polling backs it up.
//
// # Caveats
//
//   - A connection lost during COMMIT leaves the outcome unknown: that
//     error is returned and fn is not run again.
//   - fn may run more than once; its return value after a transient
//     failure is ignored.
//   - Only PostgreSQL is tested; a port to CockroachDB or YugabyteDB would
//     need the changes listed in the repository's docs/internals/postgres.md,
//     which also describes round trips, the write statements, plan-cache
//     settings and the schema.
package postgres
