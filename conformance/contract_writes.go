package conformance

import (
	"fmt"

	"github.com/wfstore/wfstore/backend"
)

func writeCases() []testCase {
	return []testCase{
		{Name: "replace_changes_every_field_of_every_kind", Run: testReplaceEveryField},
		{Name: "replace_attempt_identity_moves_the_identity_lookup", Run: testReplaceIdentityMoves},
		{Name: "delete_schedule_removes_it_from_load_and_due_schedules", Run: testDeleteSchedule},
		{Name: "reads_in_an_update_see_its_own_earlier_writes", Run: testReadYourWrites},
		{Name: "composite_keys_do_not_collide_across_separators", Run: testCompositeKeysDistinct},
		{Name: "lease_modes_and_resources_are_distinct_records", Run: testLeaseModesDistinct},
		{Name: "empty_apply_and_empty_update_succeed", Run: testEmptyWrites},
	}
}

func testReplaceEveryField(e *env) {
	s := newFullSet("run-replace", "node", "act", 2, "identity-replace", "resource")
	e.apply(e.B, s.changes())

	// full -> alt: every non-key field changes, optional fields become absent.
	t := s
	t.Run = altRun(s.Run)
	t.Act = altActivation(s.Act)
	t.Group = altGroup(s.Group)
	t.Attempt = altAttempt(s.Attempt)
	t.Lease.AcquiredMS = s.Lease.AcquiredMS + 7
	t.Released.AcquiredMS, t.Released.ReleasedMS = s.Released.AcquiredMS+8, s.Released.ReleasedMS+9
	t.Schedule = altSchedule(s.Schedule)
	e.apply(e.B, rep(t.Run, t.Act, t.Group, t.Attempt, t.Lease, t.Released, t.Schedule))
	e.checkFullSet(e.B, "after Replace full->alt", t)
	if len(scan(e, e.B, func(rtx backend.ReadTx) ([]backend.Attempt, error) {
		return rtx.Attempts(e.Ctx, backend.AttemptQuery{Status: s.Attempt.Status, Limit: 10})
	})) != 0 {
		e.T.Errorf("after Replace, Attempts(Status: %q) still returns the attempt", s.Attempt.Status)
	}

	// alt -> full: absent fields become present again.
	u := newFullSet("run-replace", "node", "act", 2, "identity-replace", "resource")
	u.Link, u.Event = s.Link, s.Event
	u.Run.Metadata, u.Act.Input = js("second"), js("second input")
	e.apply(e.B, rep(u.Run, u.Act, u.Group, u.Attempt, u.Lease, u.Released, u.Schedule))
	e.checkFullSet(e.B, "after Replace alt->full", u)
}

func testReplaceIdentityMoves(e *env) {
	k := atkey(akey("run-ident", "node", "act"), 1)
	a := fullAttempt(k, "identity-old")
	e.apply(e.B, ins(a))
	b := a
	b.Identity = "identity-new"
	e.apply(e.B, rep(b))
	f := e.load(e.B, backend.Lookup{Identities: []string{"identity-old", "identity-new"}, Attempts: []backend.AttemptKey{k}})
	if _, ok := f.Identities["identity-old"]; ok {
		e.T.Errorf("after Replace changed the identity, Load by the old identity still finds the attempt")
	}
	e.equal("Load by the new identity", map[string]backend.Attempt{"identity-new": b}, f.Identities)
	e.equal("Load by key", map[backend.AttemptKey]backend.Attempt{k: b}, f.Attempts)
	// The old identity is free again.
	k2 := atkey(akey("run-ident", "node", "act"), 2)
	c := fullAttempt(k2, "identity-old")
	if err := e.applyErr(e.B, ins(c)); err != nil {
		e.T.Errorf("Insert with an identity freed by Replace: %v", err)
	}
}

