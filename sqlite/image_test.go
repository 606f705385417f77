package sqlite

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/wfstore/wfstore/backend"
)

// loadAll reads every replaceable record of fullRecords' keys.
func loadAll(t *testing.T, ctx context.Context, r backend.ReadTx, run backend.Run, act backend.Activation, group backend.FanOutGroup,
	att backend.Attempt, lease backend.Lease, sched backend.RetrySchedule) backend.Found {
	t.Helper()
	f, err := r.Load(ctx, backend.Lookup{
		Runs: []string{run.ID}, Activations: []backend.ActivationKey{act.Key}, Groups: []backend.ActivationKey{group.Controller},
		Attempts: []backend.AttemptKey{att.Key}, Leases: []backend.LeaseKey{lease.Key}, Schedules: []backend.ActivationKey{sched.Key},
	})
	require.NoError(t, err)
	return f
}

func integrityOK(t *testing.T, b *Backend) {
	t.Helper()
	var res string
	require.NoError(t, b.rdb.QueryRow("PRAGMA integrity_check").Scan(&res))
	require.Equal(t, "ok", res)
}

func TestReplaceAfterLoadSetsOnlyChangedColumns(t *testing.T) {
	t.Parallel()
	b := newStore(t)
	ctx := context.Background()
	k := akey("r", "n", "a")
	att := attempt(k, 1, "id-1", backend.AttemptPrepared, 5)
	update(t, b, insertAttempts(att))

	require.NoError(t, b.Update(ctx, func(tx backend.Tx) error {
		f, err := tx.Load(ctx, backend.Lookup{Attempts: []backend.AttemptKey{att.Key}})
		require.NoError(t, err)
		a := f.Attempts[att.Key]
		a.Handoff = backend.HandoffRecorded
		return tx.Apply(ctx, replaceAttempts(a))
	}))
	handoff := uint64(1) << (10 - attemptsT.nkey) // column 10 is handoff
	require.Equal(t, "handoff", attemptsT.cols[10])
	require.Contains(t, b.w.partial, partialKey{sAttRep, handoff})
	require.Len(t, b.w.partial, 1)

	// The status indexes follow a partial update of status.
	require.NoError(t, b.Update(ctx, func(tx backend.Tx) error {
		f, err := tx.Load(ctx, backend.Lookup{Identities: []string{"id-1"}})
		require.NoError(t, err)
		a := f.Identities["id-1"]
		a.Status, a.Receipt, a.AdmittedMS = backend.AttemptAdmitted, []byte(`{"ok":1}`), 9
		return tx.Apply(ctx, replaceAttempts(a))
	}))
	want := att
	want.Handoff, want.Status, want.Receipt, want.AdmittedMS = backend.HandoffRecorded, backend.AttemptAdmitted, []byte(`{"ok":1}`), 9
	view(t, b, func(r backend.ReadTx) {
		f, err := r.Load(ctx, backend.Lookup{Attempts: []backend.AttemptKey{att.Key}})
		require.NoError(t, err)
		require.Equal(t, want, f.Attempts[att.Key])
		for _, q := range []backend.AttemptQuery{
			{Status: backend.AttemptAdmitted, Limit: 5}, {RunID: "r", Status: backend.AttemptAdmitted, Limit: 5},
			{RunID: "r", Limit: 5}, {Limit: 5},
		} {
			got, err := r.Attempts(ctx, q)
			require.NoError(t, err)
			require.Equal(t, []backend.Attempt{want}, got, "%+v", q)
		}
		for _, q := range []backend.AttemptQuery{
			{Status: backend.AttemptPrepared, Limit: 5}, {RunID: "r", Status: backend.AttemptPrepared, Limit: 5},
		} {
			got, err := r.Attempts(ctx, q)
			require.NoError(t, err)
			require.Empty(t, got, "%+v", q)
		}
	})
	integrityOK(t, b)
}

