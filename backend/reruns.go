package backend

// Reruns counts, since a Backend was opened, the times its Update ran fn
// again, by cause, and the Updates that gave up. Each re-run is counted
// once, under the cause the adapter saw; a cause the adapter cannot meet
// stays 0. Its JSON names are snake_case, as every report wfstore writes.
type Reruns struct {
	// Busy: another writer held the store (SQLite's SQLITE_BUSY).
	Busy int64 `json:"busy"`
	// Conflict: a serialization failure (Postgres 40001) or a failed
	// compare of what fn read (etcd).
	Conflict int64 `json:"conflict"`
	// Deadlock: the database broke a deadlock (Postgres 40P01).
	Deadlock int64 `json:"deadlock"`
	// Transient: the connection broke or the cluster changed leader
	// before the outcome was decided.
	Transient int64 `json:"transient"`
	// OutcomeUnknown: a commit whose answer was lost, found not applied
	// (and then fenced off) when the adapter looked again.
	OutcomeUnknown int64 `json:"outcome_unknown"`
	// Exhausted: Updates that stopped re-running and returned ErrBusy.
	Exhausted int64 `json:"exhausted"`
}

// RerunCounter is implemented by a Backend that counts its re-runs.
// Instrumentation reads it through this interface, so that neither an
// adapter nor its users need a telemetry dependency of the other.
type RerunCounter interface {
	Reruns() Reruns
}

// Since returns the re-runs counted between before and r, two reads of
// the same Backend's Reruns, cause by cause.
func (r Reruns) Since(before Reruns) Reruns {
	return Reruns{
		Busy: r.Busy - before.Busy, Conflict: r.Conflict - before.Conflict, Deadlock: r.Deadlock - before.Deadlock,
		Transient: r.Transient - before.Transient, OutcomeUnknown: r.OutcomeUnknown - before.OutcomeUnknown,
		Exhausted: r.Exhausted - before.Exhausted,
	}
}

// Add returns r and o summed, cause by cause.
func (r Reruns) Add(o Reruns) Reruns {
	return Reruns{
		Busy: r.Busy + o.Busy, Conflict: r.Conflict + o.Conflict, Deadlock: r.Deadlock + o.Deadlock,
		Transient: r.Transient + o.Transient, OutcomeUnknown: r.OutcomeUnknown + o.OutcomeUnknown,
		Exhausted: r.Exhausted + o.Exhausted,
	}
}
