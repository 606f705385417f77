package postgres_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
)

// Ids that must survive byte for byte: unicode, mixed case, 512 bytes.
var (
	idUnicode = "rün-☃-日本-\U0001F600"
	id512     = strings.Repeat("é", 255) + "xy" // 512 bytes
)

// bigJSON is 1 MiB of canonical JSON whose key order jsonb would change.
func bigJSON() []byte {
	var b bytes.Buffer
	b.WriteString(`{"z":1,"a":[`)
	for b.Len() < 1<<20-20 {
		b.WriteString(`"x\u00e9\"",`)
	}
	b.WriteString(`1.0],"b":{}}`)
	return b.Bytes()
}

func fullRecords(runID string) (backend.Run, backend.RunLink, backend.Activation, backend.FanOutGroup, backend.Attempt, backend.Lease, backend.RetrySchedule, backend.Event) {
	ak := backend.ActivationKey{RunID: runID, NodeID: "Node-" + idUnicode, ActivationID: id512}
	tk := backend.AttemptKey{ActivationKey: ak, Attempt: 4294967295}
	run := backend.Run{
		ID: runID, RootID: "root-" + runID, ParentID: "parent", Depth: 3, Status: backend.RunRepairRequired,
		Limits:     backend.Limits{NodeExecutionCap: 1, ConcurrencyCap: 2, CycleCap: 3, RetryCap: 4},
		DeadlineMS: 1e12, CancelRequestedMS: 2e12,
		Authority: &backend.Authority{TargetArtifactID: "tgt", DaemonInstanceID: "d", Generation: 9, FencingToken: "tok"},
		Metadata:  []byte(`{"z":1,"a":2}`), CreatedMS: 5, UpdatedMS: 6, LastEventSeq: 7,
		AttemptCount: 8, ActiveCount: 9, TreeAttemptCount: 10, DescendantCount: 11, ExhaustionRecorded: true,
	}
	link := backend.RunLink{ChildRunID: runID, RootRunID: "root-" + runID, Parent: tk, Target: []byte(`{"b":1,"a":1}`), Depth: 2, CreatedMS: 12}
	act := backend.Activation{
		Key: ak, Generation: 13, Status: backend.ActivationPending, Admissible: true,
		Input: bigJSON(), Output: []byte(`[1.0,1e2]`),
		Claims: []backend.ResourceClaim{{Resource: "r☃", Mode: backend.LeaseWrite}, {Resource: "R", Mode: backend.LeaseRead}},
		Effect: backend.Mutating, Reconciliation: backend.ReceiptStatus, RetryPolicy: []byte(`{"max":3}`),
		Predecessors:  []backend.NodeRef{{NodeID: "p1", ActivationID: "a1"}, {NodeID: idUnicode, ActivationID: id512}},
		HasSuccessors: true,
		Group:         &backend.GroupMember{Controller: backend.ActivationKey{RunID: runID, NodeID: "ctl", ActivationID: "c"}, Index: 14},
		LastAttempt:   15, CreatedMS: 16, UpdatedMS: 17,
	}
	group := backend.FanOutGroup{Controller: ak, Size: 18, MaxConcurrency: 19, Promoted: 20, Settled: 21, Retiring: true, RetiredMS: 22, CreatedMS: 23}
	att := backend.Attempt{
		Key: tk, Identity: "ident-" + runID + "-" + id512, Status: backend.AttemptSiblingCancelling, SideEffect: backend.ReadOnly,
		Intent: bigJSON(), IntentChecksum: "sha256:abc", Receipt: []byte(`{"r":"\u0000"}`), Handoff: backend.HandoffRecorded,
		Detail: []byte(`{}`), PreparedMS: 24, AdmittedMS: 25, TerminalMS: 26,
	}
	lease := backend.Lease{Key: backend.LeaseKey{AttemptKey: tk, Resource: "r☃", Mode: backend.LeaseWrite}, AcquiredMS: 27, ReleasedMS: 0}
	sched := backend.RetrySchedule{Key: ak, FailedAttempt: 28, NextAttempt: 29, FailureKind: "timeout", BackoffMS: 30, DueMS: 31, ScheduledMS: 32}
	ev := backend.Event{RunID: runID, Seq: 33, Type: "attempt_prepared", Payload: []byte(`{"k":[]}`), CreatedMS: 34}
	return run, link, act, group, att, lease, sched, ev
}

