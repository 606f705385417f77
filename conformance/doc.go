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
//		})
//	}
//
// Run runs every case as a parallel subtest "contract/<name>" or
// "store/<name>" on a fresh store, and after each case runs the optional
// Harness.Verify (adapter-internal invariants) on the store it left.
//
// # Capabilities and skips
//
// A case skips only when the Backend's Capabilities say it cannot run, and
// the skip message names the capability: MultiInstance=false skips the
// cases that need a second Backend over one store, MultiProcess=false those
// that run child processes. A skip no capability explains is a bug.
//
// # Child processes
//
// Multi-process cases re-execute the test binary with -test.run selecting
// the test that called Run; Run then plays the requested role instead of
// the cases. A locator must therefore be openable from another process (a
// file path, a DSN). A TestMain with shared fixtures may check IsChild.
//
// # Tiers
//
// The contract tier talks to backend.Backend directly; the store tier runs
// every operation and invariant through workflow.Store over the adapter,
// and its model case compares random operation sequences with a reference
// model (WFSTORE_MODEL_STEPS sets their length). Every case is proven able
// to fail: the package's tests break one contract rule at a time, and
// scripts/mutants.sh runs the store tier against seeded bugs of the Store.
// The repository's docs/conformance.md maps each rule to its cases.
package conformance
