#!/usr/bin/env bash
# Runs the conformance suite once per seeded mutant of the Store, and the
# runner's tests once per seeded mutant of the runner, and fails unless
# every mutant makes its tests fail. The mutants are textual edits of
# workflow/ and runner/ listed in tools/mutants/catalog.go; each is compiled into
# its own test binary with go test -overlay, so the library itself carries
# no trace of them (see tools/mutants/run). The mutants break Store
# logic, not storage, so by default the suite runs on the in-memory
# reference backend (every case but the multi-process ones);
# MUTANT_PKG=./sqlite/ runs it on SQLite instead. Arguments go to the
# runner: -only name,name runs those mutants; -all adds the adapter mutants
# (such as sqlite-expect-ignored), each on its own adapter.
# Prints one line per mutant, then "N mutants, N caught, N survived".
# Exits 1 when a mutant survives, 2 when one does not build.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
# Built rather than go run, which turns every failure into exit status 1.
go build -o "$dir/mutants" ./tools/mutants/run || exit 2
"$dir/mutants" -pkg "${MUTANT_PKG:-./memstore/}" "$@"
