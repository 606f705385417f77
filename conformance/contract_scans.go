package conformance

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/wfstore/wfstore/backend"
)

func scanCases() []testCase {
	return []testCase{
		{Name: "admissible_scan_returns_only_admissible_rows_in_bytewise_key_order", Run: testAdmissibleOrder},
		{Name: "admissible_scan_pages_with_after_and_limit", Run: testAdmissiblePaging},
		{Name: "admissible_scan_after_run_skips_the_rest_of_that_run", Run: testAdmissibleAfterRun},
		{Name: "admissible_index_follows_replace_of_admissible", Run: testAdmissibleFollowsReplace},
		{Name: "activations_scan_returns_one_run_in_key_order", Run: testActivationsScan},
		{Name: "attempts_scan_orders_by_prepared_ms_then_identity", Run: testAttemptsOrder},
		{Name: "attempts_scan_filters_by_run_and_status_and_pages", Run: testAttemptsFiltersAndPaging},
		{Name: "attempt_status_change_moves_it_between_status_scans", Run: testAttemptStatusMoves},
		{Name: "attempts_scan_descending_reverses_the_order_and_pages_before_the_cursor", Run: testAttemptsDescending},
		{Name: "count_attempts_is_min_of_count_and_limit", Run: testCountAttempts},
		{Name: "child_runs_scan_orders_by_created_then_child_and_pages", Run: testChildRuns},
		{Name: "due_schedules_are_bounded_by_due_by_and_ordered", Run: testDueSchedules},
		{Name: "events_scan_returns_seq_after_cursor_in_order", Run: testEvents},
		{Name: "leases_scan_orders_by_lease_key_and_skips_released", Run: testLeasesScan},
		{Name: "load_resources_returns_unreleased_leases_of_that_run_and_resource", Run: testLoadResources},
		{Name: "load_of_missing_keys_finds_nothing_without_error", Run: testLoadMissing},
		{Name: "zero_cursors_start_every_scan_at_the_beginning", Run: testZeroCursors},
	}
}

// The suite's own statement of the contract's orders (Go compares strings
// bytewise).

func cmpAK(a, b backend.ActivationKey) int {
	return cmp.Or(cmp.Compare(a.RunID, b.RunID), cmp.Compare(a.NodeID, b.NodeID), cmp.Compare(a.ActivationID, b.ActivationID))
}

func cmpLK(a, b backend.LeaseKey) int {
	return cmp.Or(cmpAK(a.ActivationKey, b.ActivationKey), cmp.Compare(a.Attempt, b.Attempt),
		cmp.Compare(a.Resource, b.Resource), cmp.Compare(a.Mode, b.Mode))
}

// orderRuns are run ids whose bytewise order differs from a case-insensitive,
// locale or joined-key order: "B" < "Z" < "a" < "a!" < "ab" < "z" < "é".
var orderRuns = []string{"z", "a", "é", "B", "ab", "a!", "Z"}

// admissibleFixture inserts activations over orderRuns, some admissible,
// and returns the admissible ones in the contract's order.
func admissibleFixture(e *env) []backend.Activation {
	e.T.Helper()
	var c backend.Changes
	var want []backend.Activation
	i := 0
	for _, run := range orderRuns {
		for _, node := range []string{"n", "N", "z", "n/x"} {
			for _, act := range []string{"2", "10", "1"} {
				a := fullActivation(akey(run, node, act))
				a.Generation = int64(i)
				switch i % 4 {
				case 1: // pending but not admissible (e.g. run paused)
					a.Admissible = false
				case 2: // not pending at all
					a.Admissible = false
					a.Status = backend.ActivationRunning
				default:
					want = append(want, a)
				}
				i++
				c.Insert.Activations = append(c.Insert.Activations, a)
			}
		}
	}
	e.apply(e.B, c)
	slices.SortFunc(want, func(a, b backend.Activation) int { return cmpAK(a.Key, b.Key) })
	return want
}

func keysOf(as []backend.Activation) []backend.ActivationKey {
	out := make([]backend.ActivationKey, len(as))
	for i, a := range as {
		out[i] = a.Key
	}
	return out
}

func (e *env) admissible(q backend.AdmissibleQuery) []backend.Activation {
	e.T.Helper()
	got := scan(e, e.B, func(rtx backend.ReadTx) ([]backend.Activation, error) { return rtx.AdmissibleActivations(e.Ctx, q) })
	if len(got) > q.Limit {
		e.T.Errorf("AdmissibleActivations(%+v) returned %d rows, more than Limit", q, len(got))
	}
	return got
}

