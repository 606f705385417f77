package etcd

import "github.com/wfstore/wfstore/backend"

// Reruns implements backend.RerunCounter: failed compares are conflicts,
// runs ended by a transient read error are transient, and commits whose
// lost answer was found not applied (and fenced) are outcome unknown.
func (b *Backend) Reruns() backend.Reruns {
	s := b.Stats()
	return backend.Reruns{Conflict: s.Conflicts, Transient: s.TransientReads, OutcomeUnknown: s.UnknownFenced, Exhausted: s.Busy}
}
