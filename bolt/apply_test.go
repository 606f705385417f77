package bolt

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"

	"github.com/wfstore/wfstore/backend"
)

// opRow is one row of the operation table of backend's package doc: the
// Changes that insert, replace, delete and expect one record of a kind,
// nil where the kind has no such slice.
type opRow struct {
	name                         string
	insert, replace, del, expect backend.Changes
	hasReplace, hasDel, hasExp   bool
}

func opRows() []opRow {
	run, lnk, act, grp, att, ls, sch, ev := fullRecords("op-", []byte(`{}`))
	return []opRow{
		{name: "run", insert: backend.Changes{Insert: backend.Inserts{Runs: []backend.Run{run}}},
			replace: backend.Changes{Replace: backend.Replaces{Runs: []backend.Run{run}}}, hasReplace: true,
			expect: backend.Changes{Expect: backend.Expected{Runs: []backend.Run{run}}}, hasExp: true},
		{name: "run_link", insert: backend.Changes{Insert: backend.Inserts{Links: []backend.RunLink{lnk}}}},
		{name: "activation", insert: backend.Changes{Insert: backend.Inserts{Activations: []backend.Activation{act}}},
			replace: backend.Changes{Replace: backend.Replaces{Activations: []backend.Activation{act}}}, hasReplace: true,
			expect: backend.Changes{Expect: backend.Expected{Activations: []backend.Activation{act}}}, hasExp: true},
		{name: "fan_out_group", insert: backend.Changes{Insert: backend.Inserts{Groups: []backend.FanOutGroup{grp}}},
			replace: backend.Changes{Replace: backend.Replaces{Groups: []backend.FanOutGroup{grp}}}, hasReplace: true},
		{name: "attempt", insert: backend.Changes{Insert: backend.Inserts{Attempts: []backend.Attempt{att}}},
			replace: backend.Changes{Replace: backend.Replaces{Attempts: []backend.Attempt{att}}}, hasReplace: true,
			del: backend.Changes{Delete: backend.Deletes{Attempts: []backend.AttemptKey{att.Key}}}, hasDel: true,
			expect: backend.Changes{Expect: backend.Expected{Attempts: []backend.Attempt{att}}}, hasExp: true},
		{name: "lease", insert: backend.Changes{Insert: backend.Inserts{Leases: []backend.Lease{ls}}},
			replace: backend.Changes{Replace: backend.Replaces{Leases: []backend.Lease{ls}}}, hasReplace: true,
			del: backend.Changes{Delete: backend.Deletes{Leases: []backend.LeaseKey{ls.Key}}}, hasDel: true},
		{name: "retry_schedule", insert: backend.Changes{Insert: backend.Inserts{Schedules: []backend.RetrySchedule{sch}}},
			replace: backend.Changes{Replace: backend.Replaces{Schedules: []backend.RetrySchedule{sch}}}, hasReplace: true,
			del: backend.Changes{Delete: backend.Deletes{Schedules: []backend.ActivationKey{sch.Key}}}, hasDel: true},
		{name: "event", insert: backend.Changes{Insert: backend.Inserts{Events: []backend.Event{ev}}},
			del: backend.Changes{Delete: backend.Deletes{Events: []backend.EventKey{ev.Key()}}}, hasDel: true},
	}
}

// The operation table of backend's package doc, row by row: what a kind
// accepts fails and succeeds as the contract says (what it does not
// accept cannot be written).
func TestApplyOperationTable(t *testing.T) {
	t.Parallel()
	for _, row := range opRows() {
		t.Run(row.name, func(t *testing.T) {
			t.Parallel()
			b := openTemp(t)
			// Replace, Delete and Expect of a missing record.
			if row.hasReplace {
				require.ErrorIs(t, applyErr(b, row.replace), backend.ErrNotFound)
			}
			if row.hasDel {
				require.ErrorIs(t, applyErr(b, row.del), backend.ErrNotFound)
			}
			if row.hasExp {
				require.ErrorIs(t, applyErr(b, row.expect), backend.ErrChanged)
			}
			// Insert, then Insert again.
			apply(t, b, row.insert)
			require.ErrorIs(t, applyErr(b, row.insert), backend.ErrConflict)
			if row.hasExp {
				apply(t, b, row.expect)
			}
			if row.hasReplace {
				apply(t, b, row.replace)
			}
			if row.hasDel {
				apply(t, b, row.del)
				require.ErrorIs(t, applyErr(b, row.del), backend.ErrNotFound)
			}
			require.NoError(t, b.Verify(context.Background()))
		})
	}
}