func testAdmissibleOrder(e *env) {
	want := admissibleFixture(e)
	// The traps, stated outright.
	if cmpAK(akey("B", "", ""), akey("a", "", "")) >= 0 || cmpAK(akey("z", "", ""), akey("é", "", "")) >= 0 ||
		cmpAK(akey("a", "z", ""), akey("a!", "a", "")) >= 0 {
		e.T.Fatal("suite bug: order helper")
	}
	got := e.admissible(backend.AdmissibleQuery{Limit: 1000})
	e.equal("AdmissibleActivations(global) keys", keysOf(want), keysOf(got))
	e.equal("AdmissibleActivations(global) records", want, got)
	for _, run := range orderRuns {
		w := pick(want, func(a backend.Activation) bool { return a.Key.RunID == run })
		got := e.admissible(backend.AdmissibleQuery{RunID: run, Limit: 1000})
		e.equal(fmt.Sprintf("AdmissibleActivations(run %q) keys", run), keysOf(w), keysOf(got))
	}
	if got := e.admissible(backend.AdmissibleQuery{RunID: "no-such-run", Limit: 10}); len(got) != 0 {
		e.T.Errorf("AdmissibleActivations(missing run) = %d rows", len(got))
	}
}

func testAdmissiblePaging(e *env) {
	want := admissibleFixture(e)
	for _, run := range []string{"", "a"} {
		w := want
		if run != "" {
			w = pick(want, func(a backend.Activation) bool { return a.Key.RunID == run })
		}
		for _, limit := range []int{1, 2, 5, 7, len(w), len(w) + 1} {
			var all []backend.ActivationKey
			var after backend.ActivationKey
			for pages := 0; ; pages++ {
				if pages > len(w)+1 {
					e.T.Fatalf("run %q limit %d: paging does not end", run, limit)
				}
				page := e.admissible(backend.AdmissibleQuery{RunID: run, After: after, Limit: limit})
				if len(page) == 0 {
					break
				}
				all = append(all, keysOf(page)...)
				if len(page) < limit && len(all) < len(w) {
					e.T.Errorf("run %q limit %d: a short page (%d) before the end", run, limit, len(page))
				}
				after = page[len(page)-1].Key
			}
			e.equal(fmt.Sprintf("run %q pages of %d", run, limit), keysOf(w), all)
		}
	}
	// After names a key that does not exist: resume at the next one.
	after := akey("a", "n", "15") // between ("a","n","10") and ("a","n","2")
	got := e.admissible(backend.AdmissibleQuery{After: after, Limit: 1000})
	w := pick(want, func(a backend.Activation) bool { return cmpAK(a.Key, after) > 0 })
	e.equal("After a missing key", keysOf(w), keysOf(got))
	// After is strict: a page never repeats its cursor.
	first := want[3].Key
	got = e.admissible(backend.AdmissibleQuery{After: first, Limit: 1})
	e.equal("After is exclusive", []backend.ActivationKey{want[4].Key}, keysOf(got))
}

func testAdmissibleAfterRun(e *env) {
	want := admissibleFixture(e)
	for _, after := range []backend.ActivationKey{
		akey("a", "zzz", "zzz"), // node and activation are ignored
		akey("a", "", ""),
		akey("aa", "n", "1"), // a run with no activations
		akey("B", "N", "10"),
	} {
		got := e.admissible(backend.AdmissibleQuery{After: after, AfterRun: true, Limit: 1000})
		w := pick(want, func(a backend.Activation) bool { return a.Key.RunID > after.RunID })
		e.equal(fmt.Sprintf("AfterRun after %q", after.RunID), keysOf(w), keysOf(got))
	}
	got := e.admissible(backend.AdmissibleQuery{After: akey("a", "", ""), AfterRun: true, Limit: 2})
	w := pick(want, func(a backend.Activation) bool { return a.Key.RunID > "a" })[:2]
	e.equal("AfterRun with Limit 2", keysOf(w), keysOf(got))
	got = e.admissible(backend.AdmissibleQuery{RunID: "a", After: akey("a", "", ""), AfterRun: true, Limit: 10})
	e.equal("AfterRun past the only run scanned", []backend.ActivationKey(nil), keysOf(got))
}

func testAdmissibleFollowsReplace(e *env) {
	k1, k2, k3 := akey("run-p", "n1", "a"), akey("run-p", "n2", "a"), akey("run-p", "n3", "a")
	a1, a2, a3 := fullActivation(k1), fullActivation(k2), fullActivation(k3)
	a3.Admissible = false
	e.apply(e.B, ins(a1, a2, a3))
	check := func(what string, want ...backend.Activation) {
		e.T.Helper()
		e.equal(what+" (global)", want, e.admissible(backend.AdmissibleQuery{Limit: 10}))
		e.equal(what+" (run)", want, e.admissible(backend.AdmissibleQuery{RunID: "run-p", Limit: 10}))
	}
	check("after Insert", a1, a2)
	b1 := a1
	b1.Admissible, b1.Status = false, backend.ActivationRunning
	e.apply(e.B, rep(b1))
	check("after Replace admissible->not", a2)
	b3 := a3
	b3.Admissible = true
	e.apply(e.B, rep(b3))
	check("after Replace not->admissible", a2, b3)
	c2 := a2
	c2.Generation, c2.Input = 77, js("changed while admissible")
	e.apply(e.B, rep(c2))
	check("after Replace of other fields", c2, b3)
	// Activations (any status) still has all three.
	acts := scan(e, e.B, func(rtx backend.ReadTx) ([]backend.Activation, error) {
		return rtx.Activations(e.Ctx, backend.ActivationQuery{RunID: "run-p", Limit: 10})
	})
	e.equal("Activations", []backend.Activation{b1, c2, b3}, acts)
}

