// Package bolt is the wfstore backend on go.etcd.io/bbolt: one file, one
// writer at a time, with secondary indexes built by hand and a verifier
// that proves them.
//
// It is meant to be read by whoever writes the next key-value adapter.
// The key layout (key codec, values, record kinds, index entries, how a
// Changes becomes key writes, which range each scan reads, what Verify
// checks) is internal/kvlayout's, shared with the etcd adapter; this
// package holds the bbolt side. Each file holds one concept:
//
//	layout.go   the buckets, where kvlayout's spaces live in them (locate)
//	meta.go     the meta bucket: store marker and schema version
//	open.go     Open, OpenDB and their options
//	backend.go  Backend: View, Update, Close, Capabilities, Info
//	group.go    group commit (on by default; WithoutGroupCommit): Updates sharing a commit
//	tx.go       the transaction types
//	load.go     ReadTx.Load
//	scans.go    the ordered, bounded scans of ReadTx
//	apply.go    Tx.Apply: kvlayout's Apply through tx's Put and Delete
//	verify.go   Backend.Verify: the buckets, and kvlayout's Verifier
//
// # Layout
//
// Three top-level buckets. "runs" holds one nested bucket per run, named
// by the encoded run id, and it holds all of that run's records and per-run
// index entries; "ix" holds the indexes whose scans order across runs;
// "meta" the marker and version. A key in a run's bucket is a one-byte tag
// naming the record kind or index, then the rest of the key (the record or
// index key after its first part, the run id), so within a run each kind or
// index is one contiguous range. A key of "ix" is the index's one-byte id,
// then the index key, so each cross-run index is one range. Index entries
// have an empty value, never a list in one value; a record has at most one
// entry per index, written and deleted in the same transaction as the
// record. An index key ends with the primary key parts it does not already
// hold, so it names its record. The code handles a per-run key as one
// "stored key", run part | tag | rest (kvlayout's per-run spaces); locate
// (layout.go) splits it into the run's bucket and the key in it.
//
// Why: bbolt rewrites every page on the path from a tree's root to each
// leaf a commit touches. With a bucket per kind (schema 1) an admission
// touched about ten leaves in as many deep ranges (attempt, activation,
// event, run, five attempt indexes...), each with its own root path, so at
// 100k historical attempts it wrote twice the pages it wrote on a fresh
// store. In a bucket of its own, what one admission writes to its run lands
// on a few leaves of a small tree whose depth does not grow with the rest
// of the store (a new run's bucket starts inline in its parent's leaf);
// only the cross-run indexes (pending, identity, status, prepared) and the
// parent "runs" (one key per run) are elsewhere. TestAdmissionPages, pages
// per admission, history 0 / 1000 / 100000: schema 1 35.4 / 47.0 / 70.6;
// one "runs" tree keyed run | tag | rest 35.4 / 37.5 / 50.0; a bucket per
// run 33.1 / 34.8 / 47.3.
//
//	record kind or index (tag)    key parts, in order                                       value          scan or lookup
//	meta                          "store" | "version"                                       marker | 4     Open
//	runs/<run>: (a bucket per run; key = tag, then the remaining key parts)
//	  run                    0x40  id                                                        Run            Load
//	  run_link               0x41  child                                                     RunLink        Load
//	  activation             0x42  run, node, act                                            Activation     Load, Activations
//	  fan_out_group          0x43  run, node, act (of the controller)                        FanOutGroup    Load
//	  attempt                0x44  run, node, act, attempt                                   Attempt        Load, CountAttempts
//	  lease                  0x45  run, node, act, attempt, resource, mode                   Lease          Load
//	  retry_schedule         0x46  run, node, act                                            RetrySchedule  Load
//	  event                  0x47  run, seq                                                  Event          Events
//	  ix_attempt_run_status     4  run, status, prepared_ms, identity, node, act, attempt   empty          Attempts{RunID, Status}
//	  ix_attempt_run_prepared   5  run, prepared_ms, identity, node, act, attempt           empty          Attempts{RunID}
//	  ix_link_root              7  root, created_ms, child                                  empty          ChildRuns
//	  ix_schedule_due           8  run, due_ms, node, act                                   empty          DueSchedules
//	  ix_lease_active           9  run, node, act, attempt, resource, mode             [3]  empty          Leases
//	  ix_lease_resource        10  run, resource, node, act, attempt, mode             [3]  empty          Load.Resources
//	ix: (key = id byte, then the index key)
//	  ix_pending_activation     1  run, node, act                                      [1]  empty          AdmissibleActivations
//	  ix_attempt_identity       2  identity, run, node, act, attempt                   [2]  empty          Load.Identities
//	  ix_attempt_status         3  status, prepared_ms, identity, run, node, act, attempt   empty          Attempts{Status}
//	  ix_attempt_prepared       6  prepared_ms, identity, run, node, act, attempt           empty          Attempts{}
//	  ix_run_status            11  status, id                                               empty          Runs{Status}
//
//	[1] only activations with Admissible set   [2] unique prefix: identity
//	[3] only unreleased leases (ReleasedMS == 0)
//
// The run record's key is its id and the run link's its child, so both sit
// with their run; ix_link_root's first part is the root run. The pending
// index starts with the run too, but global discovery scans it across runs
// in key order, which a per-run layout would scatter, so it stays in ix
// (per-run discovery is its run's prefix there).
//
// Each scan is one key range of one bucket, read in bbolt's key order, so it
// reads only the entries it returns: a per-run scan is the range of its
// tag in the run's bucket, a cross-run scan the range of its id in "ix"; a
// cursor ("After", whose zero value is no cursor) is a seek, DueBy is the
// range's end. CountAttempts counts keys of the run's attempt range without
// decoding a value.
//
// Pages split at commit are packed 90% full (bbolt's default is half):
// keys mostly arrive in key order, and half-full pages stayed half full (a
// store of 100k completed attempts: 455 MB before, about 320 MB after).
//
// # Writes
//
// Tx.Apply (kvlayout's apply.go) takes the slices of a backend.Changes in
// the fixed order the contract gives: expects, deletes, inserts, replaces,
// each slice in slice order. Each record kind is a typed table (kvlayout:
// key, codec and indexes of one Go record type), and each slice is one
// generic pass over its table: the slice's type names the kind and the
// call names the operation, so no code inspects a record's type and an
// operation the contract does not allow for a kind has no call at all. A
// pass writes only to its kind's space and its indexes' spaces.
//
// Every check of an operation (existence, Attempt.Identity uniqueness, key
// and value sizes) runs before its first Put, so an operation that fails
// with ErrConflict, ErrNotFound or ErrChanged has changed nothing; only a
// storage error can stop one part-way, and then Update refuses to commit.
// An index entry moves only when the indexed fields change. Expect reads
// the stored value and compares its bytes with the encoded record (the
// codec writes equal records as equal bytes); when they differ it decodes
// the stored record and compares fields (backend.CompareExpected).
//
// # Key codec
//
// Keys are tuples encoded so that bytewise order is tuple order (kvlayout's
// codec.go): unsigned integers fixed-width big-endian; int64 times with the
// sign bit flipped, big-endian; strings with 0x00 escaped as 0x00 0xFF and ended by
// 0x00 0x01. A string part is therefore self-delimiting and no key of a
// bucket is a prefix of another, for any bytes at all, not only valid ids.
// Strings compare bytewise, as the contract requires.
//
// # Values
//
// Values use a compact binary encoding (kvlayout's value.go, records.go): a kind tag
// byte, then the fields in a fixed order as varints and length-prefixed
// bytes, with nil and empty kept apart. It was chosen over encoding/json by
// measurement (kvlayout's bench_test.go, an Attempt with a 1 KiB intent): JSON
// base64-encodes the []byte fields, so its values were 31% larger (1825 vs
// 1256 bytes), 3–4× slower to encode and about 11× slower to decode.
// Values carry their key fields too, so a value decodes on its own and
// Verify can check that a record sits under its own key. The layout and
// encoding are versioned by meta/version as a whole (SchemaVersion). A
// store of version 2 or 3 is migrated by Open in one transaction (see
// SchemaVersion for each step; fields a newer version appends to a value
// read as zero in a value written before them, so no record is
// rewritten); a store of any other version is refused, not migrated, and
// not written.
//
// # Durability and concurrency
//
// Open fsyncs every commit (bbolt's default). It does not write bbolt's
// freelist at each commit (NoFreelistSync): synced, the whole freelist is
// rewritten by every commit, which in a large
// store is as many pages as the commit's data. Durability does not depend
// on it: bbolt rebuilds the freelist on Open by walking the tree, also after
// a crash, so Open costs a read of the whole file instead. It uses the
// array freelist, which keeps a commit's pages together in the file, so
// an fsync in a large store writes a few runs of pages (open.go). A caller's
// handle (OpenDB) keeps the caller's options. WithRelaxedDurability (tests
// and benchmarks) sets NoSync, which survives a process crash but not a
// power loss. OpenDB refuses a NoSync handle unless WithNoSyncHandle (or
// WithRelaxedDurability) is passed. An
// Update that wrote nothing is rolled back rather than committed, so it
// costs no fsync: bbolt's Commit writes a meta page and freelist and
// fsyncs even when nothing changed (2.6 ms here, against 1.4 µs for the
// rollback; see BenchmarkEmptyUpdate). A Replace with identical fields
// writes nothing either. bbolt holds an exclusive lock on the file, so a
// store has one Backend: Capabilities reports neither
// MultiInstance nor MultiProcess. Within it, any number of goroutines may
// call View and Update.
package bolt
