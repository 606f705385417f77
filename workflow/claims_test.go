package workflow_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/memstore"
	"github.com/wfstore/wfstore/workflow"
)

// gateOwner blocks its first Plan call until release is closed, telling
// planning when it is inside it.
type gateOwner struct {
	hookOwner
	planning chan struct{}
	release  chan struct{}
}

func newGateOwner() *gateOwner {
	o := &gateOwner{planning: make(chan struct{}), release: make(chan struct{})}
	o.hook = func() {
		close(o.planning)
		<-o.release
	}
	return o
}

// Concurrent passes of one Store spread over runs: while one pass admits
// run "a", another takes run "b" first, and only comes back to "a"'s
// unclaimed activations when nothing else is left.
func TestConcurrentPassesOfOneStorePreferRunsNoOtherPassHolds(t *testing.T) {
	t.Parallel()
	for _, batch := range []int{0, 10} {
		t.Run(fmt.Sprintf("batch=%d", batch), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := newMemStore(t, batch)
			now := time.UnixMilli(1_700_000_000_000)
			for _, run := range []string{"a", "b"} {
				_, err := s.CreateRun(ctx, workflow.NewRun{ID: run}, now)
				require.NoError(t, err)
				for i := range 4 {
					_, err := s.AddActivation(ctx, workflow.NewActivation{
						Key:   workflow.ActivationKey{RunID: run, NodeID: "n", ActivationID: fmt.Sprint("x", i)},
						Input: json.RawMessage(`{}`),
					}, now)
					require.NoError(t, err)
				}
			}
			first := newGateOwner()
			done := make(chan workflow.DispatchSummary, 1)
			go func() {
				sum, err := s.Dispatch(ctx, first, workflow.DispatchOptions{Limit: 2}, now)
				assert.NoError(t, err)
				done <- sum
			}()
			<-first.planning // the first pass holds a/x0 and a/x1

			free := newGateOwner()
			close(free.release)
			second, err := s.Dispatch(ctx, free, workflow.DispatchOptions{Limit: 4}, now)
			require.NoError(t, err)
			// With nothing else left, a pass takes the held run's rest.
			third, err := s.Dispatch(ctx, free, workflow.DispatchOptions{Limit: 4}, now)
			require.NoError(t, err)
			close(first.release)
			firstSum := <-done

			runsOf := func(sum workflow.DispatchSummary) []string {
				var out []string
				for _, ref := range sum.Admitted {
					out = append(out, ref.Key.RunID+"/"+ref.Key.ActivationID)
				}
				return out
			}
			assert.Equal(t, []string{"a/x0", "a/x1"}, runsOf(firstSum))
			assert.Equal(t, []string{"b/x0", "b/x1", "b/x2", "b/x3"}, runsOf(second),
				"the second pass takes the run nobody holds before the held one")
			assert.Empty(t, second.Raced)
			assert.Equal(t, []string{"a/x2", "a/x3"}, runsOf(third), "what the held run has left is not left idle")
			assert.Empty(t, third.Raced)
		})
	}
}

// seedRuns creates runs with n pending activations each (x0, x1, ...).
// newMemStore returns a Store over a fresh in-memory backend, closed when
// the test ends, admitting in batches of batch (0: one at a time).
func newMemStore(t *testing.T, batch int) *workflow.Store {
	b := memstore.New()
	t.Cleanup(func() { b.Close() })
	return workflow.New(b, workflow.WithBatchSize(batch))
}

func seedRuns(t *testing.T, s *workflow.Store, now time.Time, n int, runs ...string) {
	t.Helper()
	for _, run := range runs {
		_, err := s.CreateRun(context.Background(), workflow.NewRun{ID: run}, now)
		require.NoError(t, err)
		for i := range n {
			_, err := s.AddActivation(context.Background(), workflow.NewActivation{
				Key:   workflow.ActivationKey{RunID: run, NodeID: "n", ActivationID: fmt.Sprint("x", i)},
				Input: json.RawMessage(`{}`),
			}, now)
			require.NoError(t, err)
		}
	}
}

func admittedOf(sum workflow.DispatchSummary) []string {
	var out []string
	for _, ref := range sum.Admitted {
		out = append(out, ref.Key.RunID+"/"+ref.Key.ActivationID)
	}
	return out
}

