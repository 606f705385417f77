package memstore

import (
	"context"
	"fmt"

	"github.com/wfstore/wfstore/backend"
)

// writer is a Tx over a private copy of the state.
type writer struct {
	reader
}

var _ backend.Tx = (*writer)(nil)

// Apply applies c in the order backend.Changes documents, one operation at
// a time, and returns the first failing operation's error.
func (w *writer) Apply(ctx context.Context, c backend.Changes) error {
	if err := w.check(ctx); err != nil {
		return err
	}
	s, g := w.st, w.st.gen
	e, d, i, r := &c.Expect, &c.Delete, &c.Insert, &c.Replace
	for _, step := range [...]func() error{
		func() error { return expectAll("run", &s.runs, e.Runs, runID) },
		func() error { return expectAll("activation", &s.acts, e.Activations, actKey) },
		func() error { return expectAll("attempt", &s.attempts, e.Attempts, attemptKey) },

		func() error { return deleteAll("event", g, &s.events, d.Events) },
		func() error { return deleteAll("schedule", g, &s.schedules, d.Schedules) },
		func() error { return deleteAll("lease", g, &s.leases, d.Leases) },
		func() error { return w.deleteAttempts(d.Attempts) },

		func() error { return insertAll("run", g, &s.runs, i.Runs, runID, copyRun) },
		func() error { return insertAll("link", g, &s.links, i.Links, linkID, copyLink) },
		func() error { return insertAll("activation", g, &s.acts, i.Activations, actKey, copyActivation) },
		func() error { return insertAll("group", g, &s.groups, i.Groups, groupKey, same) },
		func() error { return w.insertAttempts(i.Attempts) },
		func() error { return insertAll("lease", g, &s.leases, i.Leases, leaseKey, same) },
		func() error { return insertAll("schedule", g, &s.schedules, i.Schedules, scheduleKey, same) },
		func() error { return insertAll("event", g, &s.events, i.Events, backend.Event.Key, copyEvent) },

		func() error { return replaceAll("run", g, &s.runs, r.Runs, runID, copyRun) },
		func() error { return replaceAll("activation", g, &s.acts, r.Activations, actKey, copyActivation) },
		func() error { return replaceAll("group", g, &s.groups, r.Groups, groupKey, same) },
		func() error { return w.replaceAttempts(r.Attempts) },
		func() error { return replaceAll("lease", g, &s.leases, r.Leases, leaseKey, same) },
		func() error { return replaceAll("schedule", g, &s.schedules, r.Schedules, scheduleKey, same) },
	} {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

func runID(r backend.Run) string                                { return r.ID }
func linkID(l backend.RunLink) string                           { return l.ChildRunID }
func actKey(a backend.Activation) backend.ActivationKey         { return a.Key }
func groupKey(g backend.FanOutGroup) backend.ActivationKey      { return g.Controller }
func attemptKey(a backend.Attempt) backend.AttemptKey           { return a.Key }
func leaseKey(l backend.Lease) backend.LeaseKey                 { return l.Key }
func scheduleKey(s backend.RetrySchedule) backend.ActivationKey { return s.Key }

// opError names the failing operation: "memstore: insert run[1] (key): cause".
func opError(op, kind string, i int, key any, err error) error {
	return fmt.Errorf("memstore: %s %s[%d] %+v: %w", op, kind, i, key, err)
}

func expectAll[K comparable, V backend.Expectable](kind string, t *table[K, V], want []V, key func(V) K) error {
	for i, v := range want {
		stored, ok := t.m[key(v)]
		if !ok {
			return opError("expect", kind, i, key(v), fmt.Errorf("no such record: %w", backend.ErrChanged))
		}
		if err := backend.CompareExpected(stored, v); err != nil {
			return opError("expect", kind, i, key(v), err)
		}
	}
	return nil
}

func deleteAll[K comparable, V any](kind string, gen uint64, t *table[K, V], keys []K) error {
	for i, k := range keys {
		if _, ok := t.m[k]; !ok {
			return opError("delete", kind, i, k, backend.ErrNotFound)
		}
		t.del(gen, k)
	}
	return nil
}

func insertAll[K comparable, V any](kind string, gen uint64, t *table[K, V], vs []V, key func(V) K, clone func(V) V) error {
	for i, v := range vs {
		if _, ok := t.m[key(v)]; ok {
			return opError("insert", kind, i, key(v), backend.ErrConflict)
		}
		t.set(gen, key(v), clone(v))
	}
	return nil
}

func replaceAll[K comparable, V any](kind string, gen uint64, t *table[K, V], vs []V, key func(V) K, clone func(V) V) error {
	for i, v := range vs {
		if _, ok := t.m[key(v)]; !ok {
			return opError("replace", kind, i, key(v), backend.ErrNotFound)
		}
		t.set(gen, key(v), clone(v))
	}
	return nil
}

// Attempts keep the identity index too: Identity is unique across
// attempts, and a deleted or replaced attempt frees its old one.

func (w *writer) deleteAttempts(keys []backend.AttemptKey) error {
	s := w.st
	for i, k := range keys {
		old, ok := s.attempts.m[k]
		if !ok {
			return opError("delete", "attempt", i, k, backend.ErrNotFound)
		}
		s.attempts.del(s.gen, k)
		s.identities.del(s.gen, old.Identity)
	}
	return nil
}

func (w *writer) insertAttempts(as []backend.Attempt) error {
	s := w.st
	for i, a := range as {
		if _, ok := s.attempts.m[a.Key]; ok {
			return opError("insert", "attempt", i, a.Key, backend.ErrConflict)
		}
		if owner, taken := s.identities.m[a.Identity]; taken {
			return opError("insert", "attempt", i, a.Key, fmt.Errorf("identity %q belongs to %+v: %w", a.Identity, owner, backend.ErrConflict))
		}
		s.attempts.set(s.gen, a.Key, copyAttempt(a))
		s.identities.set(s.gen, a.Identity, a.Key)
	}
	return nil
}

func (w *writer) replaceAttempts(as []backend.Attempt) error {
	s := w.st
	for i, a := range as {
		old, ok := s.attempts.m[a.Key]
		if !ok {
			return opError("replace", "attempt", i, a.Key, backend.ErrNotFound)
		}
		if owner, taken := s.identities.m[a.Identity]; taken && owner != a.Key {
			return opError("replace", "attempt", i, a.Key, fmt.Errorf("identity %q belongs to %+v: %w", a.Identity, owner, backend.ErrConflict))
		}
		s.identities.del(s.gen, old.Identity)
		s.attempts.set(s.gen, a.Key, copyAttempt(a))
		s.identities.set(s.gen, a.Identity, a.Key)
	}
	return nil
}

var _ backend.Swapper = (*writer)(nil)

// SwapAttempts implements backend.Swapper: each swap compares the stored
// attempt with Old as Expect does and replaces it with New when they are
// equal.
func (w *writer) SwapAttempts(ctx context.Context, swaps []backend.AttemptSwap) ([]bool, error) {
	if err := w.check(ctx); err != nil {
		return nil, err
	}
	if err := backend.CheckSwaps(swaps); err != nil {
		return nil, fmt.Errorf("memstore: %w", err)
	}
	s := w.st
	out := make([]bool, len(swaps))
	for i, sw := range swaps {
		stored, ok := s.attempts.m[sw.Old.Key]
		if !ok || backend.CompareExpected(stored, sw.Old) != nil {
			continue
		}
		// New keeps Old's key and identity: the identity index stands.
		s.attempts.set(s.gen, sw.New.Key, copyAttempt(sw.New))
		out[i] = true
	}
	return out, nil
}
