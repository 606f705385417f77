package sqlite

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/wfstore/wfstore/backend"
)

// fullRecords returns one record of every kind with every field set,
// using ids made of id and 1 MiB JSON where JSON is allowed.
func fullRecords(id string, big []byte) (backend.Run, backend.RunLink, backend.Activation, backend.FanOutGroup, backend.Attempt, backend.Lease, backend.RetrySchedule, backend.Event) {
	k := akey(id, id+"/n", id+"/a")
	ak := backend.AttemptKey{ActivationKey: k, Attempt: 4294967295}
	run := backend.Run{
		ID: id, RootID: id + "/root", ParentID: id + "/parent", Depth: 3, Status: backend.RunRepairRequired,
		Limits:     backend.Limits{NodeExecutionCap: 11, ConcurrencyCap: 12, CycleCap: 13, RetryCap: 14},
		DeadlineMS: 1 << 60, CancelRequestedMS: 1700000000001,
		Authority: &backend.Authority{TargetArtifactID: id + "/t", DaemonInstanceID: id + "/d", Generation: -7, FencingToken: id + "/f"},
		Metadata:  big, CreatedMS: 1700000000000, UpdatedMS: 1700000000002, LastEventSeq: 99,
		AttemptCount: 21, ActiveCount: 22, TreeAttemptCount: 23, DescendantCount: 24, ExhaustionRecorded: true,
	}
	link := backend.RunLink{ChildRunID: id + "/child", RootRunID: id, Parent: ak, Target: big, Depth: 8, CreatedMS: 5}
	act := backend.Activation{
		Key: k, Generation: 9, Status: backend.ActivationWaiting, Admissible: true,
		Input: big, Output: []byte(`{"out":[1,2.0,"ü"]}`),
		Claims: []backend.ResourceClaim{{Resource: id + "/r1", Mode: backend.LeaseRead}, {Resource: "", Mode: backend.LeaseWrite}},
		Effect: backend.Mutating, Reconciliation: backend.ReceiptStatus, RetryPolicy: []byte(`{"max_attempts":3}`),
		Predecessors:  []backend.NodeRef{{NodeID: id + "/p", ActivationID: id + "/pa"}, {NodeID: "x\x00y", ActivationID: ""}},
		HasSuccessors: true,
		Group:         &backend.GroupMember{Controller: akey(id, id+"/ctl", id+"/ca"), Index: 63},
		LastAttempt:   4294967295, CreatedMS: 1, UpdatedMS: 2, AttemptTimeoutMS: 3_600_000,
		WaitFor:   []backend.NodeRef{{NodeID: id + "/w", ActivationID: id + "/wa"}, {NodeID: "x\x00y", ActivationID: ""}},
		OpenWaits: 2, Joins: []backend.NodeRef{{NodeID: id + "/j", ActivationID: id + "/ja"}},
	}
	group := backend.FanOutGroup{Controller: k, Size: 64, MaxConcurrency: 4, Promoted: 5, Settled: 6, Retiring: true, RetiredMS: 7, CreatedMS: 8, FanIn: true}
	att := backend.Attempt{
		Key: ak, Identity: id + "/identity", Status: backend.AttemptSiblingCancelling, SideEffect: backend.Mutating,
		Intent: big, IntentChecksum: "sha256:" + id, Receipt: []byte(`{"r":true}`), Handoff: backend.HandoffRecorded,
		Detail: []byte(`"detail"`), PreparedMS: 10, AdmittedMS: 11, TerminalMS: 12,
		HandoffToken: "0123456789abcdef0123456789abcdef/" + id,
	}
	lease := backend.Lease{Key: backend.LeaseKey{AttemptKey: ak, Resource: id + "/res", Mode: backend.LeaseWrite}, AcquiredMS: 13, ReleasedMS: 0}
	sched := backend.RetrySchedule{Key: k, FailedAttempt: 4294967294, NextAttempt: 4294967295, FailureKind: "timeout/" + id, BackoffMS: 250, DueMS: 1000, ScheduledMS: 750}
	ev := backend.Event{RunID: id, Seq: 1 << 62, Type: "attempt_prepared/" + id, Payload: big, CreatedMS: 14}
	return run, link, act, group, att, lease, sched, ev
}