func TestApplyEmptyChangesWritesNothing(t *testing.T) {
	t.Parallel()
	b := openTemp(t)
	before := txID(t, b)
	apply(t, b, backend.Changes{})
	require.Equal(t, before, txID(t, b))
}

func TestApplyIdentityIsUnique(t *testing.T) {
	t.Parallel()
	b := openTemp(t)
	ins := func(a backend.Attempt) backend.Changes {
		return backend.Changes{Insert: backend.Inserts{Attempts: []backend.Attempt{a}}}
	}
	rep := func(a backend.Attempt) backend.Changes {
		return backend.Changes{Replace: backend.Replaces{Attempts: []backend.Attempt{a}}}
	}
	a1 := attempt(attKey("r", "n", "a", 1), "same", backend.AttemptPrepared, 1)
	a2 := attempt(attKey("r", "n", "a", 2), "same", backend.AttemptPrepared, 2)
	a3 := attempt(attKey("r", "n", "a", 3), "other", backend.AttemptPrepared, 3)
	apply(t, b, ins(a1))
	require.ErrorIs(t, applyErr(b, ins(a2)), backend.ErrConflict)
	apply(t, b, ins(a3))
	// A Replace may not take another attempt's identity either.
	a3.Identity = "same"
	require.ErrorIs(t, applyErr(b, rep(a3)), backend.ErrConflict)
	// A Replace that keeps its own identity is fine.
	a1.Status = backend.AttemptAdmitted
	apply(t, b, rep(a1))
	require.NoError(t, b.Verify(context.Background()))
}

// Expect compares every field, nil and empty apart, and writes nothing.
func TestApplyExpect(t *testing.T) {
	t.Parallel()
	b := openTemp(t)
	ctx := context.Background()
	act := activation(actKey("r", "n", "a"), true)
	act.Claims = []backend.ResourceClaim{}
	att := attempt(attKey("r", "n", "a", 1), "id", backend.AttemptPrepared, 1)
	run := backupRun("r")
	apply(t, b, backend.Changes{Insert: backend.Inserts{Runs: []backend.Run{run}, Activations: []backend.Activation{act}, Attempts: []backend.Attempt{att}}})
	before := txID(t, b)
	all := backend.Changes{Expect: backend.Expected{Runs: []backend.Run{run}, Activations: []backend.Activation{act}, Attempts: []backend.Attempt{att}}}
	apply(t, b, all)
	require.Equal(t, before, txID(t, b), "Expect writes nothing")

	nilClaims := act
	nilClaims.Claims = nil
	require.ErrorIs(t, applyErr(b, backend.Changes{Expect: backend.Expected{Activations: []backend.Activation{nilClaims}}}), backend.ErrChanged)
	admitted := att
	admitted.Status = backend.AttemptAdmitted
	require.ErrorIs(t, applyErr(b, backend.Changes{Expect: backend.Expected{Attempts: []backend.Attempt{admitted}}}), backend.ErrChanged)
	deeper := run
	deeper.Depth++
	err := applyErr(b, backend.Changes{Expect: backend.Expected{Runs: []backend.Run{run, deeper}}})
	require.ErrorIs(t, err, backend.ErrChanged)
	require.ErrorContains(t, err, "Expect.Runs[1]")

	// A stored value whose bytes differ from the record's encoding but
	// which decodes to the same record (here an overlong varint, which the
	// codec never writes) is the expected record.
	v := layout.Run.Encode(run)
	require.Equal(t, []byte{1, 1, 'r', 1, 'r'}, v[:5], "the run tag, ID and RootID")
	odd := append(append(append([]byte(nil), v[:3]...), 0x81, 0x00), v[4:]...) // RootID's length 1 as two bytes
	got, err := layout.Run.Decode(odd)
	require.NoError(t, err)
	require.Equal(t, run, got)
	damage(t, b, func(tx *bbolt.Tx) error {
		return putAt(tx, &layout.Run.Space, layout.Run.Stored(layout.Run.Key("r")), odd)
	})
	apply(t, b, backend.Changes{Expect: backend.Expected{Runs: []backend.Run{run}}})
	require.ErrorIs(t, applyErr(b, backend.Changes{Expect: backend.Expected{Runs: []backend.Run{deeper}}}), backend.ErrChanged)
	require.NoError(t, b.Verify(ctx))
}

