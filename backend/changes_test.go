package backend

import (
	"reflect"
	"testing"
)

// changesShape is the contract's table of operations (the backend package
// documentation), as the fields of Changes in apply order: part, then
// kind, with the element type of each slice. Every other combination (a
// Delete of a run, activation, group or link; a Replace of a link or an
// event; an Expect of anything but runs, activations and attempts) cannot
// be written at all.
var changesShape = []struct {
	part  string
	kinds []string
	elems []reflect.Type
}{
	{"Expect", []string{"Runs", "Activations", "Attempts"},
		types(Run{}, Activation{}, Attempt{})},
	{"Delete", []string{"Events", "Schedules", "Leases", "Attempts"},
		types(EventKey{}, ActivationKey{}, LeaseKey{}, AttemptKey{})},
	{"Insert", []string{"Runs", "Links", "Activations", "Groups", "Attempts", "Leases", "Schedules", "Events"},
		types(Run{}, RunLink{}, Activation{}, FanOutGroup{}, Attempt{},
			Lease{}, RetrySchedule{}, Event{})},
	{"Replace", []string{"Runs", "Activations", "Groups", "Attempts", "Leases", "Schedules"},
		types(Run{}, Activation{}, FanOutGroup{}, Attempt{},
			Lease{}, RetrySchedule{})},
}

func types(vs ...any) []reflect.Type {
	out := make([]reflect.Type, len(vs))
	for i, v := range vs {
		out[i] = reflect.TypeOf(v)
	}
	return out
}

// Changes has exactly the slices of the table, in the documented apply
// order: a write the table does not allow (a Delete of a run, a Replace of
// an event, ...) cannot be expressed, and this test fails if a field the
// table does not allow is ever added.
func TestChangesHasASliceOnlyForTheOperationsInTheTable(t *testing.T) {
	ct := reflect.TypeOf(Changes{})
	if ct.NumField() != len(changesShape) {
		t.Errorf("Changes has %d fields, the table has %d parts", ct.NumField(), len(changesShape))
	}
	for i, p := range changesShape {
		if i >= ct.NumField() {
			break
		}
		f := ct.Field(i)
		if f.Name != p.part {
			t.Errorf("Changes field %d is %s, want %s (the parts apply in the order expects, deletes, inserts, replaces)", i, f.Name, p.part)
			continue
		}
		if f.Type.NumField() != len(p.kinds) {
			t.Errorf("Changes.%s has %d slices, the table allows %d (%v)", p.part, f.Type.NumField(), len(p.kinds), p.kinds)
		}
		for j, kind := range p.kinds {
			if j >= f.Type.NumField() {
				break
			}
			k := f.Type.Field(j)
			if k.Name != kind || k.Type.Kind() != reflect.Slice || k.Type.Elem() != p.elems[j] {
				t.Errorf("Changes.%s field %d is %s %s, want %s []%s (the table, in apply order)", p.part, j, k.Name, k.Type, kind, p.elems[j])
			}
		}
	}
}