func TestRoundTripEveryFieldByteExact(t *testing.T) {
	t.Parallel()
	for name, id := range map[string]string{"unicode": uniID, "512 bytes": longID, "ascii": "Run-A"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := newStore(t)
			big := bigJSON(1 << 20)
			run, link, act, group, att, lease, sched, ev := fullRecords(id, big)
			update(t, b, insertEvery(run, link, act, group, att, lease, sched, ev))
			check := func(r backend.ReadTx) {
				ctx := context.Background()
				f, err := r.Load(ctx, backend.Lookup{
					Runs: []string{run.ID}, Links: []string{link.ChildRunID},
					Activations: []backend.ActivationKey{act.Key}, Groups: []backend.ActivationKey{group.Controller},
					Attempts: []backend.AttemptKey{att.Key}, Identities: []string{att.Identity},
					Leases: []backend.LeaseKey{lease.Key}, Schedules: []backend.ActivationKey{sched.Key},
					Resources: []backend.ResourceRef{{RunID: id, Resource: lease.Key.Resource}},
				})
				require.NoError(t, err)
				require.Equal(t, run, f.Runs[run.ID])
				require.Equal(t, link, f.Links[link.ChildRunID])
				require.Equal(t, act, f.Activations[act.Key])
				require.Equal(t, group, f.Groups[group.Controller])
				require.Equal(t, att, f.Attempts[att.Key])
				require.Equal(t, att, f.Identities[att.Identity])
				require.Equal(t, lease, f.Leases[lease.Key])
				require.Equal(t, sched, f.Schedules[sched.Key])
				require.Equal(t, []backend.Lease{lease}, f.Resources[backend.ResourceRef{RunID: id, Resource: lease.Key.Resource}])
				evs, err := r.Events(ctx, backend.EventQuery{RunID: id, Limit: 10})
				require.NoError(t, err)
				require.Equal(t, []backend.Event{ev}, evs)
				require.Equal(t, big, f.Runs[run.ID].Metadata)
			}
			view(t, b, check)
			// Inside an Update too (the writer connection's statements).
			require.NoError(t, b.Update(context.Background(), func(tx backend.Tx) error { check(tx); return nil }))
		})
	}
}

func TestRoundTripNilAndEmptyFields(t *testing.T) {
	t.Parallel()
	b := newStore(t)
	k := akey("r", "n", "a")
	// nil JSON, nil slices, nil pointers, zero values.
	nils := backend.Activation{Key: k}
	// Empty but non-nil slices and JSON stay non-nil and empty.
	empties := backend.Activation{Key: akey("r", "n", "b"), Input: []byte{}, Output: []byte{},
		Claims: []backend.ResourceClaim{}, Predecessors: []backend.NodeRef{}, Group: &backend.GroupMember{}}
	run := backend.Run{ID: "r", Authority: &backend.Authority{}}
	runNil := backend.Run{ID: "s"}
	update(t, b, backend.Changes{Insert: backend.Inserts{Activations: []backend.Activation{nils, empties}, Runs: []backend.Run{run, runNil}}})
	view(t, b, func(r backend.ReadTx) {
		f, err := r.Load(context.Background(), backend.Lookup{
			Activations: []backend.ActivationKey{nils.Key, empties.Key}, Runs: []string{"r", "s"}})
		require.NoError(t, err)
		got := f.Activations[nils.Key]
		require.Equal(t, nils, got)
		require.Nil(t, got.Input)
		require.Nil(t, got.Claims)
		require.Nil(t, got.Group)
		got = f.Activations[empties.Key]
		require.Equal(t, empties, got)
		require.NotNil(t, got.Input)
		require.NotNil(t, got.Claims)
		require.NotNil(t, got.Predecessors)
		require.Equal(t, run, f.Runs["r"])
		require.NotNil(t, f.Runs["r"].Authority)
		require.Nil(t, f.Runs["s"].Authority)
	})
}

func TestLoadAbsentKeysAreNotErrors(t *testing.T) {
	t.Parallel()
	b := newStore(t)
	view(t, b, func(r backend.ReadTx) {
		f, err := r.Load(context.Background(), backend.Lookup{
			Runs: []string{"nope"}, Identities: []string{"nope"},
			Resources: []backend.ResourceRef{{RunID: "r", Resource: "x"}}})
		require.NoError(t, err)
		require.Empty(t, f.Runs)
		require.Empty(t, f.Identities)
		require.Empty(t, f.Resources)
		_, err = backend.GetRun(context.Background(), r, "nope")
		require.ErrorIs(t, err, backend.ErrNotFound)
	})
}
