package workflow

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

	var w batch
	replace(&w, run1)
	insert(&w, act)
	replace(&w, act2)  // insert then replace: one insert of the final value
	replace(&w, run2)  // replace twice: one replace of the final value
	insert(&w, att)    // insert then delete: nothing
	remove(&w, att)    //
	replace(&w, lease) // replace then delete: a delete
	remove(&w, lease)  //
	remove(&w, sched)  // delete then insert: both, the delete applied first
	insert(&w, sched2) //
	remove(&w, ev)     //
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
	}, w.changes())
}

func TestBatchTruncateForgetsWritesAfterTheMark(t *testing.T) {
	var w batch
	replace(&w, backend.Run{ID: "a"})
	m := w.mark()
	replace(&w, backend.Run{ID: "b"})
	w.truncate(m)
	c := w.changes()
	require.Equal(t, []backend.Run{{ID: "a"}}, c.Replace.Runs)
	require.Equal(t, 1, c.Len())
}
