// Package conformance is the test suite every wfstore backend runs. An
// adapter whose test calls Run and passes, with no skip beyond what its
// Capabilities declare, implements the storage contract of package backend
// exactly as every other adapter does, and workflow.Store over it keeps all
// of its guarantees (docs/guarantees.md): one attempt per pending
// activation, the intent durable before the owner is called, no blind
// redispatch of ambiguous mutations, authority fencing at every boundary.
//
// An adapter's test calls Run with a Harness:
//
//	package myadapter_test
//
//	import (
//		"context"
//		"path/filepath"
//		"testing"
//
//		"example.com/myadapter"
//		"github.com/wfstore/wfstore/backend"
//		"github.com/wfstore/wfstore/conformance"
//	)
//
//	func TestConformance(t *testing.T) {
//		conformance.Run(t, conformance.Harness{
//			Name: "myadapter",
//			// A fresh, empty store per case; clean it up with t.Cleanup.
//			New: func(t testing.TB) string { return filepath.Join(t.TempDir(), "store.db") },
//			Open: func(ctx context.Context, locator string) (backend.Backend, error) {
//				return myadapter.Open(ctx, locator)
//			},
//			// Optional: check adapter-internal invariants after every case.
//			Verify: func(ctx context.Context, b backend.Backend) error { return b.(*myadapter.DB).Verify(ctx) },
//		})
//	}
//
// Run runs every case as a parallel subtest "contract/<name>" or
// "store/<name>", each on its own fresh store and its own first Backend. At
// the end of a case the suite closes every Backend it opened and, when
// Verify is set, opens one more and verifies it.
//
// # Capabilities and skips
//
// A case skips only when the Backend's Capabilities say it cannot run, and
// the skip message names the capability:
//
//   - MultiInstance=false skips the cases that need a second Backend over
//     one store; cases that merely use more instances when they may (racing
//     inserts, distinct inserts) run with one.
//   - MultiProcess=false skips the cases that run child processes
//     concurrently with the parent.
//
// Nothing else skips, so a skip in an adapter's own run that no capability
// explains is a bug in the suite.
//
// # Child processes
//
// Multi-process cases re-execute the test binary (os.Args[0]) with
// -test.run selecting the top-level test that called Run and the
// WFSTORE_CONFORMANCE_* environment variables set; Run then performs the
// requested role instead of the cases. The harness therefore must not need
// anything from the parent process beyond the locator: a locator must be
// openable from another process (a file path, a DSN). A TestMain that starts
// shared fixtures may check IsChild to skip work a child does not need.
//
// # Contract tier: rule → cases
//
// The contract tier talks to backend.Backend directly. Every case name says
// what it proves; the table maps each rule of the contract to the cases
// that check it.
//
//	rule (backend package documentation)         cases (contract/...)
//	every field round-trips byte-exactly          every_field_of_every_kind_round_trips,
//	                                              json_bytes_are_kept_exactly_as_written,
//	                                              extreme_numbers_round_trip (max uint32 attempt, int64 extremes),
//	                                              one_mib_json_in_every_json_field_round_trips
//	nil JSON / Authority / Group mean absent      absent_optional_fields_stay_absent,
//	                                              present_zero_like_values_stay_present ("null", Index 0, Generation 0)
//	ids: unicode, 512 bytes, any punctuation      unicode_long_and_punctuated_ids_round_trip,
//	                                              composite_keys_do_not_collide_across_separators
//	durable across Close/Open                     reopen_keeps_every_record_byte_exact
//	records share no memory with callers          loaded_bytes_stay_valid_after_later_writes,
//	                                              stored_records_do_not_alias_caller_memory
//	Insert of an existing key → ErrConflict       insert_of_an_existing_key_conflicts_for_every_kind,
//	                                              insert_twice_in_one_apply_conflicts,
//	                                              lease_modes_and_resources_are_distinct_records
//	Attempt.Identity is unique                    insert_of_an_attempt_with_a_taken_identity_conflicts,
//	                                              replace_attempt_onto_a_taken_identity_conflicts,
//	                                              replace_attempt_identity_moves_the_identity_lookup
//	Replace/Delete of a missing key → ErrNotFound replace_of_a_missing_key_is_not_found_for_every_kind,
//	                                              delete_of_a_missing_schedule_is_not_found,
//	                                              delete_of_a_missing_attempt_lease_or_event_is_not_found
//	Replace overwrites every field                replace_changes_every_field_of_every_kind
//	Expect: passes only for an equal stored       expect_of_an_equal_record_passes_and_the_writes_after_it_commit,
//	  record (every field, nil ≠ empty), sees     expect_fails_with_err_changed_when_any_field_differs_and_nothing_commits,
//	  earlier Applies of the transaction, else    expect_of_a_missing_record_fails_with_err_changed,
//	  ErrChanged and nothing commits              expect_sees_the_transactions_own_earlier_writes
//	Delete removes from Load, scans and indexes   delete_schedule_removes_it_from_load_and_due_schedules,
//	  (a deleted identity is free again)          delete_attempt_removes_it_from_load_scans_and_identity,
//	                                              delete_lease_removes_it_from_load_resources_and_the_leases_scan,
//	                                              delete_event_removes_it_from_events
//	Apply order: expects, deletes, inserts,       operations_in_one_changes_take_effect_in_the_fixed_order,
//	  replaces; kinds in field order; each slice  delete_then_insert_of_one_key_in_one_changes_succeeds,
//	  in order; the first failing operation's     insert_then_replace_of_one_key_in_one_changes_gives_the_replaced_value,
//	  error                                       expects_are_checked_before_the_writes_of_the_same_changes,
//	                                              the_first_failing_operation_in_apply_order_decides_the_error
//	a slice equals its elements applied one by    a_slice_in_one_changes_equals_its_records_applied_one_at_a_time,
//	  one; one failing element fails it all       a_failing_element_of_a_slice_fails_the_update_and_nothing_of_the_changes_is_visible
//	reads in Update see its own writes            reads_in_an_update_see_its_own_earlier_writes
//	empty Changes, empty slices: no operation     empty_apply_and_empty_update_succeed
//	AdmissibleActivations: admissible only,       admissible_scan_returns_only_admissible_rows_in_bytewise_key_order,
//	  bytewise key order, After, AfterRun, Limit  admissible_scan_pages_with_after_and_limit,
//	                                              admissible_scan_after_run_skips_the_rest_of_that_run,
//	                                              admissible_index_follows_replace_of_admissible
//	Activations: one run, key order               activations_scan_returns_one_run_in_key_order
//	Attempts: (PreparedMS, Identity), filters     attempts_scan_orders_by_prepared_ms_then_identity,
//	                                              attempts_scan_filters_by_run_and_status_and_pages,
//	                                              attempt_status_change_moves_it_between_status_scans
//	Attempts Descending: reverse order, pages     attempts_scan_descending_reverses_the_order_and_pages_before_the_cursor
//	  strictly before the cursor
//	every After's zero value starts at the        zero_cursors_start_every_scan_at_the_beginning
//	  beginning (Descending attempts too)
//	CountAttempts = min(count, Limit)             count_attempts_is_min_of_count_and_limit
//	ChildRuns: (CreatedMS, ChildRunID), cursor    child_runs_scan_orders_by_created_then_child_and_pages
//	DueSchedules: DueMS <= DueBy, order           due_schedules_are_bounded_by_due_by_and_ordered
//	Events: Seq > After in order                  events_scan_returns_seq_after_cursor_in_order
//	Leases / Load Resources: unreleased,          leases_scan_orders_by_lease_key_and_skips_released,
//	  LeaseKey order; IncludeReleased: all        lease_scan_with_released_returns_every_lease_in_key_order,
//	                                              load_resources_returns_unreleased_leases_of_that_run_and_resource
//	Runs: bytewise id order, Status, After        runs_scan_returns_every_run_in_bytewise_id_order,
//	                                              runs_scan_filters_by_status_and_pages_with_after_and_limit,
//	                                              runs_scan_follows_replace_of_status
//	missing keys are absent, not errors           load_of_missing_keys_finds_nothing_without_error
//	Load: key sets of any size, repeats, absents  load_finds_exactly_the_present_keys_in_key_sets_of_every_size
//	fn error rolls everything back                update_error_rolls_back_every_write,
//	                                              failed_apply_rolls_back_the_whole_transaction
//	panic rolls back and is re-raised             update_panic_rolls_back_and_repanics,
//	                                              view_panic_propagates_and_releases_the_snapshot
//	fn's error is returned as is                  update_and_view_return_the_fn_error_as_is
//	View reads one consistent snapshot            view_reads_one_snapshot_while_an_update_commits,
//	                                              view_never_observes_a_partial_update,
//	                                              view_started_after_a_commit_sees_it
//	Update is serializable (goroutines,           no_lost_update_across_goroutines, no_lost_update_across_instances,
//	  instances, processes), also for writes      no_lost_update_across_processes,
//	  that Expect a row known from an earlier     no_lost_update_expecting_known_rows_across_goroutines,
//	  transaction instead of reading it (an       no_lost_update_expecting_known_rows_across_instances,
//	  adapter caching rows across transactions    no_lost_update_expecting_known_rows_across_processes,
//	  must see every other writer's commit)       no_write_skew_across_goroutines, no_write_skew_across_instances,
//	                                              racing_inserts_of_one_key_admit_exactly_one,
//	                                              racing_inserts_across_processes_admit_exactly_one,
//	                                              racing_inserts_of_one_run_across_instances_admit_exactly_one,
//	                                              racing_inserts_of_one_activation_across_instances_admit_exactly_one,
//	                                              racing_read_then_insert_of_one_run_across_instances_admit_exactly_one,
//	                                              racing_read_then_insert_of_one_activation_across_instances_admit_exactly_one,
//	                                              concurrent_inserts_of_distinct_keys_all_commit,
//	                                              commit_is_visible_to_another_instance
//	closed Backend → ErrClosed                    closed_backend_rejects_view_and_update_with_err_closed,
//	                                              close_twice_is_harmless
//	cancelled ctx → error, nothing written        cancelled_context_fails_update_and_writes_nothing,
//	                                              cancelled_context_fails_view
//
// # Store tier
//
// Every operation and invariant of the Store, through workflow.Store over
// the adapter (cases named store/<group>_<what it proves>). Each rule of
// the semantics (docs/semantics.md; "inv. N" is invariant N of
// docs/guarantees.md) and the cases that check it:
//
//	rule                                                   cases
//	one pending activation, one attempt (inv. 1)           admission_prepare_is_single_winner_across_instances,
//	                                                       admission_racing_dispatchers_admit_each_activation_once,
//	                                                       admission_processes_dispatching_one_store_admit_each_activation_once
//	failed prepare writes nothing (inv. 6)                 admission_oversized_intent_rolls_back_without_writes,
//	                                                       input_* (ids, JSON, times, limits, idempotent create/add)
//	intent + handoff before owner, receipt after (inv. 2)  admission_intent_and_handoff_commit_before_owner_call_receipt_after
//	fault-boundary matrix across reopen                    admission_fault_boundaries_hold_across_reopen
//	owner failure never silently redispatched              admission_owner_failure_stays_prepared_and_is_not_redispatched
//	handoff is a 0→1 compare-and-set                       admission_second_handoff_of_one_identity_fails
//	low-level prepare: idempotent, no proof                admission_low_level_prepare_*
//	bytewise order                                         admission_discovery_order_is_bytewise
//	one bad run never blocks the others                    admission_discovery_skips_a_run_without_capacity,
//	                                                       limits_elapsed_deadline_rejects_without_blocking_other_runs
//	a refusal at handoff is Rejected, the batch goes on    discovery_handoff_refusal_is_rejected_and_the_batch_goes_on
//	work added to an exhausted run is reported             exhaustion_work_added_to_an_exhausted_run_is_reported_by_the_next_pass
//	batch mode stops where one at a time stops             batch_owner_error_stops_further_owner_calls,
//	                                                       batch_plan_error_stops_the_pass,
//	                                                       batch_stale_authority_at_* (planning, preparation,
//	                                                       handoff, receipt)
//	a stopped batch releases what it never offered,        batch_release_leaves_unoffered_attempts_provably_never_dispatched,
//	  fenced by the handoff's holder token                 batch_release_that_lost_the_handoff_to_a_recovery_pass_changes_nothing,
//	                                                       batch_owner_dispatch_batch_offers_every_attempt_it_is_given,
//	                                                       handoff_every_write_stores_a_fresh_holder_token
//	allowance and deadline come before capacity            discovery_allowance_and_deadline_precede_the_capacity_shortcut
//	discovery reads O(limit), passes resume and wrap       discovery_reads_are_bounded_by_the_limit_and_reach_every_run,
//	                                                       discovery_passes_over_all_runs_resume_and_wrap
//	events in commit order, bounded pages                  admission_events_after_prepare_are_in_commit_order
//	successors atomic with Succeeded                       admission_succeeded_adds_successors_atomically
//	authority fencing at every boundary (inv. 4)           authority_* (transfer CAS, owned up front, before prepare,
//	                                                       before handoff, before receipt)
//	recovery passes fenced; authorities compared           fencing_* (transfer or one-field change during
//	  field by field                                       redispatch, receipt lookup, repair; one-field
//	                                                       difference at every boundary; retirement mid-admission)
//	receipts: duplicate no-op, conflict, identity (inv. 5) receipt_*
//	owner admission check / receipt recovery               receipt_check_owner_admission_recovers_verifies_and_refuses
//	never-dispatched proof, receipt lookup                 reconcile_never_dispatched_*, reconcile_receipt_lookup_*,
//	                                                       receipt_late_receipt_admits_repair_required_after_recorded_handoff
//	no blind mutation redispatch (inv. 3)                  reconcile_ambiguous_mutation_becomes_repair_required,
//	                                                       reconcile_redispatch_never_selects_ambiguous_mutation
//	read-only redispatch keeps identity                    reconcile_ambiguous_read_only_is_redispatched_with_same_identity
//	explicit repair, abandon before retry                  reconcile_explicit_repair_*, reconcile_abandon_then_explicit_retry_*
//	observation mapping and conflicts                      reconcile_observations_map_to_attempt_statuses,
//	                                                       reconcile_observation_conflicting_with_settled_attempt_fails
//	retry decision, scheduling, consumption once (inv. 7)  retry_* (incl. concurrent consumption, downstream, cap, cancel)
//	fan-out bounds, promotion, retirement                  fanout_*
//	cancellation intent first, finalisation (inv. 8)       cancel_*
//	allowance: node and root caps, one event (inv. 9)      limits_node_execution_cap_*, limits_root_tree_*,
//	                                                       child_run_refused_when_the_root_allowance_is_used_up
//	allowance observation boundaries 0/1000/1001/cap/>1000 limits_allowance_observation_*, limits_allowance_exhausted_*
//	capacity and resource leases                           limits_concurrency_cap_*, limits_*_claims_*, limits_leases_*
//	child runs: narrowing, depth, descendants              child_run_*
//	deadline exclusive at the millisecond                  boundaries_deadline_is_exclusive_at_the_millisecond
//	nil, typed-nil, zero arguments at every entry          boundaries_nil_and_zero_arguments_are_invalid_input_at_every_entry
//	page limits: 0 = default, 1 to 1000, else invalid      boundaries_every_page_limit_takes_0_as_default_and_1_to_1000_as_given
//	receipt-backed pass: mapping, cancel without owner,    ops_receipt_pass_*
//	  run scope, fencing, bounds
//	allowance increase: fenced CAS, readmits, one event,   ops_allowance_increase_*
//	  never raises the root
//	inspection: checksum-verified intent, receipt,         ops_inspect_*
//	  history both orders, bounded run summary
//	tree cancellation, child-aware finalisation, completion tree_*
//	random sequences agree with a reference model          model_random_sequences_match_the_reference_model
//
// # Model tier
//
// The case store/model_random_sequences_match_the_reference_model runs
// random operation sequences through workflow.Store over the adapter and
// through a small reference model written from the rules, and requires
// equal results, equal error classes and an equal rendering of the durable
// state after every step. A failing sequence is shrunk and printed with its
// seed. WFSTORE_MODEL_STEPS sets the number of steps per adapter (default
// 1000) for longer runs.
//
// # The suite can fail
//
// A case that no bug can fail proves nothing, so both tiers are run against
// seeded bugs. The package's own tests run the contract tier against
// memstore wrapped to break one contract rule at a time and require the
// cases listed for that rule to fail. For the store tier, scripts/mutants.sh
// (go run ./tools/mutants/run) runs the suite on the in-memory backend
// (MUTANT_PKG selects another adapter) once per mutant of the Store in the
// catalog of tools/mutants: each mutant is a textual edit of workflow/,
// compiled in with go test -overlay, so the library itself carries no
// mutation hooks. The script fails unless the suite fails on every mutant.
package conformance
