package bolt_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/bolt"
	"github.com/wfstore/wfstore/conformance"
)

// TestConformance runs the exported suite: each case gets a fresh file in
// its own temp dir, opened WithRelaxedDurability (NoSync) for speed; only
// fsync differs from the default mode. After every case the suite reopens
// the store and runs the index verifier.
func TestConformance(t *testing.T) {
	conformance.Run(t, conformance.Harness{
		Name: "bolt",
		New: func(t testing.TB) string {
			return filepath.Join(t.TempDir(), "store.db")
		},
		Open: func(ctx context.Context, path string) (backend.Backend, error) {
			return bolt.Open(ctx, path, bolt.WithRelaxedDurability())
		},
		Verify: func(ctx context.Context, b backend.Backend) error {
			return b.(*bolt.Backend).Verify(ctx)
		},
	})
}
