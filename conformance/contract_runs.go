package conformance

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/wfstore/wfstore/backend"
)

func runScanCases() []testCase {
	return []testCase{
		{Name: "runs_scan_returns_every_run_in_bytewise_id_order", Run: testRunsOrder},
		{Name: "runs_scan_filters_by_status_and_pages_with_after_and_limit", Run: testRunsStatusPaging},
		{Name: "runs_scan_follows_replace_of_status", Run: testRunsFollowsReplace},
		{Name: "lease_scan_with_released_returns_every_lease_in_key_order", Run: testLeasesIncludeReleased},
	}
}

// runScanIDs are run ids whose bytewise order differs from a
// case-insensitive, locale or length order, with a control byte and an id that
// extends another: "" sorts nowhere (it is not stored).
var runScanIDs = []string{"z", "a", "é", "B", "ab", "a!", "Z", "a\x01b", "A", "日本", "a\x01"}

var runScanStatuses = []backend.RunStatus{
	backend.RunRunning, backend.RunPaused, backend.RunCompleted, backend.RunFailed,
	backend.RunCancelled, backend.RunRepairRequired,
}

// runScanFixture inserts runs over runScanIDs with statuses in turn, plus
// records of other kinds in some of them, and returns the runs in the
// contract's order.
func runScanFixture(e *env) []backend.Run {
	e.T.Helper()
	var c backend.Changes
	var want []backend.Run
	for i, id := range runScanIDs {
		r := fullRun(id)
		r.Status = runScanStatuses[i%len(runScanStatuses)]
		r.CreatedMS += int64(i)
		want = append(want, r)
		c = join(c, ins(r))
		if i%2 == 0 {
			c = join(c, ins(fullActivation(akey(id, "n", "1")), fullEvent(id, 1)))
		}
	}
	// Records of a run id that has no run record are not a run.
	e.apply(e.B, join(c, ins(fullEvent("no-run-record", 1))))
	slices.SortFunc(want, func(a, b backend.Run) int { return cmp.Compare(a.ID, b.ID) })
	return want
}

func (e *env) runs(q backend.RunQuery) []backend.Run {
	e.T.Helper()
	got := scan(e, e.B, func(rtx backend.ReadTx) ([]backend.Run, error) { return rtx.Runs(e.Ctx, q) })
	if len(got) > max(q.Limit, 0) {
		e.T.Errorf("Runs(%+v) returned %d rows, more than Limit", q, len(got))
	}
	return got
}

func runIDs(rs []backend.Run) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}

// pageRuns pages through q with limit and returns the ids in order.
func (e *env) pageRuns(q backend.RunQuery, limit int) []string {
	e.T.Helper()
	var got []string
	q.Limit = limit
	for range 100 {
		page := e.runs(q)
		if len(page) == 0 {
			break
		}
		got = append(got, runIDs(page)...)
		q.After = page[len(page)-1].ID
	}
	return got
}

func testRunsOrder(e *env) {
	want := runScanFixture(e)
	// Stated outright: bytewise, so upper case before lower case, a prefix
	// before its extensions, \x01 before '!', multi-byte UTF-8 last.
	e.equal("suite order", []string{"A", "B", "Z", "a", "a\x01", "a\x01b", "a!", "ab", "z", "é", "日本"}, runIDs(want))
	got := e.runs(backend.RunQuery{Limit: 100})
	e.equal("Runs(all) ids", runIDs(want), runIDs(got))
	e.equal("Runs(all) records", want, got)
	if n := len(e.runs(backend.RunQuery{Limit: 0})); n != 0 {
		e.T.Errorf("Runs(Limit 0) returned %d rows", n)
	}
	if n := len(e.runs(backend.RunQuery{Limit: -1})); n != 0 {
		e.T.Errorf("Runs(Limit -1) returned %d rows", n)
	}
}

func testRunsStatusPaging(e *env) {
	want := runScanFixture(e)
	for _, st := range append([]backend.RunStatus{""}, runScanStatuses...) {
		w := runIDs(pick(want, func(r backend.Run) bool { return st == "" || r.Status == st }))
		got := e.runs(backend.RunQuery{Status: st, Limit: 100})
		e.equal(fmt.Sprintf("Runs(status %q)", st), w, runIDs(got))
		for _, limit := range []int{1, 2, 3} {
			e.equal(fmt.Sprintf("Runs(status %q) pages of %d", st, limit), w, e.pageRuns(backend.RunQuery{Status: st}, limit))
		}
	}
	// A cursor between stored ids, or one naming a missing run, resumes
	// strictly after it.
	for _, after := range []string{"a", "a\x01", "aa", "0", "é", "\U0010FFFF"} {
		w := runIDs(pick(want, func(r backend.Run) bool { return r.ID > after }))
		e.equal(fmt.Sprintf("Runs(after %q)", after), w, runIDs(e.runs(backend.RunQuery{After: after, Limit: 100})))
	}
	w := runIDs(pick(want, func(r backend.Run) bool { return r.ID > "a" && r.Status == backend.RunPaused }))
	e.equal("Runs(paused, after \"a\")", w, runIDs(e.runs(backend.RunQuery{Status: backend.RunPaused, After: "a", Limit: 100})))
	if n := len(e.runs(backend.RunQuery{Status: "no-such-status", Limit: 100})); n != 0 {
		e.T.Errorf("Runs(unknown status) returned %d rows", n)
	}
}

