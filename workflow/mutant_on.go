//go:build wfmutant

package workflow

import "os"

var activeMutant = os.Getenv("WFSTORE_MUTANT")

// mutated reports whether the seeded mutant name is active (see mutant.go).
func mutated(name string) bool { return name == activeMutant }
