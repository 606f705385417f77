package conformance

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/wfstore/wfstore/backend"
)

// The suite's shorthand for building backend.Changes: ins, rep, exp and del
// put each record (or, for del, each record's key) in the slice of its kind
// in Changes.Insert, Replace, Expect or Delete; join concatenates Changes.
// A record of a kind the part has no slice for is a suite bug (it panics):
// the shape of Changes is the contract's table of operations.

// ins returns a Changes inserting recs.
func ins(recs ...any) backend.Changes { return build("Insert", recs) }

// rep returns a Changes replacing recs.
func rep(recs ...any) backend.Changes { return build("Replace", recs) }

// exp returns a Changes expecting recs.
func exp(recs ...any) backend.Changes { return build("Expect", recs) }

// del returns a Changes deleting the records named by recs: keys
// (EventKey, ActivationKey of a schedule, LeaseKey, AttemptKey) or records
// of those kinds, of which only the key counts.
func del(recs ...any) backend.Changes {
	keys := make([]any, len(recs))
	for i, r := range recs {
		keys[i] = keyOf(r)
	}
	return build("Delete", keys)
}

func build(part string, recs []any) backend.Changes {
	var c backend.Changes
	pv := reflect.ValueOf(&c).Elem().FieldByName(part)
	for _, r := range recs {
		f := sliceFor(pv, reflect.TypeOf(r))
		if !f.IsValid() {
			panic(fmt.Sprintf("conformance suite bug: Changes.%s has no slice of %T", part, r))
		}
		f.Set(reflect.Append(f, reflect.ValueOf(r)))
	}
	return c
}

// sliceFor returns the field of the part struct pv whose element type is t.
func sliceFor(pv reflect.Value, t reflect.Type) reflect.Value {
	for i := range pv.NumField() {
		if pv.Field(i).Type().Elem() == t {
			return pv.Field(i)
		}
	}
	return reflect.Value{}
}

// keyOf returns the key a Delete names a record by; a key is its own key.
func keyOf(r any) any {
	switch v := r.(type) {
	case backend.Attempt:
		return v.Key
	case backend.Lease:
		return v.Key
	case backend.RetrySchedule:
		return v.Key
	case backend.Event:
		return v.Key()
	}
	return r
}

// join returns one Changes holding every operation of cs, each slice the
// concatenation of the same slice of cs in order.
func join(cs ...backend.Changes) backend.Changes {
	var out backend.Changes
	ov := reflect.ValueOf(&out).Elem()
	for _, c := range cs {
		cv := reflect.ValueOf(c)
		for i := range cv.NumField() {
			for j := range cv.Field(i).NumField() {
				o := ov.Field(i).Field(j)
				o.Set(reflect.AppendSlice(o, cv.Field(i).Field(j)))
			}
		}
	}
	return out
}

// oneOp is one operation of a Changes, itself as a Changes of one operation.
type oneOp struct {
	name string // "Insert.Runs[2]"
	c    backend.Changes
}

// opsOf returns c's operations one by one in the order Apply applies them
// (which is the order of Changes' fields: see changesShape).
func opsOf(c backend.Changes) []oneOp {
	var out []oneOp
	cv := reflect.ValueOf(c)
	for i := range cv.NumField() {
		for j := range cv.Field(i).NumField() {
			s := cv.Field(i).Field(j)
			for k := range s.Len() {
				var one backend.Changes
				f := reflect.ValueOf(&one).Elem().Field(i).Field(j)
				f.Set(reflect.Append(f, s.Index(k)))
				out = append(out, oneOp{name: fmt.Sprintf("%s.%s[%d]", cv.Type().Field(i).Name, cv.Field(i).Type().Field(j).Name, k), c: one})
			}
		}
	}
	return out
}

// kindOf names a record's or key's kind for messages ("Attempt").
func kindOf(r any) string {
	return strings.TrimPrefix(fmt.Sprintf("%T", r), "backend.")
}
