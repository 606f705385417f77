package conformance

import (
	"errors"
	"fmt"
	"math"

	"github.com/wfstore/wfstore/backend"
)

// Cases about the shape of backend.Changes and the fixed order in which
// Apply applies it: expects, then deletes, then inserts, then replaces;
// within each, kinds in field order; each slice in slice order.
func orderCases() []testCase {
	return []testCase{
		{Name: "operations_in_one_changes_take_effect_in_the_fixed_order", Run: testFixedOrder},
		{Name: "delete_then_insert_of_one_key_in_one_changes_succeeds", Run: testDeleteThenInsert},
		{Name: "insert_then_replace_of_one_key_in_one_changes_gives_the_replaced_value", Run: testInsertThenReplace},
		{Name: "expects_are_checked_before_the_writes_of_the_same_changes", Run: testExpectsFirst},
		{Name: "the_first_failing_operation_in_apply_order_decides_the_error", Run: testFirstFailingOperation},
		{Name: "a_failing_element_of_a_slice_fails_the_update_and_nothing_of_the_changes_is_visible", Run: testFailingElement},
		{Name: "a_slice_in_one_changes_equals_its_records_applied_one_at_a_time", Run: testSliceEqualsOneAtATime},
	}
}

// testFixedOrder checks the order across parts on one key at a time.
func testFixedOrder(e *env) {
	k := akey("run-order", "node", "act")
	s1, s2, s3 := fullSchedule(k), altSchedule(fullSchedule(k)), fullSchedule(k)
	s3.FailureKind = "third"

	// Deletes come before inserts: a Delete cannot name a record an Insert
	// of the same Changes creates, and the whole Changes fails.
	e.wantErr("Delete of a schedule an Insert of the same Changes creates", e.applyErr(e.B, join(ins(s1), del(k))), backend.ErrNotFound)
	f := e.load(e.B, backend.Lookup{Schedules: []backend.ActivationKey{k}})
	if len(f.Schedules) != 0 {
		e.T.Errorf("the failed Changes left its Insert behind: %+v", f.Schedules)
	}

	// Deletes come before replaces: a Replace of a record the same Changes
	// deletes (and does not insert again) is not found.
	e.apply(e.B, ins(s1))
	e.wantErr("Replace of a schedule the same Changes deletes", e.applyErr(e.B, join(rep(s2), del(k))), backend.ErrNotFound)
	e.equal("schedule after the failed Changes", map[backend.ActivationKey]backend.RetrySchedule{k: s1},
		e.load(e.B, backend.Lookup{Schedules: []backend.ActivationKey{k}}).Schedules)

	// Delete, Insert and two Replaces of one key in one Changes, listed in
	// the opposite order: the last Replace wins.
	c := join(rep(s2, s3), ins(s2), del(k))
	e.apply(e.B, c)
	e.equal("schedule after Delete, Insert, Replace, Replace", map[backend.ActivationKey]backend.RetrySchedule{k: s3},
		e.load(e.B, backend.Lookup{Schedules: []backend.ActivationKey{k}}).Schedules)

	// A run: Insert then two Replaces, the last wins.
	r := fullRun("run-order")
	r2, r3 := altRun(r), r
	r3.AttemptCount = 99
	e.apply(e.B, join(rep(r2, r3), ins(r)))
	e.equal("run after Insert, Replace, Replace", map[string]backend.Run{r.ID: r3},
		e.load(e.B, backend.Lookup{Runs: []string{r.ID}}).Runs)
}

