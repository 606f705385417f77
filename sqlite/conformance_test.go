package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/conformance"
	"github.com/wfstore/wfstore/sqlite"
)

// TestConformance runs the exported suite: each case gets a fresh file in
// its own temp dir, opened with relaxed durability for speed (the semantics
// are the same; TestDurableModeCommitsAndReopens covers the default).
func TestConformance(t *testing.T) {
	conformance.Run(t, conformance.Harness{
		Name: "sqlite",
		New: func(t testing.TB) string {
			return filepath.Join(t.TempDir(), "store.db")
		},
		Open: func(ctx context.Context, path string) (backend.Backend, error) {
			return sqlite.Open(ctx, path, sqlite.WithRelaxedDurability())
		},
	})
}
