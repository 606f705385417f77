package sqlite

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/wfstore/wfstore/backend"
	"modernc.org/sqlite"
)

// applyErr runs one Apply in an Update whose fn returns nil when Apply
// succeeds and the Apply error otherwise.
func applyErr(b *Backend, c backend.Changes) error {
	return b.Update(context.Background(), func(tx backend.Tx) error {
		return tx.Apply(context.Background(), c)
	})
}

// insertEvery returns the insert of one record of every kind.
func insertEvery(run backend.Run, link backend.RunLink, act backend.Activation, group backend.FanOutGroup,
	att backend.Attempt, lease backend.Lease, sched backend.RetrySchedule, ev backend.Event) backend.Changes {
	return backend.Changes{Insert: backend.Inserts{
		Runs: []backend.Run{run}, Links: []backend.RunLink{link}, Activations: []backend.Activation{act},
		Groups: []backend.FanOutGroup{group}, Attempts: []backend.Attempt{att}, Leases: []backend.Lease{lease},
		Schedules: []backend.RetrySchedule{sched}, Events: []backend.Event{ev},
	}}
}

func TestInsertExistingKeyConflicts(t *testing.T) {
	t.Parallel()
	b := newStore(t)
	run, link, act, group, att, lease, sched, ev := fullRecords("r", []byte(`{}`))
	update(t, b, insertEvery(run, link, act, group, att, lease, sched, ev))
	for name, in := range map[string]backend.Inserts{
		"run":        {Runs: []backend.Run{run}},
		"link":       {Links: []backend.RunLink{link}},
		"activation": {Activations: []backend.Activation{act}},
		"group":      {Groups: []backend.FanOutGroup{group}},
		"attempt":    {Attempts: []backend.Attempt{att}},
		"lease":      {Leases: []backend.Lease{lease}},
		"schedule":   {Schedules: []backend.RetrySchedule{sched}},
		"event":      {Events: []backend.Event{ev}},
	} {
		err := applyErr(b, backend.Changes{Insert: in})
		require.ErrorIs(t, err, backend.ErrConflict, name)
	}
}

func TestInsertAttemptWithExistingIdentityConflicts(t *testing.T) {
	t.Parallel()
	b := newStore(t)
	k := akey("r", "n", "a")
	update(t, b, insertAttempts(attempt(k, 1, "id-1", backend.AttemptPrepared, 1)))
	err := applyErr(b, insertAttempts(attempt(k, 2, "id-1", backend.AttemptPrepared, 2)))
	require.ErrorIs(t, err, backend.ErrConflict)

	// Two attempts of one Insert slice with the same identity conflict too.
	err = applyErr(b, insertAttempts(attempt(k, 2, "id-2", backend.AttemptPrepared, 2), attempt(k, 3, "id-2", backend.AttemptPrepared, 3)))
	require.ErrorIs(t, err, backend.ErrConflict)
	require.ErrorContains(t, err, "Insert.Attempts[1]")

	// Replace onto another attempt's identity conflicts too, and the driver
	// error stays reachable.
	update(t, b, insertAttempts(attempt(k, 2, "id-2", backend.AttemptPrepared, 2)))
	err = applyErr(b, replaceAttempts(attempt(k, 2, "id-1", backend.AttemptPrepared, 2)))
	require.ErrorIs(t, err, backend.ErrConflict)
	var se *sqlite.Error
	require.True(t, errors.As(err, &se), "driver error reachable: %v", err)
}

func TestReplaceAndDeleteMissingKeyNotFound(t *testing.T) {
	t.Parallel()
	b := newStore(t)
	run, _, act, group, att, lease, sched, ev := fullRecords("r", []byte(`{}`))
	for name, rep := range map[string]backend.Replaces{
		"run":        {Runs: []backend.Run{run}},
		"activation": {Activations: []backend.Activation{act}},
		"group":      {Groups: []backend.FanOutGroup{group}},
		"attempt":    {Attempts: []backend.Attempt{att}},
		"lease":      {Leases: []backend.Lease{lease}},
		"schedule":   {Schedules: []backend.RetrySchedule{sched}},
	} {
		require.ErrorIs(t, applyErr(b, backend.Changes{Replace: rep}), backend.ErrNotFound, name)
	}
	for name, del := range map[string]backend.Deletes{
		"event":    {Events: []backend.EventKey{ev.Key()}},
		"schedule": {Schedules: []backend.ActivationKey{sched.Key}},
		"lease":    {Leases: []backend.LeaseKey{lease.Key}},
		"attempt":  {Attempts: []backend.AttemptKey{att.Key}},
	} {
		require.ErrorIs(t, applyErr(b, backend.Changes{Delete: del}), backend.ErrNotFound, name)
	}
}

