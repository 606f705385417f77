package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/memstore"
)

// Seeded mutants: memstore wrapped so that it breaks one contract rule. The
// contract tier must fail on each, in the cases listed.
var mutants = map[string][]string{
	"drop_authority":                 {"every_field_of_every_kind_round_trips", "reopen_keeps_every_record_byte_exact"},
	"json_null_is_absent":            {"present_zero_like_values_stay_present"},
	"truncate_large_json":            {"one_mib_json_in_every_json_field_round_trips"},
	"case_insensitive_order":         {"admissible_scan_returns_only_admissible_rows_in_bytewise_key_order"},
	"limit_plus_one":                 {"admissible_scan_pages_with_after_and_limit", "admissible_scan_after_run_skips_the_rest_of_that_run"},
	"lease_after_ignored":            {"leases_scan_orders_by_lease_key_and_skips_released"},
	"admissible_any_status":          {"admissible_scan_returns_only_admissible_rows_in_bytewise_key_order", "admissible_index_follows_replace_of_admissible"},
	"no_rollback":                    {"update_error_rolls_back_every_write", "failed_apply_rolls_back_the_whole_transaction", "a_failing_element_of_a_slice_fails_the_update_and_nothing_of_the_changes_is_visible"},
	"swallow_panic":                  {"update_panic_rolls_back_and_repanics"},
	"reads_outside_tx":               {"no_lost_update_across_goroutines", "no_lost_update_across_instances", "no_write_skew_across_goroutines", "reads_in_an_update_see_its_own_earlier_writes"},
	"view_per_read":                  {"view_never_observes_a_partial_update", "view_reads_one_snapshot_while_an_update_commits"},
	"ignore_close":                   {"closed_backend_rejects_view_and_update_with_err_closed"},
	"swallow_conflict":               {"insert_of_an_existing_key_conflicts_for_every_kind", "racing_inserts_of_one_key_admit_exactly_one", "a_failing_element_of_a_slice_fails_the_update_and_nothing_of_the_changes_is_visible"},
	"opaque_fn_error":                {"update_and_view_return_the_fn_error_as_is"},
	"ignore_cancel":                  {"cancelled_context_fails_update_and_writes_nothing"},
	"reopen_forgets":                 {"reopen_keeps_every_record_byte_exact", "commit_is_visible_to_another_instance"},
	"reuse_load_buffer":              {"loaded_bytes_stay_valid_after_later_writes"},
	"count_limit_zero_counts":        {"count_attempts_is_min_of_count_and_limit"},
	"due_by_exclusive":               {"due_schedules_are_bounded_by_due_by_and_ordered"},
	"events_after_inclusive":         {"events_scan_returns_seq_after_cursor_in_order"},
	"child_runs_tie_reversed":        {"child_runs_scan_orders_by_created_then_child_and_pages"},
	"status_filter_ignored":          {"attempts_scan_filters_by_run_and_status_and_pages", "attempt_status_change_moves_it_between_status_scans"},
	"desc_cursor_inclusive":          {"attempts_scan_descending_reverses_the_order_and_pages_before_the_cursor"},
	"desc_zero_cursor_is_a_position": {"zero_cursors_start_every_scan_at_the_beginning", "attempts_scan_descending_reverses_the_order_and_pages_before_the_cursor"},
	"keep_caller_slices":             {"stored_records_do_not_alias_caller_memory"},
	"expect_always_passes":           {"expect_fails_with_err_changed_when_any_field_differs_and_nothing_commits", "expect_of_a_missing_record_fails_with_err_changed", "expect_sees_the_transactions_own_earlier_writes"},
	"expect_key_only":                {"expect_fails_with_err_changed_when_any_field_differs_and_nothing_commits"},
	"expects_after_writes":           {"expects_are_checked_before_the_writes_of_the_same_changes", "the_first_failing_operation_in_apply_order_decides_the_error"},
	"deletes_after_inserts":          {"delete_then_insert_of_one_key_in_one_changes_succeeds", "operations_in_one_changes_take_effect_in_the_fixed_order", "a_slice_in_one_changes_equals_its_records_applied_one_at_a_time"},
	"replaces_before_inserts":        {"insert_then_replace_of_one_key_in_one_changes_gives_the_replaced_value", "operations_in_one_changes_take_effect_in_the_fixed_order"},
	"replace_slices_reversed":        {"a_slice_in_one_changes_equals_its_records_applied_one_at_a_time", "the_first_failing_operation_in_apply_order_decides_the_error"},
	"runs_status_ignored":            {"runs_scan_filters_by_status_and_pages_with_after_and_limit", "runs_scan_follows_replace_of_status"},
	"runs_after_inclusive":           {"runs_scan_filters_by_status_and_pages_with_after_and_limit"},
	"released_leases_hidden":         {"lease_scan_with_released_returns_every_lease_in_key_order"},
	"absence_not_compared": {
		"racing_inserts_of_one_run_across_instances_admit_exactly_one",
		"racing_inserts_of_one_activation_across_instances_admit_exactly_one",
		"racing_read_then_insert_of_one_run_across_instances_admit_exactly_one",
		"racing_read_then_insert_of_one_activation_across_instances_admit_exactly_one",
	},
}

