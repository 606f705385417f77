// Package etcd is the wfstore backend on an etcd v3 cluster
// (go.etcd.io/etcd/client/v3): a store under one key prefix, shared by any
// number of Backends in any number of processes and machines, with
// optimistic transactions on etcd's MVCC revisions and secondary indexes
// built by hand, as in the bolt adapter.
//
// The key layout (key codec, values, record kinds, index entries, how a
// Changes becomes key writes, which range each scan reads, what Verify
// checks) is internal/kvlayout's, shared with the bolt adapter, in its flat
// form. Each file here holds one concept:
//
//	layout.go   the key spaces under the prefix
//	store.go    the transaction as kvlayout's Store: batched reads, buffered writes
//	open.go     Dial, Open, options, the meta keys
//	backend.go  Backend: View, Update, Close, Capabilities, Info, Stats
//	reruns.go   Backend.Reruns: re-runs by cause (backend.RerunCounter)
//	tx.go       the transaction: snapshot reads, read set, write buffer
//	commit.go   the commit Txn, commit markers, unknown outcomes
//	load.go     ReadTx.Load
//	scans.go    the ordered, bounded scans of ReadTx
//	apply.go    Tx.Apply: kvlayout's Apply, reads batched, writes buffered
//	verify.go   Backend.Verify: the keys at one revision, kvlayout's Verifier
//
// # Layout
//
// Every key is the store's prefix (WithPrefix, default "wfstore/"), one
// tag byte naming a key space, then the rest. The rest of a record or
// index entry is a codec key: a tuple encoded so that etcd's bytewise key
// order is the tuple order, and a tuple's encoding is a prefix of a key
// exactly when the key's first parts are that tuple. Record kinds and
// indexes are kvlayout's, with the bolt adapter's tags, ids and key parts
// (but no ix_run_status); without buckets, each is simply the key range of
// its tag.
//
//	space (tag)                   rest of the key                                          value          scan or lookup
//	meta                   'm'    "store" | "version"                                      marker | 2     Open
//	commit marker          'x'    instance id "/" slot                                     c:/f: nonce    Update (commit.go)
//	run                    0x40   id                                                       Run            Load, Runs
//	run_link               0x41   child                                                    RunLink        Load
//	activation             0x42   run, node, act                                           Activation     Load, Activations
//	fan_out_group          0x43   run, node, act (of the controller)                       FanOutGroup    Load
//	attempt                0x44   run, node, act, attempt                                  Attempt        Load, CountAttempts
//	lease                  0x45   run, node, act, attempt, resource, mode                  Lease          Load, Leases{IncludeReleased}
//	retry_schedule         0x46   run, node, act                                           RetrySchedule  Load
//	event                  0x47   run, seq                                                 Event          Events
//	ix_pending_activation     1   run, node, act                                      [1]  empty          AdmissibleActivations
//	ix_attempt_identity       2   identity, run, node, act, attempt                   [2]  empty          Load.Identities
//	ix_attempt_status         3   status, prepared_ms, identity, run, node, act, attempt   empty          Attempts{Status}
//	ix_attempt_run_status     4   run, status, prepared_ms, identity, node, act, attempt   empty          Attempts{RunID, Status}
//	ix_attempt_run_prepared   5   run, prepared_ms, identity, node, act, attempt           empty          Attempts{RunID}
//	ix_attempt_prepared       6   prepared_ms, identity, run, node, act, attempt           empty          Attempts{}
//	ix_link_root              7   root, created_ms, child                                  empty          ChildRuns
//	ix_schedule_due           8   run, due_ms, node, act                                   empty          DueSchedules
//	ix_lease_active           9   run, node, act, attempt, resource, mode             [3]  empty          Leases
//	ix_lease_resource        10   run, resource, node, act, attempt, mode             [3]  empty          Load.Resources
//
//	[1] only activations with Admissible set   [2] unique prefix: identity
//	[3] only unreleased leases (ReleasedMS == 0)
//
// An index key ends with the primary key parts it does not already hold,
// so it names its record; entries have empty values, and a record has at
// most one entry per index, written and deleted in the same Txn as the
// record. Verify proves that indexes and records agree.
//
// # Transactions
//
// View and each run of an Update's fn read one revision: the first read
// is linearizable, at the current revision, and fixes it; later reads name
// it (WithRev) and are served by whichever member the client asks
// (serializable: every member that has applied the revision holds the same
// data at it; one that has not applied it yet refuses, and the read is
// sent again, linearizable). Load reads all its keys in one read-only Txn
// of gets, a scan is one range request with a limit, and an index scan
// reads the records its entries name in one more Txn.
//
// Update is optimistic. fn's writes are buffered (its reads see them) and
// sent in one Txn, whose If compares every key the transaction read from
// etcd with the ModRevision it had (0 for a key that was absent), and
// every key range a scan read with "ModRevision < rev+1" over the range:
//
// Phantoms. A scan records the range it read: the whole requested range,
// or up to the last key etcd returned when the limit cut it. The range
// compare fails when any key in it was put after the transaction's
// revision, which is how an insert into a scanned range (a phantom)
// fails the commit; it is exact, so writes outside the range never
// conflict with the scan. A key deleted from the range leaves it, so the
// range compare does not see a delete; deletes are caught by key: a
// record scan compares every key it returned, and an index scan compares
// the record each entry names (an entry is only deleted together with a
// change to its record).
//
// A failed compare runs fn again against a newer revision, after a
// jittered pause (1 ms doubling to 128 ms), until the busy timeout
// (WithBusyTimeout, default DefaultBusyTimeout) or ctx ends it with an
// error wrapping backend.ErrBusy; so does a read that fails transiently
// (a leader change, a timeout, a compacted revision).
//
// Unknown outcomes. A commit request that fails without an answer (a
// timeout, a lost leader or connection, a cancelled ctx) may have applied,
// or may apply later. Every commit also puts a commit marker that only
// its Update writes, and compares the marker's revision; after a lost
// answer the Update sends a fence Txn that writes the marker only if the
// commit did not (commit.go). Either the fence applies, and the commit
// never can, so fn runs again; or the marker holds the commit's nonce, and
// Update returns nil. The outcome of a commit is never reported as a
// failure or success without one of these answers. Stats counts each case.
//
// # Cluster settings
//
// Durability is the cluster's: etcd acknowledges a commit once a majority
// of members has it in their fsynced write-ahead logs. A transaction's
// Txn holds one compare per key and range it read and one operation per
// key it wrote; a Txn larger than the cluster's --max-txn-ops (default
// 128) or --max-request-bytes (default 1.5 MiB) fails with etcd's error.
// Workflow transactions are small, but pruning and cancelling large runs
// and records with large JSON need more: run the cluster with
// --max-txn-ops 4096 or more and --max-request-bytes of a few times the
// largest record (the tests use 16384 and 32 MiB).
//
// Each Backend keeps one commit marker key per concurrent Update (a slot,
// reused) and deletes them in Close; a process that dies leaves its few
// marker keys behind, which are harmless (Verify ignores the marker space).
package etcd
