//go:build !wfmutant

package workflow

// mutated reports whether the seeded mutant name is active. In normal
// builds it is constant false and the compiler removes every mutant branch;
// builds tagged wfmutant select one mutant from WFSTORE_MUTANT so that
// scripts/mutants.sh can prove the conformance suite catches it.
func mutated(string) bool { return false }
