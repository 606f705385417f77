package bolt

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
)

func TestAwkwardIDsAreInBytewiseOrder(t *testing.T) {
	t.Parallel()
	require.True(t, slices.IsSorted(awkwardIDs))
}

// pages reads a whole scan one page at a time, for every page size, and
// checks each reading gives want.
func pages[T any](t *testing.T, want []T, page func(limit int, last *T) []T) {
	t.Helper()
	for limit := 1; limit <= len(want)+1; limit++ {
		var got []T
		var last *T
		for {
			p := page(limit, last)
			require.LessOrEqual(t, len(p), limit)
			got = append(got, p...)
			if len(p) < limit {
				break
			}
			last = &p[len(p)-1]
		}
		if len(want) == 0 {
			require.Empty(t, got, "limit %d", limit)
			continue
		}
		require.Equal(t, want, got, "limit %d", limit)
	}
	require.Empty(t, page(0, nil), "limit 0")
	require.Empty(t, page(-1, nil), "negative limit")
}

func TestAdmissibleActivationsOrderLimitsCursors(t *testing.T) {
	t.Parallel()
	b := openTemp(t)
	var all []backend.Activation // in key order
	var ins []backend.Activation
	for _, run := range awkwardIDs[:6] {
		for _, node := range awkwardIDs {
			for _, act := range []string{"\x00", "x", "X\x00"} {
				a := activation(actKey(run, node, act), true)
				all = append(all, a)
				ins = append(ins, a)
				// Not admissible: never returned.
				ins = append(ins, activation(actKey(run, node, act+"-no"), false))
			}
		}
	}
	slices.Reverse(ins) // insertion order must not matter
	apply(t, b, backend.Changes{Insert: backend.Inserts{Activations: ins}})
	slices.SortFunc(all, func(x, y backend.Activation) int { return compareKeys(x.Key, y.Key) })

	view(t, b, func(ctx context.Context, r backend.ReadTx) {
		scan := func(q backend.AdmissibleQuery) []backend.Activation {
			got, err := r.AdmissibleActivations(ctx, q)
			require.NoError(t, err)
			return got
		}
		// Global, paged by After.
		pages(t, all, func(limit int, last *backend.Activation) []backend.Activation {
			q := backend.AdmissibleQuery{Limit: limit}
			if last != nil {
				q.After = last.Key
			}
			return scan(q)
		})
		// Per run, for each run.
		for _, run := range awkwardIDs[:6] {
			want := slices.DeleteFunc(slices.Clone(all), func(a backend.Activation) bool { return a.Key.RunID != run })
			pages(t, want, func(limit int, last *backend.Activation) []backend.Activation {
				q := backend.AdmissibleQuery{RunID: run, Limit: limit}
				if last != nil {
					q.After = last.Key
				}
				return scan(q)
			})
		}
		// AfterRun skips the rest of a run: the first activation of each
		// next run, one run at a time.
		var firsts []backend.Activation
		q := backend.AdmissibleQuery{Limit: 1}
		for {
			p := scan(q)
			if len(p) == 0 {
				break
			}
			firsts = append(firsts, p[0])
			q = backend.AdmissibleQuery{After: p[0].Key, AfterRun: true, Limit: 1}
		}
		require.Len(t, firsts, 6)
		for i, a := range firsts {
			require.Equal(t, awkwardIDs[i], a.Key.RunID)
			require.Equal(t, all[i*len(awkwardIDs)*3], a)
		}
		// A cursor in another run does not leak into a per-run scan.
		require.Empty(t, scan(backend.AdmissibleQuery{RunID: awkwardIDs[0], After: actKey(awkwardIDs[1], "", ""), Limit: 10}))
		require.Len(t, scan(backend.AdmissibleQuery{RunID: awkwardIDs[1], After: actKey(awkwardIDs[0], "zz", ""), Limit: 1000}), len(awkwardIDs)*3)
		require.Empty(t, scan(backend.AdmissibleQuery{RunID: "absent", Limit: 10}))
	})
}

func compareKeys(a, b backend.ActivationKey) int {
	return slices.Compare([]string{a.RunID, a.NodeID, a.ActivationID}, []string{b.RunID, b.NodeID, b.ActivationID})
}