// testDeleteThenInsert deletes a record of every kind Delete accepts and
// inserts a record with the same key (every other field different) in the
// same Changes.
func testDeleteThenInsert(e *env) {
	s := newFullSet("run-di", "node", "act", 1, "identity-di", "resource")
	e.apply(e.B, s.changes())
	att := altAttempt(s.Attempt) // the same identity: the Delete frees it first
	lease := s.Lease
	lease.AcquiredMS++
	lease.ReleasedMS = lease.AcquiredMS + 1
	sched := altSchedule(s.Schedule)
	ev := s.Event
	ev.Type, ev.Payload, ev.CreatedMS = "another type", js("another payload"), ev.CreatedMS+1
	e.apply(e.B, join(del(s.Attempt, s.Lease, s.Schedule, s.Event), ins(att, lease, sched, ev)))

	t := s
	t.Attempt, t.Lease, t.Schedule, t.Event = att, lease, sched, ev
	f := e.load(e.B, t.lookup())
	e.equal("Load Attempts", map[backend.AttemptKey]backend.Attempt{att.Key: att}, f.Attempts)
	e.equal("Load Identities", map[string]backend.Attempt{att.Identity: att}, f.Identities)
	e.equal("Load Leases", map[backend.LeaseKey]backend.Lease{lease.Key: lease, s.Released.Key: s.Released}, f.Leases)
	e.equal("Load Schedules", map[backend.ActivationKey]backend.RetrySchedule{sched.Key: sched}, f.Schedules)
	evs := scan(e, e.B, func(rtx backend.ReadTx) ([]backend.Event, error) {
		return rtx.Events(e.Ctx, backend.EventQuery{RunID: s.Run.ID, Limit: 10})
	})
	e.equal("Events", []backend.Event{ev}, evs)

	// The identity moves with a Delete and an Insert of another key too.
	moved := fullAttempt(atkey(s.Act.Key, 2), att.Identity)
	e.apply(e.B, join(del(att), ins(moved)))
	f = e.load(e.B, backend.Lookup{Attempts: []backend.AttemptKey{att.Key, moved.Key}, Identities: []string{att.Identity}})
	e.equal("Load Attempts after the identity moved", map[backend.AttemptKey]backend.Attempt{moved.Key: moved}, f.Attempts)
	e.equal("Load Identities after the identity moved", map[string]backend.Attempt{moved.Identity: moved}, f.Identities)
}

// testInsertThenReplace inserts a record of every kind Replace accepts and
// replaces it in the same Changes.
func testInsertThenReplace(e *env) {
	s := newFullSet("run-ir", "node", "act", 1, "identity-ir", "resource")
	t := s
	t.Run = altRun(s.Run)
	t.Act = altActivation(s.Act)
	t.Group = altGroup(s.Group)
	t.Attempt = altAttempt(s.Attempt)
	t.Attempt.Identity = "identity-ir-replaced" // the Replace moves the identity
	t.Lease.AcquiredMS = s.Lease.AcquiredMS + 7
	t.Released.AcquiredMS, t.Released.ReleasedMS = s.Released.AcquiredMS+8, s.Released.ReleasedMS+9
	t.Schedule = altSchedule(s.Schedule)
	e.apply(e.B, join(ins(s.Run, s.Link, s.Act, s.Group, s.Attempt, s.Lease, s.Released, s.Schedule, s.Event),
		rep(t.Run, t.Act, t.Group, t.Attempt, t.Lease, t.Released, t.Schedule)))
	e.checkFullSet(e.B, "after Insert and Replace in one Changes", t)
	f := e.load(e.B, backend.Lookup{Identities: []string{s.Attempt.Identity}})
	if len(f.Identities) != 0 {
		e.T.Errorf("the identity the Replace moved away from still finds the attempt")
	}
}