func testActivationsScan(e *env) {
	admissibleFixture(e)
	var all []backend.Activation
	e.view(e.B, func(rtx backend.ReadTx) error {
		var err error
		all, err = rtx.Activations(e.Ctx, backend.ActivationQuery{RunID: "a", Limit: 1000})
		return err
	})
	if len(all) != 12 {
		e.T.Fatalf("Activations(run a) = %d rows, want 12 (every status)", len(all))
	}
	if !slices.IsSortedFunc(all, func(a, b backend.Activation) int { return cmpAK(a.Key, b.Key) }) {
		e.T.Errorf("Activations not in key order: %v", keysOf(all))
	}
	for _, a := range all {
		if a.Key.RunID != "a" {
			e.T.Errorf("Activations(run a) returned %v", a.Key)
		}
	}
	for _, limit := range []int{1, 5, 12} {
		var got []backend.ActivationKey
		var after backend.NodeRef
		for range 20 {
			page := scan(e, e.B, func(rtx backend.ReadTx) ([]backend.Activation, error) {
				return rtx.Activations(e.Ctx, backend.ActivationQuery{RunID: "a", After: after, Limit: limit})
			})
			if len(page) > limit {
				e.T.Errorf("Activations returned %d rows with Limit %d", len(page), limit)
			}
			if len(page) == 0 {
				break
			}
			got = append(got, keysOf(page)...)
			last := page[len(page)-1].Key
			after = backend.NodeRef{NodeID: last.NodeID, ActivationID: last.ActivationID}
		}
		e.equal(fmt.Sprintf("Activations pages of %d", limit), keysOf(all), got)
	}
	page := scan(e, e.B, func(rtx backend.ReadTx) ([]backend.Activation, error) {
		return rtx.Activations(e.Ctx, backend.ActivationQuery{RunID: "a", After: backend.NodeRef{NodeID: "n"}, Limit: 1})
	})
	e.equal("Activations after a node with an empty activation id", []backend.ActivationKey{akey("a", "n", "1")}, keysOf(page))
}

// attemptFixture inserts attempts over two runs with PreparedMS values that
// order differently as numbers and as text, and identity ties.
func attemptFixture(e *env) []backend.Attempt {
	e.T.Helper()
	type spec struct {
		run      string
		prepared int64
		identity string
		status   backend.AttemptStatus
	}
	specs := []spec{
		{"run-1", 10, "a", backend.AttemptPrepared},
		{"run-2", 9, "z", backend.AttemptRunning},
		{"run-1", 100, "BB", backend.AttemptRunning},
		{"run-1", 10, "B", backend.AttemptRunning},
		{"run-2", 10, "é", backend.AttemptPrepared},
		{"run-1", 1 << 40, "m", backend.AttemptPrepared},
		{"run-1", 9, "zz", backend.AttemptSucceeded},
		{"run-2", math.MaxInt64, "x", backend.AttemptRunning},
		{"run-1", 10, "Z", backend.AttemptPrepared},
	}
	var c backend.Changes
	var out []backend.Attempt
	for i, s := range specs {
		a := fullAttempt(atkey(akey(s.run, "node", fmt.Sprintf("act-%d", i)), uint32(i+1)), s.identity)
		a.PreparedMS, a.Status = s.prepared, s.status
		c.Insert.Attempts = append(c.Insert.Attempts, a)
		out = append(out, a)
	}
	e.apply(e.B, c)
	slices.SortFunc(out, func(a, b backend.Attempt) int {
		return cmp.Or(cmp.Compare(a.PreparedMS, b.PreparedMS), cmp.Compare(a.Identity, b.Identity))
	})
	return out
}

func identities(as []backend.Attempt) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.Identity
	}
	return out
}

func (e *env) attempts(q backend.AttemptQuery) []backend.Attempt {
	e.T.Helper()
	got := scan(e, e.B, func(rtx backend.ReadTx) ([]backend.Attempt, error) { return rtx.Attempts(e.Ctx, q) })
	if len(got) > q.Limit {
		e.T.Errorf("Attempts(%+v) returned %d rows, more than Limit", q, len(got))
	}
	return got
}

func testAttemptsOrder(e *env) {
	want := attemptFixture(e)
	// Stated outright: 9 < 10 < 100 < 2^40 < MaxInt64, ties by bytewise identity.
	e.equal("suite order", []string{"z", "zz", "B", "Z", "a", "é", "BB", "m", "x"}, identities(want))
	got := e.attempts(backend.AttemptQuery{Limit: 100})
	e.equal("Attempts(all) identities", identities(want), identities(got))
	e.equal("Attempts(all) records", want, got)
}