// The fixed order: every Expect, then every Delete, then every Insert, then
// every Replace. So one Changes may delete a key and insert it again, or
// insert a key and replace it, and an Expect sees the store before any of
// its writes. The indexes follow: Verify is clean after each.
func TestApplyFixedOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	k := actKey("r", "n", "a")

	t.Run("delete then insert one key", func(t *testing.T) {
		t.Parallel()
		b := openTemp(t)
		s1, s2 := schedule(k, 5), schedule(k, 50)
		att := attempt(attKey("r", "n", "a", 1), "ident", backend.AttemptFailed, 10)
		again := attempt(attKey("r", "n", "a", 1), "ident-2", backend.AttemptPrepared, 20)
		ls := lease(att.Key, "res", backend.LeaseWrite, 0)
		ls2 := lease(att.Key, "res", backend.LeaseWrite, 99)
		ev := backend.Event{RunID: "r", Seq: 1, Type: "old", CreatedMS: 1}
		ev2 := backend.Event{RunID: "r", Seq: 1, Type: "new", CreatedMS: 2}
		apply(t, b, backend.Changes{Insert: backend.Inserts{
			Schedules: []backend.RetrySchedule{s1}, Attempts: []backend.Attempt{att}, Leases: []backend.Lease{ls}, Events: []backend.Event{ev}}})
		// The inserts are listed before the deletes; order is the field's,
		// not the listing's.
		apply(t, b, backend.Changes{
			Insert: backend.Inserts{Schedules: []backend.RetrySchedule{s2}, Attempts: []backend.Attempt{again}, Leases: []backend.Lease{ls2}, Events: []backend.Event{ev2}},
			Delete: backend.Deletes{Schedules: []backend.ActivationKey{k}, Attempts: []backend.AttemptKey{att.Key}, Leases: []backend.LeaseKey{ls.Key}, Events: []backend.EventKey{ev.Key()}},
		})
		require.NoError(t, b.Verify(ctx))
		view(t, b, func(ctx context.Context, r backend.ReadTx) {
			due, err := r.DueSchedules(ctx, backend.ScheduleQuery{RunID: "r", DueBy: 10, Limit: 5})
			require.NoError(t, err)
			require.Empty(t, due, "the old due time left the index")
			due, err = r.DueSchedules(ctx, backend.ScheduleQuery{RunID: "r", DueBy: 50, Limit: 5})
			require.NoError(t, err)
			require.Equal(t, []backend.RetrySchedule{s2}, due)
			f, err := r.Load(ctx, backend.Lookup{Identities: []string{"ident", "ident-2"}, Resources: []backend.ResourceRef{{RunID: "r", Resource: "res"}}})
			require.NoError(t, err)
			require.Equal(t, map[string]backend.Attempt{"ident-2": again}, f.Identities)
			require.Empty(t, f.Resources, "the new lease is released")
			failed, err := r.Attempts(ctx, backend.AttemptQuery{Status: backend.AttemptFailed, Limit: 5})
			require.NoError(t, err)
			require.Empty(t, failed)
			evs, err := r.Events(ctx, backend.EventQuery{RunID: "r", Limit: 5})
			require.NoError(t, err)
			require.Equal(t, []backend.Event{ev2}, evs)
		})
	})

	t.Run("insert then replace one key", func(t *testing.T) {
		t.Parallel()
		b := openTemp(t)
		run := backupRun("r")
		act := activation(k, true)
		att := attempt(attKey("r", "n", "a", 1), "ident", backend.AttemptPrepared, 10)
		ls := lease(att.Key, "res", backend.LeaseWrite, 0)
		sch := schedule(k, 5)
		grp := backend.FanOutGroup{Controller: k, Size: 3, MaxConcurrency: 1, CreatedMS: 1}
		run2, act2, att2, ls2, sch2, grp2 := run, act, att, ls, sch, grp
		run2.Status = backend.RunCompleted
		act2.Admissible = false
		att2.Status, att2.PreparedMS, att2.Identity = backend.AttemptAdmitted, 20, "ident-2"
		ls2.ReleasedMS = 99
		sch2.DueMS = 50
		grp2.Promoted = 1
		apply(t, b, backend.Changes{
			Replace: backend.Replaces{Runs: []backend.Run{run2}, Activations: []backend.Activation{act2}, Groups: []backend.FanOutGroup{grp2},
				Attempts: []backend.Attempt{att2}, Leases: []backend.Lease{ls2}, Schedules: []backend.RetrySchedule{sch2}},
			Insert: backend.Inserts{Runs: []backend.Run{run}, Activations: []backend.Activation{act}, Groups: []backend.FanOutGroup{grp},
				Attempts: []backend.Attempt{att}, Leases: []backend.Lease{ls}, Schedules: []backend.RetrySchedule{sch}},
		})
		require.NoError(t, b.Verify(ctx))
		view(t, b, func(ctx context.Context, r backend.ReadTx) {
			f, err := r.Load(ctx, backend.Lookup{
				Runs: []string{"r"}, Activations: []backend.ActivationKey{k}, Groups: []backend.ActivationKey{k},
				Attempts: []backend.AttemptKey{att.Key}, Identities: []string{"ident", "ident-2"}, Leases: []backend.LeaseKey{ls.Key},
				Schedules: []backend.ActivationKey{k}, Resources: []backend.ResourceRef{{RunID: "r", Resource: "res"}},
			})
			require.NoError(t, err)
			require.Equal(t, run2, f.Runs["r"])
			require.Equal(t, act2, f.Activations[k])
			require.Equal(t, grp2, f.Groups[k])
			require.Equal(t, att2, f.Attempts[att.Key])
			require.Equal(t, map[string]backend.Attempt{"ident-2": att2}, f.Identities)
			require.Equal(t, ls2, f.Leases[ls.Key])
			require.Equal(t, sch2, f.Schedules[k])
			require.Empty(t, f.Resources)
			adm, err := r.AdmissibleActivations(ctx, backend.AdmissibleQuery{Limit: 5})
			require.NoError(t, err)
			require.Empty(t, adm)
			byRun, err := r.Attempts(ctx, backend.AttemptQuery{RunID: "r", Status: backend.AttemptAdmitted, Limit: 5})
			require.NoError(t, err)
			require.Equal(t, []backend.Attempt{att2}, byRun)
		})
	})

	t.Run("delete frees an identity for an insert", func(t *testing.T) {
		t.Parallel()
		b := openTemp(t)
		a1 := attempt(attKey("r", "n", "a", 1), "same", backend.AttemptFailed, 1)
		a2 := attempt(attKey("r", "n", "a", 2), "same", backend.AttemptPrepared, 2)
		apply(t, b, backend.Changes{Insert: backend.Inserts{Attempts: []backend.Attempt{a1}}})
		apply(t, b, backend.Changes{Insert: backend.Inserts{Attempts: []backend.Attempt{a2}}, Delete: backend.Deletes{Attempts: []backend.AttemptKey{a1.Key}}})
		require.NoError(t, b.Verify(ctx))
		view(t, b, func(ctx context.Context, r backend.ReadTx) {
			got, err := backend.GetAttemptByIdentity(ctx, r, "same")
			require.NoError(t, err)
			require.Equal(t, a2, got)
		})
	})

	t.Run("expect sees the store before the writes", func(t *testing.T) {
		t.Parallel()
		b := openTemp(t)
		run := backupRun("r")
		att := attempt(attKey("r", "n", "a", 1), "ident", backend.AttemptPrepared, 1)
		// Nothing stored: an Expect of what the same Changes inserts fails.
		err := applyErr(b, backend.Changes{Insert: backend.Inserts{Runs: []backend.Run{run}}, Expect: backend.Expected{Runs: []backend.Run{run}}})
		require.ErrorIs(t, err, backend.ErrChanged)
		require.False(t, runExists(t, b, "r"))
		apply(t, b, backend.Changes{Insert: backend.Inserts{Runs: []backend.Run{run}, Attempts: []backend.Attempt{att}}})
		// An Expect of what the same Changes replaces or deletes holds.
		done := run
		done.Status = backend.RunCompleted
		apply(t, b, backend.Changes{
			Replace: backend.Replaces{Runs: []backend.Run{done}},
			Delete:  backend.Deletes{Attempts: []backend.AttemptKey{att.Key}},
			Expect:  backend.Expected{Runs: []backend.Run{run}, Attempts: []backend.Attempt{att}},
		})
		require.NoError(t, b.Verify(ctx))
		view(t, b, func(ctx context.Context, r backend.ReadTx) {
			got, err := backend.GetRun(ctx, r, "r")
			require.NoError(t, err)
			require.Equal(t, done, got)
			n, err := r.CountAttempts(ctx, backend.AttemptCountQuery{RunID: "r", Limit: 5})
			require.NoError(t, err)
			require.Zero(t, n)
		})
	})

	t.Run("the first failure in that order is returned", func(t *testing.T) {
		t.Parallel()
		b := openTemp(t)
		run := backupRun("r")
		apply(t, b, insertRuns(run))
		missingRun := backupRun("missing")
		for _, c := range []struct {
			name    string
			changes backend.Changes
			want    error
			field   string
		}{
			{"expect before delete", backend.Changes{
				Delete: backend.Deletes{Events: []backend.EventKey{{RunID: "r", Seq: 1}}},
				Expect: backend.Expected{Runs: []backend.Run{missingRun}}}, backend.ErrChanged, "Expect.Runs[0]"},
			{"events before attempts", backend.Changes{
				Delete: backend.Deletes{Attempts: []backend.AttemptKey{attKey("r", "n", "a", 1)}, Events: []backend.EventKey{{RunID: "r", Seq: 1}}}},
				backend.ErrNotFound, "Delete.Events[0]"},
			{"delete before insert", backend.Changes{
				Insert: backend.Inserts{Runs: []backend.Run{run}},
				Delete: backend.Deletes{Leases: []backend.LeaseKey{lease(attKey("r", "n", "a", 1), "res", backend.LeaseRead, 0).Key}}},
				backend.ErrNotFound, "Delete.Leases[0]"},
			{"insert before replace", backend.Changes{
				Replace: backend.Replaces{Runs: []backend.Run{missingRun}},
				Insert:  backend.Inserts{Runs: []backend.Run{run}}}, backend.ErrConflict, "Insert.Runs[0]"},
			{"slice order", backend.Changes{
				Insert: backend.Inserts{Runs: []backend.Run{missingRun, missingRun}}}, backend.ErrConflict, "Insert.Runs[1]"},
		} {
			err := applyErr(b, c.changes)
			require.ErrorIs(t, err, c.want, c.name)
			require.ErrorContains(t, err, c.field, c.name)
		}
		require.False(t, runExists(t, b, "missing"))
		require.NoError(t, b.Verify(ctx))
	})
}

