package postgres_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/postgres"
)

// A swap is one round trip, carrying BEGIN and the writes queued before
// it (an Expect here, which it then sees); the writes after it ride with
// COMMIT: an expect-swap-write Update is two round trips.
func TestSwapRoundTrips(t *testing.T) {
	t.Parallel()
	b, _, _ := openFresh(t)
	run, link, act, group, att, lease, sched, ev := fullRecords("r")
	require.NoError(t, b.Update(ctxT(t), func(tx backend.Tx) error {
		return tx.Apply(context.Background(), insertAll(run, link, act, group, att, lease, sched, ev))
	}))
	flipped := att
	flipped.HandoffToken = "swapped"
	before := b.StatsForTest().RoundTrips
	var got []bool
	require.NoError(t, b.Update(ctxT(t), func(tx backend.Tx) error {
		if err := tx.Apply(context.Background(), backend.Changes{Expect: backend.Expected{Runs: []backend.Run{run}}}); err != nil {
			return err
		}
		var err error
		got, err = tx.(backend.Swapper).SwapAttempts(context.Background(), []backend.AttemptSwap{{Old: att, New: flipped}})
		if err != nil {
			return err
		}
		require.Equal(t, 1, postgres.RoundTrips(tx), "BEGIN, the queued Expect and the swap in one batch")
		r2 := run
		r2.LastEventSeq = 300
		return tx.Apply(context.Background(), replaceRuns(r2))
	}))
	require.Equal(t, []bool{true}, got)
	require.Equal(t, int64(2), b.StatsForTest().RoundTrips-before, "expect-swap-write: the swap's round trip, then the write with COMMIT")
}
