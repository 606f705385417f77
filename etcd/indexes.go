package etcd

import "github.com/wfstore/wfstore/backend"

// This file defines the secondary indexes, the bolt adapter's: one key range
// per ordered scan. Every entry is one key per (indexed values, record)
// pair with an empty value, and a record has at most one entry per index.
// Entries are written in the same transaction as their record (apply.go):
// the entry the old record had is deleted and the new record's entry is
// put, only when they differ.
//
// An index key is the indexed values followed by whatever parts of the
// primary key it does not already contain, so every entry names exactly one
// record and keys never collide. pk lists the positions of the primary key's
// parts inside the index key, in primary key order.

// index describes one secondary index of one record kind, whatever its Go
// type (what the layout and the verifier need).
type index struct {
	name   string // reported by Verify
	space         // tag: the index id
	schema schema
	pk     []int
	// unique, when > 0, is the number of leading parts that no two records
	// may share (Attempt.Identity).
	unique int
	// member says which records the index holds, when not all of its kind.
	member string
	owner  *kind // the kind whose records it indexes (set by newTable)
}

// indexOf is an index of the records of Go type R.
type indexOf[R any] struct {
	*index
	// entry returns rec's key in this index, or ok=false when rec is not in
	// it (an activation that is not admissible, a released lease).
	entry func(rec R) (k key, ok bool)
}

// primary returns the primary key of the record an index entry names.
func (ix *index) primary(k []byte) (key, error) {
	if ix.isPrimary() {
		return k, nil
	}
	vals, err := ix.schema.decode(k)
	if err != nil {
		return nil, err
	}
	return ix.schema.encode(vals, ix.pk), nil
}

// isPrimary reports whether an index key is the record's primary key.
func (ix *index) isPrimary() bool {
	for i, p := range ix.pk {
		if p != i {
			return false
		}
	}
	return len(ix.pk) == len(ix.schema)
}