const envMutant = "WFSTORE_TEST_MUTANT"

// TestMutantSuite runs the contract tier on one mutant (only when asked by
// TestMutantsAreCaught).
func TestMutantSuite(t *testing.T) {
	name := os.Getenv(envMutant)
	if name == "" {
		t.Skip("run by TestMutantsAreCaught")
	}
	Run(t, mutantHarness(name))
}

func TestMutantsAreCaught(t *testing.T) {
	if os.Getenv(envMutant) != "" || IsChild() {
		t.Skip("inside a mutant run")
	}
	if testing.Short() {
		t.Skip("short")
	}
	names := make([]string, 0, len(mutants))
	for n := range mutants {
		names = append(names, n)
	}
	slices.Sort(names)
	sem := make(chan struct{}, 4)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sem <- struct{}{}
			defer func() { <-sem }()
			cmd := exec.Command(os.Args[0], "-test.run=^TestMutantSuite$/^contract$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), envMutant+"="+name)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the contract tier passed on mutant %q", name)
			}
			for _, c := range mutants[name] {
				if !bytes.Contains(out, []byte("--- FAIL: TestMutantSuite/contract/"+c+" ")) {
					t.Errorf("mutant %q: case %s did not fail", name, c)
				}
			}
			if t.Failed() {
				var failed []string
				for _, line := range strings.Split(string(out), "\n") {
					if strings.Contains(line, "--- FAIL: TestMutantSuite/contract/") {
						failed = append(failed, strings.TrimSpace(line))
					}
				}
				t.Logf("failed cases: %s", strings.Join(failed, "; "))
			}
		})
	}
}

func mutantHarness(name string) Harness {
	if _, ok := mutants[name]; !ok {
		panic("unknown mutant " + name)
	}
	stores := &memStores{}
	var mu sync.Mutex
	opened := map[string]bool{} // reopen_forgets: locators opened before
	return Harness{
		Name: "mutant-" + name,
		New:  stores.New,
		Open: func(ctx context.Context, loc string) (backend.Backend, error) {
			if name == "reopen_forgets" {
				mu.Lock()
				seen := opened[loc]
				opened[loc] = true
				mu.Unlock()
				if seen {
					// Every later Open gets a store of its own.
					return &mutant{Backend: memstore.New(), m: name}, nil
				}
			}
			b, err := stores.Open(ctx, loc)
			if err != nil {
				return nil, err
			}
			return &mutant{Backend: b, m: name}, nil
		},
	}
}