// A pass that meets a run another pass holds reads on from the next run
// instead of spending its discovery rows (4×Limit) on the held run's
// activations: a held run longer than those rows does not hide the runs
// behind it.
func TestAPassReadsPastALongRunAnotherPassHolds(t *testing.T) {
	t.Parallel()
	for _, batch := range []int{0, 10} {
		t.Run(fmt.Sprintf("batch=%d", batch), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := newMemStore(t, batch)
			now := time.UnixMilli(1_700_000_000_000)
			seedRuns(t, s, now, 12, "a")
			seedRuns(t, s, now, 2, "b")
			first := newGateOwner()
			done := make(chan workflow.DispatchSummary, 1)
			go func() {
				sum, err := s.Dispatch(ctx, first, workflow.DispatchOptions{Limit: 1}, now)
				assert.NoError(t, err)
				done <- sum
			}()
			<-first.planning // the first pass holds a/x0

			free := newGateOwner()
			close(free.release)
			second, err := s.Dispatch(ctx, free, workflow.DispatchOptions{Limit: 2}, now)
			require.NoError(t, err)
			close(first.release)
			assert.Equal(t, []string{"a/x0"}, admittedOf(<-done))
			assert.Equal(t, []string{"b/x0", "b/x1"}, admittedOf(second),
				"the second pass reads past the held run to the one nobody holds")
		})
	}
}

// On a backend that shares claims, a pass over all runs claims the runs
// it admits in as well as the attempts: a pass of another Store passes
// over a run the first one is admitting, even the activations of it that
// nobody claimed, and takes them only when nothing else is left.
func TestPassesOfTwoStoresPreferRunsTheOtherDoesNotHold(t *testing.T) {
	t.Parallel()
	for _, batch := range []int{0, 10} {
		t.Run(fmt.Sprintf("batch=%d", batch), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			b := memstore.New()
			t.Cleanup(func() { b.Close() })
			sa := workflow.New(b, workflow.WithBatchSize(batch))
			sb := workflow.New(b, workflow.WithBatchSize(batch))
			now := time.UnixMilli(1_700_000_000_000)
			seedRuns(t, sa, now, 2, "a", "b")
			first := newGateOwner()
			done := make(chan workflow.DispatchSummary, 1)
			go func() {
				sum, err := sa.Dispatch(ctx, first, workflow.DispatchOptions{Limit: 1}, now)
				assert.NoError(t, err)
				done <- sum
			}()
			<-first.planning // Store A's pass holds a/x0, and run a

			free := newGateOwner()
			close(free.release)
			second, err := sb.Dispatch(ctx, free, workflow.DispatchOptions{Limit: 2}, now)
			require.NoError(t, err)
			assert.Equal(t, []string{"b/x0", "b/x1"}, admittedOf(second),
				"Store B takes the run nobody holds, not a/x1 of the run Store A is admitting")
			assert.Empty(t, second.Raced)
			// With nothing else left, the activation nobody claimed in the
			// held run comes before the one Store A claimed.
			third, err := sb.Dispatch(ctx, free, workflow.DispatchOptions{Limit: 1}, now)
			require.NoError(t, err)
			assert.Equal(t, []string{"a/x1"}, admittedOf(third), "what the held run has left is not left idle")
			close(first.release)
			assert.Equal(t, []string{"a/x0"}, admittedOf(<-done))
		})
	}
}

// noClaims hides the backend's Claimer: a store whose Stores meet only at
// the prepare transaction (SQLite, bbolt).
type noClaims struct{ backend.Backend }

// hookOwner runs hook once, inside its first Plan call.
type hookOwner struct {
	once sync.Once
	hook func()
}

func (o *hookOwner) Plan(_ context.Context, a workflow.Activation) (*workflow.Plan, error) {
	o.once.Do(func() {
		if o.hook != nil {
			o.hook()
		}
	})
	return &workflow.Plan{SideEffect: workflow.ReadOnly, Intent: json.RawMessage(`{}`)}, nil
}

func (o *hookOwner) Dispatch(context.Context, workflow.PreparedDispatch) (json.RawMessage, error) {
	return json.RawMessage(`{}`), nil
}