func lookupAll(run backend.Run, act backend.Activation, att backend.Attempt, lease backend.Lease) backend.Lookup {
	return backend.Lookup{
		Runs:        []string{run.ID, "missing"},
		Links:       []string{run.ID, "missing"},
		Activations: []backend.ActivationKey{act.Key, {RunID: "missing"}},
		Groups:      []backend.ActivationKey{act.Key},
		Attempts:    []backend.AttemptKey{att.Key, {Attempt: 1}},
		Identities:  []string{att.Identity, "missing"},
		Leases:      []backend.LeaseKey{lease.Key},
		Schedules:   []backend.ActivationKey{act.Key},
		Resources:   []backend.ResourceRef{{RunID: run.ID, Resource: lease.Key.Resource}, {RunID: run.ID, Resource: lease.Key.Resource}, {RunID: run.ID, Resource: "none"}},
	}
}

func TestRoundTripEveryFieldByteExact(t *testing.T) {
	t.Parallel()
	b, _, _ := openFresh(t)
	for _, runID := range []string{idUnicode, id512, "Plain"} {
		run, link, act, group, att, lease, sched, ev := fullRecords(runID)
		apply(t, b, backend.Ins(run), backend.Ins(link), backend.Ins(act), backend.Ins(group),
			backend.Ins(att), backend.Ins(lease), backend.Ins(sched), backend.Ins(ev))
		f := load(t, b, lookupAll(run, act, att, lease))
		require.Equal(t, map[string]backend.Run{run.ID: run}, f.Runs)
		require.Equal(t, map[string]backend.RunLink{run.ID: link}, f.Links)
		require.Equal(t, map[backend.ActivationKey]backend.Activation{act.Key: act}, f.Activations)
		require.True(t, bytes.Equal(act.Input, f.Activations[act.Key].Input), "1 MiB JSON byte for byte")
		require.Equal(t, map[backend.ActivationKey]backend.FanOutGroup{act.Key: group}, f.Groups)
		require.Equal(t, map[backend.AttemptKey]backend.Attempt{att.Key: att}, f.Attempts)
		require.Equal(t, map[string]backend.Attempt{att.Identity: att}, f.Identities)
		require.Equal(t, map[backend.LeaseKey]backend.Lease{lease.Key: lease}, f.Leases)
		require.Equal(t, map[backend.ActivationKey]backend.RetrySchedule{act.Key: sched}, f.Schedules)
		require.Equal(t, map[backend.ResourceRef][]backend.Lease{{RunID: run.ID, Resource: lease.Key.Resource}: {lease}}, f.Resources)

		var evs []backend.Event
		require.NoError(t, b.View(ctxT(t), func(r backend.ReadTx) error {
			var err error
			evs, err = r.Events(context.Background(), backend.EventQuery{RunID: run.ID, Limit: 10})
			return err
		}))
		require.Equal(t, []backend.Event{ev}, evs)
	}
}

// Nil and empty are different values and both survive; zero records too.
func TestRoundTripNilEmptyAndZero(t *testing.T) {
	t.Parallel()
	b, _, _ := openFresh(t)
	ak := backend.ActivationKey{RunID: "r", NodeID: "n", ActivationID: "nil"}
	ek := backend.ActivationKey{RunID: "r", NodeID: "n", ActivationID: "empty"}
	nilAct := backend.Activation{Key: ak}
	emptyAct := backend.Activation{Key: ek, Input: []byte{}, Output: []byte{}, RetryPolicy: []byte{},
		Claims: []backend.ResourceClaim{}, Predecessors: []backend.NodeRef{}}
	run := backend.Run{ID: "r"}
	authRun := backend.Run{ID: "zero-authority", Authority: &backend.Authority{}}
	apply(t, b, backend.Ins(run), backend.Ins(authRun), backend.Ins(nilAct), backend.Ins(emptyAct))
	f := load(t, b, backend.Lookup{Runs: []string{"r", "zero-authority"}, Activations: []backend.ActivationKey{ak, ek}})
	require.Equal(t, run, f.Runs["r"])
	require.Equal(t, authRun, f.Runs["zero-authority"])
	require.Equal(t, nilAct, f.Activations[ak])
	require.Equal(t, emptyAct, f.Activations[ek])
	require.NotNil(t, f.Activations[ek].Input)
	require.NotNil(t, f.Activations[ek].Claims)
	require.Nil(t, f.Activations[ak].Input)
	require.Nil(t, f.Activations[ak].Claims)
}

