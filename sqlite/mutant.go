//go:build !wfmutant

package sqlite

// adapterMutated reports whether the seeded adapter mutant name is active.
// In normal builds it is constant false and the branches it guards
// compile away; builds tagged wfmutant read WFSTORE_ADAPTER_MUTANT, so that
// tests can show the conformance suite (and wfstore conform) fail on a
// broken adapter.
func adapterMutated(string) bool { return false }