var (
	// ixPending: admissible activations in key order. Global discovery
	// scans it from the start; per-run discovery scans the run's prefix.
	ixPending = &indexOf[backend.Activation]{
		index: &index{
			name:   "ix_pending_activation",
			schema: activationSchema, pk: []int{0, 1, 2}, member: "Admissible is true",
		},
		entry: func(a backend.Activation) (key, bool) {
			return activationKey(a.Key), a.Admissible
		},
	}

	// ixAttemptIdentity: attempts by dispatch identity, unique.
	ixAttemptIdentity = &indexOf[backend.Attempt]{
		index: &index{
			name:   "ix_attempt_identity",
			schema: schema{{"identity", partStr}, {"run", partStr}, {"node", partStr}, {"activation", partStr}, {"attempt", partU32}},
			pk:     []int{1, 2, 3, 4}, unique: 1,
		},
		entry: func(a backend.Attempt) (key, bool) {
			return key(nil).str(a.Identity).str(a.Key.RunID).str(a.Key.NodeID).str(a.Key.ActivationID).u32(a.Key.Attempt), true
		},
	}

	// ixAttemptStatus: attempts by (status, prepared_ms, identity).
	ixAttemptStatus = &indexOf[backend.Attempt]{
		index: &index{
			name:   "ix_attempt_status",
			schema: schema{{"status", partStr}, {"prepared_ms", partI64}, {"identity", partStr}, {"run", partStr}, {"node", partStr}, {"activation", partStr}, {"attempt", partU32}},
			pk:     []int{3, 4, 5, 6},
		},
		entry: func(a backend.Attempt) (key, bool) {
			return key(nil).str(string(a.Status)).i64(a.PreparedMS).str(a.Identity).
				str(a.Key.RunID).str(a.Key.NodeID).str(a.Key.ActivationID).u32(a.Key.Attempt), true
		},
	}

	// ixAttemptRunStatus: attempts by (run, status, prepared_ms, identity).
	ixAttemptRunStatus = &indexOf[backend.Attempt]{
		index: &index{
			name:   "ix_attempt_run_status",
			schema: schema{{"run", partStr}, {"status", partStr}, {"prepared_ms", partI64}, {"identity", partStr}, {"node", partStr}, {"activation", partStr}, {"attempt", partU32}},
			pk:     []int{0, 4, 5, 6},
		},
		entry: func(a backend.Attempt) (key, bool) {
			return key(nil).str(a.Key.RunID).str(string(a.Status)).i64(a.PreparedMS).str(a.Identity).
				str(a.Key.NodeID).str(a.Key.ActivationID).u32(a.Key.Attempt), true
		},
	}

	// ixAttemptRun: attempts by (run, prepared_ms, identity).
	ixAttemptRun = &indexOf[backend.Attempt]{
		index: &index{
			name:   "ix_attempt_run_prepared",
			schema: schema{{"run", partStr}, {"prepared_ms", partI64}, {"identity", partStr}, {"node", partStr}, {"activation", partStr}, {"attempt", partU32}},
			pk:     []int{0, 3, 4, 5},
		},
		entry: func(a backend.Attempt) (key, bool) {
			return key(nil).str(a.Key.RunID).i64(a.PreparedMS).str(a.Identity).
				str(a.Key.NodeID).str(a.Key.ActivationID).u32(a.Key.Attempt), true
		},
	}

	// ixAttemptPrepared: all attempts by (prepared_ms, identity), for an
	// AttemptQuery with neither RunID nor Status.
	ixAttemptPrepared = &indexOf[backend.Attempt]{
		index: &index{
			name:   "ix_attempt_prepared",
			schema: schema{{"prepared_ms", partI64}, {"identity", partStr}, {"run", partStr}, {"node", partStr}, {"activation", partStr}, {"attempt", partU32}},
			pk:     []int{2, 3, 4, 5},
		},
		entry: func(a backend.Attempt) (key, bool) {
			return key(nil).i64(a.PreparedMS).str(a.Identity).
				str(a.Key.RunID).str(a.Key.NodeID).str(a.Key.ActivationID).u32(a.Key.Attempt), true
		},
	}

	// ixLinkRoot: child runs by (root, created_ms, child).
	ixLinkRoot = &indexOf[backend.RunLink]{
		index: &index{
			name:   "ix_link_root",
			schema: schema{{"root", partStr}, {"created_ms", partI64}, {"child", partStr}},
			pk:     []int{2},
		},
		entry: func(l backend.RunLink) (key, bool) {
			return key(nil).str(l.RootRunID).i64(l.CreatedMS).str(l.ChildRunID), true
		},
	}

	// ixScheduleDue: retry schedules by (run, due_ms, node, activation).
	ixScheduleDue = &indexOf[backend.RetrySchedule]{
		index: &index{
			name:   "ix_schedule_due",
			schema: schema{{"run", partStr}, {"due_ms", partI64}, {"node", partStr}, {"activation", partStr}},
			pk:     []int{0, 2, 3},
		},
		entry: func(s backend.RetrySchedule) (key, bool) {
			return key(nil).str(s.Key.RunID).i64(s.DueMS).str(s.Key.NodeID).str(s.Key.ActivationID), true
		},
	}

	// ixLeaseActive: unreleased leases in LeaseKey order (run first, so a
	// run's leases are a prefix).
	ixLeaseActive = &indexOf[backend.Lease]{
		index: &index{
			name:   "ix_lease_active",
			schema: leaseSchema, pk: []int{0, 1, 2, 3, 4, 5}, member: "ReleasedMS is 0",
		},
		entry: func(l backend.Lease) (key, bool) {
			return leaseKey(l.Key), l.ReleasedMS == 0
		},
	}

	// ixLeaseResource: unreleased leases by (run, resource), then LeaseKey
	// order, for Lookup.Resources.
	ixLeaseResource = &indexOf[backend.Lease]{
		index: &index{
			name:   "ix_lease_resource",
			schema: schema{{"run", partStr}, {"resource", partStr}, {"node", partStr}, {"activation", partStr}, {"attempt", partU32}, {"mode", partStr}},
			pk:     []int{0, 2, 3, 4, 1, 5}, member: "ReleasedMS is 0",
		},
		entry: func(l backend.Lease) (key, bool) {
			k := l.Key
			return key(nil).str(k.RunID).str(k.Resource).str(k.NodeID).str(k.ActivationID).u32(k.Attempt).str(string(k.Mode)), l.ReleasedMS == 0
		},
	}

	indexes = []*index{
		ixPending.index,
		ixAttemptIdentity.index, ixAttemptStatus.index, ixAttemptRunStatus.index, ixAttemptRun.index, ixAttemptPrepared.index,
		ixLinkRoot.index, ixScheduleDue.index, ixLeaseActive.index, ixLeaseResource.index,
	}
)

// Index ids are fixed by the format: never renumber one. Each index is the
// key range of its id under the prefix.
func init() {
	for i, ix := range indexes {
		ix.space = space{tag: byte(i + 1)}
	}
}
