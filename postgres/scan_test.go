package postgres_test

import (
	"context"
	"slices"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
)

// Ids whose bytewise order differs from any linguistic collation.
var orderIDs = []string{"B", "a", "A", "b", "Ä", "ä", "z", "Z", "é", "e", "_", "1", "日", "\U0001F600", "aa", "a-"}

func sortedBytewise(ids []string) []string {
	out := append([]string(nil), ids...)
	sort.Strings(out) // Go compares strings bytewise
	return out
}

func view(t testing.TB, b backend.Backend, fn func(r backend.ReadTx) error) {
	t.Helper()
	require.NoError(t, b.View(ctxT(t), fn))
}

func TestScansOrderBytewiseWithLimitsAndCursors(t *testing.T) {
	t.Parallel()
	b, _, _ := openFresh(t)
	ctx := context.Background()
	var ins backend.Inserts
	for _, run := range orderIDs {
		ins.Runs = append(ins.Runs, backend.Run{ID: run})
		for _, node := range orderIDs[:4] {
			for _, act := range orderIDs[:3] {
				k := backend.ActivationKey{RunID: run, NodeID: node, ActivationID: act}
				// Every other activation is admissible.
				ins.Activations = append(ins.Activations, backend.Activation{Key: k, Admissible: act != orderIDs[1], Status: backend.ActivationPending})
			}
		}
	}
	apply(t, b, backend.Changes{Insert: ins})
	runs := sortedBytewise(orderIDs)
	nodes := sortedBytewise(orderIDs[:4])
	acts := sortedBytewise(orderIDs[:3])
	var wantAdmissible []backend.ActivationKey
	for _, r := range runs {
		for _, n := range nodes {
			for _, a := range acts {
				if a != orderIDs[1] {
					wantAdmissible = append(wantAdmissible, backend.ActivationKey{RunID: r, NodeID: n, ActivationID: a})
				}
			}
		}
	}

	keys := func(as []backend.Activation) []backend.ActivationKey {
		var out []backend.ActivationKey
		for _, a := range as {
			out = append(out, a.Key)
		}
		return out
	}
	view(t, b, func(r backend.ReadTx) error {
		// Page through the whole admissible index 7 at a time.
		var got []backend.ActivationKey
		q := backend.AdmissibleQuery{Limit: 7}
		for {
			page, err := r.AdmissibleActivations(ctx, q)
			require.NoError(t, err)
			require.LessOrEqual(t, len(page), 7)
			got = append(got, keys(page)...)
			if len(page) < 7 {
				break
			}
			q.After = page[len(page)-1].Key
		}
		require.Equal(t, wantAdmissible, got)

		// AfterRun skips the rest of a run.
		page, err := r.AdmissibleActivations(ctx, backend.AdmissibleQuery{After: backend.ActivationKey{RunID: runs[0], NodeID: "zzz"}, AfterRun: true, Limit: 1})
		require.NoError(t, err)
		require.Equal(t, runs[1], page[0].Key.RunID)

		// Per run, with cursor.
		page, err = r.AdmissibleActivations(ctx, backend.AdmissibleQuery{RunID: runs[3], Limit: 100})
		require.NoError(t, err)
		require.Len(t, page, len(nodes)*(len(acts)-1))
		for _, a := range page {
			require.Equal(t, runs[3], a.Key.RunID)
		}
		rest, err := r.AdmissibleActivations(ctx, backend.AdmissibleQuery{RunID: runs[3], After: page[2].Key, Limit: 100})
		require.NoError(t, err)
		require.Equal(t, keys(page[3:]), keys(rest))
		none, err := r.AdmissibleActivations(ctx, backend.AdmissibleQuery{RunID: runs[3], After: page[0].Key, AfterRun: true, Limit: 100})
		require.NoError(t, err)
		require.Empty(t, none)
		zero, err := r.AdmissibleActivations(ctx, backend.AdmissibleQuery{Limit: 0})
		require.NoError(t, err)
		require.Empty(t, zero)

		// Activations of any status, in key order.
		all, err := r.Activations(ctx, backend.ActivationQuery{RunID: runs[5], Limit: 100})
		require.NoError(t, err)
		require.Len(t, all, len(nodes)*len(acts))
		var want []backend.ActivationKey
		for _, n := range nodes {
			for _, a := range acts {
				want = append(want, backend.ActivationKey{RunID: runs[5], NodeID: n, ActivationID: a})
			}
		}
		require.Equal(t, want, keys(all))
		more, err := r.Activations(ctx, backend.ActivationQuery{RunID: runs[5], After: backend.NodeRef{NodeID: all[4].Key.NodeID, ActivationID: all[4].Key.ActivationID}, Limit: 3})
		require.NoError(t, err)
		require.Equal(t, want[5:8], keys(more))
		return nil
	})
}