// Images follow the transaction's own writes: every kind is loaded, then
// replaced several times, deleted and re-inserted, and replaced after a
// failed write, and what commits is what was last written.
func TestReplaceImagesFollowTheTransactionsWrites(t *testing.T) {
	t.Parallel()
	b := newStore(t)
	ctx := context.Background()
	run, _, act, group, att, lease, sched, _ := fullRecords("r", []byte(`{"big":1}`))
	other := attempt(att.Key.ActivationKey, 7, "other-identity", backend.AttemptPrepared, 3)
	update(t, b, backend.Changes{Insert: backend.Inserts{
		Runs: []backend.Run{run}, Activations: []backend.Activation{act}, Groups: []backend.FanOutGroup{group},
		Attempts: []backend.Attempt{att, other}, Leases: []backend.Lease{lease}, Schedules: []backend.RetrySchedule{sched},
	}})

	var wantRun backend.Run
	var wantAct backend.Activation
	var wantGroup backend.FanOutGroup
	var wantAtt backend.Attempt
	var wantLease backend.Lease
	var wantSched backend.RetrySchedule
	require.NoError(t, b.Update(ctx, func(tx backend.Tx) error {
		f := loadAll(t, ctx, tx, run, act, group, att, lease, sched)
		r, a, g, at, l, s := f.Runs[run.ID], f.Activations[act.Key], f.Groups[group.Controller], f.Attempts[att.Key], f.Leases[lease.Key], f.Schedules[sched.Key]

		replaceEvery := func() backend.Changes {
			return backend.Changes{Replace: backend.Replaces{
				Runs: []backend.Run{r}, Activations: []backend.Activation{a}, Groups: []backend.FanOutGroup{g},
				Attempts: []backend.Attempt{at}, Leases: []backend.Lease{l}, Schedules: []backend.RetrySchedule{s},
			}}
		}
		// Unchanged replaces write nothing and succeed.
		require.NoError(t, tx.Apply(ctx, replaceEvery()))

		// Two successive changes, back and forth: the second compares
		// with the first, not with the loaded row.
		r.AttemptCount, r.Authority, r.Metadata = 100, nil, nil
		a.Admissible, a.Claims, a.Group, a.Output = false, nil, nil, []byte{}
		g.Promoted, g.Retiring = 50, false
		at.Status, at.Receipt = backend.AttemptAdmitted, nil
		l.ReleasedMS = 77
		s.DueMS = 5
		require.NoError(t, tx.Apply(ctx, replaceEvery()))
		r.AttemptCount, r.Authority = run.AttemptCount, run.Authority
		a.Admissible, a.Output = true, nil
		at.Status = att.Status
		l.ReleasedMS = 0
		require.NoError(t, tx.Apply(ctx, backend.Changes{Replace: backend.Replaces{
			Runs: []backend.Run{r}, Activations: []backend.Activation{a}, Attempts: []backend.Attempt{at}, Leases: []backend.Lease{l},
		}}))

		// A failed replace (identity taken) leaves the row and its image.
		bad := at
		bad.Identity, bad.PreparedMS = other.Identity, 99
		require.ErrorIs(t, tx.Apply(ctx, replaceAttempts(bad)), backend.ErrConflict)
		at.PreparedMS = 99 // only PreparedMS differs from the stored row now
		require.NoError(t, tx.Apply(ctx, replaceAttempts(at)))

		// Delete and re-insert, then replace back to the loaded value:
		// in separate Applies, then in one.
		s2 := s
		s2.DueMS, s2.BackoffMS = 42, 43
		require.NoError(t, tx.Apply(ctx, backend.Changes{Delete: backend.Deletes{Schedules: []backend.ActivationKey{s.Key}}}))
		require.NoError(t, tx.Apply(ctx, backend.Changes{Insert: backend.Inserts{Schedules: []backend.RetrySchedule{s2}}}))
		require.NoError(t, tx.Apply(ctx, backend.Changes{Replace: backend.Replaces{Schedules: []backend.RetrySchedule{s}}}))
		require.NoError(t, tx.Apply(ctx, backend.Changes{
			Delete:  backend.Deletes{Schedules: []backend.ActivationKey{s.Key}},
			Insert:  backend.Inserts{Schedules: []backend.RetrySchedule{s2}},
			Replace: backend.Replaces{Schedules: []backend.RetrySchedule{s}},
		}))

		// A failed insert of an existing key does not touch the image.
		g2 := g
		g2.Size = 1
		require.ErrorIs(t, tx.Apply(ctx, backend.Changes{Insert: backend.Inserts{Groups: []backend.FanOutGroup{g2}}}), backend.ErrConflict)
		g.Settled = 61
		require.NoError(t, tx.Apply(ctx, backend.Changes{Replace: backend.Replaces{Groups: []backend.FanOutGroup{g}}}))

		wantRun, wantAct, wantGroup, wantAtt, wantLease, wantSched = r, a, g, at, l, s
		return nil
	}))
	view(t, b, func(rt backend.ReadTx) {
		f := loadAll(t, ctx, rt, run, act, group, att, lease, sched)
		require.Equal(t, wantRun, f.Runs[run.ID])
		require.Equal(t, wantAct, f.Activations[act.Key])
		require.Equal(t, wantGroup, f.Groups[group.Controller])
		require.Equal(t, wantAtt, f.Attempts[att.Key])
		require.Equal(t, wantLease, f.Leases[lease.Key])
		require.Equal(t, wantSched, f.Schedules[sched.Key])
		adm, err := rt.AdmissibleActivations(ctx, backend.AdmissibleQuery{Limit: 5})
		require.NoError(t, err)
		require.Equal(t, []backend.Activation{wantAct}, adm)
		leases, err := rt.Leases(ctx, backend.LeaseQuery{RunID: run.ID, Limit: 5})
		require.NoError(t, err)
		require.Equal(t, []backend.Lease{wantLease}, leases)
	})
	integrityOK(t, b)
}

