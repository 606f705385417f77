package sqlite

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/wfstore/wfstore/backend"
)

func TestSmoke(t *testing.T) {
	t.Parallel()
	b := newStore(t)
	r := backend.Run{ID: "r1", RootID: "r1", Depth: 1, Status: backend.RunRunning, CreatedMS: 5}
	update(t, b, backend.Ins(r))
	view(t, b, func(rt backend.ReadTx) {
		got, err := backend.GetRun(context.Background(), rt, "r1")
		require.NoError(t, err)
		require.Equal(t, r, got)
	})
	t.Log(b.Info())
}