func testAttemptsFiltersAndPaging(e *env) {
	want := attemptFixture(e)
	for _, q := range []backend.AttemptQuery{
		{RunID: "run-1"}, {RunID: "run-2"}, {Status: backend.AttemptPrepared}, {Status: backend.AttemptRunning},
		{RunID: "run-1", Status: backend.AttemptRunning}, {RunID: "run-2", Status: backend.AttemptSucceeded}, {},
	} {
		w := pick(want, func(a backend.Attempt) bool {
			return (q.RunID == "" || a.Key.RunID == q.RunID) && (q.Status == "" || a.Status == q.Status)
		})
		q.Limit = 100
		e.equal(fmt.Sprintf("Attempts(run %q, status %q)", q.RunID, q.Status), identities(w), identities(e.attempts(q)))
		for _, limit := range []int{1, 2, 4} {
			var got []string
			q.Limit = limit
			q.After = backend.AttemptCursor{}
			for range 20 {
				page := e.attempts(q)
				if len(page) == 0 {
					break
				}
				got = append(got, identities(page)...)
				last := page[len(page)-1]
				q.After = backend.AttemptCursor{PreparedMS: last.PreparedMS, Identity: last.Identity}
			}
			e.equal(fmt.Sprintf("Attempts(run %q, status %q) pages of %d", q.RunID, q.Status, limit), identities(w), got)
		}
	}
	// A cursor between rows: everything strictly after (10, "") is PreparedMS >= 10.
	got := e.attempts(backend.AttemptQuery{After: backend.AttemptCursor{PreparedMS: 10}, Limit: 100})
	e.equal("Attempts after (10, \"\")", identities(want[2:]), identities(got))
	got = e.attempts(backend.AttemptQuery{After: backend.AttemptCursor{PreparedMS: 10, Identity: "Z"}, Limit: 100})
	e.equal("Attempts after (10, \"Z\")", identities(want[4:]), identities(got))
}

func testAttemptStatusMoves(e *env) {
	want := attemptFixture(e)
	a := want[4] // run-1, 10, "a", prepared
	if a.Identity != "a" || a.Status != backend.AttemptPrepared {
		e.T.Fatalf("suite bug: fixture order %v", identities(want))
	}
	b := a
	b.Status = backend.AttemptSucceeded
	e.apply(e.B, rep(b))
	inStatus := func(st backend.AttemptStatus) []string {
		return identities(e.attempts(backend.AttemptQuery{RunID: "run-1", Status: st, Limit: 100}))
	}
	e.equal("prepared after the change", []string{"Z", "m"}, inStatus(backend.AttemptPrepared))
	e.equal("succeeded after the change", []string{"zz", "a"}, inStatus(backend.AttemptSucceeded))
	// Changing PreparedMS moves it in the order.
	c := b
	c.PreparedMS = 1
	e.apply(e.B, rep(c))
	e.equal("succeeded after PreparedMS changed", []string{"a", "zz"}, inStatus(backend.AttemptSucceeded))
	got := e.attempts(backend.AttemptQuery{Limit: 1})
	e.equal("first attempt overall", []backend.Attempt{c}, got)
}

func testCountAttempts(e *env) {
	var c backend.Changes
	for i := range 5 {
		c = join(c, ins(fullAttempt(atkey(akey("run-count", "n", "a"), uint32(i+1)), fmt.Sprintf("c-%d", i))))
	}
	for i := range 3 {
		c = join(c, ins(fullAttempt(atkey(akey("run-count-2", "n", fmt.Sprint(i)), 1), fmt.Sprintf("d-%d", i))))
	}
	e.apply(e.B, c)
	for _, c := range []struct {
		run          string
		limit, count int
	}{
		{"run-count", 0, 0}, {"run-count", -1, 0}, {"run-count", 1, 1}, {"run-count", 4, 4}, {"run-count", 5, 5},
		{"run-count", 6, 5}, {"run-count", 1000, 5}, {"run-count-2", 10, 3}, {"run-count-2", 2, 2},
		{"no-such-run", 10, 0}, {"run-coun", 10, 0},
	} {
		n := scan(e, e.B, func(rtx backend.ReadTx) (int, error) {
			return rtx.CountAttempts(e.Ctx, backend.AttemptCountQuery{RunID: c.run, Limit: c.limit})
		})
		if n != c.count {
			e.T.Errorf("CountAttempts(%q, Limit %d) = %d, want %d", c.run, c.limit, n, c.count)
		}
	}
}

