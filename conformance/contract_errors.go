package conformance

import (
	"context"
	"errors"
	"fmt"

	"github.com/wfstore/wfstore/backend"
)

func errorCases() []Case {
	return []Case{
		{Name: "insert_of_an_existing_key_conflicts_for_every_kind", Run: testInsertConflicts},
		{Name: "insert_of_an_attempt_with_a_taken_identity_conflicts", Run: testIdentityConflict},
		{Name: "insert_twice_in_one_apply_conflicts", Run: testInsertTwiceInOneApply},
		{Name: "replace_of_a_missing_key_is_not_found_for_every_kind", Run: testReplaceMissing},
		{Name: "delete_of_a_missing_schedule_is_not_found", Run: testDeleteMissing},
		{Name: "operations_outside_the_table_are_unsupported", Run: testUnsupported},
		{Name: "replace_attempt_onto_a_taken_identity_conflicts", Run: testReplaceOntoTakenIdentity},
		{Name: "closed_backend_rejects_view_and_update_with_err_closed", Run: testClosed},
		{Name: "close_twice_is_harmless", Run: testCloseTwice},
		{Name: "cancelled_context_fails_update_and_writes_nothing", Run: testCancelledUpdate},
		{Name: "cancelled_context_fails_view", Run: testCancelledView},
	}
}

func testInsertConflicts(e *Env) {
	s := newFullSet("run-c", "node", "act", 1, "identity-c", "resource")
	e.apply(e.B, s.writes()...)
	// Same key, every other field different.
	link := s.Link
	link.RootRunID, link.Depth = "another root", 9
	ev := s.Event
	ev.Type, ev.Payload = "another type", js("another payload")
	att := altAttempt(s.Attempt)
	att.Identity = "identity-c-other"
	rel := s.Released
	rel.ReleasedMS = 0
	for _, w := range []backend.Write{
		backend.Ins(altRun(s.Run)), backend.Ins(link), backend.Ins(altActivation(s.Act)), backend.Ins(altGroup(s.Group)),
		backend.Ins(att), backend.Ins(activeLease(s.Lease.Key)), backend.Ins(rel),
		backend.Ins(altSchedule(s.Schedule)), backend.Ins(ev),
	} {
		e.wantErr(fmt.Sprintf("Insert of an existing %s", w.Record.Kind()), e.applyErr(e.B, w), backend.ErrConflict)
	}
	e.checkFullSet(e.B, "after conflicting Inserts", s)
	f := e.load(e.B, backend.Lookup{Identities: []string{"identity-c-other"}})
	if len(f.Identities) != 0 {
		e.T.Errorf("a conflicting attempt Insert left its identity behind")
	}
}

func testIdentityConflict(e *Env) {
	a := fullAttempt(atkey(akey("run-i", "node", "act"), 1), "identity-shared")
	e.apply(e.B, backend.Ins(a))
	for _, k := range []backend.AttemptKey{
		atkey(akey("run-i", "node", "act"), 2),
		atkey(akey("run-other", "node", "act"), 1),
	} {
		b := fullAttempt(k, "identity-shared")
		e.wantErr(fmt.Sprintf("Insert of %v with a taken identity", k), e.applyErr(e.B, backend.Ins(b)), backend.ErrConflict)
		f := e.load(e.B, backend.Lookup{Attempts: []backend.AttemptKey{k}, Identities: []string{"identity-shared"}})
		if _, ok := f.Attempts[k]; ok {
			e.T.Errorf("the attempt with a taken identity was stored at %v", k)
		}
		e.equal("Load by identity", map[string]backend.Attempt{"identity-shared": a}, f.Identities)
	}
	// Identities compare bytewise: another case is another identity.
	c := fullAttempt(atkey(akey("run-i", "node", "act"), 3), "IDENTITY-SHARED")
	if err := e.applyErr(e.B, backend.Ins(c)); err != nil {
		e.T.Errorf("Insert with an identity differing only in case: %v", err)
	}
}

