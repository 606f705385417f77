package conformance

import (
	"context"
	"errors"
	"fmt"

	"github.com/wfstore/wfstore/backend"
)

func errorCases() []testCase {
	return []testCase{
		{Name: "insert_of_an_existing_key_conflicts_for_every_kind", Run: testInsertConflicts},
		{Name: "insert_of_an_attempt_with_a_taken_identity_conflicts", Run: testIdentityConflict},
		{Name: "insert_twice_in_one_apply_conflicts", Run: testInsertTwiceInOneApply},
		{Name: "replace_of_a_missing_key_is_not_found_for_every_kind", Run: testReplaceMissing},
		{Name: "delete_of_a_missing_schedule_is_not_found", Run: testDeleteMissing},
		{Name: "replace_attempt_onto_a_taken_identity_conflicts", Run: testReplaceOntoTakenIdentity},
		{Name: "closed_backend_rejects_view_and_update_with_err_closed", Run: testClosed},
		{Name: "close_twice_is_harmless", Run: testCloseTwice},
		{Name: "cancelled_context_fails_update_and_writes_nothing", Run: testCancelledUpdate},
		{Name: "cancelled_context_fails_view", Run: testCancelledView},
	}
}

func testInsertConflicts(e *env) {
	s := newFullSet("run-c", "node", "act", 1, "identity-c", "resource")
	e.apply(e.B, s.changes())
	// Same key, every other field different.
	link := s.Link
	link.RootRunID, link.Depth = "another root", 9
	ev := s.Event
	ev.Type, ev.Payload = "another type", js("another payload")
	att := altAttempt(s.Attempt)
	att.Identity = "identity-c-other"
	rel := s.Released
	rel.ReleasedMS = 0
	for _, r := range []any{
		altRun(s.Run), link, altActivation(s.Act), altGroup(s.Group),
		att, activeLease(s.Lease.Key), rel, altSchedule(s.Schedule), ev,
	} {
		e.wantErr(fmt.Sprintf("Insert of an existing %s", kindOf(r)), e.applyErr(e.B, ins(r)), backend.ErrConflict)
	}
	e.checkFullSet(e.B, "after conflicting Inserts", s)
	f := e.load(e.B, backend.Lookup{Identities: []string{"identity-c-other"}})
	if len(f.Identities) != 0 {
		e.T.Errorf("a conflicting attempt Insert left its identity behind")
	}
}

func testIdentityConflict(e *env) {
	a := fullAttempt(atkey(akey("run-i", "node", "act"), 1), "identity-shared")
	e.apply(e.B, ins(a))
	for _, k := range []backend.AttemptKey{
		atkey(akey("run-i", "node", "act"), 2),
		atkey(akey("run-other", "node", "act"), 1),
	} {
		b := fullAttempt(k, "identity-shared")
		e.wantErr(fmt.Sprintf("Insert of %v with a taken identity", k), e.applyErr(e.B, ins(b)), backend.ErrConflict)
		f := e.load(e.B, backend.Lookup{Attempts: []backend.AttemptKey{k}, Identities: []string{"identity-shared"}})
		if _, ok := f.Attempts[k]; ok {
			e.T.Errorf("the attempt with a taken identity was stored at %v", k)
		}
		e.equal("Load by identity", map[string]backend.Attempt{"identity-shared": a}, f.Identities)
	}
	// Identities compare bytewise: another case is another identity.
	c := fullAttempt(atkey(akey("run-i", "node", "act"), 3), "IDENTITY-SHARED")
	if err := e.applyErr(e.B, ins(c)); err != nil {
		e.T.Errorf("Insert with an identity differing only in case: %v", err)
	}
}

