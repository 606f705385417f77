package workflow_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/memstore"
	"github.com/wfstore/wfstore/workflow"
)

// slowPlanOwner accepts everything; the first Plan of each batch waits a
// little, so that passes of different Stores discover the same backlog
// state before either prepares, as on a busy machine.
type slowPlanOwner struct{ delay time.Duration }

func (o slowPlanOwner) Plan(_ context.Context, a workflow.Activation) (*workflow.Plan, error) {
	if a.Key.ActivationID == "x0" || a.Key.ActivationID == "x5" {
		time.Sleep(o.delay)
	}
	return &workflow.Plan{SideEffect: workflow.ReadOnly, Intent: json.RawMessage(`{}`)}, nil
}

func (slowPlanOwner) Dispatch(context.Context, workflow.PreparedDispatch) (json.RawMessage, error) {
	return json.RawMessage(`{}`), nil
}

// backlogRace drains a backlog of runs×per activations with dispatchers
// goroutines: each through a Store of its own (separate, as processes
// are) or all through one Store; each pass takes up to limit activations,
// in batches of batch when batch > 0.
type backlogRace struct {
	dispatchers, runs, per, limit, batch int
	separate                             bool
}

// drain seeds the backlog on b, drains it, and returns the activations the
// passes found raced at preparation (each one a planned activation another
// dispatcher had prepared first) and those admitted.
func (r backlogRace) drain(t *testing.T, b backend.Backend) (raced, admitted int) {
	t.Helper()
	ctx := context.Background()
	now := time.UnixMilli(1_700_000_000_000)
	seed := workflow.New(b)
	for i := range r.runs {
		run := fmt.Sprintf("r%03d", i)
		_, err := seed.CreateRun(ctx, workflow.NewRun{ID: run, Limits: workflow.RunLimits{ConcurrencyCap: int64(r.per)}}, now)
		require.NoError(t, err)
		for j := range r.per {
			_, err := seed.AddActivation(ctx, workflow.NewActivation{
				Key:   workflow.ActivationKey{RunID: run, NodeID: "n", ActivationID: fmt.Sprint("x", j)},
				Input: json.RawMessage(`{}`),
			}, now)
			require.NoError(t, err)
		}
	}
	// A drain that stops making progress ends here, not at the test
	// binary's timeout; under the race detector on a loaded 2-core machine
	// a full drain has taken 79 s.
	deadline := time.Now().Add(5 * time.Minute)
	if d, ok := t.Deadline(); ok && d.Add(-30*time.Second).Before(deadline) {
		deadline = d.Add(-30 * time.Second)
	}
	var nRaced, nAdmitted atomic.Int64
	var wg sync.WaitGroup
	shared := workflow.New(b, workflow.WithBatchSize(r.batch))
	for range r.dispatchers {
		s := shared
		if r.separate {
			s = workflow.New(b, workflow.WithBatchSize(r.batch))
		}
		wg.Go(func() {
			idle := 0
			for int(nAdmitted.Load()) < r.runs*r.per && idle < 1000 && time.Now().Before(deadline) {
				sum, err := s.Dispatch(ctx, slowPlanOwner{delay: time.Millisecond}, workflow.DispatchOptions{Limit: r.limit}, now)
				if err != nil {
					t.Error(err)
					return
				}
				nRaced.Add(int64(len(sum.Raced)))
				nAdmitted.Add(int64(len(sum.Admitted)))
				if len(sum.Admitted)+len(sum.Raced) == 0 {
					idle++
					time.Sleep(100 * time.Microsecond)
				}
			}
		})
	}
	wg.Wait()
	return int(nRaced.Load()), int(nAdmitted.Load())
}

// Separate Stores without shared claims draining one backlog in batch mode
// spread over it: a pass that loses a run at preparation moves on to a
// random run further along, so that the Stores do not keep meeting at the
// front of the backlog. Far fewer planned activations are raced than are
// admitted.
func TestSeparateStoresInBatchModeSpreadOverABacklog(t *testing.T) {
	t.Parallel()
	mem := memstore.New()
	t.Cleanup(func() { mem.Close() })
	const stores, runs, per = 6, 120, 10
	raced, admitted := backlogRace{dispatchers: stores, runs: runs, per: per, limit: per, batch: per, separate: true}.drain(t, noClaims{mem})
	require.Equal(t, runs*per, admitted)
	// Each Store drains the runs in front of it until it meets another
	// Store's; Stores whose losers moved on only a few runs lost about one
	// batch for every one admitted.
	assert.Less(t, raced, admitted/2, "activations raced at preparation, of %d admitted", admitted)
}