func testInsertTwiceInOneApply(e *Env) {
	r := fullRun("run-twice")
	e.wantErr("Ins, Ins of one run", e.applyErr(e.B, backend.Ins(r), backend.Ins(altRun(r))), backend.ErrConflict)
	k := atkey(akey("run-twice", "n", "a"), 1)
	e.wantErr("two attempts with one identity", e.applyErr(e.B,
		backend.Ins(fullAttempt(k, "same")), backend.Ins(fullAttempt(atkey(k.ActivationKey, 2), "same"))), backend.ErrConflict)
	// In two Apply calls of one transaction too.
	err := e.B.Update(e.Ctx, func(tx backend.Tx) error {
		if err := tx.Apply(e.Ctx, backend.Ins(r)); err != nil {
			return err
		}
		return tx.Apply(e.Ctx, backend.Ins(r))
	})
	e.wantErr("Ins in two Apply calls", err, backend.ErrConflict)
	f := e.load(e.B, backend.Lookup{Runs: []string{r.ID}, Attempts: []backend.AttemptKey{k}})
	if len(f.Runs)+len(f.Attempts) != 0 {
		e.T.Errorf("failed transactions left records behind: %+v", f)
	}
}

func testReplaceMissing(e *Env) {
	s := newFullSet("run-missing", "node", "act", 1, "identity-missing", "resource")
	// A neighbour with keys sharing every field but one.
	n := newFullSet("run-missing-not", "node", "act", 1, "identity-neighbour", "resource")
	e.apply(e.B, n.writes()...)
	for _, w := range []backend.Write{
		backend.Rep(s.Run), backend.Rep(s.Act), backend.Rep(s.Group), backend.Rep(s.Attempt),
		backend.Rep(s.Lease), backend.Rep(s.Schedule),
		backend.Rep(fullAttempt(atkey(n.Act.Key, 2), n.Attempt.Identity)),                   // neighbour's identity, missing key
		backend.Rep(activeLease(lkey(n.Attempt.Key, n.Lease.Key.Resource, "another mode"))), // missing mode
	} {
		e.wantErr(fmt.Sprintf("Replace of a missing %s", w.Record.Kind()), e.applyErr(e.B, w), backend.ErrNotFound)
	}
	e.checkNothing(e.B, "after failed Replaces", s)
	e.checkFullSet(e.B, "the neighbour after failed Replaces", n)
}

func testDeleteMissing(e *Env) {
	k := akey("run-del", "node", "act")
	e.wantErr("Delete of a missing schedule", e.applyErr(e.B, backend.Del(backend.RetrySchedule{Key: k})), backend.ErrNotFound)
	other := fullSchedule(akey("run-del", "node", "act2"))
	e.apply(e.B, backend.Ins(other))
	e.wantErr("Delete of a missing schedule beside another", e.applyErr(e.B, backend.Del(backend.RetrySchedule{Key: k})), backend.ErrNotFound)
	f := e.load(e.B, backend.Lookup{Schedules: []backend.ActivationKey{other.Key}})
	e.equal("the other schedule", map[backend.ActivationKey]backend.RetrySchedule{other.Key: other}, f.Schedules)
}

func testUnsupported(e *Env) {
	s := newFullSet("run-u", "node", "act", 1, "identity-u", "resource")
	missing := newFullSet("run-u-missing", "node", "act", 1, "identity-u-missing", "resource")
	e.apply(e.B, s.writes()...)
	for _, set := range []fullSet{s, missing} {
		for _, w := range []backend.Write{
			backend.Del(set.Run), backend.Rep(set.Link), backend.Del(set.Link), backend.Del(set.Act),
			backend.Del(set.Group), backend.Rep(set.Event),
			backend.Exp(set.Link), backend.Exp(set.Group), backend.Exp(set.Lease),
			backend.Exp(set.Schedule), backend.Exp(set.Event),
			{Op: 0, Record: set.Run}, {Op: 99, Record: set.Schedule},
		} {
			what := fmt.Sprintf("%v of a %s (run %s)", w.Op, w.Record.Kind(), set.Run.ID)
			e.wantErr(what, e.applyErr(e.B, w), backend.ErrUnsupported)
		}
	}
	e.checkFullSet(e.B, "after unsupported writes", s)
	e.checkNothing(e.B, "after unsupported writes", missing)
}

