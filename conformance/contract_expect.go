package conformance

import (
	"fmt"
	"reflect"

	"github.com/wfstore/wfstore/backend"
)

func expectCases() []testCase {
	return []testCase{
		{Name: "expect_of_an_equal_record_passes_and_the_writes_after_it_commit", Run: testExpectEqual},
		{Name: "expect_fails_with_err_changed_when_any_field_differs_and_nothing_commits", Run: testExpectFieldDiffers},
		{Name: "expect_of_a_missing_record_fails_with_err_changed", Run: testExpectMissing},
		{Name: "expect_sees_the_transactions_own_earlier_writes", Run: testExpectOwnWrites},
	}
}

// expected returns a record of each kind Expect accepts, from s.
func expected(s fullSet) []any { return []any{s.Run, s.Act, s.Attempt} }

// markerRun holds the events the cases write after an Expect.
const markerRun = "expect-markers"

// marker is an event a case writes after an Expect: committed only if the
// Expect passed.
func marker(seq int64) backend.Changes { return ins(fullEvent(markerRun, seq)) }

// hasMarker reports whether marker(seq) committed.
func (e *env) hasMarker(seq int64) bool {
	e.T.Helper()
	evs := scan(e, e.B, func(rtx backend.ReadTx) ([]backend.Event, error) {
		return rtx.Events(e.Ctx, backend.EventQuery{RunID: markerRun, After: seq - 1, Limit: 1})
	})
	return len(evs) == 1 && evs[0].Seq == seq
}

func testExpectEqual(e *env) {
	s := newFullSet("run-x", "node", "act", 1, "identity-x", "resource")
	e.apply(e.B, s.changes())
	for i, r := range expected(s) {
		seq := int64(100 + i)
		// A copy shares no memory with what was written: equality is by value.
		e.apply(e.B, join(exp(copyRecord(r)), marker(seq)))
		if !e.hasMarker(seq) {
			e.T.Errorf("Expect of an equal %s: the write after it did not commit", kindOf(r))
		}
	}
	e.checkFullSet(e.B, "after passing Expects", s)
}

// testExpectFieldDiffers changes one field at a time (every field but the
// key, taking the value of the fixtures' alternative record) and expects
// ErrChanged, with nothing of the transaction committed.
func testExpectFieldDiffers(e *env) {
	s := newFullSet("run-y", "node", "act", 1, "identity-y", "resource")
	e.apply(e.B, s.changes())
	alts := []any{altRun(s.Run), altActivation(s.Act), altAttempt(s.Attempt)}
	seq := int64(100)
	for i, r := range expected(s) {
		orig, alt := reflect.ValueOf(r), reflect.ValueOf(alts[i])
		fields := 0
		for f := 0; f < orig.NumField(); f++ {
			name := orig.Type().Field(f).Name
			if name == "ID" || name == "Key" || reflect.DeepEqual(orig.Field(f).Interface(), alt.Field(f).Interface()) {
				continue
			}
			v := reflect.New(orig.Type()).Elem()
			v.Set(orig)
			v.Field(f).Set(alt.Field(f))
			variant := v.Interface()
			seq++
			err := e.applyErr(e.B, join(exp(variant), marker(seq)))
			e.wantErr(fmt.Sprintf("Expect of a %s whose %s differs", kindOf(r), name), err, backend.ErrChanged)
			if e.hasMarker(seq) {
				e.T.Errorf("Expect of a %s whose %s differs: the write after it committed", kindOf(r), name)
			}
			fields++
		}
		if fields < 5 {
			e.T.Fatalf("the fixtures differ in only %d fields of a %s", fields, kindOf(r))
		}
	}
	// nil and empty differ: a stored empty claim list is not a nil one.
	empty := s.Act
	empty.Claims = []backend.ResourceClaim{}
	e.apply(e.B, rep(empty))
	none := empty
	none.Claims = nil
	seq++
	e.wantErr("Expect of an activation with nil claims where an empty list is stored",
		e.applyErr(e.B, join(exp(none), marker(seq))), backend.ErrChanged)
	seq++
	e.apply(e.B, join(exp(empty), marker(seq)))
	if !e.hasMarker(seq) {
		e.T.Errorf("Expect of an activation with the empty claim list that is stored: the write after it did not commit")
	}
	e.apply(e.B, rep(s.Act))
	e.checkFullSet(e.B, "after failed Expects", s)
}