type mutant struct {
	backend.Backend
	m    string
	mu   sync.Mutex
	buf  []byte            // reuse_load_buffer
	kept map[string][]byte // keep_caller_slices: run id -> the caller's Metadata
}

func (m *mutant) Close() error {
	if m.m == "ignore_close" {
		return nil
	}
	return m.Backend.Close()
}

func (m *mutant) View(ctx context.Context, fn func(backend.ReadTx) error) error {
	if m.m == "view_per_read" {
		return fn(&mutantReader{m: m, perRead: m.Backend})
	}
	if m.m == "ignore_cancel" {
		ctx = context.Background()
	}
	err := m.Backend.View(ctx, func(rtx backend.ReadTx) error { return fn(&mutantReader{m: m, ReadTx: rtx}) })
	if m.m == "opaque_fn_error" && err != nil {
		return errors.New(err.Error())
	}
	return err
}

func (m *mutant) Update(ctx context.Context, fn func(backend.Tx) error) (err error) {
	if m.m == "ignore_cancel" {
		ctx = context.WithoutCancel(ctx)
	}
	switch m.m {
	case "swallow_panic":
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("panic: %v", r)
			}
		}()
	case "no_rollback":
		var fnErr error
		err = m.Backend.Update(ctx, func(tx backend.Tx) error {
			fnErr = fn(&mutantTx{mutantReader: mutantReader{m: m, ReadTx: tx}, tx: tx})
			return nil
		})
		if err == nil {
			err = fnErr
		}
		return err
	case "absence_not_compared":
		// An adapter whose commit does not compare the keys its
		// transaction read as absent (as an etcd adapter that leaves
		// them out of its transaction's compare set): reads and the
		// absence check of a run or activation Insert see the last
		// commit, and the commit writes such an Insert whether or not the
		// key was stored in between.
		t := &mutantTx{mutantReader: mutantReader{m: m, perRead: m.Backend}}
		if err := fn(t); err != nil {
			return err
		}
		time.Sleep(time.Millisecond) // the window between read and commit
		return m.Backend.Update(ctx, func(tx backend.Tx) error {
			for _, c := range t.buffered {
				if err := upsertUnindexed(ctx, tx, c); err != nil {
					return err
				}
			}
			return nil
		})
	case "reads_outside_tx":
		// Reads see the last commit, not the transaction; writes are
		// buffered and applied at the end.
		t := &mutantTx{mutantReader: mutantReader{m: m, perRead: m.Backend}}
		if err := fn(t); err != nil {
			return err
		}
		return m.Backend.Update(ctx, func(tx backend.Tx) error {
			for _, c := range t.buffered {
				if err := tx.Apply(ctx, c); err != nil {
					return err
				}
			}
			return nil
		})
	}
	err = m.Backend.Update(ctx, func(tx backend.Tx) error {
		return fn(&mutantTx{mutantReader: mutantReader{m: m, ReadTx: tx}, tx: tx})
	})
	if m.m == "opaque_fn_error" && err != nil {
		return errors.New(err.Error())
	}
	return err
}

type mutantReader struct {
	backend.ReadTx
	m       *mutant
	perRead backend.Backend // when set, every read is its own View
}

func (r *mutantReader) rtx(ctx context.Context, f func(backend.ReadTx) error) error {
	if r.perRead != nil {
		return r.perRead.View(ctx, f)
	}
	return f(r.ReadTx)
}

func (r *mutantReader) Load(ctx context.Context, l backend.Lookup) (f backend.Found, err error) {
	err = r.rtx(ctx, func(rtx backend.ReadTx) error { f, err = rtx.Load(ctx, l); return err })
	if err != nil {
		return f, err
	}
	switch r.m.m {
	case "drop_authority":
		for k, v := range f.Runs {
			v.Authority = nil
			f.Runs[k] = v
		}
	case "keep_caller_slices":
		r.m.mu.Lock()
		for k, v := range f.Runs {
			if b, ok := r.m.kept[k]; ok {
				v.Metadata = b
				f.Runs[k] = v
			}
		}
		r.m.mu.Unlock()
	case "reuse_load_buffer":
		r.m.mu.Lock()
		for k, v := range f.Activations {
			r.m.buf = append(r.m.buf[:0], v.Input...)
			v.Input = r.m.buf
			f.Activations[k] = v
		}
		r.m.mu.Unlock()
	}
	return f, nil
}

