package kvlayout

import "github.com/wfstore/wfstore/backend"

// This file defines the secondary indexes: one key range per ordered scan.
// Every entry is one key per (indexed values, record) pair with an empty
// value, and a record has at most one entry per index. Entries are written
// in the same transaction as their record (apply.go): the entry the old
// record had is deleted and the new record's entry is put, only when they
// differ. An index whose keys start with the run id, and whose scans all
// stay in one run, is run-scoped: in a layout with a run group its entries
// are stored by run beside the run's records, so an admission's index
// writes share leaves with its record writes; the others (pending, which
// global discovery scans across runs; identity, status and prepared, which
// order attempts across runs; run status) are flat.
//
// An index key is the indexed values followed by whatever parts of the
// primary key it does not already contain, so every entry names exactly one
// record and keys never collide. PK lists the positions of the primary
// key's parts inside the index key, in primary key order.

// Index describes one secondary index of one record kind, whatever its Go
// type (what the layout and the verifier need).
type Index struct {
	Name   string // reported by Verify
	Space         // Tag: the index id
	Schema Schema
	PK     []int
	// Unique, when > 0, is the number of leading parts that no two records
	// may share (Attempt.Identity).
	Unique int
	// Member says which records the index holds, when not all of its kind.
	Member string
	Owner  *Kind // the kind whose records it indexes (set by newTable)
}

// IndexOf is an index of the records of Go type R.
type IndexOf[R any] struct {
	*Index
	// entry appends rec's entry to dst (which it may grow) and returns it.
	entry func(dst Key, rec R) (k Key, ok bool)
}

// Entry returns rec's key in this index (a codec key), or ok=false when
// rec is not in it (an activation that is not admissible, a released
// lease).
func (ix *IndexOf[R]) Entry(rec R) (k Key, ok bool) { return ix.entry(nil, rec) }

// Primary returns the primary key of the record an index entry names.
func (ix *Index) Primary(k []byte) (Key, error) {
	if ix.isPrimary() {
		return k, nil
	}
	vals, err := ix.Schema.Decode(k)
	if err != nil {
		return nil, err
	}
	return ix.Schema.Encode(vals, ix.PK), nil
}

// isPrimary reports whether an index key is the record's primary key.
func (ix *Index) isPrimary() bool {
	for i, p := range ix.PK {
		if p != i {
			return false
		}
	}
	return len(ix.PK) == len(ix.Schema)
}

// UniquePrefix returns the leading parts of entry e that no two records
// may share.
func (ix *Index) UniquePrefix(e []byte) (Key, error) {
	n, err := ix.Schema.prefixLen(e, ix.Unique)
	if err != nil {
		return nil, err
	}
	return Key(e[:n]).Clone(), nil
}