func testDeleteSchedule(e *env) {
	k1, k2 := akey("run-del", "node-1", "a"), akey("run-del", "node-2", "a")
	s1, s2 := fullSchedule(k1), fullSchedule(k2)
	e.apply(e.B, ins(s1, s2))
	e.apply(e.B, del(k1))
	f := e.load(e.B, backend.Lookup{Schedules: []backend.ActivationKey{k1, k2}})
	e.equal("Load after Delete", map[backend.ActivationKey]backend.RetrySchedule{k2: s2}, f.Schedules)
	due := scan(e, e.B, func(rtx backend.ReadTx) ([]backend.RetrySchedule, error) {
		return rtx.DueSchedules(e.Ctx, backend.ScheduleQuery{RunID: "run-del", DueBy: s1.DueMS + 1000, Limit: 10})
	})
	e.equal("DueSchedules after Delete", []backend.RetrySchedule{s2}, due)
	// A deleted schedule can be inserted again, with new fields.
	s3 := altSchedule(s1)
	e.apply(e.B, ins(s3))
	f = e.load(e.B, backend.Lookup{Schedules: []backend.ActivationKey{k1}})
	e.equal("Load after re-Insert", map[backend.ActivationKey]backend.RetrySchedule{k1: s3}, f.Schedules)
	// A second Delete finds nothing.
	e.apply(e.B, del(k1))
	e.wantErr("second Delete", e.applyErr(e.B, del(k1)), backend.ErrNotFound)
}

func testReadYourWrites(e *env) {
	s := newFullSet("run-ryw", "node", "act", 1, "identity-ryw", "resource")
	e.update(e.B, func(tx backend.Tx) error {
		ctx := e.Ctx
		// Before: nothing.
		f, err := tx.Load(ctx, s.lookup())
		if err != nil {
			return err
		}
		if len(f.Runs)+len(f.Activations)+len(f.Attempts)+len(f.Identities)+len(f.Leases)+len(f.Schedules)+len(f.Resources) != 0 {
			e.T.Errorf("fresh store: Load found %+v", f)
		}
		if err := tx.Apply(ctx, s.changes()); err != nil {
			return err
		}
		f, err = tx.Load(ctx, s.lookup())
		if err != nil {
			return err
		}
		e.equal("in-tx Load Runs", map[string]backend.Run{s.Run.ID: s.Run}, f.Runs)
		e.equal("in-tx Load Identities", map[string]backend.Attempt{s.Attempt.Identity: s.Attempt}, f.Identities)
		ref := backend.ResourceRef{RunID: s.Lease.Key.RunID, Resource: s.Lease.Key.Resource}
		e.equal("in-tx Load Resources", map[backend.ResourceRef][]backend.Lease{ref: {s.Lease}}, f.Resources)
		pend, err := tx.AdmissibleActivations(ctx, backend.AdmissibleQuery{Limit: 10})
		if err != nil {
			return err
		}
		e.equal("in-tx AdmissibleActivations", []backend.Activation{s.Act}, pend)
		n, err := tx.CountAttempts(ctx, backend.AttemptCountQuery{RunID: s.Run.ID, Limit: 10})
		if err != nil {
			return err
		}
		if n != 1 {
			e.T.Errorf("in-tx CountAttempts = %d, want 1", n)
		}
		evs, err := tx.Events(ctx, backend.EventQuery{RunID: s.Run.ID, Limit: 10})
		if err != nil {
			return err
		}
		e.equal("in-tx Events", []backend.Event{s.Event}, evs)
		links, err := tx.ChildRuns(ctx, backend.ChildRunQuery{RootRunID: s.Link.RootRunID, Limit: 10})
		if err != nil {
			return err
		}
		e.equal("in-tx ChildRuns", []backend.RunLink{s.Link}, links)
		due, err := tx.DueSchedules(ctx, backend.ScheduleQuery{RunID: s.Run.ID, DueBy: s.Schedule.DueMS, Limit: 10})
		if err != nil {
			return err
		}
		e.equal("in-tx DueSchedules", []backend.RetrySchedule{s.Schedule}, due)
		leases, err := tx.Leases(ctx, backend.LeaseQuery{RunID: s.Run.ID, Limit: 10})
		if err != nil {
			return err
		}
		e.equal("in-tx Leases", []backend.Lease{s.Lease}, leases)

		// A second Apply changes what the same transaction reads next.
		act := s.Act
		act.Admissible = false
		act.Status = backend.ActivationRunning
		att := s.Attempt
		att.Status = backend.AttemptRunning
		rel := s.Lease
		rel.ReleasedMS = rel.AcquiredMS + 1
		if err := tx.Apply(ctx, join(rep(act, att, rel), del(s.Schedule))); err != nil {
			return err
		}
		pend, err = tx.AdmissibleActivations(ctx, backend.AdmissibleQuery{Limit: 10})
		if err != nil {
			return err
		}
		e.equal("in-tx AdmissibleActivations after Replace to not admissible", []backend.Activation(nil), pend)
		byStatus, err := tx.Attempts(ctx, backend.AttemptQuery{Status: backend.AttemptRunning, Limit: 10})
		if err != nil {
			return err
		}
		e.equal("in-tx Attempts(running) after Replace", []backend.Attempt{att}, byStatus)
		leases, err = tx.Leases(ctx, backend.LeaseQuery{RunID: s.Run.ID, Limit: 10})
		if err != nil {
			return err
		}
		e.equal("in-tx Leases after release", []backend.Lease(nil), leases)
		due, err = tx.DueSchedules(ctx, backend.ScheduleQuery{RunID: s.Run.ID, DueBy: s.Schedule.DueMS, Limit: 10})
		if err != nil {
			return err
		}
		e.equal("in-tx DueSchedules after Delete", []backend.RetrySchedule(nil), due)
		return nil
	})
}

