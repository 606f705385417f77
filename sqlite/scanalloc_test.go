package sqlite

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// nopScanner scans nothing: it leaves every destination as it is.
type nopScanner struct{}

func (nopScanner) Scan(...any) error { return nil }

// Scanning a row allocates its destinations together, not one by one:
// each local a Scan writes through an interface escapes, so a scan with a
// dozen of them made a dozen heap allocations per row, and a batch
// admission scans two activations per admission (discovery and the
// preparation's Load) and an attempt or more.
func TestScanAllocatesItsDestinationsOnce(t *testing.T) {
	for name, scan := range map[string]func(){
		"activation": func() { _, _ = scanActivation(nopScanner{}) },
		"attempt":    func() { _, _ = scanAttempt(nopScanner{}) },
		"run":        func() { _, _ = scanRun(nopScanner{}) },
	} {
		allocs := testing.AllocsPerRun(50, scan)
		require.LessOrEqual(t, allocs, 2.0, "%s: allocations per scanned row", name)
	}
}