func TestReplaceOverwritesEveryFieldAndDeleteRemoves(t *testing.T) {
	t.Parallel()
	b := newStore(t)
	ctx := context.Background()
	run, link, act, group, att, lease, sched, ev := fullRecords("r", []byte(`{"a":1}`))
	update(t, b, insertEvery(run, link, act, group, att, lease, sched, ev))

	run2 := backend.Run{ID: run.ID, Status: backend.RunCompleted} // every other field zeroed
	act2 := backend.Activation{Key: act.Key, Status: backend.ActivationCompleted, Output: []byte(`1`)}
	group2 := backend.FanOutGroup{Controller: group.Controller, Size: 1}
	att2 := att
	att2.Identity, att2.Receipt, att2.Detail, att2.Status = "other-identity", nil, nil, backend.AttemptSucceeded
	lease2 := lease
	lease2.ReleasedMS = 77
	sched2 := backend.RetrySchedule{Key: sched.Key, DueMS: 5}
	update(t, b, backend.Changes{Replace: backend.Replaces{
		Runs: []backend.Run{run2}, Activations: []backend.Activation{act2}, Groups: []backend.FanOutGroup{group2},
		Attempts: []backend.Attempt{att2}, Leases: []backend.Lease{lease2}, Schedules: []backend.RetrySchedule{sched2},
	}})
	view(t, b, func(r backend.ReadTx) {
		f, err := r.Load(ctx, backend.Lookup{
			Runs: []string{run.ID}, Activations: []backend.ActivationKey{act.Key}, Groups: []backend.ActivationKey{group.Controller},
			Attempts: []backend.AttemptKey{att.Key}, Identities: []string{att.Identity, att2.Identity},
			Leases: []backend.LeaseKey{lease.Key}, Schedules: []backend.ActivationKey{sched.Key}})
		require.NoError(t, err)
		require.Equal(t, run2, f.Runs[run.ID])
		require.Equal(t, act2, f.Activations[act.Key])
		require.Equal(t, group2, f.Groups[group.Controller])
		require.Equal(t, att2, f.Attempts[att.Key])
		require.NotContains(t, f.Identities, att.Identity)
		require.Equal(t, att2, f.Identities[att2.Identity])
		require.Equal(t, lease2, f.Leases[lease.Key])
		require.Equal(t, sched2, f.Schedules[sched.Key])
	})

	// Deletes name keys alone and remove the rows from Load and scans.
	update(t, b, backend.Changes{Delete: backend.Deletes{
		Events: []backend.EventKey{ev.Key()}, Schedules: []backend.ActivationKey{sched.Key},
		Leases: []backend.LeaseKey{lease.Key}, Attempts: []backend.AttemptKey{att.Key},
	}})
	view(t, b, func(r backend.ReadTx) {
		f, err := r.Load(ctx, backend.Lookup{
			Attempts: []backend.AttemptKey{att.Key}, Identities: []string{att2.Identity},
			Leases: []backend.LeaseKey{lease.Key}, Schedules: []backend.ActivationKey{sched.Key},
			Resources: []backend.ResourceRef{{RunID: lease.Key.RunID, Resource: lease.Key.Resource}}})
		require.NoError(t, err)
		require.Empty(t, f.Attempts)
		require.Empty(t, f.Identities)
		require.Empty(t, f.Leases)
		require.Empty(t, f.Schedules)
		require.Empty(t, f.Resources)
		evs, err := r.Events(ctx, backend.EventQuery{RunID: ev.RunID, Limit: 5})
		require.NoError(t, err)
		require.Empty(t, evs)
		atts, err := r.Attempts(ctx, backend.AttemptQuery{Limit: 5})
		require.NoError(t, err)
		require.Empty(t, atts)
		leases, err := r.Leases(ctx, backend.LeaseQuery{RunID: lease.Key.RunID, IncludeReleased: true, Limit: 5})
		require.NoError(t, err)
		require.Empty(t, leases)
		due, err := r.DueSchedules(ctx, backend.ScheduleQuery{RunID: sched.Key.RunID, DueBy: 1 << 62, Limit: 5})
		require.NoError(t, err)
		require.Empty(t, due)
	})
}

