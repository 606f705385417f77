// Package crashtest holds the real-crash test of exactly-once admission: its
// test binary re-executes itself as a child that dispatches on a
// file-backed sqlite store, a bolt store and a postgres schema (when one is
// available), and kills the child with SIGKILL inside the owner call,
// between prepare and handoff, between the owner's acceptance and the
// receipt, and inside a commit. After every kill the parent reopens the
// store and reconciles with the owner's durable ledger; at the end it checks
// that nothing was admitted twice, that the owner was never called for an
// attempt reported as never dispatched, and that every receipt the owner
// holds was persisted.
package crashtest
