package etcd_test

import (
	"context"
	"testing"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/conformance"
)

// TestConformance runs the exported suite on the test cluster: each case
// gets a fresh key prefix (deleted when it ends); child processes of the
// multi-process cases open the same prefix through the locator.
func TestConformance(t *testing.T) {
	conformance.Run(t, conformance.Harness{
		Name: "etcd",
		New:  func(t testing.TB) string { return locator(newPrefix(t)) },
		Open: func(ctx context.Context, loc string) (backend.Backend, error) {
			return openLocator(ctx, loc)
		},
	})
}