// Operations apply in order and later reads see them; the first failure
// stops Apply, and fn's error rolls all back.
func TestApplyFailureStops(t *testing.T) {
	t.Parallel()
	b := openTemp(t)
	ctx := context.Background()
	s := schedule(actKey("r", "n", "a"), 5)
	apply(t, b, backend.Changes{Insert: backend.Inserts{Schedules: []backend.RetrySchedule{s}}})
	err := b.Update(ctx, func(tx backend.Tx) error {
		err := tx.Apply(ctx, backend.Changes{
			Delete: backend.Deletes{Schedules: []backend.ActivationKey{s.Key, s.Key}},
			Insert: backend.Inserts{Runs: []backend.Run{{ID: "never"}}},
		})
		require.ErrorIs(t, err, backend.ErrNotFound)
		require.ErrorContains(t, err, "Delete.Schedules[1]")
		f, lerr := tx.Load(ctx, backend.Lookup{Schedules: []backend.ActivationKey{s.Key}, Runs: []string{"never"}})
		require.NoError(t, lerr)
		require.Empty(t, f.Schedules, "the first Delete happened")
		require.Empty(t, f.Runs, "the Insert after the failure did not")
		return err
	})
	require.ErrorIs(t, err, backend.ErrNotFound)
	view(t, b, func(ctx context.Context, r backend.ReadTx) {
		got, err := r.DueSchedules(ctx, backend.ScheduleQuery{RunID: "r", DueBy: 10, Limit: 5})
		require.NoError(t, err)
		require.Equal(t, []backend.RetrySchedule{s}, got)
	})
	require.NoError(t, b.Verify(ctx))
}

