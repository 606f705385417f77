package backend

import (
	"errors"
	"reflect"
	"testing"
)

// variants returns values of a field's type that reflect.DeepEqual tells
// apart: the zero value, a non-zero one, and for slices and pointers an
// empty or zero-valued one besides nil.
func variants(t *testing.T, typ reflect.Type) []reflect.Value {
	t.Helper()
	zero := reflect.Zero(typ)
	switch typ.Kind() {
	case reflect.String:
		return []reflect.Value{zero, reflect.ValueOf("x").Convert(typ), reflect.ValueOf("y").Convert(typ)}
	case reflect.Int64, reflect.Int, reflect.Uint32, reflect.Uint8:
		return []reflect.Value{zero, reflect.ValueOf(int64(7)).Convert(typ), reflect.ValueOf(int64(-1)).Convert(typ)}
	case reflect.Bool:
		return []reflect.Value{zero, reflect.ValueOf(true)}
	case reflect.Slice:
		out := []reflect.Value{zero, reflect.MakeSlice(typ, 0, 0)}
		for _, e := range variants(t, typ.Elem())[1:] {
			s := reflect.MakeSlice(typ, 1, 1)
			s.Index(0).Set(e)
			out = append(out, s)
		}
		return out
	case reflect.Pointer:
		out := []reflect.Value{zero}
		for _, e := range variants(t, typ.Elem()) {
			p := reflect.New(typ.Elem())
			p.Elem().Set(e)
			out = append(out, p)
		}
		return out
	case reflect.Struct:
		out := []reflect.Value{zero}
		for i := range typ.NumField() {
			for _, f := range variants(t, typ.Field(i).Type)[1:] {
				v := reflect.New(typ).Elem()
				v.Field(i).Set(f)
				out = append(out, v)
			}
		}
		return out
	}
	t.Fatalf("no variants for %v", typ)
	return nil
}

// checkCompare sets every field of R, one at a time, to each of its
// variants in two records (the others zero, then non-zero) and requires
// CompareExpected to agree with reflect.DeepEqual: a field the comparison
// skipped, or a nil slice it took for an empty one, fails here.
func checkCompare[R Expectable](t *testing.T) {
	var r R
	typ := reflect.TypeOf(r)
	bases := []reflect.Value{reflect.Zero(typ)}
	full := reflect.New(typ).Elem()
	for i := range typ.NumField() {
		full.Field(i).Set(variants(t, typ.Field(i).Type)[1])
	}
	bases = append(bases, full)
	for _, base := range bases {
		for i := range typ.NumField() {
			vs := variants(t, typ.Field(i).Type)
			for _, x := range vs {
				for _, y := range vs {
					a, b := reflect.New(typ).Elem(), reflect.New(typ).Elem()
					a.Set(base)
					b.Set(base)
					a.Field(i).Set(x)
					b.Field(i).Set(y)
					ra, rb := a.Interface().(R), b.Interface().(R)
					want := reflect.DeepEqual(ra, rb)
					err := CompareExpected(ra, rb)
					if (err == nil) != want || (err != nil && !errors.Is(err, ErrChanged)) {
						t.Fatalf("%s.%s: %#v vs %#v: CompareExpected %v, DeepEqual %v", typ.Name(), typ.Field(i).Name,
							x.Interface(), y.Interface(), err, want)
					}
				}
			}
		}
	}
}

// CompareExpected compares exactly as reflect.DeepEqual does, field by
// field, for every kind Expect accepts.
func TestCompareExpectedIsDeepEqual(t *testing.T) {
	checkCompare[Run](t)
	checkCompare[Activation](t)
	checkCompare[Attempt](t)
}

// The comparison allocates nothing.
func TestCompareExpectedAllocatesNothing(t *testing.T) {
	a := Attempt{Key: AttemptKey{ActivationKey: ActivationKey{RunID: "r", NodeID: "n", ActivationID: "a"}, Attempt: 1},
		Intent: []byte(`{}`), Receipt: []byte(`{}`)}
	b := a
	act := Activation{Key: a.Key.ActivationKey, Input: []byte(`{}`), Claims: []ResourceClaim{{Resource: "x"}}}
	run := Run{ID: "r", Authority: &Authority{Generation: 1}}
	if n := testing.AllocsPerRun(100, func() {
		if CompareExpected(a, b) != nil || CompareExpected(act, act) != nil || CompareExpected(run, run) != nil {
			t.Fatal("differs")
		}
	}); n != 0 {
		t.Errorf("%v allocations", n)
	}
}
