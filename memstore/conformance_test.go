package memstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/conformance"
	"github.com/wfstore/wfstore/memstore"
)

func TestConformance(t *testing.T) {
	// The suite names stores by locator; this test keeps the map from its
	// locators to the stores it made.
	var (
		mu     sync.Mutex
		n      int
		stores = map[string]*memstore.Backend{}
	)
	conformance.Run(t, conformance.Harness{
		Name: "memstore",
		New: func(t testing.TB) string {
			mu.Lock()
			defer mu.Unlock()
			n++
			loc := fmt.Sprintf("mem-%d", n)
			stores[loc] = memstore.New()
			t.Cleanup(func() {
				mu.Lock()
				defer mu.Unlock()
				delete(stores, loc)
			})
			return loc
		},
		Open: func(ctx context.Context, loc string) (backend.Backend, error) {
			mu.Lock()
			defer mu.Unlock()
			b, ok := stores[loc]
			if !ok {
				return nil, fmt.Errorf("memstore test: no store %q in this process", loc)
			}
			return b.Open(), nil
		},
	})
}