func TestAttemptScans(t *testing.T) {
	t.Parallel()
	b, _, _ := openFresh(t)
	ctx := context.Background()
	var all []backend.Attempt
	statuses := []backend.AttemptStatus{backend.AttemptPrepared, backend.AttemptAdmitted}
	for i, id := range orderIDs {
		for j, run := range []string{"r1", "R2"} {
			a := backend.Attempt{
				Key:        backend.AttemptKey{ActivationKey: backend.ActivationKey{RunID: run, NodeID: "n", ActivationID: id}, Attempt: 1},
				Identity:   run + "/" + id,
				Status:     statuses[(i+j)%2],
				PreparedMS: int64(i % 3), // ties broken by identity
			}
			all = append(all, a)
		}
	}
	apply(t, b, backend.Changes{Insert: backend.Inserts{Attempts: all}})
	sort.Slice(all, func(i, j int) bool {
		if all[i].PreparedMS != all[j].PreparedMS {
			return all[i].PreparedMS < all[j].PreparedMS
		}
		return all[i].Identity < all[j].Identity
	})
	filter := func(run string, st backend.AttemptStatus) []string {
		var out []string
		for _, a := range all {
			if (run == "" || a.Key.RunID == run) && (st == "" || a.Status == st) {
				out = append(out, a.Identity)
			}
		}
		return out
	}
	view(t, b, func(r backend.ReadTx) error {
		for _, run := range []string{"", "r1", "R2"} {
			for _, st := range []backend.AttemptStatus{"", backend.AttemptPrepared, backend.AttemptAdmitted} {
				var got []string
				q := backend.AttemptQuery{RunID: run, Status: st, Limit: 5}
				for {
					page, err := r.Attempts(ctx, q)
					require.NoError(t, err)
					for _, a := range page {
						got = append(got, a.Identity)
					}
					if len(page) < 5 {
						break
					}
					last := page[len(page)-1]
					q.After = backend.AttemptCursor{PreparedMS: last.PreparedMS, Identity: last.Identity}
				}
				require.Equal(t, filter(run, st), got, "run %q status %q", run, st)
				// Descending: the zero cursor starts at the top.
				got = nil
				q = backend.AttemptQuery{RunID: run, Status: st, Descending: true, Limit: 5}
				for {
					page, err := r.Attempts(ctx, q)
					require.NoError(t, err)
					for _, a := range page {
						got = append(got, a.Identity)
					}
					if len(page) < 5 {
						break
					}
					last := page[len(page)-1]
					q.After = backend.AttemptCursor{PreparedMS: last.PreparedMS, Identity: last.Identity}
				}
				want := filter(run, st)
				slices.Reverse(want)
				require.Equal(t, want, got, "descending, run %q status %q", run, st)
			}
		}
		n, err := r.CountAttempts(ctx, backend.AttemptCountQuery{RunID: "r1", Limit: 1000})
		require.NoError(t, err)
		require.Equal(t, len(orderIDs), n)
		n, err = r.CountAttempts(ctx, backend.AttemptCountQuery{RunID: "r1", Limit: 3})
		require.NoError(t, err)
		require.Equal(t, 3, n)
		n, err = r.CountAttempts(ctx, backend.AttemptCountQuery{RunID: "r1", Limit: 0})
		require.NoError(t, err)
		require.Zero(t, n)
		n, err = r.CountAttempts(ctx, backend.AttemptCountQuery{RunID: "none", Limit: 10})
		require.NoError(t, err)
		require.Zero(t, n)
		return nil
	})
}

