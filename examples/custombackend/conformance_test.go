package custombackend_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/conformance"
	"github.com/wfstore/wfstore/examples/custombackend"
	"github.com/wfstore/wfstore/workflow"
)

// TestConformance runs the suite every adapter runs. The harness creates a
// fresh store per case, names it by a locator, and opens it by locator.
func TestConformance(t *testing.T) {
	var (
		mu     sync.Mutex
		n      int
		stores = map[string]*custombackend.Backend{}
	)
	conformance.Run(t, conformance.Harness{
		Name: "custombackend",
		New: func(t testing.TB) string {
			mu.Lock()
			defer mu.Unlock()
			n++
			loc := fmt.Sprintf("custom-%d", n)
			stores[loc] = custombackend.New()
			t.Cleanup(func() {
				mu.Lock()
				defer mu.Unlock()
				delete(stores, loc)
			})
			return loc
		},
		Open: func(_ context.Context, loc string) (backend.Backend, error) {
			mu.Lock()
			defer mu.Unlock()
			b, ok := stores[loc]
			if !ok {
				return nil, fmt.Errorf("custombackend: no store %q in this process", loc)
			}
			return b.Reopen(), nil
		},
	})
}

func TestTransactionsAreCounted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := custombackend.New()
	s := workflow.New(b)
	_, err := s.CreateRun(ctx, workflow.NewRun{ID: "r"}, time.UnixMilli(1_700_000_000_000))
	require.NoError(t, err)
	_, err = s.GetRun(ctx, "r")
	require.NoError(t, err)
	views, updates := b.Transactions()
	assert.Equal(t, int64(1), updates)
	assert.Equal(t, int64(1), views)
}
