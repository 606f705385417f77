// Package etcd is the wfstore backend on an etcd v3 cluster
// (go.etcd.io/etcd/client/v3): a store under one key prefix, shared by any
// number of Backends in any number of processes and machines, with
// optimistic transactions on etcd's revisions and secondary indexes built
// by hand, as in the bolt adapter (the layout is internal/kvlayout's).
//
// Dial connects to endpoints and owns its client; Open uses a caller's
// *clientv3.Client and never closes it. Options: WithPrefix (default
// "wfstore/"), WithBusyTimeout, WithRequestTimeout, WithKeepAlive,
// WithMaxTxnOps, WithDialTimeout. Backend.Verify checks every index entry
// against its record; Stats and Reruns count re-runs by cause.
//
// # Guarantees
//
//   - Every Update is serializable with every other over the store: fn
//     reads one revision and commits in one Txn that compares every key and
//     key range it read, so a concurrent write (a phantom insert into a
//     scanned range included) fails the commit and fn runs again, with
//     backoff, until the busy timeout or ctx ends it (backend.ErrBusy).
//     An Update whose commit keeps failing joins the store's turn queue
//     and commits in its order, no other Update committing during its
//     turn, so a large transaction racing many small ones still commits;
//     waiting in the queue, for another's turn to pass, or at its
//     Backend's commit gate for the Backend's other Updates, it is not
//     held to the busy timeout.
//   - A commit whose answer is lost (timeout, leader change, lost
//     connection) is resolved through a commit marker, never guessed:
//     either the commit applied and Update returns nil, or a fence makes
//     sure it never will and fn runs again.
//   - Durability is the cluster's: a commit is acknowledged once a
//     majority of members has it in their fsynced logs. The store survives
//     the loss of a minority, leader included.
//   - A member that stops answering holds a request at most the request
//     timeout; the Backend then sends requests only to members that answer.
//
// # Caveats
//
//   - One Txn holds one compare per key and range read and one operation
//     per key written. Pruning and cancelling large runs need more than
//     etcd's defaults: run the cluster with --max-txn-ops 4096 or more and
//     --max-request-bytes a few times the largest record.
//   - Throughput is bounded by the cluster's commit latency and by
//     conflicts between Updates touching the same keys. For 100 ms after
//     one of its commits failed, a Backend runs the Updates that read the
//     keys it read one at a time (Updates of other keys go on); a process
//     that dies in the turn queue holds other Updates back for up to 5 s.
//   - A process that dies leaves a few commit-marker keys behind; they are
//     harmless (Verify ignores them).
//   - Backend implements backend.Claimer: a claim is a key under a lease,
//     expiring by the wall clocks of the Backends' machines (keep them in
//     sync; a skew only moves when a claim lapses).
//
// The key spaces, read revisions, phantom protection and commit markers
// are described in full in the repository's docs/internals/etcd.md.
package etcd
