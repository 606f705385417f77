package conformance

import (
	"context"
	"testing"

	"github.com/wfstore/wfstore/backend"
)

// Harness is what a backend author writes to run the suite (about 20 lines).
type Harness struct {
	// Name labels the adapter in messages ("sqlite").
	Name string
	// New creates a fresh, empty store for one case and returns a locator
	// for it (a file path, a DSN with a schema, ...) that Open understands.
	// It registers its own cleanup with t.Cleanup.
	New func(t testing.TB) string
	// Open opens a Backend over the store at locator. The suite calls it
	// once per instance (several times at once when MultiInstance), again
	// after Close to test reopening, and in child processes when
	// MultiProcess. The suite closes every Backend it opens.
	Open func(ctx context.Context, locator string) (backend.Backend, error)
	// Verify, when set, checks adapter-internal invariants (for example
	// bolt's index verifier). The suite calls it at the end of every case on
	// a freshly opened Backend after all others are closed.
	Verify func(ctx context.Context, b backend.Backend) error
}
