package postgres_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/postgres"
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
		LastAttempt:   15, CreatedMS: 16, UpdatedMS: 17, AttemptTimeoutMS: 1 << 40,
		WaitFor:   []backend.NodeRef{{NodeID: "w1", ActivationID: "a1"}, {NodeID: idUnicode, ActivationID: id512}},
		OpenWaits: 2, Joins: []backend.NodeRef{{NodeID: "j1", ActivationID: ""}},
	}
	group := backend.FanOutGroup{Controller: ak, Size: 18, MaxConcurrency: 19, Promoted: 20, Settled: 21, Retiring: true, RetiredMS: 22, CreatedMS: 23, FanIn: true}
	att := backend.Attempt{
		Key: tk, Identity: "ident-" + runID + "-" + id512, Status: backend.AttemptSiblingCancelling, SideEffect: backend.ReadOnly,
		Intent: bigJSON(), IntentChecksum: "sha256:abc", Receipt: []byte(`{"r":"\u0000"}`), Handoff: backend.HandoffRecorded,
		Detail: []byte(`{}`), PreparedMS: 24, AdmittedMS: 25, TerminalMS: 26,
		HandoffToken: "a94a8fe5ccb19ba61c4c0873d391e987",
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
		apply(t, b, insertAll(run, link, act, group, att, lease, sched, ev))
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
	b, _, _ := openFresh(t, postgres.WithManyRowsFrom(2))
	ak := backend.ActivationKey{RunID: "r", NodeID: "n", ActivationID: "nil"}
	ek := backend.ActivationKey{RunID: "r", NodeID: "n", ActivationID: "empty"}
	nilAct := backend.Activation{Key: ak}
	emptyAct := backend.Activation{Key: ek, Input: []byte{}, Output: []byte{}, RetryPolicy: []byte{},
		Claims: []backend.ResourceClaim{}, Predecessors: []backend.NodeRef{}}
	run := backend.Run{ID: "r"}
	authRun := backend.Run{ID: "zero-authority", Authority: &backend.Authority{}}
	apply(t, b, backend.Changes{Insert: backend.Inserts{Runs: []backend.Run{run}, Activations: []backend.Activation{nilAct}}})
	apply(t, b, backend.Changes{Insert: backend.Inserts{Runs: []backend.Run{authRun}, Activations: []backend.Activation{emptyAct}}})
	// The same through the many-row statements.
	mk := func(a backend.Activation) backend.Activation { a.Key.RunID = "m"; return a }
	mRun, mAuthRun, mNilAct, mEmptyAct := backend.Run{ID: "m"}, backend.Run{ID: "m-zero-authority", Authority: &backend.Authority{}}, mk(nilAct), mk(emptyAct)
	apply(t, b, backend.Changes{Insert: backend.Inserts{Runs: []backend.Run{mRun, mAuthRun}, Activations: []backend.Activation{mNilAct, mEmptyAct}}})
	f := load(t, b, backend.Lookup{Runs: []string{"m", "m-zero-authority"}, Activations: []backend.ActivationKey{mNilAct.Key, mEmptyAct.Key}})
	require.Equal(t, mRun, f.Runs["m"])
	require.Equal(t, mAuthRun, f.Runs["m-zero-authority"])
	require.Equal(t, mNilAct, f.Activations[mNilAct.Key])
	require.Equal(t, mEmptyAct, f.Activations[mEmptyAct.Key])
	require.NotNil(t, f.Activations[mEmptyAct.Key].Claims)
	require.Nil(t, f.Activations[mNilAct.Key].Claims)

	f = load(t, b, backend.Lookup{Runs: []string{"r", "zero-authority"}, Activations: []backend.ActivationKey{ak, ek}})
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
	apply(t, b, backend.Changes{Insert: backend.Inserts{
		Runs: []backend.Run{run}, Activations: []backend.Activation{act}, Groups: []backend.FanOutGroup{group},
		Attempts: []backend.Attempt{att}, Leases: []backend.Lease{lease}, Schedules: []backend.RetrySchedule{sched},
	}})

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
	apply(t, b, backend.Changes{Replace: backend.Replaces{
		Runs: []backend.Run{run2}, Activations: []backend.Activation{act2}, Groups: []backend.FanOutGroup{group2},
		Attempts: []backend.Attempt{att2}, Leases: []backend.Lease{lease2}, Schedules: []backend.RetrySchedule{sched2},
	}})
	f := load(t, b, lookupAll(run, act, att, lease))
	require.Equal(t, run2, f.Runs[run.ID])
	require.Equal(t, act2, f.Activations[act.Key])
	require.Equal(t, group2, f.Groups[act.Key])
	require.Equal(t, att2, f.Attempts[att.Key])
	require.Empty(t, f.Identities, "old identity is gone")
	require.Equal(t, lease2, f.Leases[lease.Key])
	require.Empty(t, f.Resources, "a released lease is not active")
	require.Equal(t, sched2, f.Schedules[act.Key])

	apply(t, b, backend.Changes{Delete: backend.Deletes{Schedules: []backend.ActivationKey{act.Key}}})
	f = load(t, b, backend.Lookup{Schedules: []backend.ActivationKey{act.Key}})
	require.Empty(t, f.Schedules)
}

