//go:build wfmutant

package sqlite

import "os"

var activeAdapterMutant = os.Getenv("WFSTORE_ADAPTER_MUTANT")

// adapterMutated reports whether the seeded adapter mutant name is active
// (see mutant.go).
func adapterMutated(name string) bool { return name == activeAdapterMutant }