// testExpectsFirst checks that every Expect of a Changes compares with the
// records stored before any write of that Changes.
func testExpectsFirst(e *env) {
	s := newFullSet("run-ef", "node", "act", 1, "identity-ef", "resource")
	e.apply(e.B, s.changes())
	alts := []any{altRun(s.Run), altActivation(s.Act), altAttempt(s.Attempt)}
	for i, r := range expected(s) {
		// Expect of the stored record passes though the same Changes
		// replaces it.
		seq := int64(100 + i)
		e.apply(e.B, join(exp(r), rep(alts[i]), marker(seq)))
		if !e.hasMarker(seq) {
			e.T.Errorf("Expect of the stored %s with a Replace of it in the same Changes: the Changes did not commit", kindOf(r))
		}
		// Expect of what a Replace of the same Changes writes fails: the
		// Replace has not happened when the Expect is checked.
		seq = int64(200 + i)
		e.wantErr("Expect of the value a Replace of the same Changes writes ("+kindOf(r)+")",
			e.applyErr(e.B, join(exp(r), rep(r), marker(seq))), backend.ErrChanged)
		if e.hasMarker(seq) {
			e.T.Errorf("Expect of the value a Replace of the same Changes writes (%s): the Changes committed", kindOf(r))
		}
		e.apply(e.B, rep(r))
	}
	// Expect of a record an Insert of the same Changes creates finds it
	// missing.
	n := newFullSet("run-ef-new", "node", "act", 1, "identity-ef-new", "resource")
	for i, r := range expected(n) {
		seq := int64(300 + i)
		e.wantErr("Expect of the "+kindOf(r)+" an Insert of the same Changes creates",
			e.applyErr(e.B, join(exp(r), ins(r), marker(seq))), backend.ErrChanged)
		if e.hasMarker(seq) {
			e.T.Errorf("Expect of the %s an Insert of the same Changes creates: the Changes committed", kindOf(r))
		}
	}
	e.checkNothing(e.B, "after Expects of records inserted in the same Changes", n)
	// An attempt Expect passes before the same Changes deletes it.
	seq := int64(400)
	e.apply(e.B, join(exp(s.Attempt), del(s.Attempt), marker(seq)))
	if !e.hasMarker(seq) {
		e.T.Errorf("Expect of an attempt the same Changes deletes: the Changes did not commit")
	}
}

// testFirstFailingOperation puts two failing operations in one Changes and
// requires the error of the one Apply applies first: across parts, across
// kinds of one part, and across elements of one slice.
func testFirstFailingOperation(e *env) {
	s := newFullSet("run-ff", "node", "act", 1, "identity-ff", "resource")
	other := fullAttempt(atkey(akey("run-ff-other", "node", "act"), 1), "identity-ff-2")
	e.apply(e.B, join(s.changes(), ins(other)))
	stale := altRun(s.Run)                             // Expect fails: ErrChanged
	dup := s.Event                                     // Insert fails: ErrConflict
	missing := fullRun("run-ff-missing")               // Replace fails: ErrNotFound
	gone := backend.EventKey{RunID: s.Run.ID, Seq: 99} // Delete fails: ErrNotFound
	taken := s.Attempt                                 // Replace fails: ErrConflict
	taken.Identity = other.Identity
	missingAttempt := fullAttempt(atkey(s.Act.Key, 3), "identity-ff-3") // Replace fails: ErrNotFound
	missingLease := activeLease(lkey(s.Attempt.Key, "no-such-resource", backend.LeaseRead))
	for _, c := range []struct {
		name string
		c    backend.Changes
		want error
	}{
		{"Expect before Insert", join(ins(dup), exp(stale)), backend.ErrChanged},
		{"Expect before Replace", join(rep(missing), exp(stale)), backend.ErrChanged},
		{"Delete before Insert", join(ins(dup), del(gone)), backend.ErrNotFound},
		{"Insert before Replace", join(rep(missing), ins(dup)), backend.ErrConflict},
		{"Replace.Runs before Replace.Attempts", rep(taken, missing), backend.ErrNotFound},
		{"Replace.Attempts before Replace.Leases", rep(missingLease, taken), backend.ErrConflict},
		{"Replace.Attempts in slice order (taken identity first)", rep(taken, missingAttempt), backend.ErrConflict},
		{"Replace.Attempts in slice order (missing key first)", rep(missingAttempt, taken), backend.ErrNotFound},
	} {
		err := e.applyErr(e.B, c.c)
		e.wantErr(c.name, err, c.want)
		for _, later := range []error{backend.ErrChanged, backend.ErrConflict, backend.ErrNotFound} {
			if later != c.want && errors.Is(err, later) {
				e.T.Errorf("%s: the error %v also matches %v, an operation after the first failing one", c.name, err, later)
			}
		}
	}
	e.checkFullSet(e.B, "after the failed Changes", s)
}