func TestWriteErrors(t *testing.T) {
	t.Parallel()
	b, _, _ := openFresh(t)
	run, link, act, group, att, lease, sched, ev := fullRecords("r")
	apply(t, b, insertAll(run, link, act, group, att, lease, sched, ev))

	try := func(c backend.Changes) error {
		return b.Update(ctxT(t), func(tx backend.Tx) error { return tx.Apply(context.Background(), c) })
	}
	for name, c := range map[string]backend.Inserts{
		"run": {Runs: []backend.Run{run}}, "link": {Links: []backend.RunLink{link}},
		"activation": {Activations: []backend.Activation{act}}, "group": {Groups: []backend.FanOutGroup{group}},
		"attempt": {Attempts: []backend.Attempt{att}}, "lease": {Leases: []backend.Lease{lease}},
		"schedule": {Schedules: []backend.RetrySchedule{sched}}, "event": {Events: []backend.Event{ev}},
	} {
		require.ErrorIs(t, try(backend.Changes{Insert: c}), backend.ErrConflict, name)
	}
	// Identity is unique too: a new key with a taken identity conflicts.
	att2 := att
	att2.Key.Attempt = 1
	require.ErrorIs(t, try(backend.Changes{Insert: backend.Inserts{Attempts: []backend.Attempt{att2}}}), backend.ErrConflict)
	// Replacing onto a taken identity conflicts as well.
	att3 := att
	att3.Key.Attempt, att3.Identity = 2, "other"
	apply(t, b, backend.Changes{Insert: backend.Inserts{Attempts: []backend.Attempt{att3}}})
	att3.Identity = att.Identity
	require.ErrorIs(t, try(backend.Changes{Replace: backend.Replaces{Attempts: []backend.Attempt{att3}}}), backend.ErrConflict)

	missing := backend.ActivationKey{RunID: "nope", NodeID: "n", ActivationID: "a"}
	for name, c := range map[string]backend.Replaces{
		"run": {Runs: []backend.Run{{ID: "nope"}}}, "activation": {Activations: []backend.Activation{{Key: missing}}},
		"group":    {Groups: []backend.FanOutGroup{{Controller: missing}}},
		"attempt":  {Attempts: []backend.Attempt{{Key: backend.AttemptKey{ActivationKey: missing}, Identity: "x"}}},
		"lease":    {Leases: []backend.Lease{{Key: backend.LeaseKey{AttemptKey: backend.AttemptKey{ActivationKey: missing}}}}},
		"schedule": {Schedules: []backend.RetrySchedule{{Key: missing}}},
	} {
		require.ErrorIs(t, try(backend.Changes{Replace: c}), backend.ErrNotFound, name)
	}
	for name, c := range map[string]backend.Deletes{
		"schedule": {Schedules: []backend.ActivationKey{missing}},
		"attempt":  {Attempts: []backend.AttemptKey{{ActivationKey: missing}}},
		"lease":    {Leases: []backend.LeaseKey{{AttemptKey: backend.AttemptKey{ActivationKey: missing}}}},
		"event":    {Events: []backend.EventKey{{RunID: "nope", Seq: 1}}},
	} {
		require.ErrorIs(t, try(backend.Changes{Delete: c}), backend.ErrNotFound, name)
	}
	changedRun := run
	changedRun.Depth++
	changedAct := act
	changedAct.Predecessors = changedAct.Predecessors[:1]
	changedAtt := att
	changedAtt.Receipt = nil
	for name, c := range map[string]backend.Expected{
		"run": {Runs: []backend.Run{changedRun}}, "missing run": {Runs: []backend.Run{{ID: "nope"}}},
		"activation": {Activations: []backend.Activation{changedAct}}, "attempt": {Attempts: []backend.Attempt{changedAtt}},
	} {
		require.ErrorIs(t, try(backend.Changes{Expect: c}), backend.ErrChanged, name)
	}
	require.NoError(t, try(backend.Changes{Expect: backend.Expected{
		Runs: []backend.Run{run}, Activations: []backend.Activation{act}, Attempts: []backend.Attempt{att}}}))
	// An empty Changes is no write at all.
	require.NoError(t, try(backend.Changes{}))
}