func testReplaceOntoTakenIdentity(e *Env) {
	a := fullAttempt(atkey(akey("run-t", "node", "act"), 1), "identity-a")
	b := fullAttempt(atkey(akey("run-t", "node", "act"), 2), "identity-b")
	e.apply(e.B, backend.Ins(a), backend.Ins(b))
	b2 := b
	b2.Identity = "identity-a"
	e.wantErr("Replace onto another attempt's identity", e.applyErr(e.B, backend.Rep(b2)), backend.ErrConflict)
	f := e.load(e.B, backend.Lookup{Identities: []string{"identity-a", "identity-b"}})
	e.equal("identities after the refused Replace", map[string]backend.Attempt{"identity-a": a, "identity-b": b}, f.Identities)
}

func testClosed(e *Env) {
	e.apply(e.B, backend.Ins(fullRun("run-1")))
	b := e.B
	e.Close(b)
	called := false
	err := b.View(e.Ctx, func(rtx backend.ReadTx) error { called = true; return nil })
	e.wantErr("View after Close", err, backend.ErrClosed)
	err = b.Update(e.Ctx, func(tx backend.Tx) error {
		called = true
		return tx.Apply(e.Ctx, backend.Ins(fullRun("run-2")))
	})
	e.wantErr("Update after Close", err, backend.ErrClosed)
	if called {
		e.T.Errorf("a closed Backend ran fn")
	}
	nb := e.Reopen()
	f := e.load(nb, backend.Lookup{Runs: []string{"run-1", "run-2"}})
	if _, ok := f.Runs["run-1"]; !ok {
		e.T.Errorf("run-1, committed before Close, is gone")
	}
	if _, ok := f.Runs["run-2"]; ok {
		e.T.Errorf("an Update on a closed Backend wrote run-2")
	}
}

func testCloseTwice(e *Env) {
	b := e.B
	e.Close(b)
	done := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Errorf("second Close panicked: %v", r)
			}
		}()
		done <- b.Close()
	}()
	if err := <-done; err != nil && !errors.Is(err, backend.ErrClosed) {
		e.T.Errorf("second Close: %v (want nil or ErrClosed)", err)
	}
}

func testCancelledUpdate(e *Env) {
	ctx, cancel := context.WithCancel(e.Ctx)
	cancel()
	err := e.B.Update(ctx, func(tx backend.Tx) error {
		return tx.Apply(ctx, backend.Ins(fullRun("run-cancelled")))
	})
	if err == nil {
		e.T.Errorf("Update with a cancelled context returned nil")
	} else if !errors.Is(err, context.Canceled) {
		e.T.Logf("Update with a cancelled context: %v (does not match context.Canceled)", err)
	}
	f := e.load(e.B, backend.Lookup{Runs: []string{"run-cancelled"}})
	if len(f.Runs) != 0 {
		e.T.Errorf("Update with a cancelled context wrote its record")
	}
	// The Backend is still usable.
	e.apply(e.B, backend.Ins(fullRun("run-after")))
}

func testCancelledView(e *Env) {
	e.apply(e.B, backend.Ins(fullRun("run-1")))
	ctx, cancel := context.WithCancel(e.Ctx)
	cancel()
	err := e.B.View(ctx, func(rtx backend.ReadTx) error {
		_, err := rtx.Load(ctx, backend.Lookup{Runs: []string{"run-1"}})
		return err
	})
	if err == nil {
		e.T.Errorf("View with a cancelled context returned nil")
	}
	if f := e.load(e.B, backend.Lookup{Runs: []string{"run-1"}}); len(f.Runs) != 1 {
		e.T.Errorf("the Backend is not usable after a cancelled View")
	}
}