// testFailingElement fails one element in the middle of a slice, for each
// part, with other operations of the Changes before and after it, and
// requires the Update to fail with nothing of the Changes visible.
func testFailingElement(e *env) {
	s := newFullSet("run-fe", "node", "act", 1, "identity-fe", "resource")
	e.apply(e.B, s.changes())
	k2, k3 := akey(s.Run.ID, "node-2", "act"), akey(s.Run.ID, "node-3", "act")
	newRuns := ins(fullRun("run-fe-1"), fullRun("run-fe-2"))
	newActs := ins(fullActivation(k2), fullActivation(k3))
	for _, c := range []struct {
		name string
		c    backend.Changes
		want error
	}{
		{"Insert.Attempts", join(newRuns, newActs, ins(
			fullAttempt(atkey(k2, 1), "identity-fe-2"), fullAttempt(atkey(k3, 1), s.Attempt.Identity), fullAttempt(atkey(k3, 2), "identity-fe-3"),
		)), backend.ErrConflict},
		{"Replace.Activations", join(newRuns, newActs, rep(altActivation(s.Act), fullActivation(akey(s.Run.ID, "node-4", "act")), altActivation(fullActivation(k2)))), backend.ErrNotFound},
		{"Delete.Leases", join(del(s.Lease.Key, lkey(s.Attempt.Key, "no-such-resource", backend.LeaseRead), s.Released.Key), newRuns, rep(altRun(s.Run))), backend.ErrNotFound},
		{"Expect.Runs", join(exp(s.Run, altRun(s.Run), s.Run), newRuns, newActs, rep(altAttempt(s.Attempt))), backend.ErrChanged},
	} {
		err := e.applyErr(e.B, c.c)
		e.wantErr(c.name+": a failing element in the middle of the slice", err, c.want)
		e.checkFullSet(e.B, c.name+": after the failed Changes", s)
		f := e.load(e.B, backend.Lookup{
			Runs:        []string{"run-fe-1", "run-fe-2"},
			Activations: []backend.ActivationKey{k2, k3},
			Attempts:    []backend.AttemptKey{atkey(k2, 1), atkey(k3, 1), atkey(k3, 2)},
			Identities:  []string{"identity-fe-2", "identity-fe-3"},
		})
		if n := len(f.Runs) + len(f.Activations) + len(f.Attempts) + len(f.Identities); n != 0 {
			e.T.Errorf("%s: %d records of the failed Changes are visible: %+v", c.name, n, f)
		}
	}
}