func TestApplyStopsAtFirstFailureAndLaterReadsSeeWrites(t *testing.T) {
	t.Parallel()
	b := newStore(t)
	update(t, b, insertRuns(backend.Run{ID: "a"}))
	ctx := context.Background()
	require.NoError(t, b.Update(ctx, func(tx backend.Tx) error {
		err := tx.Apply(ctx, backend.Changes{
			Insert:  backend.Inserts{Runs: []backend.Run{{ID: "b"}, {ID: "a"}, {ID: "c"}}},
			Replace: backend.Replaces{Runs: []backend.Run{{ID: "b", Depth: 7}}},
		})
		require.ErrorIs(t, err, backend.ErrConflict)
		require.ErrorContains(t, err, "Insert.Runs[1]")
		f, err := tx.Load(ctx, backend.Lookup{Runs: []string{"a", "b", "c"}})
		require.NoError(t, err)
		require.Equal(t, backend.Run{ID: "b"}, f.Runs["b"]) // applied before the failure
		require.NotContains(t, f.Runs, "c")                 // after it: neither the rest of the slice
		// A conflict detected by the adapter leaves the transaction usable.
		return tx.Apply(ctx, insertRuns(backend.Run{ID: "d"}))
	}))
	view(t, b, func(r backend.ReadTx) {
		f, err := r.Load(context.Background(), backend.Lookup{Runs: []string{"b", "c", "d"}})
		require.NoError(t, err)
		require.Len(t, f.Runs, 2)
		require.Zero(t, f.Runs["b"].Depth, "nor the later slices")
	})
	require.NoError(t, applyErr(b, backend.Changes{}), "empty Changes")
}

// The first failing operation in the fixed order is the one reported,
// whatever the order of the fields in the literal: expects, then deletes
// (events, schedules, leases, attempts), then inserts (runs, links,
// activations, groups, attempts, leases, schedules, events), then
// replaces (runs, activations, groups, attempts, leases, schedules).
func TestApplyReportsTheFirstFailureInTheFixedOrder(t *testing.T) {
	t.Parallel()
	b := newStore(t)
	run, link, act, group, att, lease, sched, ev := fullRecords("r", []byte(`{}`))
	update(t, b, insertEvery(run, link, act, group, att, lease, sched, ev))
	missing := fullRecordsKeysOnly("missing")
	// Each step adds one failing operation that comes before every
	// failure added so far; the error must name the newest one.
	steps := []struct {
		name string
		add  func(c *backend.Changes)
	}{
		{"Replace.Schedules[0]", func(c *backend.Changes) { c.Replace.Schedules = []backend.RetrySchedule{missing.sched} }},
		{"Replace.Leases[0]", func(c *backend.Changes) { c.Replace.Leases = []backend.Lease{missing.lease} }},
		{"Replace.Attempts[0]", func(c *backend.Changes) { c.Replace.Attempts = []backend.Attempt{missing.att} }},
		{"Replace.Groups[0]", func(c *backend.Changes) { c.Replace.Groups = []backend.FanOutGroup{missing.group} }},
		{"Replace.Activations[0]", func(c *backend.Changes) { c.Replace.Activations = []backend.Activation{missing.act} }},
		{"Replace.Runs[0]", func(c *backend.Changes) { c.Replace.Runs = []backend.Run{missing.run} }},
		{"Insert.Events[0]", func(c *backend.Changes) { c.Insert.Events = []backend.Event{ev} }},
		{"Insert.Schedules[0]", func(c *backend.Changes) { c.Insert.Schedules = []backend.RetrySchedule{sched} }},
		{"Insert.Leases[0]", func(c *backend.Changes) { c.Insert.Leases = []backend.Lease{lease} }},
		{"Insert.Attempts[0]", func(c *backend.Changes) { c.Insert.Attempts = []backend.Attempt{att} }},
		{"Insert.Groups[0]", func(c *backend.Changes) { c.Insert.Groups = []backend.FanOutGroup{group} }},
		{"Insert.Activations[0]", func(c *backend.Changes) { c.Insert.Activations = []backend.Activation{act} }},
		{"Insert.Links[0]", func(c *backend.Changes) { c.Insert.Links = []backend.RunLink{link} }},
		{"Insert.Runs[0]", func(c *backend.Changes) { c.Insert.Runs = []backend.Run{run} }},
		{"Delete.Attempts[0]", func(c *backend.Changes) { c.Delete.Attempts = []backend.AttemptKey{missing.att.Key} }},
		{"Delete.Leases[0]", func(c *backend.Changes) { c.Delete.Leases = []backend.LeaseKey{missing.lease.Key} }},
		{"Delete.Schedules[0]", func(c *backend.Changes) { c.Delete.Schedules = []backend.ActivationKey{missing.sched.Key} }},
		{"Delete.Events[0]", func(c *backend.Changes) { c.Delete.Events = []backend.EventKey{{RunID: "missing", Seq: 1}} }},
		{"Expect.Attempts[0]", func(c *backend.Changes) { c.Expect.Attempts = []backend.Attempt{missing.att} }},
		{"Expect.Activations[0]", func(c *backend.Changes) { c.Expect.Activations = []backend.Activation{missing.act} }},
		{"Expect.Runs[0]", func(c *backend.Changes) { c.Expect.Runs = []backend.Run{missing.run} }},
	}
	var c backend.Changes
	for _, s := range steps {
		s.add(&c)
		err := applyErr(b, c)
		require.ErrorContains(t, err, "sqlite: apply "+s.name+": ")
	}
	// The store is as it was.
	view(t, b, func(r backend.ReadTx) {
		f, err := r.Load(context.Background(), backend.Lookup{Runs: []string{run.ID}, Attempts: []backend.AttemptKey{att.Key}})
		require.NoError(t, err)
		require.Equal(t, run, f.Runs[run.ID])
		require.Equal(t, att, f.Attempts[att.Key])
	})
}

