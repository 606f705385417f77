package bolt

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
)

// A transaction locates a run's bucket once and reads each bucket through
// one cursor: a point read of a record it has read before allocates
// nothing, in a write transaction (bbolt would start a cursor and grow
// its stack) and in a read one (where bbolt also opens the run's bucket
// afresh each time).
func TestGetReusesBucketsAndCursors(t *testing.T) {
	ctx := context.Background()
	b := openTemp(t)
	k := actKey("r", "n", "a")
	apply(t, b, backend.Changes{Insert: backend.Inserts{
		Runs:        []backend.Run{{ID: "r", RootID: "r", Depth: 1, Status: backend.RunRunning}},
		Activations: []backend.Activation{activation(k, true)},
	}})
	sk := layout.Activation.Stored(layout.Activation.PK(activation(k, true)))
	missing := layout.Activation.Stored(layout.Activation.PK(activation(actKey("r", "n", "b"), true)))
	reads := func(t *testing.T, r *readTx) float64 {
		return testing.AllocsPerRun(100, func() {
			v, err := r.Get(ctx, &layout.Activation.Space, sk)
			if err != nil || v == nil {
				t.Fatalf("get: %v, %v", v, err)
			}
			if v, err := r.Get(ctx, &layout.Activation.Space, missing); err != nil || v != nil {
				t.Fatalf("get missing: %v, %v", v, err)
			}
		})
	}
	// Before, measured 2 in the write transaction (bbolt grows a new
	// cursor's stack once per tree level: more in a bigger store) and 14 in
	// the read one.
	require.NoError(t, b.Update(ctx, func(w backend.Tx) error {
		require.Zero(t, reads(t, &w.(*tx).readTx), "allocations per two reads, write transaction")
		return nil
	}))
	require.NoError(t, b.View(ctx, func(r backend.ReadTx) error {
		require.Zero(t, reads(t, r.(*readTx)), "allocations per two reads, read transaction")
		return nil
	}))
}
