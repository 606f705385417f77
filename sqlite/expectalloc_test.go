package sqlite

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/wfstore/wfstore/backend"
)

// An Expect of records the transaction has images of (it just wrote them)
// compares them in memory: it allocates nothing per record, so a batch
// step expecting a hundred known activations and attempts pays no heap
// allocation for each.
func TestExpectOfImagedRecordsAllocatesNothingPerRecord(t *testing.T) {
	b := newStore(t)
	ctx := context.Background()
	const n = 100
	acts := make([]backend.Activation, n)
	atts := make([]backend.Attempt, n)
	for i := range acts {
		k := akey("r", "n", fmt.Sprint("a", i))
		acts[i] = activation(k, true)
		atts[i] = attempt(k, 1, fmt.Sprint("id-", i), backend.AttemptPrepared, int64(i+1))
	}
	update(t, b, insertRuns(backend.Run{ID: "r", RootID: "r", Status: backend.RunRunning}))
	require.NoError(t, b.Update(ctx, func(tx backend.Tx) error {
		require.NoError(t, tx.Apply(ctx, backend.Changes{Insert: backend.Inserts{Activations: acts, Attempts: atts}}))
		wt := tx.(*writeTx)
		c := backend.Changes{Expect: backend.Expected{Activations: acts, Attempts: atts}}
		var err error
		allocs := testing.AllocsPerRun(20, func() {
			wt.touched = wt.touched[:0]
			err = tx.Apply(ctx, c)
		})
		require.NoError(t, err)
		require.Less(t, allocs, float64(n)/4, "allocations per Expect of %d imaged records", 2*n)
		return nil
	}))
}
