package postgres_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/internal/testkit/pgtest"
)

// A connection killed mid-transaction (pg_terminate_backend on the very pid
// holding it, between two statements of fn) gives the caller an error or a
// clean re-run, and durable state is the whole transaction or none of it.
func TestConnectionLossMidTransaction(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		// killAfter: the round trip after which the hook kills the backend.
		// fn makes 2 before the commit batch: BEGIN+A+Load, B+Load (Apply
		// defers its writes to the next read).
		killAfter int
		// trailing: fn ends with an Apply, deferred to the commit batch;
		// the server's FATAL then answers that write, before COMMIT.
		trailing bool
	}{
		{"between-statements", 1, false},
		{"before-commit", 2, false},
		{"before-commit-batch-with-a-write", 2, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b, _, _ := openFresh(t)
			admin := pgtest.Admin(t)
			apply(t, b, insertRuns("seed"))
			var killed atomic.Uint32
			var holder atomic.Uint32
			b.SetAfterRoundTrip(func(pid uint32, n int) {
				if n == 1 {
					holder.Store(pid)
				}
				if n != c.killAfter || killed.Load() != 0 {
					return
				}
				require.Equal(t, holder.Load(), pid, "the hook names the connection holding the transaction")
				var state string
				var xid *string
				require.NoError(t, admin.QueryRow(context.Background(),
					"SELECT state, backend_xid::text FROM pg_stat_activity WHERE pid = $1", int64(pid)).Scan(&state, &xid))
				require.Equal(t, "idle in transaction", state, "pid %d holds our open transaction", pid)
				require.NotNil(t, xid, "the transaction has written")
				var ok bool
				require.NoError(t, admin.QueryRow(context.Background(), "SELECT pg_terminate_backend($1, 10000)", int64(pid)).Scan(&ok))
				require.True(t, ok)
				killed.Store(pid)
			})
			runs := 0
			err := b.Update(ctxT(t), func(tx backend.Tx) error {
				runs++
				if err := tx.Apply(context.Background(), insertRuns("A")); err != nil {
					return err
				}
				if _, err := tx.Load(context.Background(), backend.Lookup{Runs: []string{"seed"}}); err != nil {
					return err
				}
				if err := tx.Apply(context.Background(), insertRuns("B")); err != nil {
					return err
				}
				if _, err := tx.Load(context.Background(), backend.Lookup{Runs: []string{"seed"}}); err != nil || !c.trailing {
					return err
				}
				return tx.Apply(context.Background(), insertRuns("C"))
			})
			require.NotZero(t, killed.Load(), "the hook fired")
			var gone bool
			require.NoError(t, admin.QueryRow(context.Background(),
				"SELECT NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $1)", int64(killed.Load())).Scan(&gone))
			require.True(t, gone, "the terminated backend is gone")
			f := load(t, b, backend.Lookup{Runs: []string{"A", "B", "C"}})
			if err == nil {
				want := 2
				if c.trailing {
					want = 3
				}
				require.Len(t, f.Runs, want, "a clean re-run commits the whole transaction")
				require.Equal(t, 2, runs)
				require.Equal(t, int64(1), b.StatsForTest().ConnLost)
				t.Logf("%s: re-run after connection loss, committed", c.name)
			} else {
				require.Empty(t, f.Runs, "an error leaves none of it: %v", err)
				t.Logf("%s: error (not re-run): %v", c.name, err)
			}
			// The Backend is healthy afterwards.
			apply(t, b, insertRuns("after"))
		})
	}
}