// newIndexes makes the layout's indexes. Index ids are fixed by the format:
// never renumber one.
func (l *Layout) newIndexes() {
	ix := func(id byte, runScoped bool, def *Index) *Index {
		def.Space = l.space(id, runScoped)
		return def
	}
	// Pending: admissible activations in key order. Global discovery
	// scans it from the start; per-run discovery scans the run's prefix.
	l.Pending = &IndexOf[backend.Activation]{
		Index: ix(1, false, &Index{
			Name:   "ix_pending_activation",
			Schema: activationSchema, PK: []int{0, 1, 2}, Member: "Admissible is true",
		}),
		entry: func(dst Key, a backend.Activation) (Key, bool) {
			return appendActivationKey(dst, a.Key), a.Admissible
		},
	}

	// AttemptIdentity: attempts by dispatch identity, unique.
	l.AttemptIdentity = &IndexOf[backend.Attempt]{
		Index: ix(2, false, &Index{
			Name:   "ix_attempt_identity",
			Schema: Schema{{"identity", PartStr}, {"run", PartStr}, {"node", PartStr}, {"activation", PartStr}, {"attempt", PartU32}},
			PK:     []int{1, 2, 3, 4}, Unique: 1,
		}),
		entry: func(dst Key, a backend.Attempt) (Key, bool) {
			return growKey(dst, 4, a.Identity, a.Key.RunID, a.Key.NodeID, a.Key.ActivationID).
				Str(a.Identity).Str(a.Key.RunID).Str(a.Key.NodeID).Str(a.Key.ActivationID).U32(a.Key.Attempt), true
		},
	}

	// AttemptStatus: attempts by (status, prepared_ms, identity).
	l.AttemptStatus = &IndexOf[backend.Attempt]{
		Index: ix(3, false, &Index{
			Name:   "ix_attempt_status",
			Schema: Schema{{"status", PartStr}, {"prepared_ms", PartI64}, {"identity", PartStr}, {"run", PartStr}, {"node", PartStr}, {"activation", PartStr}, {"attempt", PartU32}},
			PK:     []int{3, 4, 5, 6},
		}),
		entry: func(dst Key, a backend.Attempt) (Key, bool) {
			return growKey(dst, 12, string(a.Status), a.Identity, a.Key.RunID, a.Key.NodeID, a.Key.ActivationID).
				Str(string(a.Status)).I64(a.PreparedMS).Str(a.Identity).
				Str(a.Key.RunID).Str(a.Key.NodeID).Str(a.Key.ActivationID).U32(a.Key.Attempt), true
		},
	}

	// AttemptRunStatus: attempts by (run, status, prepared_ms, identity).
	l.AttemptRunStatus = &IndexOf[backend.Attempt]{
		Index: ix(4, true, &Index{
			Name:   "ix_attempt_run_status",
			Schema: Schema{{"run", PartStr}, {"status", PartStr}, {"prepared_ms", PartI64}, {"identity", PartStr}, {"node", PartStr}, {"activation", PartStr}, {"attempt", PartU32}},
			PK:     []int{0, 4, 5, 6},
		}),
		entry: func(dst Key, a backend.Attempt) (Key, bool) {
			return growKey(dst, 12, a.Key.RunID, string(a.Status), a.Identity, a.Key.NodeID, a.Key.ActivationID).
				Str(a.Key.RunID).Str(string(a.Status)).I64(a.PreparedMS).Str(a.Identity).
				Str(a.Key.NodeID).Str(a.Key.ActivationID).U32(a.Key.Attempt), true
		},
	}

	// AttemptRun: attempts by (run, prepared_ms, identity).
	l.AttemptRun = &IndexOf[backend.Attempt]{
		Index: ix(5, true, &Index{
			Name:   "ix_attempt_run_prepared",
			Schema: Schema{{"run", PartStr}, {"prepared_ms", PartI64}, {"identity", PartStr}, {"node", PartStr}, {"activation", PartStr}, {"attempt", PartU32}},
			PK:     []int{0, 3, 4, 5},
		}),
		entry: func(dst Key, a backend.Attempt) (Key, bool) {
			return growKey(dst, 12, a.Key.RunID, a.Identity, a.Key.NodeID, a.Key.ActivationID).
				Str(a.Key.RunID).I64(a.PreparedMS).Str(a.Identity).
				Str(a.Key.NodeID).Str(a.Key.ActivationID).U32(a.Key.Attempt), true
		},
	}

	// AttemptPrepared: all attempts by (prepared_ms, identity), for an
	// AttemptQuery with neither RunID nor Status.
	l.AttemptPrepared = &IndexOf[backend.Attempt]{
		Index: ix(6, false, &Index{
			Name:   "ix_attempt_prepared",
			Schema: Schema{{"prepared_ms", PartI64}, {"identity", PartStr}, {"run", PartStr}, {"node", PartStr}, {"activation", PartStr}, {"attempt", PartU32}},
			PK:     []int{2, 3, 4, 5},
		}),
		entry: func(dst Key, a backend.Attempt) (Key, bool) {
			return growKey(dst, 12, a.Identity, a.Key.RunID, a.Key.NodeID, a.Key.ActivationID).
				I64(a.PreparedMS).Str(a.Identity).
				Str(a.Key.RunID).Str(a.Key.NodeID).Str(a.Key.ActivationID).U32(a.Key.Attempt), true
		},
	}

	// LinkRoot: child runs by (root, created_ms, child).
	l.LinkRoot = &IndexOf[backend.RunLink]{
		Index: ix(7, true, &Index{
			Name:   "ix_link_root",
			Schema: Schema{{"root", PartStr}, {"created_ms", PartI64}, {"child", PartStr}},
			PK:     []int{2},
		}),
		entry: func(dst Key, r backend.RunLink) (Key, bool) {
			return dst.Str(r.RootRunID).I64(r.CreatedMS).Str(r.ChildRunID), true
		},
	}

	// ScheduleDue: retry schedules by (run, due_ms, node, activation).
	l.ScheduleDue = &IndexOf[backend.RetrySchedule]{
		Index: ix(8, true, &Index{
			Name:   "ix_schedule_due",
			Schema: Schema{{"run", PartStr}, {"due_ms", PartI64}, {"node", PartStr}, {"activation", PartStr}},
			PK:     []int{0, 2, 3},
		}),
		entry: func(dst Key, s backend.RetrySchedule) (Key, bool) {
			return dst.Str(s.Key.RunID).I64(s.DueMS).Str(s.Key.NodeID).Str(s.Key.ActivationID), true
		},
	}

	// LeaseActive: unreleased leases in LeaseKey order (run first, so a
	// run's leases are a prefix).
	l.LeaseActive = &IndexOf[backend.Lease]{
		Index: ix(9, true, &Index{
			Name:   "ix_lease_active",
			Schema: leaseSchema, PK: []int{0, 1, 2, 3, 4, 5}, Member: "ReleasedMS is 0",
		}),
		entry: func(dst Key, ls backend.Lease) (Key, bool) {
			return appendLeaseKey(dst, ls.Key), ls.ReleasedMS == 0
		},
	}

	// LeaseResource: unreleased leases by (run, resource), then LeaseKey
	// order, for Lookup.Resources.
	l.LeaseResource = &IndexOf[backend.Lease]{
		Index: ix(10, true, &Index{
			Name:   "ix_lease_resource",
			Schema: Schema{{"run", PartStr}, {"resource", PartStr}, {"node", PartStr}, {"activation", PartStr}, {"attempt", PartU32}, {"mode", PartStr}},
			PK:     []int{0, 2, 3, 4, 1, 5}, Member: "ReleasedMS is 0",
		}),
		entry: func(dst Key, ls backend.Lease) (Key, bool) {
			k := ls.Key
			return dst.Str(k.RunID).Str(k.Resource).Str(k.NodeID).Str(k.ActivationID).U32(k.Attempt).Str(string(k.Mode)), ls.ReleasedMS == 0
		},
	}

	if l.cfg.RunStatusIndex {
		// RunStatus: runs by (status, id), for a status-filtered run
		// listing (Config.RunStatusIndex).
		l.RunStatus = &IndexOf[backend.Run]{
			Index: ix(11, false, &Index{
				Name:   "ix_run_status",
				Schema: Schema{{"status", PartStr}, {"id", PartStr}},
				PK:     []int{1},
			}),
			entry: func(dst Key, r backend.Run) (Key, bool) {
				return dst.Str(string(r.Status)).Str(r.ID), true
			},
		}
	}
}