// A rolled-back Update leaves no image behind for the next one.
func TestReplaceImagesDoNotOutliveTheirTransaction(t *testing.T) {
	t.Parallel()
	b := newStore(t)
	ctx := context.Background()
	run := backend.Run{ID: "r", Status: backend.RunRunning, AttemptCount: 1}
	update(t, b, insertRuns(run))
	var loaded backend.Run
	err := b.Update(ctx, func(tx backend.Tx) error {
		f, err := tx.Load(ctx, backend.Lookup{Runs: []string{"r"}})
		require.NoError(t, err)
		loaded = f.Runs["r"]
		r := loaded
		r.AttemptCount = 2
		require.NoError(t, tx.Apply(ctx, replaceRuns(r)))
		return context.Canceled
	})
	require.ErrorIs(t, err, context.Canceled)
	// Replacing with the value loaded before must still write, even though
	// it equals what the rolled-back transaction saw.
	update(t, b, replaceRuns(backend.Run{ID: "r", Status: backend.RunRunning, AttemptCount: 3}))
	update(t, b, replaceRuns(loaded))
	require.Equal(t, loaded, loadRun(t, b, "r"))
}

// loadRun reads run id in a View.
func loadRun(t *testing.T, b *Backend, id string) backend.Run {
	t.Helper()
	var got backend.Run
	view(t, b, func(r backend.ReadTx) {
		f, err := r.Load(context.Background(), backend.Lookup{Runs: []string{id}})
		require.NoError(t, err)
		got = f.Runs[id]
	})
	return got
}

// An Update starts with the images its predecessor committed: a Replace of
// a row the previous Update wrote sets only the changed columns without
// reading the row, and an Expect compares with the carried image.
func TestImagesCarryToTheNextUpdate(t *testing.T) {
	t.Parallel()
	b := newStore(t)
	ctx := context.Background()
	att := attempt(akey("r", "n", "a"), 1, "id-1", backend.AttemptPrepared, 5)
	update(t, b, insertAttempts(att))

	next := att
	next.Handoff = backend.HandoffRecorded
	update(t, b, replaceAttempts(next))
	handoff := uint64(1) << (10 - attemptsT.nkey) // column 10 is handoff
	require.Equal(t, map[partialKey]bool{{sAttRep, handoff}: true}, keysOf(b.w.partial), "the replace used the carried image")

	// The carried image is the row as stored: expecting an older value fails.
	err := b.Update(ctx, func(tx backend.Tx) error { return tx.Apply(ctx, expectAttempts(att)) })
	require.ErrorIs(t, err, backend.ErrChanged)
	update(t, b, expectAttempts(next))
	view(t, b, func(r backend.ReadTx) {
		f, err := r.Load(ctx, backend.Lookup{Attempts: []backend.AttemptKey{att.Key}})
		require.NoError(t, err)
		require.Equal(t, next, f.Attempts[att.Key])
	})
}