// A failing write in the middle of one Apply dooms the transaction, for
// every failing shape: the writes are deferred and fail the next read with
// their error kind; every later call fails, Update refuses to commit even
// when fn returns nil, and nothing of the transaction is stored. Each
// shape has a one-row and a many-row form.
func TestApplyFailureShapes(t *testing.T) {
	t.Parallel()
	b, _, _ := openFresh(t, postgres.WithManyRowsFrom(2))
	apply(t, b, insertRuns("exists"))
	exists := backend.Run{ID: "exists"}
	changed := backend.Run{ID: "exists", Depth: 1}
	type shape struct {
		// cs are applied in turn; before and after name runs they insert
		// around the failing write.
		cs   func(before, after string) []backend.Changes
		want error // nil: any error
	}
	shapes := map[string]shape{
		"conflict": {func(before, after string) []backend.Changes {
			return []backend.Changes{{Insert: backend.Inserts{Runs: []backend.Run{{ID: before}, exists, {ID: after}}}}}
		}, backend.ErrConflict},
		"conflict-one": {func(before, after string) []backend.Changes {
			return []backend.Changes{insertRuns(before), insertRuns("exists"), insertRuns(after)}
		}, backend.ErrConflict},
		"notfound": {func(before, after string) []backend.Changes {
			return []backend.Changes{{Insert: backend.Inserts{Runs: runs(before, after)}, Replace: backend.Replaces{Runs: runs(before, "absent", after)}}}
		}, backend.ErrNotFound},
		"notfound-one": {func(before, after string) []backend.Changes {
			return []backend.Changes{insertRuns(before), replaceRuns(backend.Run{ID: "absent"}), insertRuns(after)}
		}, backend.ErrNotFound},
		"changed": {func(before, after string) []backend.Changes {
			return []backend.Changes{insertRuns(before), {Expect: backend.Expected{Runs: []backend.Run{exists, changed}}}, insertRuns(after)}
		}, backend.ErrChanged},
		"changed-one": {func(before, after string) []backend.Changes {
			return []backend.Changes{insertRuns(before), {Expect: backend.Expected{Runs: []backend.Run{changed}}}, insertRuns(after)}
		}, backend.ErrChanged},
		"servererror": {func(before, after string) []backend.Changes {
			return []backend.Changes{insertRuns(before, "bad\x00nul", after)}
		}, nil},
		"servererror-one": {func(before, after string) []backend.Changes {
			return []backend.Changes{insertRuns(before), insertRuns("bad\x00nul"), insertRuns(after)}
		}, nil},
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
				for _, ch := range c.cs(before, after) {
					require.NoError(t, tx.Apply(context.Background(), ch), "%s: Apply defers", name)
				}
				if readFirst {
					_, err := tx.Load(context.Background(), backend.Lookup{Runs: []string{before, after}})
					is(err, "the next Load fails with the deferred write's error")
					_, err = tx.Load(context.Background(), backend.Lookup{Runs: []string{before}})
					require.Error(t, err, "%s: the transaction is doomed", name)
					require.Error(t, tx.Apply(context.Background(), insertRuns(later)), name)
				}
				return nil // breaks the contract on purpose: Update must refuse to commit
			})
			is(err, "Update")
			require.Empty(t, load(t, b, backend.Lookup{Runs: []string{before, after, later}}).Runs, name)
			f := load(t, b, backend.Lookup{Runs: []string{"exists"}})
			require.Equal(t, exists, f.Runs["exists"], name)
		}
	}
}
