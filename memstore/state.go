package memstore

import (
	"maps"

	"github.com/wfstore/wfstore/backend"
)

// table is one map of a state. A committed state is never modified: an
// Update's state shares each table's map with the state it started from
// until it first writes that table, and then writes a private copy.
type table[K comparable, V any] struct {
	m   map[K]V
	gen uint64 // the generation of the state that owns m
}

// own makes t's map private to the state of generation gen.
func (t *table[K, V]) own(gen uint64) {
	if t.gen != gen {
		t.m = maps.Clone(t.m)
		if t.m == nil {
			t.m = map[K]V{}
		}
		t.gen = gen
	}
}

func (t *table[K, V]) set(gen uint64, k K, v V) {
	t.own(gen)
	t.m[k] = v
}

func (t *table[K, V]) del(gen uint64, k K) {
	t.own(gen)
	delete(t.m, k)
}

// state is one version of the store.
type state struct {
	gen        uint64 // 0 for the empty state, then one per Update
	runs       table[string, backend.Run]
	links      table[string, backend.RunLink]
	acts       table[backend.ActivationKey, backend.Activation]
	groups     table[backend.ActivationKey, backend.FanOutGroup]
	attempts   table[backend.AttemptKey, backend.Attempt]
	identities table[string, backend.AttemptKey] // Attempt.Identity -> key
	leases     table[backend.LeaseKey, backend.Lease]
	schedules  table[backend.ActivationKey, backend.RetrySchedule]
	events     table[backend.EventKey, backend.Event]
}

func newState() *state { return &state{} }

// next returns a state of generation gen sharing every table with s.
func (s *state) next(gen uint64) *state {
	c := *s
	c.gen = gen
	return &c
}

// Deep copies: records stored in a state share no memory with callers.

func cb(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

func copyRun(r backend.Run) backend.Run {
	if r.Authority != nil {
		a := *r.Authority
		r.Authority = &a
	}
	r.Metadata = cb(r.Metadata)
	return r
}

func copyLink(l backend.RunLink) backend.RunLink {
	l.Target = cb(l.Target)
	return l
}

func copyActivation(a backend.Activation) backend.Activation {
	a.Input = cb(a.Input)
	a.Output = cb(a.Output)
	a.RetryPolicy = cb(a.RetryPolicy)
	if a.Claims != nil {
		a.Claims = append([]backend.ResourceClaim{}, a.Claims...)
	}
	if a.Predecessors != nil {
		a.Predecessors = append([]backend.NodeRef{}, a.Predecessors...)
	}
	if a.WaitFor != nil {
		a.WaitFor = append([]backend.NodeRef{}, a.WaitFor...)
	}
	if a.Joins != nil {
		a.Joins = append([]backend.NodeRef{}, a.Joins...)
	}
	if a.Group != nil {
		g := *a.Group
		a.Group = &g
	}
	return a
}

func copyAttempt(a backend.Attempt) backend.Attempt {
	a.Intent = cb(a.Intent)
	a.Receipt = cb(a.Receipt)
	a.Detail = cb(a.Detail)
	return a
}

func copyEvent(e backend.Event) backend.Event {
	e.Payload = cb(e.Payload)
	return e
}

// same returns v: for the kinds without memory to copy.
func same[V any](v V) V { return v }