type keysOnly struct {
	run   backend.Run
	act   backend.Activation
	group backend.FanOutGroup
	att   backend.Attempt
	lease backend.Lease
	sched backend.RetrySchedule
}

// fullRecordsKeysOnly returns records of the replaceable kinds with keys
// under run id and no other field set.
func fullRecordsKeysOnly(id string) keysOnly {
	k := akey(id, "n", "a")
	ak := backend.AttemptKey{ActivationKey: k, Attempt: 1}
	return keysOnly{
		run: backend.Run{ID: id}, act: backend.Activation{Key: k}, group: backend.FanOutGroup{Controller: k},
		att: backend.Attempt{Key: ak, Identity: id}, lease: backend.Lease{Key: backend.LeaseKey{AttemptKey: ak, Resource: "x", Mode: backend.LeaseRead}},
		sched: backend.RetrySchedule{Key: k},
	}
}

// Deletes run before inserts: one Changes may delete a record and insert
// it again, and a deleted attempt's identity is free for an insert of the
// same Changes, whatever the order of the fields in the literal.
func TestApplyDeletesBeforeInsertsOfOneKey(t *testing.T) {
	t.Parallel()
	b := newStore(t)
	ctx := context.Background()
	run, link, act, group, att, lease, sched, ev := fullRecords("r", []byte(`{}`))
	update(t, b, insertEvery(run, link, act, group, att, lease, sched, ev))

	att2 := att
	att2.Identity, att2.Status, att2.Receipt = "r/identity-2", backend.AttemptFailed, []byte(`{"again":true}`)
	other := attempt(akey("r", "n2", "a2"), 1, att.Identity, backend.AttemptPrepared, 3) // takes the freed identity
	lease2 := lease
	lease2.AcquiredMS = 99
	sched2 := sched
	sched2.DueMS = 1
	ev2 := ev
	ev2.Type = "again"
	update(t, b, backend.Changes{
		Insert: backend.Inserts{
			Attempts: []backend.Attempt{other, att2}, Leases: []backend.Lease{lease2},
			Schedules: []backend.RetrySchedule{sched2}, Events: []backend.Event{ev2},
		},
		Delete: backend.Deletes{
			Events: []backend.EventKey{ev.Key()}, Schedules: []backend.ActivationKey{sched.Key},
			Leases: []backend.LeaseKey{lease.Key}, Attempts: []backend.AttemptKey{att.Key},
		},
	})
	view(t, b, func(r backend.ReadTx) {
		f, err := r.Load(ctx, backend.Lookup{
			Attempts: []backend.AttemptKey{att.Key, other.Key}, Identities: []string{att.Identity},
			Leases: []backend.LeaseKey{lease.Key}, Schedules: []backend.ActivationKey{sched.Key}})
		require.NoError(t, err)
		require.Equal(t, other, f.Identities[att.Identity])
		require.Equal(t, other, f.Attempts[other.Key])
		require.Equal(t, att2, f.Attempts[att.Key])
		require.Equal(t, lease2, f.Leases[lease.Key])
		require.Equal(t, sched2, f.Schedules[sched.Key])
		evs, err := r.Events(ctx, backend.EventQuery{RunID: ev.RunID, Limit: 5})
		require.NoError(t, err)
		require.Equal(t, []backend.Event{ev2}, evs)
	})
}