func TestActivationsOrderLimitsCursors(t *testing.T) {
	t.Parallel()
	b := openTemp(t)
	var want []backend.Activation
	for _, node := range awkwardIDs {
		for _, act := range awkwardIDs[:3] {
			a := activation(actKey("run", node, act), node < "b") // admissibility does not matter here
			want = append(want, a)
		}
	}
	ins := append([]backend.Activation{activation(actKey("run\x00", "a", "a"), true), activation(actKey("ru", "a", "a"), true)}, want...)
	apply(t, b, backend.Changes{Insert: backend.Inserts{Activations: ins}})
	view(t, b, func(ctx context.Context, r backend.ReadTx) {
		pages(t, want, func(limit int, last *backend.Activation) []backend.Activation {
			q := backend.ActivationQuery{RunID: "run", Limit: limit}
			if last != nil {
				q.After = backend.NodeRef{NodeID: last.Key.NodeID, ActivationID: last.Key.ActivationID}
			}
			got, err := r.Activations(ctx, q)
			require.NoError(t, err)
			return got
		})
	})
}

func TestAttemptsOrderLimitsCursorsForEveryFilter(t *testing.T) {
	t.Parallel()
	b := openTemp(t)
	statuses := []backend.AttemptStatus{backend.AttemptPrepared, backend.AttemptAdmitted, backend.AttemptRunning}
	var all []backend.Attempt
	n := 0
	for _, run := range []string{"R", "r", "r\x00", "ü"} {
		for i, ident := range awkwardIDs {
			for _, prepared := range []int64{math.MinInt64, -1, 0, 5, math.MaxInt64} {
				n++
				a := attempt(attKey(run, "n", fmt.Sprint(n), 1), run+"/"+ident+fmt.Sprint(prepared), statuses[(i+n)%3], prepared)
				all = append(all, a)
			}
		}
	}
	apply(t, b, backend.Changes{Insert: backend.Inserts{Attempts: all}})
	slices.SortFunc(all, func(x, y backend.Attempt) int {
		if c := cmp.Compare(x.PreparedMS, y.PreparedMS); c != 0 {
			return c
		}
		return strings.Compare(x.Identity, y.Identity)
	})
	filters := []backend.AttemptQuery{{}, {RunID: "r"}, {RunID: "r\x00"}, {Status: backend.AttemptAdmitted}, {RunID: "ü", Status: backend.AttemptRunning}, {RunID: "absent"}}
	view(t, b, func(ctx context.Context, r backend.ReadTx) {
		for _, f := range filters {
			want := slices.DeleteFunc(slices.Clone(all), func(a backend.Attempt) bool {
				return f.RunID != "" && a.Key.RunID != f.RunID || f.Status != "" && a.Status != f.Status
			})
			for _, desc := range []bool{false, true} {
				want := want
				if desc {
					want = slices.Clone(want)
					slices.Reverse(want)
				}
				pages(t, want, func(limit int, last *backend.Attempt) []backend.Attempt {
					q := f
					q.Limit, q.Descending = limit, desc
					if last != nil {
						q.After = backend.AttemptCursor{PreparedMS: last.PreparedMS, Identity: last.Identity}
					}
					got, err := r.Attempts(ctx, q)
					require.NoError(t, err)
					return got
				})
			}
			// CountAttempts counts a run's attempts of any status, up to limit.
			if f.Status == "" && f.RunID != "" {
				total := len(want)
				for _, limit := range []int{0, 1, total - 1, total, total + 1, math.MaxInt} {
					c, err := r.CountAttempts(ctx, backend.AttemptCountQuery{RunID: f.RunID, Limit: limit})
					require.NoError(t, err)
					require.Equal(t, max(0, min(total, limit)), c, "limit %d", limit)
				}
			}
		}
		c, err := r.CountAttempts(ctx, backend.AttemptCountQuery{RunID: "r", Limit: -1})
		require.NoError(t, err)
		require.Zero(t, c)
	})
}

func TestChildRunsOrderLimitsCursors(t *testing.T) {
	t.Parallel()
	b := openTemp(t)
	var want []backend.RunLink
	for _, created := range []int64{1, 2, 3} {
		for _, child := range awkwardIDs {
			want = append(want, link(fmt.Sprint(created)+child, "root", created))
		}
	}
	ins := append(slices.Clone(want), link("other", "root\x00", 1), link("other2", "roo", 1))
	slices.Reverse(ins)
	apply(t, b, backend.Changes{Insert: backend.Inserts{Links: ins}})
	view(t, b, func(ctx context.Context, r backend.ReadTx) {
		pages(t, want, func(limit int, last *backend.RunLink) []backend.RunLink {
			q := backend.ChildRunQuery{RootRunID: "root", Limit: limit}
			if last != nil {
				q.After = backend.ChildRunCursor{CreatedMS: last.CreatedMS, ChildRunID: last.ChildRunID}
			}
			got, err := r.ChildRuns(ctx, q)
			require.NoError(t, err)
			return got
		})
	})
}

