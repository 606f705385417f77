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

func (w *writer) Apply(ctx context.Context, writes ...backend.Write) error {
	if err := w.check(ctx); err != nil {
		return err
	}
	for i, wr := range writes {
		if err := w.apply(ctx, wr); err != nil {
			return fmt.Errorf("memstore: write %d (%v %T): %w", i, wr.Op, wr.Record, err)
		}
	}
	return nil
}

func unsupported(op backend.Op, kind string) error {
	return fmt.Errorf("%v of a %s: %w", op, kind, backend.ErrUnsupported)
}

// put implements Insert and Replace on one map (passed by pointer: own
// may replace it with a private copy).
func put[K comparable, V any](s *state, m int, table *map[K]V, op backend.Op, k K, v V) error {
	_, exists := (*table)[k]
	switch op {
	case backend.Insert:
		if exists {
			return fmt.Errorf("key %v: %w", k, backend.ErrConflict)
		}
	case backend.Replace:
		if !exists {
			return fmt.Errorf("key %v: %w", k, backend.ErrNotFound)
		}
	default:
		return unsupported(op, "record")
	}
	s.own(m)
	(*table)[k] = v
	return nil
}

// del implements Delete on one map.
func del[K comparable, V any](s *state, m int, table *map[K]V, k K) error {
	if _, exists := (*table)[k]; !exists {
		return fmt.Errorf("key %v: %w", k, backend.ErrNotFound)
	}
	s.own(m)
	delete(*table, k)
	return nil
}

func (w *writer) apply(ctx context.Context, wr backend.Write) error {
	s := w.st
	op := wr.Op
	if op == backend.Expect {
		return backend.CheckExpected(ctx, w, wr.Record)
	}
	if op != backend.Insert && op != backend.Replace && op != backend.Delete {
		return fmt.Errorf("%v: %w", op, backend.ErrUnsupported)
	}
	switch r := wr.Record.(type) {
	case backend.Run:
		if op == backend.Delete {
			return unsupported(op, r.Kind())
		}
		return put(s, mRuns, &s.runs, op, r.ID, copyRun(r))
	case backend.RunLink:
		if op != backend.Insert {
			return unsupported(op, r.Kind())
		}
		return put(s, mLinks, &s.links, op, r.ChildRunID, copyLink(r))
	case backend.Activation:
		if op == backend.Delete {
			return unsupported(op, r.Kind())
		}
		return put(s, mActs, &s.acts, op, r.Key, copyActivation(r))
	case backend.FanOutGroup:
		if op == backend.Delete {
			return unsupported(op, r.Kind())
		}
		return put(s, mGroups, &s.groups, op, r.Controller, r)
	case backend.Attempt:
		if op == backend.Delete {
			return w.deleteAttempt(r.Key)
		}
		return w.putAttempt(op, copyAttempt(r))
	case backend.Lease:
		if op == backend.Delete {
			return del(s, mLeases, &s.leases, r.Key)
		}
		return put(s, mLeases, &s.leases, op, r.Key, r)
	case backend.RetrySchedule:
		if op == backend.Delete {
			return del(s, mSchedules, &s.schedules, r.Key)
		}
		return put(s, mSchedules, &s.schedules, op, r.Key, r)
	case backend.Event:
		if op == backend.Delete {
			return del(s, mEvents, &s.events, eventKey{r.RunID, r.Seq})
		}
		if op != backend.Insert {
			return unsupported(op, r.Kind())
		}
		return put(s, mEvents, &s.events, op, eventKey{r.RunID, r.Seq}, copyEvent(r))
	default:
		return fmt.Errorf("record type %T: %w", wr.Record, backend.ErrUnsupported)
	}
}

// putAttempt keeps the identity index: Identity is unique across attempts.
func (w *writer) putAttempt(op backend.Op, a backend.Attempt) error {
	s := w.st
	old, exists := s.attempts[a.Key]
	owner, taken := s.identities[a.Identity]
	switch op {
	case backend.Insert:
		if exists {
			return fmt.Errorf("attempt %v: %w", a.Key, backend.ErrConflict)
		}
		if taken {
			return fmt.Errorf("attempt identity %q: %w", a.Identity, backend.ErrConflict)
		}
	case backend.Replace:
		if !exists {
			return fmt.Errorf("attempt %v: %w", a.Key, backend.ErrNotFound)
		}
		if taken && owner != a.Key {
			return fmt.Errorf("attempt identity %q belongs to %v: %w", a.Identity, owner, backend.ErrConflict)
		}
	}
	s.own(mAttempts)
	s.own(mIdentities)
	if exists {
		delete(s.identities, old.Identity)
	}
	s.attempts[a.Key] = a
	s.identities[a.Identity] = a.Key
	return nil
}

// deleteAttempt removes an attempt and its identity index entry, which
// frees the identity for a later Insert.
func (w *writer) deleteAttempt(k backend.AttemptKey) error {
	s := w.st
	old, exists := s.attempts[k]
	if !exists {
		return fmt.Errorf("attempt %v: %w", k, backend.ErrNotFound)
	}
	s.own(mAttempts)
	s.own(mIdentities)
	delete(s.attempts, k)
	delete(s.identities, old.Identity)
	return nil
}
