package sqlite

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/wfstore/wfstore/backend"
)

// Ids whose bytewise order differs from any case-insensitive or
// locale-aware order.
var mixedIDs = []string{"B", "a", "Z", "é", "z", "ä", "A", "ab", "a\u0301", "🚀", "Ω", "_"}

func keyCmp(a, b backend.ActivationKey) int {
	return cmp.Or(cmp.Compare(a.RunID, b.RunID), cmp.Compare(a.NodeID, b.NodeID), cmp.Compare(a.ActivationID, b.ActivationID))
}

func keys(acts []backend.Activation) []backend.ActivationKey {
	out := make([]backend.ActivationKey, len(acts))
	for i, a := range acts {
		out[i] = a.Key
	}
	return out
}

// insertShuffled inserts records in random order, a few per Update; ins
// puts a slice of them in Inserts.
func insertShuffled[T any](t *testing.T, b *Backend, recs []T, ins func([]T) backend.Inserts) {
	t.Helper()
	recs = slices.Clone(recs)
	rand.Shuffle(len(recs), func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
	for len(recs) > 0 {
		n := min(len(recs), 7)
		update(t, b, backend.Changes{Insert: ins(recs[:n])})
		recs = recs[n:]
	}
}

func activationsIn(v []backend.Activation) backend.Inserts  { return backend.Inserts{Activations: v} }
func attemptsIn(v []backend.Attempt) backend.Inserts        { return backend.Inserts{Attempts: v} }
func linksIn(v []backend.RunLink) backend.Inserts           { return backend.Inserts{Links: v} }
func schedulesIn(v []backend.RetrySchedule) backend.Inserts { return backend.Inserts{Schedules: v} }
func eventsIn(v []backend.Event) backend.Inserts            { return backend.Inserts{Events: v} }
func leasesIn(v []backend.Lease) backend.Inserts            { return backend.Inserts{Leases: v} }

func TestAdmissibleActivationsBytewiseOrderLimitsAndCursors(t *testing.T) {
	t.Parallel()
	b := newStore(t)
	ctx := context.Background()
	runs := []string{"run-B", "run-a", "run-é", "Run-A"}
	var all []backend.Activation
	var want []backend.ActivationKey
	i := 0
	for _, r := range runs {
		for _, n := range mixedIDs[:6] {
			for _, a := range []string{"1", "a", "A", "10", "2"} {
				adm := i%4 != 0
				all = append(all, activation(akey(r, n, a), adm))
				if adm {
					want = append(want, akey(r, n, a))
				}
				i++
			}
		}
	}
	slices.SortFunc(want, keyCmp)
	insertShuffled(t, b, all, activationsIn)

	view(t, b, func(r backend.ReadTx) {
		// Full order in one page.
		got, err := r.AdmissibleActivations(ctx, backend.AdmissibleQuery{Limit: 1000})
		require.NoError(t, err)
		require.Equal(t, want, keys(got))
		for _, a := range got {
			require.True(t, a.Admissible)
		}

		// Paging with After.
		var paged []backend.ActivationKey
		var after backend.ActivationKey
		for {
			page, err := r.AdmissibleActivations(ctx, backend.AdmissibleQuery{After: after, Limit: 7})
			require.NoError(t, err)
			require.LessOrEqual(t, len(page), 7)
			if len(page) == 0 {
				break
			}
			paged = append(paged, keys(page)...)
			after = page[len(page)-1].Key
		}
		require.Equal(t, want, paged)

		// AfterRun skips every activation of After.RunID (node/activation ignored).
		got, err = r.AdmissibleActivations(ctx, backend.AdmissibleQuery{After: akey("run-B", "zzz", "zzz"), AfterRun: true, Limit: 1000})
		require.NoError(t, err)
		var wantAfterRun []backend.ActivationKey
		for _, k := range want {
			if k.RunID > "run-B" {
				wantAfterRun = append(wantAfterRun, k)
			}
		}
		require.Equal(t, wantAfterRun, keys(got))

		// One run, paged.
		var wantRun []backend.ActivationKey
		for _, k := range want {
			if k.RunID == "run-é" {
				wantRun = append(wantRun, k)
			}
		}
		paged = nil
		after = backend.ActivationKey{}
		for {
			page, err := r.AdmissibleActivations(ctx, backend.AdmissibleQuery{RunID: "run-é", After: after, Limit: 4})
			require.NoError(t, err)
			if len(page) == 0 {
				break
			}
			paged = append(paged, keys(page)...)
			after = page[len(page)-1].Key
		}
		require.Equal(t, wantRun, paged)

		// A cursor in an earlier run starts the run at its beginning; in a
		// later run (or AfterRun on the same run) it yields nothing.
		got, err = r.AdmissibleActivations(ctx, backend.AdmissibleQuery{RunID: "run-é", After: akey("run-B", "x", "y"), Limit: 1000})
		require.NoError(t, err)
		require.Equal(t, wantRun, keys(got))
		got, err = r.AdmissibleActivations(ctx, backend.AdmissibleQuery{RunID: "run-a", After: akey("run-é", "", ""), Limit: 1000})
		require.NoError(t, err)
		require.Empty(t, got)
		got, err = r.AdmissibleActivations(ctx, backend.AdmissibleQuery{RunID: "run-é", After: akey("run-é", "", ""), AfterRun: true, Limit: 1000})
		require.NoError(t, err)
		require.Empty(t, got)

		got, err = r.AdmissibleActivations(ctx, backend.AdmissibleQuery{Limit: 0})
		require.NoError(t, err)
		require.Empty(t, got)
	})

	// Turning admissibility off removes an activation from the scan.
	first := want[0]
	a := activation(first, false)
	update(t, b, backend.Changes{Replace: backend.Replaces{Activations: []backend.Activation{a}}})
	view(t, b, func(r backend.ReadTx) {
		got, err := r.AdmissibleActivations(ctx, backend.AdmissibleQuery{Limit: 1})
		require.NoError(t, err)
		require.Equal(t, want[1:2], keys(got))
	})
}

func TestActivationsScanEveryStatusInKeyOrder(t *testing.T) {
	t.Parallel()
	b := newStore(t)
	ctx := context.Background()
	var all []backend.Activation
	var want []backend.ActivationKey
	for i, n := range mixedIDs {
		for _, a := range mixedIDs[:3] {
			all = append(all, activation(akey("r", n, a), i%2 == 0))
			want = append(want, akey("r", n, a))
		}
		all = append(all, activation(akey("other", n, "x"), true))
	}
	slices.SortFunc(want, keyCmp)
	insertShuffled(t, b, all, activationsIn)
	view(t, b, func(r backend.ReadTx) {
		var got []backend.ActivationKey
		var after backend.NodeRef
		for {
			page, err := r.Activations(ctx, backend.ActivationQuery{RunID: "r", After: after, Limit: 5})
			require.NoError(t, err)
			if len(page) == 0 {
				break
			}
			got = append(got, keys(page)...)
			last := page[len(page)-1].Key
			after = backend.NodeRef{NodeID: last.NodeID, ActivationID: last.ActivationID}
		}
		require.Equal(t, want, got)
	})
}

func TestAttemptsScanOrderFiltersAndCursors(t *testing.T) {
	t.Parallel()
	b := newStore(t)
	ctx := context.Background()
	statuses := []backend.AttemptStatus{backend.AttemptPrepared, backend.AttemptRunning, backend.AttemptFailed}
	var all []backend.Attempt
	for i := 0; i < 90; i++ {
		run := []string{"r1", "R1", "r-é"}[i%3]
		id := fmt.Sprintf("%s-%s", mixedIDs[i%len(mixedIDs)], fmt.Sprint(i))
		all = append(all, attempt(akey(run, "n", fmt.Sprint(i)), uint32(i), id, statuses[(i/3)%3], int64(i%7))) // prepared_ms ties
	}
	insertShuffled(t, b, all, attemptsIn)
	order := func(a, c backend.Attempt) int {
		return cmp.Or(cmp.Compare(a.PreparedMS, c.PreparedMS), cmp.Compare(a.Identity, c.Identity))
	}
	for _, q := range []backend.AttemptQuery{{}, {RunID: "r-é"}, {Status: backend.AttemptRunning}, {RunID: "R1", Status: backend.AttemptFailed}, {RunID: "none"}} {
		var want []backend.Attempt
		for _, a := range all {
			if (q.RunID == "" || a.Key.RunID == q.RunID) && (q.Status == "" || a.Status == q.Status) {
				want = append(want, a)
			}
		}
		slices.SortFunc(want, order)
		view(t, b, func(r backend.ReadTx) {
			var got []backend.Attempt
			q := q
			q.Limit = 4
			for {
				page, err := r.Attempts(ctx, q)
				require.NoError(t, err)
				require.LessOrEqual(t, len(page), 4)
				if len(page) == 0 {
					break
				}
				got = append(got, page...)
				last := page[len(page)-1]
				q.After = backend.AttemptCursor{PreparedMS: last.PreparedMS, Identity: last.Identity}
			}
			if want == nil {
				require.Empty(t, got)
			} else {
				require.Equal(t, want, got, "%+v", q)
			}
		})
	}
}

func TestCountAttemptsReadsAtMostLimit(t *testing.T) {
	t.Parallel()
	b := newStore(t)
	ctx := context.Background()
	var all []backend.Attempt
	for i := 0; i < 12; i++ {
		all = append(all, attempt(akey("r", "n", fmt.Sprint(i)), 1, fmt.Sprint("id", i), backend.AttemptPrepared, 1))
	}
	all = append(all, attempt(akey("s", "n", "a"), 1, "other", backend.AttemptPrepared, 1))
	insertShuffled(t, b, all, attemptsIn)
	view(t, b, func(r backend.ReadTx) {
		for limit, want := range map[int]int{0: 0, 1: 1, 11: 11, 12: 12, 13: 12, 1000: 12} {
			n, err := r.CountAttempts(ctx, backend.AttemptCountQuery{RunID: "r", Limit: limit})
			require.NoError(t, err)
			require.Equal(t, want, n, "limit %d", limit)
		}
		n, err := r.CountAttempts(ctx, backend.AttemptCountQuery{RunID: "missing", Limit: 10})
		require.NoError(t, err)
		require.Zero(t, n)
	})
}

func TestChildRunsOrderAndCursor(t *testing.T) {
	t.Parallel()
	b := newStore(t)
	ctx := context.Background()
	var all, want []backend.RunLink
	for i, id := range mixedIDs {
		l := backend.RunLink{ChildRunID: id, RootRunID: "root", Depth: 2, CreatedMS: int64(i % 3), Target: []byte(`{}`)}
		all = append(all, l)
		want = append(want, l)
		all = append(all, backend.RunLink{ChildRunID: "other-" + id, RootRunID: "root2", CreatedMS: 1})
	}
	slices.SortFunc(want, func(a, c backend.RunLink) int {
		return cmp.Or(cmp.Compare(a.CreatedMS, c.CreatedMS), cmp.Compare(a.ChildRunID, c.ChildRunID))
	})
	insertShuffled(t, b, all, linksIn)
	view(t, b, func(r backend.ReadTx) {
		var got []backend.RunLink
		q := backend.ChildRunQuery{RootRunID: "root", Limit: 5}
		for {
			page, err := r.ChildRuns(ctx, q)
			require.NoError(t, err)
			if len(page) == 0 {
				break
			}
			got = append(got, page...)
			q.After = backend.ChildRunCursor{CreatedMS: page[len(page)-1].CreatedMS, ChildRunID: page[len(page)-1].ChildRunID}
		}
		require.Equal(t, want, got)
	})
}

func TestDueSchedulesInclusiveAndOrdered(t *testing.T) {
	t.Parallel()
	b := newStore(t)
	ctx := context.Background()
	var all, want []backend.RetrySchedule
	for i, id := range mixedIDs {
		s := backend.RetrySchedule{Key: akey("r", id, "a"), DueMS: int64(100 + i%4*10), NextAttempt: 2, FailedAttempt: 1}
		all = append(all, s)
		if s.DueMS <= 120 {
			want = append(want, s)
		}
		all = append(all, backend.RetrySchedule{Key: akey("other", id, "a"), DueMS: 1})
	}
	slices.SortFunc(want, func(a, c backend.RetrySchedule) int {
		return cmp.Or(cmp.Compare(a.DueMS, c.DueMS), keyCmp(a.Key, c.Key))
	})
	insertShuffled(t, b, all, schedulesIn)
	view(t, b, func(r backend.ReadTx) {
		got, err := r.DueSchedules(ctx, backend.ScheduleQuery{RunID: "r", DueBy: 120, Limit: 100})
		require.NoError(t, err)
		require.Equal(t, want, got)
		got, err = r.DueSchedules(ctx, backend.ScheduleQuery{RunID: "r", DueBy: 120, Limit: 2})
		require.NoError(t, err)
		require.Equal(t, want[:2], got)
		got, err = r.DueSchedules(ctx, backend.ScheduleQuery{RunID: "r", DueBy: 99, Limit: 2})
		require.NoError(t, err)
		require.Empty(t, got)
	})
}

func TestEventsAfterInSeqOrder(t *testing.T) {
	t.Parallel()
	b := newStore(t)
	ctx := context.Background()
	var all []backend.Event
	for i := int64(1); i <= 30; i++ {
		all = append(all, backend.Event{RunID: "r", Seq: i * 3, Type: "t", Payload: []byte(fmt.Sprint(i)), CreatedMS: i})
		all = append(all, backend.Event{RunID: "R", Seq: i, Type: "t"})
	}
	insertShuffled(t, b, all, eventsIn)
	view(t, b, func(r backend.ReadTx) {
		got, err := r.Events(ctx, backend.EventQuery{RunID: "r", After: 10, Limit: 5})
		require.NoError(t, err)
		require.Len(t, got, 5)
		for i, e := range got {
			require.Equal(t, int64(12+3*i), e.Seq)
			require.Equal(t, "r", e.RunID)
		}
		got, err = r.Events(ctx, backend.EventQuery{RunID: "r", After: 90, Limit: 5})
		require.NoError(t, err)
		require.Empty(t, got)
	})
	require.ErrorIs(t, applyErr(b, backend.Changes{Insert: backend.Inserts{Events: []backend.Event{{RunID: "r", Seq: 3}}}}), backend.ErrConflict)
}

func TestLeasesAndResourceLookupInLeaseKeyOrder(t *testing.T) {
	t.Parallel()
	b := newStore(t)
	ctx := context.Background()
	lk := func(run, node string, att uint32, res string, mode backend.LeaseMode) backend.LeaseKey {
		return backend.LeaseKey{AttemptKey: backend.AttemptKey{ActivationKey: akey(run, node, "a"), Attempt: att}, Resource: res, Mode: mode}
	}
	var all, want []backend.Lease
	for i, node := range mixedIDs[:6] {
		for _, att := range []uint32{2, 10, 1} { // numeric, not text, order
			for _, res := range []string{"db", "DB", "é"} {
				for _, mode := range []backend.LeaseMode{backend.LeaseWrite, backend.LeaseRead} {
					l := backend.Lease{Key: lk("r", node, att, res, mode), AcquiredMS: 1}
					if (i+int(att))%3 == 0 {
						l.ReleasedMS = 5
					} else {
						want = append(want, l)
					}
					all = append(all, l)
				}
			}
		}
	}
	all = append(all, backend.Lease{Key: lk("s", "n", 1, "db", backend.LeaseRead)})
	leaseCmp := func(a, c backend.Lease) int {
		x, y := a.Key, c.Key
		return cmp.Or(keyCmp(x.ActivationKey, y.ActivationKey), cmp.Compare(x.Attempt, y.Attempt),
			cmp.Compare(x.Resource, y.Resource), cmp.Compare(x.Mode, y.Mode))
	}
	slices.SortFunc(want, leaseCmp)
	insertShuffled(t, b, all, leasesIn)
	view(t, b, func(r backend.ReadTx) {
		var got []backend.Lease
		q := backend.LeaseQuery{RunID: "r", Limit: 7}
		for {
			page, err := r.Leases(ctx, q)
			require.NoError(t, err)
			if len(page) == 0 {
				break
			}
			got = append(got, page...)
			q.After = page[len(page)-1].Key
		}
		require.Equal(t, want, got)

		// A cursor from an earlier run starts at the beginning; from a later one, nothing.
		early := lk("a", "n", 1, "x", backend.LeaseRead)
		page, err := r.Leases(ctx, backend.LeaseQuery{RunID: "r", After: early, Limit: 3})
		require.NoError(t, err)
		require.Equal(t, want[:3], page)
		late := lk("t", "", 0, "", "")
		page, err = r.Leases(ctx, backend.LeaseQuery{RunID: "r", After: late, Limit: 3})
		require.NoError(t, err)
		require.Empty(t, page)

		ref := backend.ResourceRef{RunID: "r", Resource: "DB"}
		f, err := r.Load(ctx, backend.Lookup{Resources: []backend.ResourceRef{ref, ref}})
		require.NoError(t, err)
		var wantRes []backend.Lease
		for _, l := range want {
			if l.Key.Resource == "DB" {
				wantRes = append(wantRes, l)
			}
		}
		require.Equal(t, wantRes, f.Resources[ref])
	})
}

// Every scan's zero After starts at the beginning of its order, including
// rows whose position equals the zero value (a run with the empty id, an
// event with Seq 0), and a descending attempt scan starts at the end.
func TestZeroCursorsStartAtTheBeginning(t *testing.T) {
	t.Parallel()
	b := newStore(t)
	ctx := context.Background()
	runs := []backend.Run{{ID: "", Status: backend.RunRunning}, {ID: "a", Status: backend.RunPaused}, {ID: "b", Status: backend.RunRunning}}
	events := []backend.Event{{RunID: "r", Seq: -1}, {RunID: "r", Seq: 0}, {RunID: "r", Seq: 1}}
	var atts []backend.Attempt
	for i := range 9 {
		atts = append(atts, attempt(akey("r", "n", fmt.Sprint(i)), 1, fmt.Sprint("id-", i%3, "-", i), backend.AttemptPrepared, int64(1+i%3)))
	}
	update(t, b, backend.Changes{Insert: backend.Inserts{Runs: runs, Events: events, Attempts: atts}})
	view(t, b, func(r backend.ReadTx) {
		got, err := r.Runs(ctx, backend.RunQuery{Limit: 10})
		require.NoError(t, err)
		require.Equal(t, runs, got)
		got, err = r.Runs(ctx, backend.RunQuery{Status: backend.RunRunning, Limit: 10})
		require.NoError(t, err)
		require.Equal(t, []backend.Run{runs[0], runs[2]}, got)
		got, err = r.Runs(ctx, backend.RunQuery{After: "a", Limit: 10})
		require.NoError(t, err)
		require.Equal(t, runs[2:], got)
		got, err = r.Runs(ctx, backend.RunQuery{After: "a", Status: backend.RunPaused, Limit: 10})
		require.NoError(t, err)
		require.Empty(t, got)

		evs, err := r.Events(ctx, backend.EventQuery{RunID: "r", Limit: 10})
		require.NoError(t, err)
		require.Equal(t, events, evs)
		evs, err = r.Events(ctx, backend.EventQuery{RunID: "r", After: -1, Limit: 10})
		require.NoError(t, err)
		require.Equal(t, events[1:], evs)

		// Descending: the reverse of the ascending scan, paged from the
		// zero cursor.
		asc, err := r.Attempts(ctx, backend.AttemptQuery{RunID: "r", Limit: 100})
		require.NoError(t, err)
		require.Len(t, asc, len(atts))
		var desc []backend.Attempt
		q := backend.AttemptQuery{RunID: "r", Descending: true, Limit: 4}
		for {
			page, err := r.Attempts(ctx, q)
			require.NoError(t, err)
			if len(page) == 0 {
				break
			}
			desc = append(desc, page...)
			last := page[len(page)-1]
			q.After = backend.AttemptCursor{PreparedMS: last.PreparedMS, Identity: last.Identity}
		}
		slices.Reverse(desc)
		require.Equal(t, asc, desc)
	})
}
