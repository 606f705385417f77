package bolt

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
)

func TestSmoke(t *testing.T) {
	ctx := context.Background()
	b, err := Open(ctx, filepath.Join(t.TempDir(), "s.db"))
	require.NoError(t, err)
	defer b.Close()
	a := backend.Attempt{Key: backend.AttemptKey{ActivationKey: backend.ActivationKey{RunID: "r", NodeID: "n", ActivationID: "a"}, Attempt: 1}, Identity: "id", Status: backend.AttemptPrepared, PreparedMS: 5}
	require.NoError(t, b.Update(ctx, func(tx backend.Tx) error { return tx.Apply(ctx, backend.Ins(a)) }))
	require.NoError(t, b.View(ctx, func(r backend.ReadTx) error {
		got, err := r.Attempts(ctx, backend.AttemptQuery{RunID: "r", Limit: 10})
		require.NoError(t, err)
		require.Equal(t, []backend.Attempt{a}, got)
		g, err := backend.GetAttemptByIdentity(ctx, r, "id")
		require.NoError(t, err)
		require.Equal(t, a, g)
		return nil
	}))
	require.NoError(t, b.Verify(ctx))
}