func (r *mutantReader) AdmissibleActivations(ctx context.Context, q backend.AdmissibleQuery) (out []backend.Activation, err error) {
	if r.m.m == "limit_plus_one" {
		q.Limit++
	}
	err = r.rtx(ctx, func(rtx backend.ReadTx) error {
		if r.m.m == "admissible_any_status" && q.RunID != "" {
			out, err = rtx.Activations(ctx, backend.ActivationQuery{RunID: q.RunID, After: backend.NodeRef{NodeID: q.After.NodeID, ActivationID: q.After.ActivationID}, Limit: q.Limit})
			return err
		}
		out, err = rtx.AdmissibleActivations(ctx, q)
		return err
	})
	if r.m.m == "case_insensitive_order" {
		slices.SortStableFunc(out, func(a, b backend.Activation) int {
			return strings.Compare(strings.ToLower(a.Key.RunID), strings.ToLower(b.Key.RunID))
		})
	}
	return out, err
}

func (r *mutantReader) Activations(ctx context.Context, q backend.ActivationQuery) (out []backend.Activation, err error) {
	err = r.rtx(ctx, func(rtx backend.ReadTx) error { out, err = rtx.Activations(ctx, q); return err })
	return out, err
}

func (r *mutantReader) Attempts(ctx context.Context, q backend.AttemptQuery) (out []backend.Attempt, err error) {
	if r.m.m == "status_filter_ignored" {
		q.Status = ""
	}
	if r.m.m == "desc_cursor_inclusive" && q.Descending && q.After != (backend.AttemptCursor{}) {
		// Resume at the cursor instead of strictly before it.
		q.After.Identity += "\x00"
	}
	if r.m.m == "desc_zero_cursor_is_a_position" && q.Descending && q.After == (backend.AttemptCursor{}) {
		// Strictly before (0, ""): before every attempt.
		return nil, nil
	}
	err = r.rtx(ctx, func(rtx backend.ReadTx) error { out, err = rtx.Attempts(ctx, q); return err })
	return out, err
}

func (r *mutantReader) CountAttempts(ctx context.Context, q backend.AttemptCountQuery) (n int, err error) {
	if r.m.m == "count_limit_zero_counts" && q.Limit == 0 {
		q.Limit = 1 << 30
	}
	err = r.rtx(ctx, func(rtx backend.ReadTx) error { n, err = rtx.CountAttempts(ctx, q); return err })
	return n, err
}

func (r *mutantReader) ChildRuns(ctx context.Context, q backend.ChildRunQuery) (out []backend.RunLink, err error) {
	err = r.rtx(ctx, func(rtx backend.ReadTx) error { out, err = rtx.ChildRuns(ctx, q); return err })
	if r.m.m == "child_runs_tie_reversed" {
		slices.SortStableFunc(out, func(a, b backend.RunLink) int {
			if a.CreatedMS != b.CreatedMS {
				return 0
			}
			return strings.Compare(b.ChildRunID, a.ChildRunID)
		})
	}
	return out, err
}

func (r *mutantReader) DueSchedules(ctx context.Context, q backend.ScheduleQuery) (out []backend.RetrySchedule, err error) {
	if r.m.m == "due_by_exclusive" {
		q.DueBy--
	}
	err = r.rtx(ctx, func(rtx backend.ReadTx) error { out, err = rtx.DueSchedules(ctx, q); return err })
	return out, err
}

