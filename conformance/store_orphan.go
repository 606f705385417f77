package conformance

import (
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/workflow"
)

// orphanCases: an orphaned cancellation settles a signalled attempt
// whose dispatcher stopped before any receipt.
func orphanCases() []testCase {
	return []testCase{
		{Name: "cancel_orphaned_signalled_attempt_without_receipt_is_settled", Run: caseCancelOrphanSignalled},
	}
}

// A cancelling attempt without a receipt (signalled while its owner call
// ran, its dispatcher gone since) is no admission in flight any more: an
// orphaned-cancellation settlement makes the mutating one
// repair_required and cancels the read-only one, finalising its run.
func caseCancelOrphanSignalled(e *env) {
	s := store(e)
	for _, r := range []string{"rm", "rr"} {
		mkRun(e, s, r, workflow.Limits{}, nil)
		mkAct(e, s, key(r, "n", "a"))
	}
	pm := prep(e, s, key("rm", "n", "a"), workflow.Mutating, ms(10))
	pr := prep(e, s, key("rr", "n", "a"), workflow.ReadOnly, ms(10))
	for _, p := range []*workflow.PreparedDispatch{pm, pr} {
		require.NoError(e.T, s.Engine().Handoff(e.Ctx, p.Key(), nil, ms(11)))
		_, err := s.RequestCancellation(e.Ctx, p.Key().RunID, nil, ms(20))
		require.NoError(e.T, err)
		require.NoError(e.T, s.Engine().MarkCancellationSignalled(e.Ctx, p.Identity, ms(21)))
	}
	st, err := s.Engine().SettleOrphanedCancellation(e.Ctx, pm.Identity, ms(30))
	require.NoError(e.T, err)
	assert.Equal(e.T, workflow.RunRepairRequired, st, "signalled mutation without a receipt")
	assert.Equal(e.T, workflow.AttemptRepairRequired, getAttempt(e, s, key("rm", "n", "a"), 1).Status)
	st, err = s.Engine().SettleOrphanedCancellation(e.Ctx, pr.Identity, ms(30))
	require.NoError(e.T, err)
	assert.Equal(e.T, workflow.RunCancelled, st, "signalled read-only attempt without a receipt")
	assert.Equal(e.T, workflow.AttemptCancelled, getAttempt(e, s, key("rr", "n", "a"), 1).Status)
	assert.Equal(e.T, []string{"attempt_cancelled", "run_cancelled"}, lastTypes(e, s, "rr", 2))
}
