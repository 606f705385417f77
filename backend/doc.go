// Package backend is the storage contract that every wfstore adapter implements.
//
// The workflow logic (package workflow) is written once against this contract;
// adapters (sqlite, postgres, bolt, etcd, or yours) translate it into one
// store's idiom and hold no workflow decisions. An adapter proves it honours
// the contract by running conformance.Run.
//
// # Transactions
//
// Backend.Update runs a read-write transaction that is serializable with every
// other Update on the same store: other goroutines, other Backend values over
// the same store (when Capabilities.MultiInstance) and other processes (when
// Capabilities.MultiProcess). Backend.View reads one consistent snapshot. An
// adapter may run fn more than once when the database reports a transient
// conflict, so fn must have no effects outside the transaction.
//
// # Records and writes
//
// Records are plain structs (Run, RunLink, Activation, FanOutGroup, Attempt,
// Lease, RetrySchedule, Event). ReadTx.Load reads any set of records by key in
// one call, so an adapter that pays per round trip (Postgres) can answer a
// whole Lookup in one batch. Tx.Apply applies one Changes value, again in one
// call, in a fixed order: expects, deletes, inserts, replaces. Every other
// read is one of a few ordered, bounded scans.
//
// Which operations each record kind accepts is the shape of Changes:
//
//	kind           Insert  Replace  Delete  Expect  primary key
//	Run            yes     yes      -       yes     ID
//	RunLink        yes     -        -       -       ChildRunID
//	Activation     yes     yes      -       yes     Key (run, node, activation)
//	FanOutGroup    yes     yes      -       -       Controller (run, node, activation)
//	Attempt        yes     yes      yes     yes     Key (run, node, activation, attempt); Identity is unique too
//	Lease          yes     yes      yes     -       Key (attempt key, resource, mode)
//	RetrySchedule  yes     yes      yes     -       Key (run, node, activation)
//	Event          yes     -        yes     -       (RunID, Seq)
//
// Insert fails with ErrConflict when the primary key (or Attempt.Identity)
// exists; Replace and Delete fail with ErrNotFound when it does not; Expect
// writes nothing and fails with ErrChanged unless the stored record equals
// the given one in every field. An operation outside the table cannot be
// written.
//
// Delete names the record by its key alone and removes it from Load, from
// every scan and from every index: a deleted attempt's Identity is free for
// a later Insert. The workflow layer deletes attempts, leases and events
// only when it prunes a finished run.
//
// Every string comparison is bytewise, and every scan has a total order,
// stated on its query type, and returns at most Limit rows.
//
// # Wake-ups and errors
//
// Optionally, a Tx that implements WorkSignaler makes a "work arrived"
// signal visible only if it commits, and a Backend that implements
// WorkListener delivers those signals from every process on the store;
// without them, runners poll. Adapters return the sentinels below wrapped
// with %w, and wrap driver errors with %w so errors.As reaches them.
package backend