// stealOwner plans like hookOwner; on its first Plan, another Store
// admits the whole run of the activation being planned.
type stealOwner struct {
	hookOwner
	steal func(run string)
}

func (o *stealOwner) Plan(ctx context.Context, a workflow.Activation) (*workflow.Plan, error) {
	o.once.Do(func() { o.steal(a.Key.RunID) })
	return o.hookOwner.Plan(ctx, a)
}

// loseRun makes sb's next pass lose the run it plans to sa, which admits
// the whole run first, and returns that run.
func loseRun(t *testing.T, sa, sb *workflow.Store, now time.Time) string {
	t.Helper()
	ctx := context.Background()
	var stolen string
	owner := &stealOwner{steal: func(run string) {
		stolen = run
		_, err := sa.Dispatch(ctx, &hookOwner{}, workflow.DispatchOptions{RunID: run, Limit: 10}, now)
		assert.NoError(t, err)
	}}
	lost, err := sb.Dispatch(ctx, owner, workflow.DispatchOptions{Limit: 1}, now)
	require.NoError(t, err)
	require.Len(t, lost.Raced, 1)
	return stolen
}

// A Store that lost runs again and again passes over many free runs (up to
// 63) before it takes work; with fewer free runs than that it counts on
// around them, and still takes a whole run, never a few activations of
// each of the runs it passed over. The runs it passed over are not lost:
// the next passes take them.
func TestAStoreThatKeepsLosingRunsStillTakesWholeRunsOfAShortBacklog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.UnixMilli(1_700_000_000_000)
	took := map[string]int{}
	for range 30 {
		mem := memstore.New()
		b := noClaims{mem}
		sa, sb := workflow.New(b), workflow.New(b)
		seedRuns(t, sa, now, 1, "a")
		seedRuns(t, sa, now, 3, "b", "c", "d", "e")
		left := map[string]bool{"b": true, "c": true, "d": true, "e": true}
		require.Equal(t, "a", loseRun(t, sa, sb, now))
		delete(left, loseRun(t, sa, sb, now)) // sb passed over at least one run
		for pass := range len(left) {
			sum, err := sb.Dispatch(ctx, &hookOwner{}, workflow.DispatchOptions{Limit: 3}, now)
			require.NoError(t, err)
			require.Len(t, sum.Admitted, 3, "pass %d takes a whole run", pass)
			run := sum.Admitted[0].Key.RunID
			for _, ref := range sum.Admitted {
				require.Equal(t, run, ref.Key.RunID, "pass %d: %v", pass, admittedOf(sum))
			}
			require.True(t, left[run], "pass %d took run %s again", pass, run)
			delete(left, run)
			if pass == 0 {
				took[run]++
			}
		}
		sum, err := sb.Dispatch(ctx, &hookOwner{}, workflow.DispatchOptions{Limit: 3}, now)
		require.NoError(t, err)
		require.Empty(t, sum.Admitted, "nothing is left")
		mem.Close()
	}
	assert.Greater(t, len(took), 1, "the first pass after the losses always took the same run: %v", took)
}

// Passes of one Store are holders of shared claims of their own, so a
// pass meets the run claims of its siblings all the time. That is no lost
// race: siblings already read past each other's runs, and a pass that
// moved far along the backlog on every sibling's run claim scattered the
// Store's passes into each other's runs (on a backend with shared claims,
// one Store's 8 racing dispatchers lost most of what they tried).
func TestPassesOfOneStoreDoNotSpreadOnEachOthersRunClaims(t *testing.T) {
	t.Parallel()
	mem := memstore.New()
	defer mem.Close()
	raced, admitted := backlogRace{dispatchers: 8, runs: 20, per: 50, limit: 10}.drain(t, slowClaims{mem, mem})
	require.Equal(t, 1000, admitted)
	assert.Less(t, raced, admitted/3, "8 passes of one Store lost %d activations at prepare to each other while admitting %d", raced, admitted)
}

// slowClaims is a backend whose shared claims take a round trip, as they
// do on a server.
type slowClaims struct {
	backend.Backend
	cl backend.Claimer
}

func (s slowClaims) Claim(ctx context.Context, holder string, keys []string, ttl time.Duration) ([]bool, error) {
	time.Sleep(300 * time.Microsecond)
	return s.cl.Claim(ctx, holder, keys, ttl)
}

func (s slowClaims) Release(ctx context.Context, holder string, keys []string) error {
	time.Sleep(300 * time.Microsecond)
	return s.cl.Release(ctx, holder, keys)
}
