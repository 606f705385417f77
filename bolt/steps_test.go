package bolt

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
)

// With 100k records in the store, a bounded scan visits only its limit
// (plus one where a range bound must be seen), wherever its cursor starts.
// The cursor positions are counted by the scan's step hook.
func TestBoundedScansTouchOnlyTheirLimit(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("100k records")
	}
	b := openTemp(t)
	ctx := context.Background()
	const n = 100_000
	for batch := 0; batch < n; batch += 10_000 {
		var c backend.Changes
		ins := &c.Insert
		for i := batch; i < batch+10_000; i++ {
			run := fmt.Sprintf("run-%02d", i%10)
			node := fmt.Sprintf("node-%06d", i)
			ins.Activations = append(ins.Activations, activation(actKey(run, node, "a"), i%2 == 0))
			ins.Attempts = append(ins.Attempts, attempt(attKey(run, node, "a", 1), fmt.Sprintf("id-%06d", i), backend.AttemptPrepared, int64(i+1)))
			ins.Schedules = append(ins.Schedules, schedule(actKey(run, node, "a"), int64(i)))
			ins.Events = append(ins.Events, backend.Event{RunID: "run-00", Seq: int64(i + 1), Type: "t"})
		}
		apply(t, b, c)
	}

	var steps atomic.Int64
	b.steps = &steps
	measure := func(name string, want int, budget int64, scan func(r backend.ReadTx) (int, error)) {
		t.Helper()
		steps.Store(0)
		require.NoError(t, b.View(ctx, func(r backend.ReadTx) error {
			got, err := scan(r)
			require.NoError(t, err)
			require.Equal(t, want, got, name)
			return nil
		}))
		t.Logf("%s: %d rows, %d cursor steps", name, want, steps.Load())
		require.LessOrEqual(t, steps.Load(), budget, name)
	}
	const limit = 10
	measure("admissible, global", limit, limit+1, func(r backend.ReadTx) (int, error) {
		got, err := r.AdmissibleActivations(ctx, backend.AdmissibleQuery{Limit: limit})
		return len(got), err
	})
	measure("admissible, one run, after a cursor mid-run", limit, limit+1, func(r backend.ReadTx) (int, error) {
		got, err := r.AdmissibleActivations(ctx, backend.AdmissibleQuery{RunID: "run-04", After: actKey("run-04", "node-050004", "a"), Limit: limit})
		return len(got), err
	})
	measure("admissible, after run", limit, limit+1, func(r backend.ReadTx) (int, error) {
		got, err := r.AdmissibleActivations(ctx, backend.AdmissibleQuery{After: actKey("run-06", "", ""), AfterRun: true, Limit: limit})
		return len(got), err
	})
	measure("attempts by run and status, after a cursor", limit, limit+1, func(r backend.ReadTx) (int, error) {
		got, err := r.Attempts(ctx, backend.AttemptQuery{RunID: "run-03", Status: backend.AttemptPrepared,
			After: backend.AttemptCursor{PreparedMS: 60_004, Identity: "id-060003"}, Limit: limit})
		return len(got), err
	})
	measure("attempts, all", limit, limit+1, func(r backend.ReadTx) (int, error) {
		got, err := r.Attempts(ctx, backend.AttemptQuery{After: backend.AttemptCursor{PreparedMS: 99_000}, Limit: limit})
		return len(got), err
	})
	measure("attempts, all, descending from the end", limit, limit+1, func(r backend.ReadTx) (int, error) {
		got, err := r.Attempts(ctx, backend.AttemptQuery{Descending: true, Limit: limit})
		return len(got), err
	})
	measure("attempts by run, descending, before a cursor", limit, limit+1, func(r backend.ReadTx) (int, error) {
		got, err := r.Attempts(ctx, backend.AttemptQuery{RunID: "run-05", Descending: true,
			After: backend.AttemptCursor{PreparedMS: 50_006, Identity: "id-050005"}, Limit: limit})
		return len(got), err
	})
	measure("count attempts to 1000", 1000, 1001, func(r backend.ReadTx) (int, error) {
		return r.CountAttempts(ctx, backend.AttemptCountQuery{RunID: "run-07", Limit: 1000})
	})
	measure("due schedules, bound before limit", 3, 3+1, func(r backend.ReadTx) (int, error) {
		got, err := r.DueSchedules(ctx, backend.ScheduleQuery{RunID: "run-01", DueBy: 21, Limit: limit})
		return len(got), err
	})
	measure("events after a sequence", limit, limit+1, func(r backend.ReadTx) (int, error) {
		got, err := r.Events(ctx, backend.EventQuery{RunID: "run-00", After: 77_777, Limit: limit})
		return len(got), err
	})
	measure("activations of a run, after a cursor", limit, limit+1, func(r backend.ReadTx) (int, error) {
		got, err := r.Activations(ctx, backend.ActivationQuery{RunID: "run-09", After: backend.NodeRef{NodeID: "node-090009", ActivationID: "a"}, Limit: limit})
		return len(got), err
	})
	b.steps = nil
	require.NoError(t, b.Verify(ctx))
}