func testChildRuns(e *env) {
	parent := atkey(akey("root", "node", "act"), 1)
	type spec struct {
		child, root string
		created     int64
	}
	specs := []spec{
		{"c-a", "root", 5}, {"c-B", "root", 5}, {"c-z", "root", 3}, {"c-é", "root", 10},
		{"c-other", "root-2", 1}, {"c-m", "root", 100}, {"c-0", "root", 9},
	}
	var c backend.Changes
	var want []backend.RunLink
	for _, s := range specs {
		l := fullLink(s.child, s.root, parent)
		l.CreatedMS = s.created
		c.Insert.Links = append(c.Insert.Links, l)
		if s.root == "root" {
			want = append(want, l)
		}
	}
	e.apply(e.B, c)
	slices.SortFunc(want, func(a, b backend.RunLink) int {
		return cmp.Or(cmp.Compare(a.CreatedMS, b.CreatedMS), cmp.Compare(a.ChildRunID, b.ChildRunID))
	})
	ids := func(ls []backend.RunLink) []string {
		var out []string
		for _, l := range ls {
			out = append(out, l.ChildRunID)
		}
		return out
	}
	e.equal("suite order", []string{"c-z", "c-B", "c-a", "c-0", "c-é", "c-m"}, ids(want))
	children := func(q backend.ChildRunQuery) []backend.RunLink {
		got := scan(e, e.B, func(rtx backend.ReadTx) ([]backend.RunLink, error) { return rtx.ChildRuns(e.Ctx, q) })
		if len(got) > q.Limit {
			e.T.Errorf("ChildRuns(%+v) returned %d rows", q, len(got))
		}
		return got
	}
	e.equal("ChildRuns(root)", want, children(backend.ChildRunQuery{RootRunID: "root", Limit: 100}))
	for _, limit := range []int{1, 2, 4} {
		q := backend.ChildRunQuery{RootRunID: "root", Limit: limit}
		var got []string
		for range 20 {
			page := children(q)
			if len(page) == 0 {
				break
			}
			got = append(got, ids(page)...)
			q.After = backend.ChildRunCursor{CreatedMS: page[len(page)-1].CreatedMS, ChildRunID: page[len(page)-1].ChildRunID}
		}
		e.equal(fmt.Sprintf("ChildRuns pages of %d", limit), ids(want), got)
	}
	e.equal("ChildRuns after (5, \"c-B\")", ids(want[2:]), ids(children(backend.ChildRunQuery{RootRunID: "root", After: backend.ChildRunCursor{CreatedMS: 5, ChildRunID: "c-B"}, Limit: 100})))
	e.equal("ChildRuns after (5, \"\")", ids(want[1:]), ids(children(backend.ChildRunQuery{RootRunID: "root", After: backend.ChildRunCursor{CreatedMS: 5}, Limit: 100})))
	e.equal("ChildRuns(root-2)", []string{"c-other"}, ids(children(backend.ChildRunQuery{RootRunID: "root-2", Limit: 100})))
	e.equal("ChildRuns(missing root)", []string(nil), ids(children(backend.ChildRunQuery{RootRunID: "c-a", Limit: 100})))
}

func testDueSchedules(e *env) {
	type spec struct {
		run, node, act string
		due            int64
	}
	specs := []spec{
		{"run-s", "n", "a", 100}, {"run-s", "n", "B", 100}, {"run-s", "N", "z", 100}, {"run-s", "m", "a", 50},
		{"run-s", "a", "a", 200}, {"run-s", "é", "a", 99}, {"run-s2", "a", "a", 1}, {"run-s", "z", "a", 101},
	}
	var c backend.Changes
	byKey := map[string]backend.RetrySchedule{}
	for _, s := range specs {
		r := fullSchedule(akey(s.run, s.node, s.act))
		r.DueMS = s.due
		c.Insert.Schedules = append(c.Insert.Schedules, r)
		if s.run == "run-s" {
			byKey[s.node+"/"+s.act] = r
		}
	}
	e.apply(e.B, c)
	due := func(run string, by int64, limit int) []string {
		got := scan(e, e.B, func(rtx backend.ReadTx) ([]backend.RetrySchedule, error) {
			return rtx.DueSchedules(e.Ctx, backend.ScheduleQuery{RunID: run, DueBy: by, Limit: limit})
		})
		if len(got) > limit {
			e.T.Errorf("DueSchedules returned %d rows with Limit %d", len(got), limit)
		}
		var out []string
		for _, s := range got {
			if s.Key.RunID != run {
				e.T.Errorf("DueSchedules(%q) returned a schedule of %q", run, s.Key.RunID)
			}
			out = append(out, s.Key.NodeID+"/"+s.Key.ActivationID)
		}
		return out
	}
	e.equal("DueBy 100 (inclusive)", []string{"m/a", "é/a", "N/z", "n/B", "n/a"}, due("run-s", 100, 100))
	e.equal("DueBy 100 Limit 2", []string{"m/a", "é/a"}, due("run-s", 100, 2))
	e.equal("DueBy 49", []string(nil), due("run-s", 49, 100))
	e.equal("DueBy 50", []string{"m/a"}, due("run-s", 50, 100))
	e.equal("DueBy max", []string{"m/a", "é/a", "N/z", "n/B", "n/a", "z/a", "a/a"}, due("run-s", math.MaxInt64, 100))
	e.equal("other run", []string{"a/a"}, due("run-s2", 1, 100))
	// Replace moves a schedule in and out of the bound.
	later := byKey["m/a"]
	later.DueMS = 300
	sooner := byKey["a/a"]
	sooner.DueMS = 1
	e.apply(e.B, rep(later, sooner))
	e.equal("after Replace", []string{"a/a", "é/a", "N/z", "n/B", "n/a"}, due("run-s", 100, 100))
	got := scan(e, e.B, func(rtx backend.ReadTx) ([]backend.RetrySchedule, error) {
		return rtx.DueSchedules(e.Ctx, backend.ScheduleQuery{RunID: "run-s", DueBy: 1, Limit: 10})
	})
	e.equal("DueSchedules record", []backend.RetrySchedule{sooner}, got)
}

