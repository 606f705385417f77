package conformance

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/event"
	"github.com/wfstore/wfstore/workflow"
)

// A prune stopped part-way (a crash, a kill, a lost connection) leaves a
// store Verify accepts, and pruning again finishes the run with a
// run_pruned event that counts everything the run held when the prune
// began, not only what the last invocation deleted.
func pruneResumeCases() []testCase {
	return []testCase{
		{Name: "prune_interrupted_leaves_a_verified_store_and_a_rerun_counts_everything", Run: casePruneInterrupted},
	}
}

// errCrash is the failure commitLimit injects.
var errCrash = errors.New("injected crash")

// commitLimit lets n Updates commit, then fails every later one before it
// runs: a process that stopped after its n-th commit.
type commitLimit struct {
	backend.Backend
	mu sync.Mutex
	n  int
}

func (c *commitLimit) Update(ctx context.Context, fn func(backend.Tx) error) error {
	c.mu.Lock()
	if c.n == 0 {
		c.mu.Unlock()
		return errCrash
	}
	c.n--
	c.mu.Unlock()
	return c.Backend.Update(ctx, fn)
}

func casePruneInterrupted(e *env) {
	s := store(e)
	o := newOwner()
	const batch = 2
	for cut := 1; cut <= 8; cut++ {
		id := fmt.Sprintf("cut%d", cut)
		finishedRun(e, s, id, o, int64(100*cut))
		want := runRecords(e, id)
		require.Greater(e.T, want.Total(), cut*batch, "the prune needs more than %d transactions", cut)

		_, err := e.newStore(&commitLimit{Backend: e.B, n: cut}).Prune(e.Ctx, workflow.PruneOptions{Runs: []string{id}, BatchSize: batch}, ms(5000))
		requireIs(e.T, err, errCrash, "the prune stopped after %d commits", cut)
		requireVerified(e, s, fmt.Sprintf("a prune stopped after %d commits", cut))
		if cut%2 == 0 {
			// A second interrupted invocation before the one that finishes.
			_, err = e.newStore(&commitLimit{Backend: e.B, n: 1}).Prune(e.Ctx, workflow.PruneOptions{Runs: []string{id}, BatchSize: batch}, ms(5001))
			requireIs(e.T, err, errCrash, "the second prune stopped")
			requireVerified(e, s, "a second interrupted prune")
		}

		rep, err := s.Prune(e.Ctx, workflow.PruneOptions{Runs: []string{id}, BatchSize: batch}, ms(5002))
		require.NoError(e.T, err)
		require.Len(e.T, rep.Runs, 1)
		assert.False(e.T, rep.Runs[0].AlreadyPruned)
		assert.Equal(e.T, workflow.PruneCounts{}, runRecords(e, id), "the rerun finished the prune")
		assert.Equal(e.T, []string{string(event.RunPruned)}, eventTypes(e, s, id), "the run_pruned event is the only one left")
		assert.JSONEq(e.T, fmt.Sprintf(`{"run_id":%q,"deleted":{"events":%d,"attempts":%d,"leases":%d,"schedules":%d}}`,
			id, want.Events, want.Attempts, want.Leases, want.Schedules), payloadsOf(e, s, id, string(event.RunPruned))[0],
			"the audit event counts everything the run held, across every invocation")
		requireVerified(e, s, "the rerun")
	}
}
