package bolt

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
)

// fullRecords returns one record of every kind with every field set, ids
// built from id.
func fullRecords(id string, json []byte) (backend.Run, backend.RunLink, backend.Activation, backend.FanOutGroup, backend.Attempt, backend.Lease, backend.RetrySchedule, backend.Event) {
	ak := actKey(id+"r", id+"n", id+"a")
	tk := backend.AttemptKey{ActivationKey: ak, Attempt: 4294967295}
	run := backend.Run{
		ID: id + "r", RootID: id + "root", ParentID: id + "parent", Depth: 3, Status: backend.RunRepairRequired,
		Limits:     backend.Limits{NodeExecutionCap: 1, ConcurrencyCap: 2, CycleCap: 3, RetryCap: -4},
		DeadlineMS: 1 << 62, CancelRequestedMS: -5,
		Authority: &backend.Authority{TargetArtifactID: id + "t", DaemonInstanceID: id + "d", Generation: 9, FencingToken: id + "f"},
		Metadata:  json, CreatedMS: 11, UpdatedMS: 12, LastEventSeq: 13, AttemptCount: 14, ActiveCount: 15,
		TreeAttemptCount: 16, DescendantCount: 17, ExhaustionRecorded: true,
	}
	lnk := backend.RunLink{ChildRunID: id + "child", RootRunID: id + "root", Parent: tk, Target: json, Depth: 2, CreatedMS: 21}
	act := backend.Activation{
		Key: ak, Generation: 31, Status: backend.ActivationWaiting, Admissible: true, Input: json, Output: []byte(`[1.0]`),
		Claims: []backend.ResourceClaim{{Resource: id + "res", Mode: backend.LeaseWrite}, {Resource: "", Mode: backend.LeaseRead}},
		Effect: backend.ReadOnly, Reconciliation: backend.ReceiptStatus, RetryPolicy: []byte(`{"max":3}`),
		Predecessors: []backend.NodeRef{{NodeID: id + "p", ActivationID: id + "q"}}, HasSuccessors: true,
		Group:       &backend.GroupMember{Controller: actKey(id+"r", id+"ctl", id+"c"), Index: 7},
		LastAttempt: 4294967295, CreatedMS: 32, UpdatedMS: 33, AttemptTimeoutMS: 34,
		WaitFor:   []backend.NodeRef{{NodeID: id + "w", ActivationID: id + "x"}, {NodeID: id + "wz", ActivationID: ""}},
		OpenWaits: 35, Joins: []backend.NodeRef{{NodeID: id + "j", ActivationID: id + "k"}},
	}
	grp := backend.FanOutGroup{Controller: ak, Size: 41, MaxConcurrency: 42, Promoted: 43, Settled: 44, Retiring: true, RetiredMS: 45, CreatedMS: 46, FanIn: true}
	att := backend.Attempt{
		Key: tk, Identity: id + "ident", Status: backend.AttemptSiblingCancelling, SideEffect: backend.Mutating,
		Intent: json, IntentChecksum: id + "sum", Receipt: []byte(`"r"`), Handoff: backend.HandoffRecorded,
		Detail: []byte(`null`), PreparedMS: -51, AdmittedMS: 52, TerminalMS: 53, HandoffToken: id + "token",
	}
	ls := backend.Lease{Key: backend.LeaseKey{AttemptKey: tk, Resource: id + "res", Mode: backend.LeaseWrite}, AcquiredMS: 61, ReleasedMS: 0}
	sch := backend.RetrySchedule{Key: ak, FailedAttempt: 71, NextAttempt: 72, FailureKind: id + "kind", BackoffMS: 73, DueMS: 74, ScheduledMS: 75}
	ev := backend.Event{RunID: id + "r", Seq: 81, Type: id + "type", Payload: json, CreatedMS: 82}
	return run, lnk, act, grp, att, ls, sch, ev
}