func TestDueSchedulesOrderAndBound(t *testing.T) {
	t.Parallel()
	b := openTemp(t)
	var all []backend.RetrySchedule
	for _, due := range []int64{math.MinInt64, 1, 2, 10, math.MaxInt64} {
		for _, node := range awkwardIDs[:5] {
			all = append(all, schedule(actKey("run", node, fmt.Sprint(due)), due))
		}
	}
	ins := append(slices.Clone(all), schedule(actKey("run\x00", "n", "a"), 1))
	apply(t, b, backend.Changes{Insert: backend.Inserts{Schedules: ins}})
	view(t, b, func(ctx context.Context, r backend.ReadTx) {
		for _, by := range []int64{math.MinInt64, 0, 1, 2, 9, 10, math.MaxInt64 - 1, math.MaxInt64} {
			want := slices.DeleteFunc(slices.Clone(all), func(s backend.RetrySchedule) bool { return s.DueMS > by })
			for limit := 0; limit <= len(want)+1; limit++ {
				got, err := r.DueSchedules(ctx, backend.ScheduleQuery{RunID: "run", DueBy: by, Limit: limit})
				require.NoError(t, err)
				if limit == 0 {
					require.Empty(t, got)
					continue
				}
				require.Equal(t, want[:min(limit, len(want))], got, "by %d limit %d", by, limit)
			}
		}
	})
}

func TestEventsOrderLimitsCursors(t *testing.T) {
	t.Parallel()
	b := openTemp(t)
	var want []backend.Event
	for _, seq := range []int64{1, 2, 255, 256, 1 << 32, math.MaxInt64} {
		want = append(want, backend.Event{RunID: "r", Seq: seq, Type: "t", Payload: []byte(`{}`), CreatedMS: 1})
	}
	ins := append(slices.Clone(want), backend.Event{RunID: "r\x00", Seq: 5}, backend.Event{RunID: "", Seq: 5})
	slices.Reverse(ins)
	apply(t, b, backend.Changes{Insert: backend.Inserts{Events: ins}})
	view(t, b, func(ctx context.Context, r backend.ReadTx) {
		pages(t, want, func(limit int, last *backend.Event) []backend.Event {
			q := backend.EventQuery{RunID: "r", Limit: limit} // After 0: from the start
			if last != nil {
				q.After = last.Seq
			}
			got, err := r.Events(ctx, q)
			require.NoError(t, err)
			return got
		})
	})
}

func TestLeasesAndResourcesOrder(t *testing.T) {
	t.Parallel()
	b := openTemp(t)
	var active, all []backend.Lease
	for _, node := range awkwardIDs[:4] {
		for _, res := range []string{"res", "res\x00", "Res"} {
			for _, mode := range []backend.LeaseMode{backend.LeaseRead, backend.LeaseWrite} {
				l := lease(attKey("run", node, "a", 1), res, mode, 0)
				active = append(active, l)
				all = append(all, l, lease(attKey("run", node, "a", 2), res, mode, 50)) // released
			}
		}
	}
	ins := append(slices.Clone(all), lease(attKey("run\x00", "n", "a", 1), "res", backend.LeaseRead, 0))
	slices.Reverse(ins)
	apply(t, b, backend.Changes{Insert: backend.Inserts{Leases: ins}})
	lessLease := func(x, y backend.Lease) int {
		return slices.Compare(
			[]string{x.Key.NodeID, x.Key.ActivationID, fmt.Sprintf("%010d", x.Key.Attempt), x.Key.Resource, string(x.Key.Mode)},
			[]string{y.Key.NodeID, y.Key.ActivationID, fmt.Sprintf("%010d", y.Key.Attempt), y.Key.Resource, string(y.Key.Mode)})
	}
	slices.SortFunc(active, lessLease)
	slices.SortFunc(all, lessLease)
	view(t, b, func(ctx context.Context, r backend.ReadTx) {
		for _, released := range []bool{false, true} {
			want := active
			if released {
				want = all
			}
			pages(t, want, func(limit int, last *backend.Lease) []backend.Lease {
				q := backend.LeaseQuery{RunID: "run", IncludeReleased: released, Limit: limit}
				if last != nil {
					q.After = last.Key
				}
				got, err := r.Leases(ctx, q)
				require.NoError(t, err)
				return got
			})
		}
		ref := backend.ResourceRef{RunID: "run", Resource: "res"}
		f, err := r.Load(ctx, backend.Lookup{Resources: []backend.ResourceRef{ref, {RunID: "run", Resource: "none"}}})
		require.NoError(t, err)
		want := slices.DeleteFunc(slices.Clone(active), func(l backend.Lease) bool { return l.Key.Resource != "res" })
		require.Equal(t, want, f.Resources[ref])
		require.Len(t, f.Resources, 1, "a resource with no unreleased lease is absent")
	})
}
