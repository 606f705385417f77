#!/usr/bin/env bash
# Runs the conformance suite once per seeded mutant of workflow/ (build tag
# wfmutant, mutant chosen by WFSTORE_MUTANT) and fails unless every mutant
# makes the suite fail. See workflow/mutant.go. The mutants break Store
# logic, not storage, so by default the suite runs on the in-memory
# reference backend (every case but the multi-process ones, about 3 s a
# mutant); MUTANT_PKG=./sqlite/ runs it on SQLite instead.
set -uo pipefail
cd "$(dirname "$0")/.."
mutants=(
  pending-guard          # prepare admits a non-pending activation
  cancel-gate            # prepare ignores requested cancellation
  node-cap               # node execution allowance not enforced
  root-cap               # root tree allowance not enforced
  concurrency-cap        # concurrency capacity not enforced
  exhaustion-event-twice # a second execution_allowance_exhausted event
  handoff-authority      # handoff skips the authority check
  handoff-cas            # handoff is not a 0→1 compare-and-set
  lease-release          # leases never released on settle
  lease-conflict         # incompatible leases granted
  schedule-consume-twice # a retry schedule survives its consumption
  consume-abandoned      # a schedule consumes an abandoned latest attempt
  retry-downstream       # retry allowed after downstream activation
  receipt-conflict       # a conflicting receipt overwrites the stored one
  never-dispatched-proof # reconcile ignores the never-dispatched proof
  prepare-attempt-effect # low-level prepare ignores a different side effect
  known-unchecked        # handoff/receipt decide on known records without expecting them unchanged
  prepare-authority      # prepare skips the authority check
  receipt-authority      # receipt persisted without the authority check
  exhaustion-authority   # exhaustion recorded without the authority check
  redispatch-authority   # redispatch hands off and persists receipts without authority checks
  reconcile-authority    # reconciliation writes receipts and repair_required without authority checks
  retirement-ignored     # prepare, handoff and owner admission ignore a pending fan-out retirement
  authority-partial-compare # authorities compared by generation and daemon id only
  handoff-refusal-fatal  # a run-state refusal at handoff stops the Dispatch batch
  capacity-before-allowance # discovery calls a run full before its allowance and deadline checks
  discovery-unbounded    # discovery reads the pending index without a row budget
  discovery-restarts     # every pass over all runs restarts at the beginning of the index
  deadline-inclusive     # work and attempts still accepted at the deadline millisecond
  intent-checksum-unverified    # DispatchIntent returns an intent that fails its checksum
  exhaustion-parks-forever      # an allowance increase never readmits exhausted work
  increase-raises-root          # a child's allowance increase raises its root's cap too
  cancelled-unknown-to-repair   # an Unknown observation under cancellation goes to repair_required
  verify-lease-holder           # Verify accepts an unreleased lease of a settled attempt
  receipt-pass-cancel-asks-owner # the receipt-backed pass asks the owner about a cancelling run
  receipt-pass-skips-snapshot   # the unowned receipt-backed pass ignores an authority change
  tree-cancel-skips-children # tree cancellation records the intent on the root only
  finalize-ignores-children  # a cancelling run finalises while its child runs still run
  fanout-settled-accounting     # a retried fan-out member is requeued without adjusting the group's accounting
  fanout-failfast-skips-siblings # a fail-fast member failure leaves its siblings running
  prune-live-run                # prune skips the terminal check on the run and its tree
)
pkg="${MUTANT_PKG:-./memstore/}"
bin="$(mktemp -d)/wfstore-mutant.test"
trap 'rm -rf "$(dirname "$bin")"' EXIT
go test -tags wfmutant -c -o "$bin" "$pkg" || exit 2
survivors=()
for m in "${mutants[@]}"; do
  out=$(WFSTORE_MUTANT="$m" "$bin" -test.run 'Conformance' -test.count=1 -test.timeout 10m 2>&1)
  if [ $? -eq 0 ]; then
    printf 'SURVIVED %-24s\n' "$m"
    survivors+=("$m")
  else
    caught=$(printf '%s\n' "$out" | grep -E -- '^\s*--- FAIL: .*/(store|contract)/' | sed -E 's/.*--- FAIL: [^/]+\/(store|contract)\//\1\//; s/ \(.*//' | head -3 | paste -sd, -)
    printf 'caught   %-24s by %s\n' "$m" "${caught:-(suite failed)}"
  fi
done
echo "${#mutants[@]} mutants, $(( ${#mutants[@]} - ${#survivors[@]} )) caught, ${#survivors[@]} survived"
[ ${#survivors[@]} -eq 0 ]