func TestRoundTripEveryField(t *testing.T) {
	t.Parallel()
	big := []byte(`"` + strings.Repeat("x", 1<<20-2) + `"`) // 1 MiB of JSON
	cases := map[string]struct {
		id   string
		json []byte
	}{
		"ascii":        {"plain-", []byte(`{"a":1}`)},
		"unicode":      {"ünï-çødé-日本-🙂-", []byte(`{"é":"🙂"}`)},
		"512-byte ids": {strings.Repeat("é", 253) + "x", []byte(`[]`)}, // identity is exactly 512 bytes
		"escape bytes": {"a\x00\x01\xff", []byte(`{}`)},
		"1 MiB json":   {"big-", big},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "rt.db")
			ctx := context.Background()
			b, err := Open(ctx, path, WithRelaxedDurability())
			require.NoError(t, err)
			run, lnk, act, grp, att, ls, sch, ev := fullRecords(c.id, c.json)
			apply(t, b, backend.Changes{Insert: backend.Inserts{
				Runs: []backend.Run{run}, Links: []backend.RunLink{lnk}, Activations: []backend.Activation{act},
				Groups: []backend.FanOutGroup{grp}, Attempts: []backend.Attempt{att}, Leases: []backend.Lease{ls},
				Schedules: []backend.RetrySchedule{sch}, Events: []backend.Event{ev},
			}})
			require.NoError(t, b.Close())

			// Read back after reopening: the bytes on disk, not a cache.
			b, err = Open(ctx, path, WithRelaxedDurability())
			require.NoError(t, err)
			defer b.Close()
			view(t, b, func(ctx context.Context, r backend.ReadTx) {
				f, err := r.Load(ctx, backend.Lookup{
					Runs: []string{run.ID}, Links: []string{lnk.ChildRunID}, Activations: []backend.ActivationKey{act.Key},
					Groups: []backend.ActivationKey{grp.Controller}, Attempts: []backend.AttemptKey{att.Key},
					Identities: []string{att.Identity}, Leases: []backend.LeaseKey{ls.Key}, Schedules: []backend.ActivationKey{sch.Key},
					Resources: []backend.ResourceRef{{RunID: ls.Key.RunID, Resource: ls.Key.Resource}},
				})
				require.NoError(t, err)
				require.Equal(t, run, f.Runs[run.ID])
				require.Equal(t, lnk, f.Links[lnk.ChildRunID])
				require.Equal(t, act, f.Activations[act.Key])
				require.Equal(t, grp, f.Groups[grp.Controller])
				require.Equal(t, att, f.Attempts[att.Key])
				require.Equal(t, att, f.Identities[att.Identity])
				require.Equal(t, ls, f.Leases[ls.Key])
				require.Equal(t, sch, f.Schedules[sch.Key])
				require.Equal(t, []backend.Lease{ls}, f.Resources[backend.ResourceRef{RunID: ls.Key.RunID, Resource: ls.Key.Resource}])

				evs, err := r.Events(ctx, backend.EventQuery{RunID: ev.RunID, Limit: 10})
				require.NoError(t, err)
				require.Equal(t, []backend.Event{ev}, evs)
				acts, err := r.AdmissibleActivations(ctx, backend.AdmissibleQuery{RunID: act.Key.RunID, Limit: 10})
				require.NoError(t, err)
				require.Equal(t, []backend.Activation{act}, acts)
			})
			require.NoError(t, b.Verify(ctx))
		})
	}
}

// Nil and empty are different values; both read back as written.
func TestRoundTripNilAndEmpty(t *testing.T) {
	t.Parallel()
	b := openTemp(t)
	withNil := activation(actKey("r", "n", "nil"), false)
	withNil.Input, withNil.Output, withNil.Claims, withNil.Predecessors, withNil.Group = nil, nil, nil, nil, nil
	withEmpty := activation(actKey("r", "n", "empty"), false)
	withEmpty.Input, withEmpty.Output = []byte{}, []byte{}
	withEmpty.Claims, withEmpty.Predecessors = []backend.ResourceClaim{}, []backend.NodeRef{}
	var zeroRun backend.Run // every field zero, Authority nil
	apply(t, b, backend.Changes{Insert: backend.Inserts{Runs: []backend.Run{zeroRun}, Activations: []backend.Activation{withNil, withEmpty}}})
	view(t, b, func(ctx context.Context, r backend.ReadTx) {
		f, err := r.Load(ctx, backend.Lookup{Activations: []backend.ActivationKey{withNil.Key, withEmpty.Key}, Runs: []string{""}})
		require.NoError(t, err)
		require.Equal(t, withNil, f.Activations[withNil.Key])
		require.Equal(t, withEmpty, f.Activations[withEmpty.Key])
		require.NotNil(t, f.Activations[withEmpty.Key].Input)
		require.Nil(t, f.Activations[withNil.Key].Claims)
		require.Equal(t, zeroRun, f.Runs[""])
	})
}