// sliceFixture returns base, records to store first, and c, one Changes
// with several elements in most slices whose result depends on applying
// each slice in order: a record replaced twice (the last wins), an
// identity freed by a Delete and taken by an Insert, and identities moved
// along a chain within Replace.Attempts (each takes the one the previous
// element freed; applied in any other order, one would be taken).
func sliceFixture() (base, c backend.Changes) {
	const run = "run-slices"
	k1, k2, k3, k4 := akey(run, "n1", "a"), akey(run, "n2", "a"), akey(run, "n3", "a"), akey(run, "n4", "a")
	r := fullRun(run)
	a1, a2 := fullActivation(k1), fullActivation(k2)
	t1, t2 := fullAttempt(atkey(k1, 1), "identity-X"), fullAttempt(atkey(k2, 1), "identity-Z")
	l1 := activeLease(lkey(t1.Key, "res", backend.LeaseWrite))
	s1 := fullSchedule(k1)
	e1, e2, e3 := fullEvent(run, 1), fullEvent(run, 2), fullEvent(run, 3)
	base = ins(r, a1, a2, t1, t2, l1, s1, e1, e2, e3)

	r2, r3 := fullRun("run-slices-2"), fullRun("run-slices-3")
	link1, link2 := fullLink("run-slices-2", run, t1.Key), fullLink("run-slices-3", run, t1.Key)
	link2.CreatedMS = link1.CreatedMS - 1
	a3, a4 := fullActivation(k3), fullActivation(k4)
	g1, g2 := fullGroup(k1), fullGroup(k2)
	t3 := fullAttempt(atkey(k3, 1), "identity-Z") // freed by the Delete of t2
	t4 := fullAttempt(atkey(k4, 1), "identity-W")
	l1b := fullLease(l1.Key) // l1 again, released
	l2 := activeLease(lkey(t3.Key, "res", backend.LeaseRead))
	s1b := altSchedule(s1)
	s2 := fullSchedule(k2)
	e1b := fullEvent(run, 1)
	e1b.Type = "again"
	e4 := fullEvent(run, 4)

	rv2, rv3 := altRun(r), r
	rv3.AttemptCount = 77
	r2v2 := altRun(r2)
	a1v2, a3v2 := altActivation(a1), altActivation(a3)
	g1v2, g1v3 := altGroup(g1), g1
	g1v3.Size = 1
	t1v2 := altAttempt(t1)
	t1v2.Identity = "identity-Y" // frees X
	t3v2 := t3
	t3v2.Identity = "identity-X" // takes X, frees Z
	t4v2 := altAttempt(t4)
	t4v2.Identity = "identity-Z" // takes Z
	l2v2, l2v3 := l2, l2
	l2v2.AcquiredMS++
	l2v3.AcquiredMS += 2
	s2v2 := altSchedule(s2)

	c = join(
		exp(r, a1, a2, t1, t2),
		del(e1, e3, s1, l1, t2),
		ins(r2, r3, link1, link2, a3, a4, g1, g2, t3, t4, l1b, l2, s1b, s2, e1b, e4),
		rep(rv2, rv3, r2v2, a1v2, a3v2, g1v2, g1v3, t1v2, t3v2, t4v2, l2v2, l2v3, s2v2),
	)
	return base, c
}

// sliceSnapshot is what the slice case compares: every record the fixture
// names, by Load and by the scans.
type sliceSnapshot struct {
	Found     backend.Found
	Runs      []backend.Run
	Acts      []backend.Activation
	Attempts  []backend.Attempt
	Count     int
	Links     []backend.RunLink
	Schedules []backend.RetrySchedule
	Events    []backend.Event
	Leases    []backend.Lease
}