// Without shared claims, a pass over all runs that loses an activation to
// another Store at the prepare transaction learns that the other Store is
// admitting that run: one at a time, it leaves the rest of the run to a
// later pass instead of racing for each activation; in either mode its
// Store's next passes prefer other runs, and come back to the run only
// when nothing else is left.
func TestAStoreThatLosesARunAtPreparePrefersOtherRuns(t *testing.T) {
	t.Parallel()
	for _, batch := range []int{0, 10} {
		t.Run(fmt.Sprintf("batch=%d", batch), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			mem := memstore.New()
			t.Cleanup(func() { mem.Close() })
			b := noClaims{mem}
			sa := workflow.New(b, workflow.WithBatchSize(batch))
			sb := workflow.New(b, workflow.WithBatchSize(batch))
			now := time.UnixMilli(1_700_000_000_000)
			seedRuns(t, sa, now, 5, "a")
			seedRuns(t, sa, now, 2, "b")
			var first workflow.DispatchSummary
			owner := &hookOwner{hook: func() {
				// Store B planned a/x0; Store A admits it first.
				var err error
				first, err = sa.Dispatch(ctx, &hookOwner{}, workflow.DispatchOptions{Limit: 1}, now)
				assert.NoError(t, err)
			}}
			lost, err := sb.Dispatch(ctx, owner, workflow.DispatchOptions{Limit: 3}, now)
			require.NoError(t, err)
			assert.Equal(t, []string{"a/x0"}, admittedOf(first))
			assert.Equal(t, []workflow.ActivationKey{{RunID: "a", NodeID: "n", ActivationID: "x0"}}, lost.Raced)
			if batch == 0 {
				assert.Empty(t, lost.Admitted, "one at a time, the pass leaves the rest of the run it lost")
			} else {
				assert.Equal(t, []string{"a/x1", "a/x2"}, admittedOf(lost), "a batch was prepared in one transaction")
			}
			next, err := sb.Dispatch(ctx, owner, workflow.DispatchOptions{Limit: 2}, now)
			require.NoError(t, err)
			assert.Equal(t, []string{"b/x0", "b/x1"}, admittedOf(next), "the next pass prefers the run nobody is admitting")
			rest, err := sb.Dispatch(ctx, owner, workflow.DispatchOptions{Limit: 5}, now)
			require.NoError(t, err)
			want := []string{"a/x1", "a/x2", "a/x3", "a/x4"}
			if batch != 0 {
				want = want[2:]
			}
			assert.Equal(t, want, admittedOf(rest), "what the run has left is not left idle")
		})
	}
}

// Without shared claims, Stores that lost a run together would all move
// on to the same next run and lose it together again: after a lost run, a
// Store's next pass over all runs passes over a random one to three of
// the free runs it meets first. Over many trials the next pass takes
// different runs, always one of the first four free ones.
func TestAStoreThatLostARunSpreadsOverTheNextRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.UnixMilli(1_700_000_000_000)
	took := map[string]int{}
	for range 40 {
		mem := memstore.New()
		b := noClaims{mem}
		sa, sb := workflow.New(b), workflow.New(b)
		seedRuns(t, sa, now, 2, "a")
		seedRuns(t, sa, now, 1, "b", "c", "d", "e", "f", "g")
		owner := &hookOwner{hook: func() {
			_, err := sa.Dispatch(ctx, &hookOwner{}, workflow.DispatchOptions{Limit: 1}, now)
			assert.NoError(t, err)
		}}
		lost, err := sb.Dispatch(ctx, owner, workflow.DispatchOptions{Limit: 2}, now)
		require.NoError(t, err)
		require.Len(t, lost.Raced, 1)
		next, err := sb.Dispatch(ctx, owner, workflow.DispatchOptions{Limit: 1}, now)
		require.NoError(t, err)
		require.Len(t, next.Admitted, 1)
		took[next.Admitted[0].Key.RunID]++
		mem.Close()
	}
	for run := range took {
		assert.Contains(t, []string{"b", "c", "d", "e"}, run)
	}
	assert.Greater(t, len(took), 1, "every Store that lost run a took the same next run: %v", took)
}