func TestReplaceAndDelete(t *testing.T) {
	t.Parallel()
	b, _, _ := openFresh(t)
	run, _, act, group, att, lease, sched, _ := fullRecords("r")
	apply(t, b, backend.Ins(run), backend.Ins(act), backend.Ins(group), backend.Ins(att), backend.Ins(lease), backend.Ins(sched))

	run2 := run
	run2.Authority, run2.Metadata, run2.Status, run2.AttemptCount = nil, nil, backend.RunRunning, 99
	act2 := act
	act2.Group, act2.Claims, act2.Predecessors, act2.Admissible, act2.Input = nil, nil, nil, false, []byte(`1`)
	group2 := group
	group2.Promoted = 1000
	att2 := att
	att2.Identity, att2.Receipt, att2.Status = "new-identity", nil, backend.AttemptSucceeded
	lease2 := lease
	lease2.ReleasedMS = 77
	sched2 := sched
	sched2.DueMS = 1
	apply(t, b, backend.Rep(run2), backend.Rep(act2), backend.Rep(group2), backend.Rep(att2), backend.Rep(lease2), backend.Rep(sched2))
	f := load(t, b, lookupAll(run, act, att, lease))
	require.Equal(t, run2, f.Runs[run.ID])
	require.Equal(t, act2, f.Activations[act.Key])
	require.Equal(t, group2, f.Groups[act.Key])
	require.Equal(t, att2, f.Attempts[att.Key])
	require.Empty(t, f.Identities, "old identity is gone")
	require.Equal(t, lease2, f.Leases[lease.Key])
	require.Empty(t, f.Resources, "a released lease is not active")
	require.Equal(t, sched2, f.Schedules[act.Key])

	apply(t, b, backend.Del(backend.RetrySchedule{Key: act.Key}))
	f = load(t, b, backend.Lookup{Schedules: []backend.ActivationKey{act.Key}})
	require.Empty(t, f.Schedules)
}