// Index entries move with their records.
func TestApplyMaintainsIndexes(t *testing.T) {
	t.Parallel()
	b := openTemp(t)
	ctx := context.Background()
	k := actKey("r", "n", "a")
	a := activation(k, true)
	att := attempt(attKey("r", "n", "a", 1), "id-1", backend.AttemptPrepared, 10)
	l := lease(att.Key, "res", backend.LeaseWrite, 0)
	s := schedule(k, 50)
	apply(t, b, backend.Changes{Insert: backend.Inserts{
		Activations: []backend.Activation{a}, Attempts: []backend.Attempt{att}, Leases: []backend.Lease{l}, Schedules: []backend.RetrySchedule{s}}})
	require.NoError(t, b.Verify(ctx))

	a.Admissible = false
	att.Status, att.PreparedMS = backend.AttemptAdmitted, 20
	l.ReleasedMS = 99
	s.DueMS = 7
	apply(t, b, backend.Changes{Replace: backend.Replaces{
		Activations: []backend.Activation{a}, Attempts: []backend.Attempt{att}, Leases: []backend.Lease{l}, Schedules: []backend.RetrySchedule{s}}})
	require.NoError(t, b.Verify(ctx))
	view(t, b, func(ctx context.Context, r backend.ReadTx) {
		p, err := r.AdmissibleActivations(ctx, backend.AdmissibleQuery{Limit: 10})
		require.NoError(t, err)
		require.Empty(t, p)
		prepared, err := r.Attempts(ctx, backend.AttemptQuery{Status: backend.AttemptPrepared, Limit: 10})
		require.NoError(t, err)
		require.Empty(t, prepared)
		admitted, err := r.Attempts(ctx, backend.AttemptQuery{RunID: "r", Status: backend.AttemptAdmitted, Limit: 10})
		require.NoError(t, err)
		require.Equal(t, []backend.Attempt{att}, admitted)
		leases, err := r.Leases(ctx, backend.LeaseQuery{RunID: "r", Limit: 10})
		require.NoError(t, err)
		require.Empty(t, leases)
		all, err := r.Leases(ctx, backend.LeaseQuery{RunID: "r", IncludeReleased: true, Limit: 10})
		require.NoError(t, err)
		require.Equal(t, []backend.Lease{l}, all)
		f, err := r.Load(ctx, backend.Lookup{Resources: []backend.ResourceRef{{RunID: "r", Resource: "res"}}})
		require.NoError(t, err)
		require.Empty(t, f.Resources)
		due, err := r.DueSchedules(ctx, backend.ScheduleQuery{RunID: "r", DueBy: 7, Limit: 10})
		require.NoError(t, err)
		require.Equal(t, []backend.RetrySchedule{s}, due)
	})
	apply(t, b, backend.Changes{Delete: backend.Deletes{Schedules: []backend.ActivationKey{s.Key}}})
	require.NoError(t, b.Verify(ctx))
	n := 0
	view(t, b, func(ctx context.Context, r backend.ReadTx) {
		due, err := r.DueSchedules(ctx, backend.ScheduleQuery{RunID: "r", DueBy: 1 << 62, Limit: 10})
		require.NoError(t, err)
		n = len(due)
	})
	require.Zero(t, n)
}