func takeSliceSnapshot(e *env, rtx backend.ReadTx) (sliceSnapshot, error) {
	const run = "run-slices"
	ctx := e.Ctx
	var l backend.Lookup
	var s sliceSnapshot
	var err error
	for _, id := range []string{"1", "2", "3", "4"} {
		k := akey(run, "n"+id, "a")
		l.Activations = append(l.Activations, k)
		l.Groups = append(l.Groups, k)
		l.Schedules = append(l.Schedules, k)
		l.Attempts = append(l.Attempts, atkey(k, 1))
	}
	l.Runs = []string{run, "run-slices-2", "run-slices-3"}
	l.Links = []string{"run-slices-2", "run-slices-3"}
	l.Identities = []string{"identity-W", "identity-X", "identity-Y", "identity-Z"}
	l.Leases = []backend.LeaseKey{
		lkey(atkey(akey(run, "n1", "a"), 1), "res", backend.LeaseWrite),
		lkey(atkey(akey(run, "n3", "a"), 1), "res", backend.LeaseRead),
	}
	l.Resources = []backend.ResourceRef{{RunID: run, Resource: "res"}}
	if s.Found, err = rtx.Load(ctx, l); err != nil {
		return s, err
	}
	if s.Runs, err = rtx.Runs(ctx, backend.RunQuery{Limit: 100}); err != nil {
		return s, err
	}
	if s.Acts, err = rtx.Activations(ctx, backend.ActivationQuery{RunID: run, Limit: 100}); err != nil {
		return s, err
	}
	if s.Attempts, err = rtx.Attempts(ctx, backend.AttemptQuery{RunID: run, Limit: 100}); err != nil {
		return s, err
	}
	if s.Count, err = rtx.CountAttempts(ctx, backend.AttemptCountQuery{RunID: run, Limit: 100}); err != nil {
		return s, err
	}
	if s.Links, err = rtx.ChildRuns(ctx, backend.ChildRunQuery{RootRunID: run, Limit: 100}); err != nil {
		return s, err
	}
	if s.Schedules, err = rtx.DueSchedules(ctx, backend.ScheduleQuery{RunID: run, DueBy: math.MaxInt64, Limit: 100}); err != nil {
		return s, err
	}
	if s.Events, err = rtx.Events(ctx, backend.EventQuery{RunID: run, Limit: 100}); err != nil {
		return s, err
	}
	if s.Leases, err = rtx.Leases(ctx, backend.LeaseQuery{RunID: run, IncludeReleased: true, Limit: 100}); err != nil {
		return s, err
	}
	return s, nil
}

// errReference rolls back the transaction that computed the reference.
var errReference = errors.New("conformance: the reference transaction rolls back")

// testSliceEqualsOneAtATime applies sliceFixture's Changes one operation
// per Apply, in apply order, in a transaction it then rolls back, and
// requires the same Changes applied whole to leave exactly the state that
// transaction saw (an adapter writing a whole slice in one statement must
// keep the semantics of its elements applied in order).
func testSliceEqualsOneAtATime(e *env) {
	base, c := sliceFixture()
	e.apply(e.B, base)
	ops := opsOf(c)
	if len(ops) != c.Len() {
		e.T.Fatalf("suite bug: opsOf returned %d operations of %d", len(ops), c.Len())
	}
	var ref sliceSnapshot
	err := e.B.Update(e.Ctx, func(tx backend.Tx) error {
		for _, o := range ops {
			if err := tx.Apply(e.Ctx, o.c); err != nil {
				return fmt.Errorf("applying %s alone: %w", o.name, err)
			}
		}
		var err error
		ref, err = takeSliceSnapshot(e, tx)
		if err != nil {
			return err
		}
		return errReference
	})
	if !errors.Is(err, errReference) {
		e.T.Fatalf("the operations one per Apply: %v", err)
	}
	if err := e.applyErr(e.B, c); err != nil {
		e.T.Fatalf("the same operations in one Changes: %v", err)
	}
	var got sliceSnapshot
	e.view(e.B, func(rtx backend.ReadTx) error {
		var err error
		got, err = takeSliceSnapshot(e, rtx)
		return err
	})
	e.equal("one Changes vs. one operation per Apply", ref, got)

	// The suite's own statement of a few results.
	f := got.Found
	e.equal("run replaced twice", c.Replace.Runs[1], f.Runs["run-slices"])
	e.equal("group replaced twice", c.Replace.Groups[1], f.Groups[akey("run-slices", "n1", "a")])
	e.equal("lease replaced twice", c.Replace.Leases[1], f.Leases[c.Replace.Leases[1].Key])
	who := map[string]backend.AttemptKey{}
	for id, a := range f.Identities {
		who[id] = a.Key
	}
	e.equal("identities after the chain of moves", map[string]backend.AttemptKey{
		"identity-X": atkey(akey("run-slices", "n3", "a"), 1),
		"identity-Y": atkey(akey("run-slices", "n1", "a"), 1),
		"identity-Z": atkey(akey("run-slices", "n4", "a"), 1),
	}, who)
}