func keysOf[K comparable, V any](m map[K]V) map[K]bool {
	out := make(map[K]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

// A commit by another connection (here a second Backend on the same file;
// another process is the same to SQLite) voids the carried images: the
// next Expect reads the row, and the next Replace sets every column.
func TestCarriedImagesYieldToOtherConnections(t *testing.T) {
	t.Parallel()
	path := newPath(t)
	b := openAt(t, path)
	other := openAt(t, path)
	ctx := context.Background()
	run := backend.Run{ID: "r", Status: backend.RunRunning, AttemptCount: 1}
	update(t, b, insertRuns(run))

	changed := run
	changed.Status, changed.UpdatedMS = backend.RunCancelled, 9
	update(t, other, replaceRuns(changed))

	err := b.Update(ctx, func(tx backend.Tx) error { return tx.Apply(ctx, expectRuns(run)) })
	require.ErrorIs(t, err, backend.ErrChanged, "an image older than the other connection's commit was trusted")
	update(t, b, expectRuns(changed))

	// Same again, then a blind Replace: it must write every column.
	update(t, other, replaceRuns(run))
	mine := run
	mine.AttemptCount = 2
	update(t, b, replaceRuns(mine))
	require.Equal(t, mine, loadRun(t, b, "r"))
	require.Equal(t, mine, loadRun(t, other, "r"))
	integrityOK(t, b)
}

// An Update that does not commit passes no images on, and takes with it
// those it was given.
func TestImagesOfAnUpdateThatDidNotCommitAreNotCarried(t *testing.T) {
	t.Parallel()
	b := newStore(t)
	ctx := context.Background()
	run := backend.Run{ID: "r", Status: backend.RunRunning, AttemptCount: 1}
	update(t, b, insertRuns(run))
	v2 := run
	v2.AttemptCount = 2
	err := b.Update(ctx, func(tx backend.Tx) error {
		require.NoError(t, tx.Apply(ctx, backend.Changes{Expect: backend.Expected{Runs: []backend.Run{run}}, Replace: backend.Replaces{Runs: []backend.Run{v2}}}))
		require.NoError(t, tx.Apply(ctx, expectRuns(v2)))
		return context.Canceled
	})
	require.ErrorIs(t, err, context.Canceled)
	err = b.Update(ctx, func(tx backend.Tx) error { return tx.Apply(ctx, expectRuns(v2)) })
	require.ErrorIs(t, err, backend.ErrChanged, "the rolled-back value was carried")
	update(t, b, expectRuns(run))

	// A blind Replace after a rolled-back Update writes every column.
	err = b.Update(ctx, func(tx backend.Tx) error {
		require.NoError(t, tx.Apply(ctx, replaceRuns(v2)))
		return context.Canceled
	})
	require.ErrorIs(t, err, context.Canceled)
	update(t, b, replaceRuns(v2))
	require.Equal(t, v2, loadRun(t, b, "r"))
}

// Carried images share no memory with the caller's records: changing a
// written record's bytes in place after its Update returned, then
// replacing the row with it, still writes the change.
func TestCarriedImagesAreCopies(t *testing.T) {
	t.Parallel()
	b := newStore(t)
	att := attempt(akey("r", "n", "a"), 1, "id-1", backend.AttemptPrepared, 5)
	att.Receipt = []byte(`{"a":1}`)
	update(t, b, insertAttempts(att))
	att.Receipt[5] = '2'
	update(t, b, replaceAttempts(att))
	view(t, b, func(r backend.ReadTx) {
		f, err := r.Load(context.Background(), backend.Lookup{Attempts: []backend.AttemptKey{att.Key}})
		require.NoError(t, err)
		require.Equal(t, `{"a":2}`, string(f.Attempts[att.Key].Receipt))
	})
}

// Only the rows the last committed Update loaded or wrote itself are
// carried: images do not pile up over a run of Updates.
func TestCarriedImagesAreTheLastUpdatesOwnRows(t *testing.T) {
	t.Parallel()
	b := newStore(t)
	att := attempt(akey("r", "n", "a"), 1, "id-1", backend.AttemptPrepared, 5)
	update(t, b, insertAttempts(att))
	update(t, b, insertRuns(backend.Run{ID: "other", Status: backend.RunRunning}))
	next := att
	next.Handoff = backend.HandoffRecorded
	update(t, b, replaceAttempts(next))
	for k := range b.w.partial {
		require.NotEqual(t, sAttRep, k.tbl, "the attempt's image outlived the Update after the one that wrote it")
	}
	view(t, b, func(r backend.ReadTx) {
		f, err := r.Load(context.Background(), backend.Lookup{Attempts: []backend.AttemptKey{att.Key}})
		require.NoError(t, err)
		require.Equal(t, next, f.Attempts[att.Key])
	})
}

// An image carried to an Update that only compared with it (an Expect) is
// passed on to the next as it is, not copied again: no caller holds its
// record. One the Update wrote is a fresh copy.
func TestCarriedImagesOnlyReadArePassedOnUncopied(t *testing.T) {
	t.Parallel()
	b := newStore(t)
	att := attempt(akey("r", "n", "a"), 1, "id-1", backend.AttemptPrepared, 5)
	att.Receipt = []byte(`{"a":1}`)
	update(t, b, insertAttempts(att))
	k := rowKey{sAttRep, att.Key}
	first := b.w.carried.img[k]
	require.NotNil(t, first)
	update(t, b, expectAttempts(att))
	require.Same(t, first, b.w.carried.img[k], "an image only compared with was copied again")
	update(t, b, expectAttempts(att))
	require.Same(t, first, b.w.carried.img[k], "an image only compared with was copied again")

	next := att
	next.Handoff, next.Receipt = backend.HandoffRecorded, []byte(`{"a":1}`)
	update(t, b, replaceAttempts(next))
	require.NotSame(t, first, b.w.carried.img[k])
	stored := next
	stored.Receipt = []byte(`{"a":1}`)
	update(t, b, expectAttempts(stored))
	next.Receipt[5] = '2' // the caller's bytes: the carried image does not follow
	update(t, b, expectAttempts(stored))
	err := b.Update(context.Background(), func(tx backend.Tx) error {
		return tx.Apply(context.Background(), expectAttempts(next))
	})
	require.ErrorIs(t, err, backend.ErrChanged)
}