func testCompositeKeysDistinct(e *env) {
	// Pairs of keys whose fields joined by a separator (or by nothing) are
	// equal, plus attempt numbers whose decimal forms join alike.
	keys := []backend.ActivationKey{
		akey("a/b", "c", "d"), akey("a", "b/c", "d"), akey("a", "b", "c/d"),
		akey("a:b", "c", "d"), akey("a", "b:c", "d"),
		akey("a|b", "c", "d"), akey("a", "b|c", "d"),
		akey("a\x1fb", "c", "d"), akey("a", "b\x1fc", "d"),
		akey("ab", "c", "d"), akey("a", "bc", "d"), akey("a", "b", "cd"),
	}
	var c backend.Changes
	var lookup backend.Lookup
	want := map[backend.ActivationKey]backend.Activation{}
	wantAtt := map[backend.AttemptKey]backend.Attempt{}
	for i, k := range keys {
		a := fullActivation(k)
		a.Generation = int64(i)
		want[k] = a
		c.Insert.Activations = append(c.Insert.Activations, a)
		lookup.Activations = append(lookup.Activations, k)
	}
	for i, ak := range []backend.AttemptKey{
		atkey(akey("r", "n", "a1"), 12), atkey(akey("r", "n", "a11"), 2), atkey(akey("r", "n", "a"), 112),
		atkey(akey("r", "n", "a1"), 2), atkey(akey("r", "n", "a"), 12),
	} {
		at := fullAttempt(ak, fmt.Sprintf("identity-composite-%d", i))
		wantAtt[ak] = at
		c.Insert.Attempts = append(c.Insert.Attempts, at)
		lookup.Attempts = append(lookup.Attempts, ak)
	}
	if err := e.applyErr(e.B, c); err != nil {
		e.T.Fatalf("inserting records with distinct keys that join alike: %v", err)
	}
	f := e.load(e.B, lookup)
	e.equal("Load Activations", want, f.Activations)
	e.equal("Load Attempts", wantAtt, f.Attempts)
}

func testLeaseModesDistinct(e *env) {
	ak := atkey(akey("run-modes", "node", "act"), 1)
	r := lkey(ak, "res", backend.LeaseRead)
	w := lkey(ak, "res", backend.LeaseWrite)
	o := lkey(ak, "res2", backend.LeaseRead)
	lr, lw, lo := activeLease(r), fullLease(w), activeLease(o)
	lo.AcquiredMS++
	e.apply(e.B, ins(lr, lw, lo))
	f := e.load(e.B, backend.Lookup{Leases: []backend.LeaseKey{r, w, o}})
	e.equal("Load Leases", map[backend.LeaseKey]backend.Lease{r: lr, w: lw, o: lo}, f.Leases)
	e.wantErr("Insert of the same (attempt, resource, mode)", e.applyErr(e.B, ins(activeLease(w))), backend.ErrConflict)
}

func testEmptyWrites(e *env) {
	e.apply(e.B, backend.Changes{})
	e.update(e.B, func(tx backend.Tx) error { return nil })
	// Empty, non-nil slices are no operation either.
	e.update(e.B, func(tx backend.Tx) error {
		return tx.Apply(e.Ctx, backend.Changes{
			Expect:  backend.Expected{Runs: []backend.Run{}},
			Delete:  backend.Deletes{Events: []backend.EventKey{}},
			Insert:  backend.Inserts{Attempts: []backend.Attempt{}},
			Replace: backend.Replaces{Schedules: []backend.RetrySchedule{}},
		})
	})
	f := e.load(e.B, backend.Lookup{})
	if n := len(f.Runs) + len(f.Activations) + len(f.Attempts); n != 0 {
		e.T.Errorf("empty Lookup on an empty store found %d records", n)
	}
	if err := e.B.View(e.Ctx, func(rtx backend.ReadTx) error { return nil }); err != nil {
		e.T.Errorf("empty View: %v", err)
	}
}
