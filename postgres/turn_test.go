package postgres_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/postgres"
)

// An Update whose fn failed 4 times takes the turn from its fifth run on
// and then commits. An Update its fn waits for (here: another Backend's,
// the writer that keeps winning) waits at the gate for its own gate wait
// (half its busy timeout, at most 2 s), then goes past it and commits: the
// turn holds it back once, by that much, and the turn's run re-runs.
func TestTurnAfterRepeatedFailuresAndItsGateWait(t *testing.T) {
	t.Parallel()
	const busy = 600 * time.Millisecond
	const gateWait = busy / 2
	b1, dsn, schema := openFresh(t)
	b2 := openOn(t, dsn, schema, postgres.WithBusyTimeout(busy))
	apply(t, b1, insertRuns("c"))
	var runs atomic.Int32
	var nested []time.Duration
	require.NoError(t, b1.Update(ctxT(t), func(tx backend.Tx) error {
		n := runs.Add(1)
		r, err := backend.GetRun(context.Background(), tx, "c")
		if err != nil {
			return err
		}
		if n <= 5 { // someone else commits a change to the row we read
			start := time.Now()
			apply(t, b2, replaceRuns(backend.Run{ID: "c", AttemptCount: r.AttemptCount + 100}))
			nested = append(nested, time.Since(start))
		}
		r.AttemptCount++
		return tx.Apply(context.Background(), replaceRuns(r))
	}))
	require.Equal(t, int32(6), runs.Load(), "four failures, a fifth while the turn held the other writer back, then the commit")
	require.Equal(t, int64(501), load(t, b1, backend.Lookup{Runs: []string{"c"}}).Runs["c"].AttemptCount)
	s1, s2 := b1.StatsForTest(), b2.StatsForTest()
	require.Equal(t, int64(2), s1.Turns, "runs 5 and 6 took the turn")
	require.Equal(t, int64(5), s1.Serialization)
	require.Equal(t, int64(1), s2.GateTimeouts, "the other writer waited at the gate once")
	require.GreaterOrEqual(t, nested[4], gateWait, "behind the turn it waited its gate wait")
	for i, d := range nested[:4] {
		require.Less(t, d, gateWait, "write %d: no turn held it back", i+1)
	}
}