func TestWriteErrors(t *testing.T) {
	t.Parallel()
	b, _, _ := openFresh(t)
	run, link, act, group, att, lease, sched, ev := fullRecords("r")
	apply(t, b, backend.Ins(run), backend.Ins(link), backend.Ins(act), backend.Ins(group), backend.Ins(att), backend.Ins(lease), backend.Ins(sched), backend.Ins(ev))

	try := func(ws ...backend.Write) error {
		return b.Update(ctxT(t), func(tx backend.Tx) error { return tx.Apply(context.Background(), ws...) })
	}
	for _, rec := range []backend.Record{run, link, act, group, att, lease, sched, ev} {
		require.ErrorIs(t, try(backend.Ins(rec)), backend.ErrConflict, rec.Kind())
	}
	// Identity is unique too: a new key with a taken identity conflicts.
	att2 := att
	att2.Key.Attempt = 1
	require.ErrorIs(t, try(backend.Ins(att2)), backend.ErrConflict)
	// Replacing onto a taken identity conflicts as well.
	att3 := att
	att3.Key.Attempt, att3.Identity = 2, "other"
	apply(t, b, backend.Ins(att3))
	att3.Identity = att.Identity
	require.ErrorIs(t, try(backend.Rep(att3)), backend.ErrConflict)

	missing := backend.ActivationKey{RunID: "nope", NodeID: "n", ActivationID: "a"}
	for _, rec := range []backend.Record{
		backend.Run{ID: "nope"}, backend.Activation{Key: missing}, backend.FanOutGroup{Controller: missing},
		backend.Attempt{Key: backend.AttemptKey{ActivationKey: missing}, Identity: "x"},
		backend.Lease{Key: backend.LeaseKey{AttemptKey: backend.AttemptKey{ActivationKey: missing}}},
		backend.RetrySchedule{Key: missing},
	} {
		require.ErrorIs(t, try(backend.Rep(rec)), backend.ErrNotFound, rec.Kind())
	}
	for _, rec := range []backend.Record{
		backend.RetrySchedule{Key: missing}, backend.Attempt{Key: backend.AttemptKey{ActivationKey: missing}},
		backend.Lease{Key: backend.LeaseKey{AttemptKey: backend.AttemptKey{ActivationKey: missing}}},
		backend.Event{RunID: "nope", Seq: 1},
	} {
		require.ErrorIs(t, try(backend.Del(rec)), backend.ErrNotFound, rec.Kind())
	}

	for _, w := range []backend.Write{
		backend.Rep(link), backend.Rep(ev), backend.Del(run), backend.Del(link), backend.Del(act),
		backend.Del(group),
		{Op: 0, Record: run}, {Op: 9, Record: sched}, {Op: backend.Insert, Record: nil}, {Op: backend.Insert, Record: &run},
	} {
		require.ErrorIs(t, try(w), backend.ErrUnsupported, "%v %T", w.Op, w.Record)
	}
}

// A failing write in the middle of one Apply dooms the transaction, for
// every failing shape: Apply refuses an unsupported write at once, the
// others are deferred and fail the next read with their error kind; every
// later call fails, Update refuses to commit even when fn returns nil, and
// nothing of the transaction is stored.
func TestApplyFailureShapes(t *testing.T) {
	t.Parallel()
	b, _, _ := openFresh(t)
	apply(t, b, backend.Ins(backend.Run{ID: "exists"}))
	shapes := map[string]struct {
		w    backend.Write
		want error // nil: any error
	}{
		"conflict":    {backend.Ins(backend.Run{ID: "exists"}), backend.ErrConflict},
		"notfound":    {backend.Rep(backend.Run{ID: "absent"}), backend.ErrNotFound},
		"unsupported": {backend.Write{Op: backend.Delete, Record: backend.Run{ID: "x"}}, backend.ErrUnsupported},
		"servererror": {backend.Ins(backend.Run{ID: "bad\x00nul"}), nil},
	}
	for name, c := range shapes {
		is := func(err error, msg string) {
			t.Helper()
			require.Error(t, err, "%s: %s", name, msg)
			if c.want != nil {
				require.ErrorIs(t, err, c.want, "%s: %s", name, msg)
			}
		}
		before, after, later := name+"-before", name+"-after", name+"-later"
		for _, readFirst := range []bool{true, false} {
			err := b.Update(ctxT(t), func(tx backend.Tx) error {
				err := tx.Apply(context.Background(), backend.Ins(backend.Run{ID: before}), c.w, backend.Ins(backend.Run{ID: after}))
				if c.want == backend.ErrUnsupported {
					is(err, "Apply refuses at once")
				} else {
					require.NoError(t, err, "%s: Apply defers", name)
					if readFirst {
						_, err = tx.Load(context.Background(), backend.Lookup{Runs: []string{before, after}})
						is(err, "the next Load fails with the deferred write's error")
					}
				}
				if readFirst {
					_, err = tx.Load(context.Background(), backend.Lookup{Runs: []string{before}})
					require.Error(t, err, "%s: the transaction is doomed", name)
					require.Error(t, tx.Apply(context.Background(), backend.Ins(backend.Run{ID: later})), name)
				}
				return nil // breaks the contract on purpose: Update must refuse to commit
			})
			is(err, "Update")
			require.Empty(t, load(t, b, backend.Lookup{Runs: []string{before, after, later}}).Runs, name)
		}
	}
}
