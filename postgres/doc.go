// Package postgres is the wfstore backend on PostgreSQL, through
// github.com/jackc/pgx/v5 (pgxpool). It is the backend for many processes
// and machines sharing one store.
//
// # Opening
//
// Open takes a pgx connection string (pool settings such as pool_max_conns
// are honoured); OpenPool takes the caller's *pgxpool.Pool, uses it as given
// (no connection hooks are needed: every setting is made per transaction
// with set_config(..., true)) and never closes it. All objects live in one schema
// (WithSchema, default "wfstore"; the name must match
// ^[a-z_][a-z0-9_]{0,62}$ and is always quoted), so several stores, and
// parallel tests, share one database.
//
// Opening first reads, without writing: a missing or empty schema is
// created at SchemaVersion; a schema of ours at SchemaVersion is used as it
// is; a newer version fails with *backend.SchemaVersionError and a non-empty
// schema without our version row fails with backend.ErrForeignStore, both
// without writing anything. Migrations are embedded, versioned, and safe
// when several processes open the same schema at once: the migrating
// transaction holds pg_advisory_xact_lock on a key derived from the schema
// name AND finishes with a compare-and-set of the version row (INSERT ... ON
// CONFLICT DO NOTHING for the first version, UPDATE ... WHERE version = old
// after), so correctness never rests on the advisory lock alone (some
// PostgreSQL-compatible engines stub it); a migrator that loses the race
// (duplicate catalog rows, lost compare-and-set) rolls back and looks again.
// Migrations never ANALYZE (statistics of empty tables are what make plans
// go bad); autovacuum gathers them as tables grow.
//
// # Guarantees
//
// Update runs fn in one SERIALIZABLE, READ WRITE transaction on one pooled
// connection, so every Update is serializable with every other over the
// whole store: across goroutines, Backend values, pools, processes and
// machines (Capabilities: MultiInstance and MultiProcess). The server
// detects conflicts; no row or advisory lock is involved in correctness. A
// commit is durable (synchronous_commit = on, set per transaction) before
// Update returns nil; WithRelaxedDurability trades that for speed in tests
// and benchmarks (safe against a crash of this process only).
//
// Update re-runs fn when the server reports a serialization failure
// (SQLSTATE 40001) or deadlock (40P01), whether from a statement or from
// COMMIT, or when the connection is lost before COMMIT was sent (the server
// then rolled the transaction back), with exponential backoff and full
// jitter (1 ms doubling to 250 ms), for as long as the busy timeout
// (WithBusyTimeout, default DefaultBusyTimeout, counted from the start of
// Update) and ctx allow. A transient failure never reaches the caller while
// re-runs remain: fn's return value is ignored after one, because the
// server transaction is gone anyway. When a run fails so after the busy
// timeout has passed, the error wraps backend.ErrBusy and the last
// *pgconn.PgError. A
// connection lost during COMMIT leaves the outcome unknown: that error is
// returned and fn is not run again. fn's own error rolls back and is
// returned as is; a panic rolls back and is re-raised. Close makes new calls
// fail with backend.ErrClosed, interrupts calls in flight (they roll back
// and fail with an error matching ErrClosed), waits for them, and closes the
// pool if Open made it.
//
// View runs fn in one REPEATABLE READ, READ ONLY transaction: every read
// sees the snapshot of its first statement. It is never re-run.
//
// # Round trips
//
// On loopback each statement costs 0.1–0.2 ms, so the adapter counts round
// trips, not statements:
//
//   - BEGIN and the settings statement travel in the same batch as fn's first
//     read, or with the commit; an fn that sends nothing costs nothing.
//   - Load answers a whole Lookup in one round trip, sent as one pgx.Batch:
//     one statement per key of a key set of up to eight keys, one per key
//     set above that (= ANY($1) for string keys, a join against unnest of
//     parallel arrays for composite keys); see below for why.
//   - Apply sends nothing: it encodes the Changes, one statement per
//     non-empty slice, and queues them in the order backend.Changes fixes.
//     The next read sends them first, in its own batch, so it sees them;
//     the writes still queued when fn returns nil go in one batch with
//     COMMIT. See "Writes" below for the statements. A deferred write that
//     fails fails the read that carried it, or Update itself, with its
//     error (backend.ErrConflict, backend.ErrNotFound, backend.ErrChanged),
//     and nothing commits.
//   - A failed write dooms the transaction: every later call fails and
//     Update rolls back even if fn returns nil (the backend contract has fn
//     return an error after a failed call, so no savepoint is needed).
//   - COMMIT travels with the last writes. An fn that only read still pays a
//     round trip for COMMIT: under SERIALIZABLE its reads are only known to
//     be consistent once COMMIT succeeds.
//
// A typical read-decide-write Update is therefore two round trips
// (BEGIN + settings + reads; writes + COMMIT), a write-only Update one. A
// serialization failure anywhere in the commit batch re-runs fn, and so
// does a FATAL termination answering a statement before COMMIT (the server
// never reached COMMIT); a connection lost with COMMIT in flight leaves the
// outcome unknown, as above. Every statement is prepared once per
// connection (pgx's statement cache). Load reads a key set of up to eight
// keys with one primary-key (or unique-key) statement per key, a larger set
// with one array statement (= ANY, or unnest joined to the table). Under
// plan_cache_mode = auto (set per transaction) the server caches the generic
// plan of a statement whose generic plan costs what its custom plans cost,
// which is every key statement and every one-row write: planning them on
// each call cost about as much as running them (many-row writes force the
// generic plan, see Writes). Sequential scans are disabled per
// transaction, so no plan, even one made while the tables were empty, walks
// a whole table; the first autoanalyze of a table invalidates the plans
// made without statistics (TestExplainUsesIndexes checks the generic plans
// on empty tables and both plans on 10k-row tables).
//
// # Writes
//
// A slice of one record is written with one-row statements: INSERT ...
// VALUES ... ON CONFLICT DO NOTHING, UPDATE ... SET ... WHERE key, DELETE
// ... WHERE key, and for Expect SELECT 1 / count(*) FROM table WHERE key
// AND every column IS NOT DISTINCT FROM its value. A longer slice is one
// statement for the whole slice, with fixed text (prepared once per
// connection, whatever the slice's length). The records travel as one
// array parameter per column; v is unnest(<key arrays>) WITH ORDINALITY
// AS v(<key columns>, ord), and every other column is its array
// subscripted with v.ord (a set-returning function per column would cost
// more than the rest of the statement):
//
//   - Insert: INSERT INTO t (...) SELECT ... FROM v ON CONFLICT DO NOTHING;
//   - Replace: UPDATE t AS x SET ... FROM v WHERE x.key = v.key;
//   - Delete: DELETE FROM t AS x USING v WHERE x.key = v.key;
//   - Expect: SELECT ... FROM v JOIN t AS x ON x.key = v.key AND every
//     column IS NOT DISTINCT FROM its value.
//
// PostgreSQL arrays are rectangular, so a text[] column (an activation's
// claims and predecessors) travels as one flat text[] of every row's list
// plus each row's start and length in it (-1 for NULL). An Apply with a
// many-row statement runs its writes under plan_cache_mode =
// force_generic_plan (set_config around them, local to the transaction):
// under auto the server would plan a short slice's statement afresh on
// every call (the generic plan assumes ten rows, so the custom plan of a
// shorter slice looks cheaper), which costs 0.15–0.3 ms, more than running
// it, while the generic plan, a nested loop over v probing the primary
// key, suits any slice.
//
// Every write is guarded so that matching fewer rows than it was given is
// a server error: WITH w AS (... RETURNING 1) SELECT 1 / count(*) FROM w
// for one row, SELECT 1 / (count(*) = cardinality($1))::int FROM w for
// many (division_by_zero either way). It aborts the transaction and makes
// the server skip the rest of the batch, COMMIT included, and the adapter
// reports it as the statement's sentinel: backend.ErrConflict for an
// Insert (a primary key or Attempt.Identity stored, or repeated within the
// slice: ON CONFLICT DO NOTHING skips the row), backend.ErrNotFound for a
// Replace or Delete (a key missing, or deleted twice), backend.ErrChanged
// for an Expect. A Replace onto another attempt's Identity (unique
// violation) is backend.ErrConflict.
//
// The result is that of applying the records one by one in order: a
// Replace slice naming a key twice is written as its last Replace of that
// key, which is what one by one leaves. Replace of attempts is the
// exception that keeps one statement per record: PostgreSQL checks the
// unique Identity row by row in the order the UPDATE reaches the rows, so
// a slice moving an Identity from one attempt to another would conflict,
// or not, by that order rather than the slice's. The statements of a slice
// travel in the same batch, so this costs no round trip. A slice that
// fails for a reason other than its sentinel (a value the server refuses,
// such as a NUL byte in a string) fails as a whole with the server's
// error, even when one by one an earlier record of the slice would have
// failed first with a sentinel.
//
// # Schema
//
// Every record field is a real column (nested lists as parallel text[]
// columns, optional structs as nullable columns); canonical JSON is stored
// as bytea, so it round-trips byte for byte (jsonb would reorder keys);
// nil and empty byte slices and lists stay distinct (NULL vs empty). Every
// text key is COLLATE "C", so every order is bytewise. Every ordered scan
// has an index whose columns match its WHERE and ORDER BY (keyset
// conditions with row comparisons, then LIMIT): a partial index over
// admissible activations only; attempts by (prepared_ms, identity),
// (status, …), (run_id, …), (run_id, status, …) and a unique identity;
// run_links by (root_run_id, created_ms, child_run_id); retry_schedules by
// (run_id, due_ms, node_id, activation_id); events by their key (run_id,
// seq); partial indexes over unreleased leases by key and by resource.
// Sequential scans are disabled per transaction (enable_seqscan = off):
// every statement has an index path, and under SERIALIZABLE a
// sequential scan takes a relation-wide predicate lock that would turn every
// concurrent write to that table into a serialization failure.
//
// # Wake-ups
//
// The adapter implements the optional wake-up capability of the backend
// contract. A transaction the workflow layer signals (backend.WorkSignaler:
// a run created, an activation added, an observation applied, ...) sends
// pg_notify on the store's channel, with an empty payload, in the commit's
// own round trip, right after COMMIT in a short transaction of its own
// (asynchronous commit), which the server runs only if COMMIT succeeded:
// a NOTIFY inside the transaction would hold the server's database-wide
// notify lock through the commit's WAL flush and so serialize every
// signalled commit.
// Backend.ListenWork (backend.WorkListener) runs LISTEN on one dedicated
// connection and hears those commits from every process on the same
// schema. The channel is per store: "wfstore_work_" and the schema name
// (hashed when too long), so two schemas in one database never wake each
// other. A listener that loses its connection reconnects with backoff and
// then wakes its receiver once, in case it missed a commit meanwhile. A
// runner over this adapter therefore wakes as soon as another process adds
// work, where over the other adapters it finds it at its next poll.
//
// # PostgreSQL-specific features
//
// The adapter avoids PostgreSQL-only features on the path to correctness
// (LISTEN/NOTIFY only for wake-ups, which polling backs up; no
// advisory-lock-only correctness, no triggers, no stored procedures). What it does use, for a port to CockroachDB or
// YugabyteDB (neither can be tested here):
//
//   - SERIALIZABLE is PostgreSQL's SSI; CockroachDB runs SERIALIZABLE
//     natively (its retry errors are also 40001), YugabyteDB needs
//     SERIALIZABLE enabled explicitly.
//   - REPEATABLE READ READ ONLY for View (CockroachDB: use SERIALIZABLE or
//     AS OF SYSTEM TIME follower reads).
//   - set_config(..., true) of plan_cache_mode and enable_seqscan, in one
//     statement after BEGIN: PostgreSQL planner settings, unknown elsewhere
//     (drop them); of synchronous_commit (PostgreSQL and YugabyteDB only).
//   - No savepoints. Writes are deferred and pipelined with the next read or
//     with COMMIT (extended-protocol pipelining with one Sync, or one
//     multi-statement simple query), relying on the server skipping the rest
//     of a batch after a failed statement; the guard on each write is a
//     data-modifying CTE (WITH ... RETURNING) whose division by zero turns
//     "fewer rows than given" into an error (CockroachDB supports both;
//     YugabyteDB too). UPDATE ... FROM and DELETE ... USING for many-row
//     writes.
//   - pg_advisory_xact_lock during migrations (stubbed on some engines; the
//     version-row compare-and-set keeps migrations safe without it).
//   - Catalog reads in pg_catalog (pg_namespace, pg_class, pg_proc,
//     pg_type) to tell an empty schema from a foreign one.
//   - COLLATE "C" on text columns (CockroachDB compares strings bytewise by
//     default and spells collations differently).
//   - array parameters with = ANY and multi-argument unnest (Load's key
//     sets, every many-row write), array slices (a[i:j]) and cardinality;
//     partial indexes (WHERE admissible, WHERE released_ms = 0); row-value
//     comparisons such as (a, b) > ($1, $2); INSERT ... ON CONFLICT DO
//     NOTHING; bytea. CockroachDB and YugabyteDB support all of these.
//   - Transactional DDL in migrations (CockroachDB runs schema changes
//     asynchronously and would need one statement per transaction).
//   - SHOW server_version for Info.
//   - LISTEN and pg_notify for wake-ups (CockroachDB has neither; an
//     engine without them drops SignalWork and ListenWork, and runners
//     poll).
package postgres