func testEvents(e *env) {
	var c backend.Changes
	byseq := map[int64]backend.Event{}
	for _, seq := range []int64{5, 1, 8, 3, 2, 1 << 40} {
		ev := fullEvent("run-ev", seq)
		byseq[seq] = ev
		c.Insert.Events = append(c.Insert.Events, ev)
	}
	e.apply(e.B, join(c, ins(fullEvent("run-ev2", 4), fullEvent("run-ev2", 6))))
	events := func(run string, after int64, limit int) []backend.Event {
		got := scan(e, e.B, func(rtx backend.ReadTx) ([]backend.Event, error) {
			return rtx.Events(e.Ctx, backend.EventQuery{RunID: run, After: after, Limit: limit})
		})
		if len(got) > limit {
			e.T.Errorf("Events returned %d rows with Limit %d", len(got), limit)
		}
		return got
	}
	evs := func(seqs ...int64) []backend.Event {
		var out []backend.Event
		for _, s := range seqs {
			out = append(out, byseq[s])
		}
		return out
	}
	e.equal("after 0", evs(1, 2, 3, 5, 8, 1<<40), events("run-ev", 0, 100))
	e.equal("after 2", evs(3, 5, 8, 1<<40), events("run-ev", 2, 100))
	e.equal("after 4 (a gap)", evs(5, 8, 1<<40), events("run-ev", 4, 100))
	e.equal("after 0 limit 2", evs(1, 2), events("run-ev", 0, 2))
	e.equal("after the last", []backend.Event(nil), events("run-ev", 1<<40, 100))
	e.equal("other run", []backend.Event{fullEvent("run-ev2", 4), fullEvent("run-ev2", 6)}, events("run-ev2", 0, 100))
	e.equal("run id prefix", []backend.Event(nil), events("run-e", 0, 100))
}

func testLeasesScan(e *env) {
	var c backend.Changes
	var want []backend.Lease
	i := 0
	for _, node := range []string{"n", "N", "é"} {
		for _, attempt := range []uint32{10, 2, math.MaxUint32, 1} {
			for _, res := range []string{"r", "R", "r/x"} {
				for _, mode := range []backend.LeaseMode{backend.LeaseWrite, backend.LeaseRead} {
					l := activeLease(lkey(atkey(akey("run-l", node, "a"), attempt), res, mode))
					l.AcquiredMS += int64(i)
					if i%5 == 3 {
						l.ReleasedMS = l.AcquiredMS + 1
					} else {
						want = append(want, l)
					}
					i++
					c.Insert.Leases = append(c.Insert.Leases, l)
				}
			}
		}
	}
	e.apply(e.B, join(c, ins(activeLease(lkey(atkey(akey("run-l2", "n", "a"), 1), "r", backend.LeaseRead)))))
	slices.SortFunc(want, func(a, b backend.Lease) int { return cmpLK(a.Key, b.Key) })
	leases := func(q backend.LeaseQuery) []backend.Lease {
		got := scan(e, e.B, func(rtx backend.ReadTx) ([]backend.Lease, error) { return rtx.Leases(e.Ctx, q) })
		if len(got) > q.Limit {
			e.T.Errorf("Leases returned %d rows with Limit %d", len(got), q.Limit)
		}
		return got
	}
	// Stated outright: attempt numbers order as numbers (2 < 10 < MaxUint32).
	var lastN backend.Lease
	for _, l := range want {
		if l.Key.NodeID == "N" {
			lastN = l
		}
	}
	if want[0].Key.NodeID != "N" || want[0].Key.Attempt != 1 || lastN.Key.Attempt != math.MaxUint32 {
		e.T.Fatalf("suite bug: order helper")
	}
	e.equal("Leases(all)", want, leases(backend.LeaseQuery{RunID: "run-l", Limit: 1000}))
	for _, limit := range []int{1, 7, 13} {
		q := backend.LeaseQuery{RunID: "run-l", Limit: limit}
		var got []backend.Lease
		for range 200 {
			page := leases(q)
			if len(page) == 0 {
				break
			}
			got = append(got, page...)
			q.After = page[len(page)-1].Key
		}
		e.equal(fmt.Sprintf("Leases pages of %d", limit), want, got)
	}
	// Releasing one by Replace takes it out of the scan.
	rel := want[0]
	rel.ReleasedMS = rel.AcquiredMS + 5
	e.apply(e.B, rep(rel))
	e.equal("after release", want[1:], leases(backend.LeaseQuery{RunID: "run-l", Limit: 1000}))
	e.equal("other run", 1, len(leases(backend.LeaseQuery{RunID: "run-l2", Limit: 10})))
}