func testInsertTwiceInOneApply(e *env) {
	r := fullRun("run-twice")
	e.wantErr("one run twice in Insert.Runs", e.applyErr(e.B, ins(r, altRun(r))), backend.ErrConflict)
	k := atkey(akey("run-twice", "n", "a"), 1)
	e.wantErr("two attempts with one identity in Insert.Attempts", e.applyErr(e.B,
		ins(fullAttempt(k, "same"), fullAttempt(atkey(k.ActivationKey, 2), "same"))), backend.ErrConflict)
	// In two Apply calls of one transaction too.
	err := e.B.Update(e.Ctx, func(tx backend.Tx) error {
		if err := tx.Apply(e.Ctx, ins(r)); err != nil {
			return err
		}
		return tx.Apply(e.Ctx, ins(r))
	})
	e.wantErr("Ins in two Apply calls", err, backend.ErrConflict)
	f := e.load(e.B, backend.Lookup{Runs: []string{r.ID}, Attempts: []backend.AttemptKey{k}})
	if len(f.Runs)+len(f.Attempts) != 0 {
		e.T.Errorf("failed transactions left records behind: %+v", f)
	}
}

func testReplaceMissing(e *env) {
	s := newFullSet("run-missing", "node", "act", 1, "identity-missing", "resource")
	// A neighbour with keys sharing every field but one.
	n := newFullSet("run-missing-not", "node", "act", 1, "identity-neighbour", "resource")
	e.apply(e.B, n.changes())
	for _, r := range []any{
		s.Run, s.Act, s.Group, s.Attempt, s.Lease, s.Schedule,
		fullAttempt(atkey(n.Act.Key, 2), n.Attempt.Identity),                   // neighbour's identity, missing key
		activeLease(lkey(n.Attempt.Key, n.Lease.Key.Resource, "another mode")), // missing mode
	} {
		e.wantErr(fmt.Sprintf("Replace of a missing %s", kindOf(r)), e.applyErr(e.B, rep(r)), backend.ErrNotFound)
	}
	e.checkNothing(e.B, "after failed Replaces", s)
	e.checkFullSet(e.B, "the neighbour after failed Replaces", n)
}

func testDeleteMissing(e *env) {
	k := akey("run-del", "node", "act")
	e.wantErr("Delete of a missing schedule", e.applyErr(e.B, del(k)), backend.ErrNotFound)
	other := fullSchedule(akey("run-del", "node", "act2"))
	e.apply(e.B, ins(other))
	e.wantErr("Delete of a missing schedule beside another", e.applyErr(e.B, del(k)), backend.ErrNotFound)
	f := e.load(e.B, backend.Lookup{Schedules: []backend.ActivationKey{other.Key}})
	e.equal("the other schedule", map[backend.ActivationKey]backend.RetrySchedule{other.Key: other}, f.Schedules)
}

func testReplaceOntoTakenIdentity(e *env) {
	a := fullAttempt(atkey(akey("run-t", "node", "act"), 1), "identity-a")
	b := fullAttempt(atkey(akey("run-t", "node", "act"), 2), "identity-b")
	e.apply(e.B, ins(a, b))
	b2 := b
	b2.Identity = "identity-a"
	e.wantErr("Replace onto another attempt's identity", e.applyErr(e.B, rep(b2)), backend.ErrConflict)
	f := e.load(e.B, backend.Lookup{Identities: []string{"identity-a", "identity-b"}})
	e.equal("identities after the refused Replace", map[string]backend.Attempt{"identity-a": a, "identity-b": b}, f.Identities)
}

func testClosed(e *env) {
	e.apply(e.B, ins(fullRun("run-1")))
	b := e.B
	e.Close(b)
	called := false
	err := b.View(e.Ctx, func(rtx backend.ReadTx) error { called = true; return nil })
	e.wantErr("View after Close", err, backend.ErrClosed)
	err = b.Update(e.Ctx, func(tx backend.Tx) error {
		called = true
		return tx.Apply(e.Ctx, ins(fullRun("run-2")))
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

func testCloseTwice(e *env) {
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

func testCancelledUpdate(e *env) {
	ctx, cancel := context.WithCancel(e.Ctx)
	cancel()
	err := e.B.Update(ctx, func(tx backend.Tx) error {
		return tx.Apply(ctx, ins(fullRun("run-cancelled")))
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
	e.apply(e.B, ins(fullRun("run-after")))
}

func testCancelledView(e *env) {
	e.apply(e.B, ins(fullRun("run-1")))
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