func (r *mutantReader) Events(ctx context.Context, q backend.EventQuery) (out []backend.Event, err error) {
	if r.m.m == "events_after_inclusive" && q.After > 0 {
		q.After--
	}
	err = r.rtx(ctx, func(rtx backend.ReadTx) error { out, err = rtx.Events(ctx, q); return err })
	return out, err
}

func (r *mutantReader) Leases(ctx context.Context, q backend.LeaseQuery) (out []backend.Lease, err error) {
	if r.m.m == "lease_after_ignored" {
		q.After = backend.LeaseKey{}
	}
	if r.m.m == "released_leases_hidden" {
		q.IncludeReleased = false
	}
	err = r.rtx(ctx, func(rtx backend.ReadTx) error { out, err = rtx.Leases(ctx, q); return err })
	return out, err
}

func (r *mutantReader) Runs(ctx context.Context, q backend.RunQuery) (out []backend.Run, err error) {
	if r.m.m == "runs_status_ignored" {
		q.Status = ""
	}
	inclusive := r.m.m == "runs_after_inclusive" && q.After != ""
	err = r.rtx(ctx, func(rtx backend.ReadTx) error {
		out, err = rtx.Runs(ctx, q)
		if err != nil || !inclusive {
			return err
		}
		// Resume at the cursor instead of after it.
		f, err := rtx.Load(ctx, backend.Lookup{Runs: []string{q.After}})
		if run, ok := f.Runs[q.After]; ok && err == nil && (q.Status == "" || run.Status == q.Status) {
			out = append([]backend.Run{run}, out...)
			if len(out) > q.Limit {
				out = out[:q.Limit]
			}
		}
		return err
	})
	return out, err
}

type mutantTx struct {
	mutantReader
	tx       backend.Tx // nil for reads_outside_tx
	buffered []backend.Changes
}

