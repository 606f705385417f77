package state

import (
	"reflect"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
)

func TestBatchCoalescesEachRecordIntoTheWriteItsFinalStateNeeds(t *testing.T) {
	k := backend.ActivationKey{RunID: "r", NodeID: "n", ActivationID: "a"}
	ak := backend.AttemptKey{ActivationKey: k, Attempt: 1}
	run1 := backend.Run{ID: "r", UpdatedMS: 1}
	run2 := backend.Run{ID: "r", UpdatedMS: 2}
	act := backend.Activation{Key: k, Generation: 1}
	act2 := backend.Activation{Key: k, Generation: 2}
	att := backend.Attempt{Key: ak, Identity: "i"}
	sched := backend.RetrySchedule{Key: k, DueMS: 5}
	sched2 := backend.RetrySchedule{Key: k, DueMS: 9}
	lease := backend.Lease{Key: backend.LeaseKey{AttemptKey: ak, Resource: "x", Mode: backend.LeaseRead}}
	ev := backend.Event{RunID: "r", Seq: 3}

	var w Batch
	Replace(&w, run1)
	Insert(&w, act)
	Replace(&w, act2)  // Insert then replace: one insert of the final value
	Replace(&w, run2)  // Replace twice: one replace of the final value
	Insert(&w, att)    // Insert then delete: nothing
	Remove(&w, att)    //
	Replace(&w, lease) // Replace then delete: a delete
	Remove(&w, lease)  //
	Remove(&w, sched)  // delete then insert: both, the delete applied first
	Insert(&w, sched2) //
	Remove(&w, ev)     //
	require.Equal(t, backend.Changes{
		Delete: backend.Deletes{
			Events:    []backend.EventKey{{RunID: "r", Seq: 3}},
			Schedules: []backend.ActivationKey{k},
			Leases:    []backend.LeaseKey{lease.Key},
		},
		Insert: backend.Inserts{
			Activations: []backend.Activation{act2},
			Schedules:   []backend.RetrySchedule{sched2},
		},
		Replace: backend.Replaces{Runs: []backend.Run{run2}},
	}, w.Changes())
}

func TestBatchTruncateForgetsWritesAfterTheMark(t *testing.T) {
	var w Batch
	Replace(&w, backend.Run{ID: "a"})
	m := w.Mark()
	Replace(&w, backend.Run{ID: "b"})
	w.Truncate(m)
	c := w.Changes()
	require.Equal(t, []backend.Run{{ID: "a"}}, c.Replace.Runs)
	require.Equal(t, 1, c.Len())
}

func TestBatchLeavesOutTheReplaceOfAnAttemptItsTransactionSwapped(t *testing.T) {
	k := backend.ActivationKey{RunID: "r", NodeID: "n", ActivationID: "a"}
	swapped := backend.Attempt{Key: backend.AttemptKey{ActivationKey: k, Attempt: 1}, Identity: "i", HandoffToken: "t"}
	other := backend.Attempt{Key: backend.AttemptKey{ActivationKey: k, Attempt: 2}, Identity: "j", HandoffToken: "t"}
	later := swapped
	later.HandoffToken = "u"
	var w Batch
	w.Swapped(swapped)
	w.Swapped(other)
	Replace(&w, swapped) // replaced again below
	Replace(&w, other)   // what the swap wrote: left out
	Replace(&w, later)   // a swapped key, another value: kept
	Replace(&w, backend.Run{ID: "r"})
	c := w.Changes()
	require.Equal(t, []backend.Attempt{later}, c.Replace.Attempts)
	require.Equal(t, []backend.Run{{ID: "r"}}, c.Replace.Runs)
}

// TestSameAttemptIsReflectDeepEqual checks sameAttempt against
// reflect.DeepEqual field by field (a field added to backend.Attempt and
// not compared fails it): each field of a fully set attempt is zeroed,
// changed, and for a slice made empty and nil.
func TestSameAttemptIsReflectDeepEqual(t *testing.T) {
	var fill func(v reflect.Value)
	fill = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Struct:
			for i := range v.NumField() {
				fill(v.Field(i))
			}
		case reflect.String:
			v.SetString("x")
		case reflect.Int, reflect.Int64, reflect.Int32:
			v.SetInt(1)
		case reflect.Uint32, reflect.Uint64, reflect.Uint:
			v.SetUint(1)
		case reflect.Slice:
			v.SetBytes([]byte("x"))
		default:
			t.Fatalf("backend.Attempt has a %s field: teach sameAttempt and this test", v.Kind())
		}
	}
	var base backend.Attempt
	fill(reflect.ValueOf(&base).Elem())
	cp := func(a backend.Attempt) backend.Attempt {
		a.Intent, a.Receipt, a.Detail = slices.Clone(a.Intent), slices.Clone(a.Receipt), slices.Clone(a.Detail)
		return a
	}
	check := func(a, b backend.Attempt) {
		t.Helper()
		require.Equal(t, reflect.DeepEqual(a, b), sameAttempt(a, b), "%+v\n%+v", a, b)
		require.Equal(t, reflect.DeepEqual(b, a), sameAttempt(b, a), "%+v\n%+v", b, a)
	}
	check(base, cp(base))
	var leaves func(v reflect.Value, at func(reflect.Value))
	leaves = func(v reflect.Value, at func(reflect.Value)) {
		if v.Kind() == reflect.Struct {
			for i := range v.NumField() {
				leaves(v.Field(i), at)
			}
			return
		}
		at(v)
	}
	n := 0
	leaves(reflect.ValueOf(&base).Elem(), func(reflect.Value) { n++ })
	for i := range n {
		variants := []func(v reflect.Value){
			func(v reflect.Value) { v.SetZero() },
			func(v reflect.Value) {
				switch v.Kind() {
				case reflect.String:
					v.SetString("y")
				case reflect.Slice:
					v.SetBytes([]byte("y"))
				case reflect.Uint32, reflect.Uint64, reflect.Uint:
					v.SetUint(2)
				default:
					v.SetInt(2)
				}
			},
			func(v reflect.Value) {
				if v.Kind() == reflect.Slice {
					v.SetBytes([]byte{})
				}
			},
		}
		for _, change := range variants {
			b := cp(base)
			j := 0
			leaves(reflect.ValueOf(&b).Elem(), func(v reflect.Value) {
				if j == i {
					change(v)
				}
				j++
			})
			check(base, b)
			// nil against empty, the one case DeepEqual tells apart and
			// bytes.Equal does not.
			z, e := cp(b), cp(b)
			leaves(reflect.ValueOf(&z).Elem(), func(v reflect.Value) {
				if v.Kind() == reflect.Slice {
					v.SetZero()
				}
			})
			leaves(reflect.ValueOf(&e).Elem(), func(v reflect.Value) {
				if v.Kind() == reflect.Slice {
					v.SetBytes([]byte{})
				}
			})
			check(z, e)
			check(z, cp(z))
			check(e, cp(e))
		}
	}
}