func testLoadResources(e *env) {
	a1 := atkey(akey("run-r", "n", "a"), 1)
	a2 := atkey(akey("run-r", "n", "b"), 2)
	a10 := atkey(akey("run-r", "n", "b"), 10)
	other := atkey(akey("run-r2", "n", "a"), 1)
	l1 := activeLease(lkey(a1, "res", backend.LeaseRead))
	l2 := activeLease(lkey(a2, "res", backend.LeaseWrite))
	l3 := activeLease(lkey(a10, "res", backend.LeaseRead))
	rel := fullLease(lkey(a10, "res", backend.LeaseWrite)) // released
	diffRes := activeLease(lkey(a1, "res2", backend.LeaseWrite))
	prefix := activeLease(lkey(a1, "re", backend.LeaseWrite))
	otherRun := activeLease(lkey(other, "res", backend.LeaseWrite))
	e.apply(e.B, ins(l3, rel, l1, diffRes, l2, prefix, otherRun))
	res := backend.ResourceRef{RunID: "run-r", Resource: "res"}
	res2 := backend.ResourceRef{RunID: "run-r", Resource: "res2"}
	none := backend.ResourceRef{RunID: "run-r", Resource: "nothing"}
	onlyReleased := backend.ResourceRef{RunID: "run-r", Resource: "gone"}
	e.apply(e.B, ins(fullLease(lkey(a1, "gone", backend.LeaseWrite))))
	f := e.load(e.B, backend.Lookup{Resources: []backend.ResourceRef{res, res2, none, onlyReleased}})
	e.equal("Resources[res]", []backend.Lease{l1, l2, l3}, f.Resources[res])
	e.equal("Resources[res2]", []backend.Lease{diffRes}, f.Resources[res2])
	for _, r := range []backend.ResourceRef{none, onlyReleased} {
		if len(f.Resources[r]) != 0 {
			e.T.Errorf("Resources[%v] = %v, want no leases", r, f.Resources[r])
		}
	}
	for r := range f.Resources {
		if r != res && r != res2 && r != none && r != onlyReleased {
			e.T.Errorf("Resources has an entry for %v, which was not asked for", r)
		}
	}
	// Releasing l2 removes it.
	l2r := l2
	l2r.ReleasedMS = l2.AcquiredMS + 1
	e.apply(e.B, rep(l2r))
	f = e.load(e.B, backend.Lookup{Resources: []backend.ResourceRef{res}, Leases: []backend.LeaseKey{l2.Key}})
	e.equal("Resources[res] after release", []backend.Lease{l1, l3}, f.Resources[res])
	e.equal("Load Leases finds the released lease", map[backend.LeaseKey]backend.Lease{l2.Key: l2r}, f.Leases)
}

func testLoadMissing(e *env) {
	s := newFullSet("run-m", "node", "act", 1, "identity-m", "resource")
	e.apply(e.B, s.changes())
	k := akey("run-m", "node", "other")
	f := e.load(e.B, backend.Lookup{
		Runs:        []string{"run-missing", "run-m"},
		Links:       []string{"run-missing"},
		Activations: []backend.ActivationKey{k, akey("RUN-M", "node", "act")},
		Groups:      []backend.ActivationKey{k},
		Attempts:    []backend.AttemptKey{atkey(s.Act.Key, 2), atkey(s.Act.Key, 0)},
		Identities:  []string{"identity-missing", "IDENTITY-M"},
		Leases:      []backend.LeaseKey{lkey(atkey(s.Act.Key, 1), "resource", "other-mode")},
		Schedules:   []backend.ActivationKey{k},
	})
	e.equal("Runs", map[string]backend.Run{"run-m": s.Run}, f.Runs)
	if n := len(f.Links) + len(f.Activations) + len(f.Groups) + len(f.Attempts) + len(f.Identities) + len(f.Leases) + len(f.Schedules); n != 0 {
		e.T.Errorf("Load of missing keys found %d records: %+v", n, f)
	}
	// Duplicate keys in one Lookup are fine.
	f = e.load(e.B, backend.Lookup{Runs: []string{"run-m", "run-m"}, Identities: []string{"identity-m", "identity-m"}})
	e.equal("duplicate Runs", map[string]backend.Run{"run-m": s.Run}, f.Runs)
	e.equal("duplicate Identities", map[string]backend.Attempt{"identity-m": s.Attempt}, f.Identities)
	// The helpers turn absence into ErrNotFound.
	e.view(e.B, func(rtx backend.ReadTx) error {
		_, err := backend.GetRun(e.Ctx, rtx, "run-missing")
		e.wantErr("GetRun(missing)", err, backend.ErrNotFound)
		return nil
	})
}