func testRunsFollowsReplace(e *env) {
	want := runScanFixture(e)
	r := want[0]
	r.Status = backend.RunRepairRequired
	if want[0].Status == backend.RunRepairRequired {
		r.Status = backend.RunRunning
	}
	old := want[0].Status
	e.apply(e.B, rep(r))
	if got := runIDs(e.runs(backend.RunQuery{Status: r.Status, Limit: 100})); !slices.Contains(got, r.ID) {
		e.T.Errorf("Runs(status %q) = %q, missing %q after its Replace", r.Status, got, r.ID)
	}
	if got := runIDs(e.runs(backend.RunQuery{Status: old, Limit: 100})); slices.Contains(got, r.ID) {
		e.T.Errorf("Runs(status %q) = %q, still has %q after its Replace", old, got, r.ID)
	}
	// Inside the transaction that wrote it, the scan sees the new status.
	r.Status = backend.RunCompleted
	e.update(e.B, func(tx backend.Tx) error {
		if err := tx.Apply(e.Ctx, join(rep(r), ins(fullRun("0-new")))); err != nil {
			return err
		}
		got, err := tx.Runs(e.Ctx, backend.RunQuery{Status: backend.RunCompleted, Limit: 100})
		if err != nil {
			return err
		}
		if !slices.Contains(runIDs(got), r.ID) {
			e.T.Errorf("Runs inside the writing transaction = %q, missing %q", runIDs(got), r.ID)
		}
		all, err := tx.Runs(e.Ctx, backend.RunQuery{Limit: 1})
		if err != nil {
			return err
		}
		e.equal("Runs(first) inside the writing transaction", []string{"0-new"}, runIDs(all))
		return nil
	})
}

func testLeasesIncludeReleased(e *env) {
	var c backend.Changes
	var all, active []backend.Lease
	i := 0
	for _, node := range []string{"n", "N", "é"} {
		for _, attempt := range []uint32{10, 2, 1} {
			for _, res := range []string{"r", "R"} {
				l := activeLease(lkey(atkey(akey("run-l", node, "a"), attempt), res, backend.LeaseWrite))
				l.AcquiredMS += int64(i)
				if i%3 == 1 {
					l.ReleasedMS = l.AcquiredMS + 1
				} else {
					active = append(active, l)
				}
				all = append(all, l)
				i++
				c.Insert.Leases = append(c.Insert.Leases, l)
			}
		}
	}
	e.apply(e.B, join(c, ins(fullLease(lkey(atkey(akey("run-l2", "n", "a"), 1), "r", backend.LeaseRead)))))
	slices.SortFunc(all, func(a, b backend.Lease) int { return cmpLK(a.Key, b.Key) })
	slices.SortFunc(active, func(a, b backend.Lease) int { return cmpLK(a.Key, b.Key) })
	leases := func(q backend.LeaseQuery) []backend.Lease {
		got := scan(e, e.B, func(rtx backend.ReadTx) ([]backend.Lease, error) { return rtx.Leases(e.Ctx, q) })
		if len(got) > q.Limit {
			e.T.Errorf("Leases returned %d rows with Limit %d", len(got), q.Limit)
		}
		return got
	}
	e.equal("Leases(IncludeReleased)", all, leases(backend.LeaseQuery{RunID: "run-l", IncludeReleased: true, Limit: 100}))
	e.equal("Leases", active, leases(backend.LeaseQuery{RunID: "run-l", Limit: 100}))
	for _, limit := range []int{1, 4} {
		var got []backend.Lease
		q := backend.LeaseQuery{RunID: "run-l", IncludeReleased: true, Limit: limit}
		for range 100 {
			page := leases(q)
			if len(page) == 0 {
				break
			}
			got = append(got, page...)
			q.After = page[len(page)-1].Key
		}
		e.equal(fmt.Sprintf("Leases(IncludeReleased) pages of %d", limit), all, got)
	}
	if n := len(leases(backend.LeaseQuery{RunID: "run-l", IncludeReleased: true})); n != 0 {
		e.T.Errorf("Leases(IncludeReleased, Limit 0) returned %d rows", n)
	}
}
