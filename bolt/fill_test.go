package bolt

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"

	"github.com/wfstore/wfstore/internal/benchdata"
	"github.com/wfstore/wfstore/workflow"
)

// Batch admissions insert attempt identities, which are hashes, into
// bucketIndex in random order. Its leaves must stay well used: split 90/10
// (fillPercent), they were left 45% used, and every later commit dirtied
// more of them.
func TestIndexBucketLeavesStayUsedUnderRandomIdentities(t *testing.T) {
	ctx := context.Background()
	n := 3000
	b, err := Open(ctx, filepath.Join(t.TempDir(), "fill.bolt"), WithRelaxedDurability())
	require.NoError(t, err)
	defer b.Close()
	s := workflow.New(b)
	_, err = benchdata.SeedRuns(ctx, s, b, "fill", n, benchdata.PerRun, nil, time.Now())
	require.NoError(t, err)
	require.NoError(t, benchdata.AdmitBatches(ctx, s, n, 100))
	require.NoError(t, b.db.View(func(tx *bbolt.Tx) error {
		st := tx.Bucket(bucketIndex).Stats()
		used := float64(st.LeafInuse) / float64(st.LeafPageN*b.db.Info().PageSize)
		// Measured: 0.68 split 50/50, 0.45 split 90/10.
		require.Greater(t, used, 0.6, "share of bucketIndex's leaf bytes in use (%d leaves)", st.LeafPageN)
		return nil
	}))
}
