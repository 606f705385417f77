package conformance

import (
	"encoding/json"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/workflow"
)

// workCountCases are the cases of the bounded work counts.
func workCountCases() []testCase {
	return []testCase{
		{Name: "work_counts_count_pending_admitted_due_retries_and_runs_by_status_and_say_at_least_past_their_bound", Run: caseWorkCounts},
	}
}

// caseWorkCounts: WorkCounts counts the admissible activations, the
// admitted attempts and the oldest one's age, the retries due at now and
// the runs by status; a bound below a count reports the bound with Capped
// set, a bound at a count reports it exactly; bad arguments are refused;
// nothing is written.
func caseWorkCounts(e *env) {
	s := store(e)
	retryable(e, s, "a", 100) // failed, retry due at 120
	retryable(e, s, "b", 300) // failed, retry due at 320
	mkRun(e, s, "c", workflow.Limits{}, nil)
	mkAct(e, s, key("c", "n", "x"))
	mkAct(e, s, key("c", "n", "y"))
	mkAct(e, s, key("c", "n", "z"))
	pd := prep(e, s, key("c", "n", "z"), workflow.ReadOnly, ms(30))
	require.NoError(e.T, s.Engine().PersistReceipt(e.Ctx, workflow.OwnerReceipt{Key: pd.Key(), Receipt: json.RawMessage(`{"ok":1}`), Authority: nil}, ms(40)))
	mkRun(e, s, "d", workflow.Limits{}, nil)
	require.NoError(e.T, s.PauseRun(e.Ctx, "d", nil, ms(50)))
	before := digest(e, "a", "b", "c", "d")

	runs := func(running, paused, failed workflow.WorkCount) map[workflow.RunStatus]workflow.WorkCount {
		return map[workflow.RunStatus]workflow.WorkCount{
			workflow.RunRunning: running, workflow.RunPaused: paused, workflow.RunFailed: failed,
			workflow.RunCompleted: {}, workflow.RunCancelled: {}, workflow.RunRepairRequired: {},
		}
	}
	got, err := s.WorkCounts(e.Ctx, 0, ms(200))
	require.NoError(e.T, err)
	assert.Equal(e.T, workflow.WorkCounts{
		Pending:        workflow.WorkCount{N: 2},
		Admitted:       workflow.WorkCount{N: 1},
		OldestAdmitted: 160 * time.Millisecond,
		RetriesDue:     workflow.WorkCount{N: 1},
		Runs:           runs(workflow.WorkCount{N: 1}, workflow.WorkCount{N: 1}, workflow.WorkCount{N: 2}),
	}, got, "at 200: c/x and c/y admissible, c/z admitted at 40, a's retry due, b's not yet")

	later, err := s.WorkCounts(e.Ctx, 2, ms(400))
	require.NoError(e.T, err)
	assert.Equal(e.T, workflow.WorkCount{N: 2}, later.RetriesDue, "at 400 both retries are due; a bound equal to a count is exact")
	assert.Equal(e.T, workflow.WorkCount{N: 2}, later.Pending)
	assert.Equal(e.T, workflow.WorkCount{N: 2}, later.Runs[workflow.RunFailed])

	capped, err := s.WorkCounts(e.Ctx, 1, ms(400))
	require.NoError(e.T, err)
	assert.Equal(e.T, workflow.WorkCount{N: 1, Capped: true}, capped.Pending, "at least 1 admissible")
	assert.Equal(e.T, workflow.WorkCount{N: 1}, capped.Admitted, "one admitted attempt fits the bound")
	assert.Equal(e.T, workflow.WorkCount{N: 1, Capped: true}, capped.RetriesDue, "at least 1 due")
	assert.Equal(e.T, runs(workflow.WorkCount{N: 1}, workflow.WorkCount{N: 1}, workflow.WorkCount{N: 1, Capped: true}), capped.Runs)

	for _, bound := range []int{-1, workflow.MaxWorkBound + 1} {
		_, err := s.WorkCounts(e.Ctx, bound, ms(400))
		requireIs(e.T, err, workflow.ErrInvalidInput, "bound %d", bound)
	}
	_, err = s.WorkCounts(e.Ctx, 0, time.Time{})
	requireIs(e.T, err, workflow.ErrInvalidInput, "zero now")
	unchanged(e, before, "work counts", "a", "b", "c", "d")
}