// Inserts run before replaces: one Changes may insert a record and
// replace it, the replace winning, whatever the order of the fields in the
// literal.
func TestApplyInsertsBeforeReplacesOfOneKey(t *testing.T) {
	t.Parallel()
	b := newStore(t)
	ctx := context.Background()
	run, _, act, group, att, lease, sched, _ := fullRecords("r", []byte(`{"v":1}`))
	run2 := run
	run2.Status, run2.Metadata, run2.Authority = backend.RunCompleted, nil, nil
	act2 := act
	act2.Admissible, act2.Claims, act2.Output = false, []backend.ResourceClaim{}, nil
	group2 := group
	group2.Settled = 64
	att2 := att
	att2.Identity, att2.Status = "r/identity-2", backend.AttemptSucceeded
	lease2 := lease
	lease2.ReleasedMS = 77
	sched2 := sched
	sched2.DueMS = 3
	update(t, b, backend.Changes{
		Replace: backend.Replaces{
			Runs: []backend.Run{run2}, Activations: []backend.Activation{act2}, Groups: []backend.FanOutGroup{group2},
			Attempts: []backend.Attempt{att2}, Leases: []backend.Lease{lease2}, Schedules: []backend.RetrySchedule{sched2},
		},
		Insert: backend.Inserts{
			Runs: []backend.Run{run}, Activations: []backend.Activation{act}, Groups: []backend.FanOutGroup{group},
			Attempts: []backend.Attempt{att}, Leases: []backend.Lease{lease}, Schedules: []backend.RetrySchedule{sched},
		},
	})
	view(t, b, func(r backend.ReadTx) {
		f := loadAll(t, ctx, r, run, act, group, att, lease, sched)
		require.Equal(t, run2, f.Runs[run.ID])
		require.Equal(t, act2, f.Activations[act.Key])
		require.Equal(t, group2, f.Groups[group.Controller])
		require.Equal(t, att2, f.Attempts[att.Key])
		require.Equal(t, lease2, f.Leases[lease.Key])
		require.Equal(t, sched2, f.Schedules[sched.Key])
		adm, err := r.AdmissibleActivations(ctx, backend.AdmissibleQuery{Limit: 5})
		require.NoError(t, err)
		require.Empty(t, adm)
		got, err := r.Attempts(ctx, backend.AttemptQuery{Status: backend.AttemptSucceeded, Limit: 5})
		require.NoError(t, err)
		require.Equal(t, []backend.Attempt{att2}, got)
		byID, err := backend.GetAttemptByIdentity(ctx, r, att2.Identity)
		require.NoError(t, err)
		require.Equal(t, att2, byID)
		_, err = backend.GetAttemptByIdentity(ctx, r, att.Identity)
		require.ErrorIs(t, err, backend.ErrNotFound)
	})
	integrityOK(t, b)

	// Within a slice, elements apply in slice order: two replaces of one
	// key leave the second.
	run3 := run2
	run3.Depth = 99
	update(t, b, replaceRuns(run, run3))
	require.Equal(t, run3, loadRun(t, b, run.ID))
}