func (t *mutantTx) Apply(ctx context.Context, c backend.Changes) error {
	m := t.m.m
	if m == "ignore_cancel" {
		ctx = context.WithoutCancel(ctx)
	}
	// Work on copies of the slices the mutant changes: the caller's stay as
	// they were.
	c.Insert.Activations = slices.Clone(c.Insert.Activations)
	c.Replace.Activations = slices.Clone(c.Replace.Activations)
	for _, acts := range [][]backend.Activation{c.Insert.Activations, c.Replace.Activations} {
		for i, a := range acts {
			if m == "json_null_is_absent" && string(a.Output) == "null" {
				acts[i].Output = nil
			}
			if m == "truncate_large_json" && len(a.Input) > 1<<16 {
				acts[i].Input = a.Input[:1<<16]
			}
		}
	}
	if m == "keep_caller_slices" {
		// Return the caller's own Metadata slice on later Loads.
		t.m.mu.Lock()
		if t.m.kept == nil {
			t.m.kept = map[string][]byte{}
		}
		for _, r := range slices.Concat(c.Insert.Runs, c.Replace.Runs) {
			t.m.kept[r.ID] = r.Metadata
		}
		t.m.mu.Unlock()
	}
	switch m {
	case "expect_always_passes":
		c.Expect = backend.Expected{}
	case "expect_key_only":
		// Checks that a record with the key exists, not that it is equal:
		// expects whatever is stored under the key.
		if err := t.expectKeyOnly(ctx, &c.Expect); err != nil {
			return err
		}
	case "replace_slices_reversed":
		// An adapter that writes each slice in one statement that does not
		// keep the slice's order.
		r := &c.Replace
		r.Runs, r.Activations, r.Groups = reversed(r.Runs), reversed(r.Activations), reversed(r.Groups)
		r.Attempts, r.Leases, r.Schedules = reversed(r.Attempts), reversed(r.Leases), reversed(r.Schedules)
	}
	if t.tx == nil {
		if m == "absence_not_compared" {
			// The Insert's absence check reads the last commit.
			f, err := t.Load(ctx, backend.Lookup{Runs: keysBy(c.Insert.Runs, func(r backend.Run) string { return r.ID }),
				Activations: keysOf(c.Insert.Activations)})
			if err != nil {
				return err
			}
			if len(f.Runs)+len(f.Activations) > 0 {
				return fmt.Errorf("mutant: insert of a stored key: %w", backend.ErrConflict)
			}
		}
		t.buffered = append(t.buffered, c)
		return nil
	}
	// Mutants that apply the parts of c in another order than the fixed one.
	var parts []backend.Changes
	exps, dels := backend.Changes{Expect: c.Expect}, backend.Changes{Delete: c.Delete}
	inss, reps := backend.Changes{Insert: c.Insert}, backend.Changes{Replace: c.Replace}
	switch m {
	case "expects_after_writes":
		parts = []backend.Changes{dels, inss, reps, exps}
	case "deletes_after_inserts":
		parts = []backend.Changes{exps, inss, dels, reps}
	case "replaces_before_inserts":
		parts = []backend.Changes{exps, dels, reps, inss}
	case "swallow_conflict":
		for _, o := range opsOf(c) {
			if err := t.tx.Apply(ctx, o.c); err != nil && !errors.Is(err, backend.ErrConflict) {
				return err
			}
		}
		return nil
	default:
		return t.tx.Apply(ctx, c)
	}
	for _, p := range parts {
		if err := t.tx.Apply(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

func keysBy[R, K any](rs []R, key func(R) K) []K {
	out := make([]K, len(rs))
	for i, r := range rs {
		out[i] = key(r)
	}
	return out
}

// upsertUnindexed applies c, writing each run and activation Insert as a
// Replace when its key is stored by now (absence_not_compared).
func upsertUnindexed(ctx context.Context, tx backend.Tx, c backend.Changes) error {
	var runIDs []string
	var actKeys []backend.ActivationKey
	for _, r := range c.Insert.Runs {
		runIDs = append(runIDs, r.ID)
	}
	for _, a := range c.Insert.Activations {
		actKeys = append(actKeys, a.Key)
	}
	f, err := tx.Load(ctx, backend.Lookup{Runs: runIDs, Activations: actKeys})
	if err != nil {
		return err
	}
	var runs []backend.Run
	var acts []backend.Activation
	for _, r := range c.Insert.Runs {
		if _, ok := f.Runs[r.ID]; ok {
			c.Replace.Runs = append(c.Replace.Runs, r)
		} else {
			runs = append(runs, r)
		}
	}
	for _, a := range c.Insert.Activations {
		if _, ok := f.Activations[a.Key]; ok {
			c.Replace.Activations = append(c.Replace.Activations, a)
		} else {
			acts = append(acts, a)
		}
	}
	c.Insert.Runs, c.Insert.Activations = runs, acts
	return tx.Apply(ctx, c)
}

func (t *mutantTx) expectKeyOnly(ctx context.Context, x *backend.Expected) error {
	missing := func(err error) error {
		if errors.Is(err, backend.ErrNotFound) {
			return fmt.Errorf("%w: %w", backend.ErrChanged, err)
		}
		return err
	}
	x.Runs, x.Activations, x.Attempts = slices.Clone(x.Runs), slices.Clone(x.Activations), slices.Clone(x.Attempts)
	var err error
	for i, r := range x.Runs {
		if x.Runs[i], err = backend.GetRun(ctx, t.tx, r.ID); err != nil {
			return missing(err)
		}
	}
	for i, a := range x.Activations {
		if x.Activations[i], err = backend.GetActivation(ctx, t.tx, a.Key); err != nil {
			return missing(err)
		}
	}
	for i, a := range x.Attempts {
		if x.Attempts[i], err = backend.GetAttempt(ctx, t.tx, a.Key); err != nil {
			return missing(err)
		}
	}
	return nil
}

// reversed returns a reversed copy of xs.
func reversed[T any](xs []T) []T {
	out := slices.Clone(xs)
	slices.Reverse(out)
	return out
}