func TestChildRunsSchedulesEventsLeases(t *testing.T) {
	t.Parallel()
	b, _, _ := openFresh(t)
	ctx := context.Background()
	var ins backend.Inserts
	for i, id := range orderIDs {
		ins.Links = append(ins.Links,
			backend.RunLink{ChildRunID: id, RootRunID: "root", CreatedMS: int64(i % 2)},
			backend.RunLink{ChildRunID: "other-" + id, RootRunID: "other", CreatedMS: 1})
		ins.Schedules = append(ins.Schedules,
			backend.RetrySchedule{Key: backend.ActivationKey{RunID: "run", NodeID: id, ActivationID: "x"}, DueMS: int64(i % 3)},
			backend.RetrySchedule{Key: backend.ActivationKey{RunID: "run2", NodeID: id, ActivationID: "x"}, DueMS: 0})
		ins.Events = append(ins.Events, backend.Event{RunID: "run", Seq: int64(10 * (i + 1)), Type: id})
		ak := backend.AttemptKey{ActivationKey: backend.ActivationKey{RunID: "run", NodeID: id, ActivationID: "a"}, Attempt: 2}
		ins.Leases = append(ins.Leases,
			backend.Lease{Key: backend.LeaseKey{AttemptKey: ak, Resource: "res", Mode: backend.LeaseWrite}, ReleasedMS: int64(i % 2)},
			backend.Lease{Key: backend.LeaseKey{AttemptKey: ak, Resource: "res", Mode: backend.LeaseRead}})
	}
	apply(t, b, backend.Changes{Insert: ins})
	view(t, b, func(r backend.ReadTx) error {
		// Child runs by (CreatedMS, ChildRunID).
		var want []string
		for _, ms := range []int64{0, 1} {
			for _, id := range sortedBytewise(orderIDs) {
				if int64(indexOf(orderIDs, id)%2) == ms {
					want = append(want, id)
				}
			}
		}
		var got []string
		q := backend.ChildRunQuery{RootRunID: "root", Limit: 4}
		for {
			page, err := r.ChildRuns(ctx, q)
			require.NoError(t, err)
			for _, l := range page {
				got = append(got, l.ChildRunID)
			}
			if len(page) < 4 {
				break
			}
			q.After = backend.ChildRunCursor{CreatedMS: page[3].CreatedMS, ChildRunID: page[3].ChildRunID}
		}
		require.Equal(t, want, got)

		// Due schedules by (DueMS, NodeID, ActivationID), DueBy inclusive.
		due, err := r.DueSchedules(ctx, backend.ScheduleQuery{RunID: "run", DueBy: 1, Limit: 100})
		require.NoError(t, err)
		want = nil
		for _, ms := range []int64{0, 1} {
			for _, id := range sortedBytewise(orderIDs) {
				if int64(indexOf(orderIDs, id)%3) == ms {
					want = append(want, id)
				}
			}
		}
		got = nil
		for _, s := range due {
			require.Equal(t, "run", s.Key.RunID)
			got = append(got, s.Key.NodeID)
		}
		require.Equal(t, want, got)
		due, err = r.DueSchedules(ctx, backend.ScheduleQuery{RunID: "run", DueBy: 1, Limit: 2})
		require.NoError(t, err)
		require.Len(t, due, 2)

		// Events after a sequence number.
		evs, err := r.Events(ctx, backend.EventQuery{RunID: "run", After: 25, Limit: 3})
		require.NoError(t, err)
		require.Len(t, evs, 3)
		require.Equal(t, []int64{30, 40, 50}, []int64{evs[0].Seq, evs[1].Seq, evs[2].Seq})

		// Active leases in LeaseKey order, released ones left out.
		var wantL []backend.LeaseKey
		for _, id := range sortedBytewise(orderIDs) {
			k := backend.LeaseKey{AttemptKey: backend.AttemptKey{ActivationKey: backend.ActivationKey{RunID: "run", NodeID: id, ActivationID: "a"}, Attempt: 2}, Resource: "res"}
			k.Mode = backend.LeaseRead
			wantL = append(wantL, k)
			if indexOf(orderIDs, id)%2 == 0 {
				k.Mode = backend.LeaseWrite
				wantL = append(wantL, k)
			}
		}
		var gotL []backend.LeaseKey
		lq := backend.LeaseQuery{RunID: "run", Limit: 3}
		for {
			page, err := r.Leases(ctx, lq)
			require.NoError(t, err)
			for _, l := range page {
				gotL = append(gotL, l.Key)
			}
			if len(page) < 3 {
				break
			}
			lq.After = page[2].Key
		}
		require.Equal(t, wantL, gotL)

		// Load's Resources gives the same leases in the same order.
		f, err := r.Load(ctx, backend.Lookup{Resources: []backend.ResourceRef{{RunID: "run", Resource: "res"}}})
		require.NoError(t, err)
		gotL = nil
		for _, l := range f.Resources[backend.ResourceRef{RunID: "run", Resource: "res"}] {
			gotL = append(gotL, l.Key)
		}
		// Resource order is (node, activation, attempt, mode) within a resource.
		require.Equal(t, wantL, gotL)
		return nil
	})
}

func indexOf(xs []string, x string) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return -1
}