// testZeroCursors checks that the zero value of every scan's After starts
// at the beginning of the scan's order, Descending attempts included (a
// descending scan that took the zero cursor for the position (0, "") would
// return nothing), and that a scan paged from it reaches every row.
func testZeroCursors(e *env) {
	acts := admissibleFixture(e)
	atts := attemptFixture(e) // runs run-1 and run-2
	var links []backend.RunLink
	var events []backend.Event
	var leases []backend.Lease
	for i, child := range []string{"c-b", "c-a", "c-c"} {
		l := fullLink(child, "root-z", atkey(akey("root-z", "n", "a"), 1))
		l.CreatedMS = int64(1 + i%2)
		links = append(links, l)
	}
	slices.SortFunc(links, func(a, b backend.RunLink) int {
		return cmp.Or(cmp.Compare(a.CreatedMS, b.CreatedMS), cmp.Compare(a.ChildRunID, b.ChildRunID))
	})
	for _, seq := range []int64{1, 2, 3} {
		events = append(events, fullEvent("run-z", seq))
	}
	for _, res := range []string{"a", "b"} {
		leases = append(leases, activeLease(lkey(atkey(akey("run-z", "n", "a"), 1), res, backend.LeaseRead)))
	}
	runs := []backend.Run{fullRun("run-z"), fullRun("run-z2")}
	e.apply(e.B, ins(links[0], links[1], links[2], events[0], events[1], events[2], leases[0], leases[1], runs[0], runs[1]))

	desc := slices.Clone(atts)
	slices.Reverse(desc)
	e.equal("AdmissibleActivations(After zero)", keysOf(acts), keysOf(e.admissible(backend.AdmissibleQuery{After: backend.ActivationKey{}, Limit: 1000})))
	e.equal("Attempts(After zero)", identities(atts), identities(e.attempts(backend.AttemptQuery{After: backend.AttemptCursor{}, Limit: 100})))
	e.equal("Attempts(After zero, Descending)", identities(desc), identities(e.attempts(backend.AttemptQuery{After: backend.AttemptCursor{}, Descending: true, Limit: 100})))
	e.equal("Attempts(After zero, Descending, Limit 2)", identities(desc[:2]), identities(e.attempts(backend.AttemptQuery{Descending: true, Limit: 2})))
	run1 := pick(desc, func(a backend.Attempt) bool { return a.Key.RunID == "run-1" })
	e.equal("Attempts(run-1, After zero, Descending)", identities(run1), identities(e.attempts(backend.AttemptQuery{RunID: "run-1", Descending: true, Limit: 100})))
	prepared := pick(desc, func(a backend.Attempt) bool { return a.Status == backend.AttemptPrepared })
	e.equal("Attempts(prepared, After zero, Descending)", identities(prepared), identities(e.attempts(backend.AttemptQuery{Status: backend.AttemptPrepared, Descending: true, Limit: 100})))
	e.view(e.B, func(rtx backend.ReadTx) error {
		ctx := e.Ctx
		gotActs, err := rtx.Activations(ctx, backend.ActivationQuery{RunID: "a", After: backend.NodeRef{}, Limit: 1000})
		if err != nil {
			return err
		}
		if len(gotActs) != 12 {
			e.T.Errorf("Activations(run a, After zero) = %d rows, want 12", len(gotActs))
		}
		gotLinks, err := rtx.ChildRuns(ctx, backend.ChildRunQuery{RootRunID: "root-z", After: backend.ChildRunCursor{}, Limit: 10})
		if err != nil {
			return err
		}
		e.equal("ChildRuns(After zero)", links, gotLinks)
		gotEvents, err := rtx.Events(ctx, backend.EventQuery{RunID: "run-z", After: 0, Limit: 10})
		if err != nil {
			return err
		}
		e.equal("Events(After 0)", events, gotEvents)
		gotLeases, err := rtx.Leases(ctx, backend.LeaseQuery{RunID: "run-z", After: backend.LeaseKey{}, Limit: 10})
		if err != nil {
			return err
		}
		e.equal("Leases(After zero)", leases, gotLeases)
		gotRuns, err := rtx.Runs(ctx, backend.RunQuery{After: "", Limit: 1000})
		if err != nil {
			return err
		}
		e.equal("Runs(After \"\")", runs, gotRuns)
		return nil
	})
	// Paging descending from the zero cursor reaches every row.
	var got []string
	q := backend.AttemptQuery{Descending: true, Limit: 2}
	for range 20 {
		page := e.attempts(q)
		if len(page) == 0 {
			break
		}
		got = append(got, identities(page)...)
		last := page[len(page)-1]
		q.After = backend.AttemptCursor{PreparedMS: last.PreparedMS, Identity: last.Identity}
	}
	e.equal("Attempts descending, pages of 2 from the zero cursor", identities(desc), got)
}