// Expects run first: they see the store as it was before the Changes,
// not the inserts and replaces the same Changes makes.
func TestApplyExpectsBeforeWrites(t *testing.T) {
	t.Parallel()
	b := newStore(t)
	ctx := context.Background()
	run := backend.Run{ID: "r", Status: backend.RunRunning, AttemptCount: 1}
	update(t, b, insertRuns(run))
	v2 := run
	v2.AttemptCount = 2

	// The expect of the stored value passes although the replace of the
	// same Changes comes first in the literal.
	update(t, b, backend.Changes{Replace: backend.Replaces{Runs: []backend.Run{v2}}, Expect: backend.Expected{Runs: []backend.Run{run}}})
	require.Equal(t, v2, loadRun(t, b, "r"))

	// Expecting the value the same Changes writes fails, and nothing is
	// written.
	v3 := v2
	v3.AttemptCount = 3
	err := applyErr(b, backend.Changes{Replace: backend.Replaces{Runs: []backend.Run{v3}}, Expect: backend.Expected{Runs: []backend.Run{v3}}})
	require.ErrorIs(t, err, backend.ErrChanged)
	require.ErrorContains(t, err, "Expect.Runs[0]")
	require.Equal(t, v2, loadRun(t, b, "r"))

	// Expecting a record the same Changes inserts fails: it is missing.
	act := activation(akey("r", "n", "a"), true)
	att := attempt(act.Key, 1, "id", backend.AttemptPrepared, 1)
	for _, c := range []backend.Changes{
		{Insert: backend.Inserts{Activations: []backend.Activation{act}}, Expect: backend.Expected{Activations: []backend.Activation{act}}},
		{Insert: backend.Inserts{Attempts: []backend.Attempt{att}}, Expect: backend.Expected{Attempts: []backend.Attempt{att}}},
	} {
		require.ErrorIs(t, applyErr(b, c), backend.ErrChanged)
	}
	view(t, b, func(r backend.ReadTx) {
		f, err := r.Load(ctx, backend.Lookup{Activations: []backend.ActivationKey{act.Key}, Attempts: []backend.AttemptKey{att.Key}})
		require.NoError(t, err)
		require.Empty(t, f.Activations)
		require.Empty(t, f.Attempts)
	})

	// Every expectable kind passes when the stored record is the same in
	// every field and fails when one field differs, nil versus empty
	// included.
	update(t, b, backend.Changes{Insert: backend.Inserts{Activations: []backend.Activation{act}, Attempts: []backend.Attempt{att}}})
	update(t, b, backend.Changes{Expect: backend.Expected{Runs: []backend.Run{v2}, Activations: []backend.Activation{act}, Attempts: []backend.Attempt{att}}})
	actEmpty := act
	actEmpty.Claims = []backend.ResourceClaim{}
	attOther := att
	attOther.Receipt = []byte{}
	for _, c := range []backend.Changes{
		{Expect: backend.Expected{Activations: []backend.Activation{actEmpty}}},
		{Expect: backend.Expected{Attempts: []backend.Attempt{attOther}}},
		{Expect: backend.Expected{Runs: []backend.Run{run}}},
	} {
		require.ErrorIs(t, applyErr(b, c), backend.ErrChanged)
	}
}

// A record's column values built next to another list of its kind (its
// row's image) bind the same values as fresh ones and box only the values
// that differ: a Replace changing one column of an attempt allocates its
// list and that column's box.
func TestColumnValuesReuseTheBoxesOfEqualValues(t *testing.T) {
	a := attempt(akey("r", "n", "a"), 1, "id-1", backend.AttemptPrepared, 1700000000000)
	a.Receipt = []byte(`{"r":1}`)
	prev := attemptK.argsOf(&a, nil)
	next := a
	next.HandoffToken = "fresh-token"
	require.Equal(t, attemptK.argsOf(&next, nil), attemptK.argsOf(&next, prev))
	allocs := testing.AllocsPerRun(100, func() { _ = attemptK.argsOf(&next, prev) })
	require.LessOrEqual(t, allocs, 2.0)

	// The keys of a many-row Load share their run's box.
	k1, k2 := akey("run-1", "node", "a1"), akey("run-1", "node", "a2")
	out := activationKeyArgs(nil, k1, nil)
	out = activationKeyArgs(out, k2, out)
	require.Equal(t, []any{"run-1", "node", "a1", "run-1", "node", "a2"}, out)
}
