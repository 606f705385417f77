package state

import (
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
