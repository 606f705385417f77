package memstore_test

import (
	"testing"

	"github.com/wfstore/wfstore/conformance"
	"github.com/wfstore/wfstore/internal/memstore"
)

func TestConformance(t *testing.T) {
	conformance.Run(t, conformance.Harness{
		Name: "memstore",
		New: func(t testing.TB) string {
			loc := memstore.NewLocator()
			t.Cleanup(func() { memstore.Drop(loc) })
			return loc
		},
		Open: memstore.Open,
	})
}
