#!/usr/bin/env bash
# Runs the conformance suite on sqlite once per seeded mutant of workflow/
# (build tag wfmutant, mutant chosen by WFSTORE_MUTANT) and fails unless
# every mutant makes the suite fail. See workflow/mutant.go.
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
  retry-downstream       # retry allowed after downstream activation
  receipt-conflict       # a conflicting receipt overwrites the stored one
  never-dispatched-proof # reconcile ignores the never-dispatched proof
  prepare-attempt-effect # low-level prepare ignores a different side effect
  known-unchecked        # handoff/receipt decide on known records without expecting them unchanged
  fanout-settled-accounting     # a retried fan-out member is requeued without adjusting the group's accounting
  fanout-failfast-skips-siblings # a fail-fast member failure leaves its siblings running
)
pkg="${MUTANT_PKG:-./sqlite/}"
go test -tags wfmutant -c -o /tmp/wfstore-mutant.test "$pkg" || exit 2
survivors=()
for m in "${mutants[@]}"; do
  out=$(WFSTORE_MUTANT="$m" /tmp/wfstore-mutant.test -test.run 'Conformance' -test.count=1 -test.timeout 10m 2>&1)
  if [ $? -eq 0 ]; then
    printf 'SURVIVED %-24s\n' "$m"
    survivors+=("$m")
  else
    caught=$(printf '%s\n' "$out" | grep -E -- '^\s*--- FAIL: .*/(store|contract)/' | sed -E 's/.*--- FAIL: [^/]+\/(store|contract)\//\1\//; s/ \(.*//' | head -3 | paste -sd, -)
    printf 'caught   %-24s by %s\n' "$m" "${caught:-(suite failed)}"
  fi
done
rm -f /tmp/wfstore-mutant.test
echo "${#mutants[@]} mutants, $(( ${#mutants[@]} - ${#survivors[@]} )) caught, ${#survivors[@]} survived"
[ ${#survivors[@]} -eq 0 ]