func testExpectMissing(e *env) {
	s := newFullSet("run-z", "node", "act", 1, "identity-z", "resource")
	e.apply(e.B, ins(s.Event))
	// Neighbours whose keys differ from s's in one field each.
	e.apply(e.B, ins(fullRun("run-z2"), fullActivation(akey("run-z", "node", "act-2")),
		fullAttempt(atkey(s.Act.Key, 2), "identity-z-2")))
	for i, r := range expected(s) {
		seq := int64(100 + i)
		e.wantErr("Expect of a missing "+kindOf(r), e.applyErr(e.B, join(exp(r), marker(seq))), backend.ErrChanged)
		if e.hasMarker(seq) {
			e.T.Errorf("Expect of a missing %s: the write after it committed", kindOf(r))
		}
	}
}

// An Expect in a later Apply of the same transaction compares with what
// the earlier Apply wrote. (Within one Changes, expects come before every
// write: see expects_are_checked_before_the_writes_of_the_same_changes.)
func testExpectOwnWrites(e *env) {
	s := newFullSet("run-w", "node", "act", 1, "identity-w", "resource")
	e.apply(e.B, s.changes())
	alts := []any{altRun(s.Run), altActivation(s.Act), altAttempt(s.Attempt)}
	for i, r := range expected(s) {
		seq := int64(100 + i)
		err := e.B.Update(e.Ctx, func(tx backend.Tx) error {
			if err := tx.Apply(e.Ctx, rep(alts[i])); err != nil {
				return err
			}
			return tx.Apply(e.Ctx, join(exp(r), marker(seq)))
		})
		e.wantErr("Expect of the record an earlier Replace in the same transaction overwrote ("+kindOf(r)+")", err, backend.ErrChanged)
	}
	e.checkFullSet(e.B, "after Expects of overwritten records", s)
	for i := range alts {
		seq := int64(200 + i)
		e.update(e.B, func(tx backend.Tx) error {
			if err := tx.Apply(e.Ctx, rep(alts[i])); err != nil {
				return err
			}
			return tx.Apply(e.Ctx, join(exp(alts[i]), marker(seq)))
		})
		if !e.hasMarker(seq) {
			e.T.Errorf("Expect of the record this transaction wrote (%s): the write after it did not commit", kindOf(alts[i]))
		}
	}
	// A record inserted by an earlier Apply of the transaction is there to
	// expect.
	fresh := newFullSet("run-w-fresh", "node", "act", 1, "identity-w-fresh", "resource")
	for i, r := range expected(fresh) {
		seq := int64(300 + i)
		e.update(e.B, func(tx backend.Tx) error {
			if err := tx.Apply(e.Ctx, ins(r)); err != nil {
				return err
			}
			return tx.Apply(e.Ctx, join(exp(r), marker(seq)))
		})
		if !e.hasMarker(seq) {
			e.T.Errorf("Expect of the %s an earlier Apply of this transaction inserted: the write after it did not commit", kindOf(r))
		}
	}
}

// copyRecord returns r (a record) with every byte slice and list copied.
func copyRecord(r any) any {
	v := reflect.New(reflect.TypeOf(r)).Elem()
	v.Set(reflect.ValueOf(r))
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		switch {
		case f.Kind() == reflect.Slice && !f.IsNil():
			c := reflect.MakeSlice(f.Type(), f.Len(), f.Len())
			reflect.Copy(c, f)
			f.Set(c)
		case f.Kind() == reflect.Pointer && !f.IsNil():
			c := reflect.New(f.Type().Elem())
			c.Elem().Set(f.Elem())
			f.Set(c)
		}
	}
	return v.Interface()
}
