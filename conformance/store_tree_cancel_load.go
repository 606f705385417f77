package conformance

import (
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/workflow"
)

// Tree cancellation under sustained dispatch load: an operator's
// RequestTreeCancellation of each composition root commits while
// dispatchers, each through a Store of its own (over a Backend of its own
// when the adapter can open several, as separate processes have), keep
// admitting the same trees' work and completing it with a successor, so
// that the load lasts until the cancellation commits. Every commit of
// theirs touches records the cancellation reads; the cancellation must
// still win, never with ErrBusy, and leave nothing admissible, nothing
// admitted twice and every attempt it stopped before its handoff provably
// never dispatched.

func treeCancelLoadCases() []testCase {
	return []testCase{{
		Name: "tree_cancellation_commits_under_sustained_racing_dispatch_and_admits_nothing_twice",
		Run:  caseTreeCancelUnderDispatch,
	}}
}

const (
	loadTrees       = 3  // composition roots, each with three child runs
	loadPerRun      = 25 // pending activations in every run of a tree at any time
	loadDispatchers = 8
	// loadNode is the node of the work the dispatchers race for.
	loadNode = "w"
)

func caseTreeCancelUnderDispatch(e *env) {
	s := store(e)
	trees, parents := loadTreesOf(e, s)

	bs := make([]backend.Backend, loadDispatchers)
	for i := range bs {
		bs[i] = e.B
		if e.Caps.MultiInstance {
			bs[i] = e.Open()
		}
	}
	o := newOwner()
	var stop atomic.Bool
	var running, next, completed atomic.Int64
	errs := make([]error, len(bs))
	var wg sync.WaitGroup
	for i, b := range bs {
		d := e.newStore(b)
		// Half the dispatchers take one activation per pass, half four
		// (batches of them in the store-batch tier).
		opts := workflow.DispatchOptions{Limit: 1 + 3*(i%2)}
		running.Add(1)
		wg.Go(func() {
			defer running.Add(-1)
			for !stop.Load() {
				sum, err := d.Dispatch(e.Ctx, o, opts, ms(100))
				if err != nil {
					errs[i] = fmt.Errorf("dispatch: %w", err)
					return
				}
				// The owner finishes each admitted activation at once and
				// asks for one more, so the trees always have work pending.
				for _, ref := range sum.Admitted {
					done := obs(workflow.ObservedSucceeded)
					done.Successors = []workflow.NewActivation{{
						Key: key(ref.Key.RunID, loadNode, fmt.Sprintf("s%05d", next.Add(1))), Input: json.RawMessage(`{}`),
					}}
					res, err := d.ApplyObservation(e.Ctx, ref.Identity, done, ms(101))
					if err != nil {
						errs[i] = fmt.Errorf("observation of %s: %w", ref.Identity, err)
						return
					}
					if res.Status == workflow.AttemptSucceeded {
						completed.Add(1)
					}
				}
			}
		})
	}
	halt := sync.OnceFunc(func() { stop.Store(true); wg.Wait() })
	defer halt()
	for o.totalCalls() < 4*loadDispatchers && running.Load() == int64(len(bs)) && e.Ctx.Err() == nil {
		time.Sleep(2 * time.Millisecond)
	}

	for i, tree := range trees {
		before := o.totalCalls()
		start := time.Now()
		_, err := s.RequestTreeCancellation(e.Ctx, tree[0], nil, ms(200+int64(i)))
		took := time.Since(start)
		e.T.Logf("tree %s: cancellation took %v under %d dispatchers (%d owner calls before it, %d during it)",
			tree[0], took.Round(time.Millisecond), running.Load(), before, o.totalCalls()-before)
		if err != nil {
			halt()
			require.NotErrorIs(e.T, err, backend.ErrBusy, "tree cancellation of %s under %d racing dispatchers", tree[0], len(bs))
			require.NoError(e.T, err, "tree cancellation of %s", tree[0])
		}
	}
	halt()
	for i, err := range errs {
		require.NoError(e.T, err, "dispatcher %d", i)
	}
	calls := o.totalCalls()
	e.T.Logf("%d owner calls, %d activations completed before the cancellation", calls, completed.Load())

	// Nothing in the trees is admissible: unstarted work is cancelled, and
	// a pass over everything finds nothing to admit.
	started := 0
	for _, tree := range trees {
		for _, id := range tree {
			assert.NotZero(e.T, msOf(getRun(e, s, id).CancelRequestedAt), "run %s has its cancellation requested", id)
			acts := scan(e, e.B, func(rtx backend.ReadTx) ([]backend.Activation, error) {
				return rtx.Activations(e.Ctx, backend.ActivationQuery{RunID: id, Limit: 100000})
			})
			for _, a := range acts {
				if a.Key.NodeID != loadNode {
					continue // a child run's parent activation
				}
				assert.False(e.T, a.Admissible, "%v is not admissible", a.Key)
				switch a.Status {
				case backend.ActivationCancelled, backend.ActivationCompleted:
				case backend.ActivationRunning:
					started++
				default:
					assert.Fail(e.T, "activation neither finished, started nor cancelled", "%v is %s", a.Key, a.Status)
				}
			}
		}
	}
	admitOnly(e, s, newOwner(), ms(300))

	// Each activation has at most one attempt, under an identity of its
	// own, and the owner was called once for each attempt handed off: one
	// that completed before the cancellation, one the cancellation won
	// over, or one prepared and stopped before its handoff, never offered
	// to its owner.
	seen := map[string]bool{}
	var unoffered []string
	handed := 0
	for _, tree := range trees {
		for _, id := range tree {
			for _, a := range attemptsOf(e, s, id) {
				if a.Key.NodeID != loadNode {
					continue // a child run's parent attempt
				}
				assert.False(e.T, seen[a.Identity], "attempt %s listed once", a.Identity)
				seen[a.Identity] = true
				assert.Equal(e.T, uint32(1), a.Key.Attempt, "%s: one attempt per activation", a.Identity)
				switch {
				case a.Status == workflow.AttemptSucceeded || a.Status == workflow.AttemptCancelled:
					assert.NotNil(e.T, a.Receipt, "%s: admitted with its receipt", a.Identity)
					assert.Equal(e.T, 1, o.callCount(a.Identity), "%s: its owner was called once", a.Identity)
					handed++
				case a.Status == workflow.AttemptPrepared && a.Handoff == workflow.HandoffPending && a.Receipt == nil:
					assert.Zero(e.T, o.callCount(a.Identity), "%s: never handed off, never dispatched", a.Identity)
					unoffered = append(unoffered, a.Identity)
				default:
					assert.Fail(e.T, "an attempt neither settled nor provably never dispatched",
						"%s is %s, handoff %s, receipt %s", a.Identity, a.Status, a.Handoff, a.Receipt)
				}
			}
		}
	}
	assert.Equal(e.T, started, len(unoffered), "every started activation's attempt is the one stopped before its handoff")
	assert.Equal(e.T, calls, handed, "every owner call is one admitted attempt")
	e.T.Logf("%d attempts admitted, %d prepared and stopped before their handoff", handed, len(unoffered))

	// Settling what is left finalises every run of both trees.
	for _, id := range unoffered {
		ok, err := s.Engine().CancelNeverDispatched(e.Ctx, id, nil, ms(400))
		require.NoError(e.T, err, id)
		assert.True(e.T, ok, "%s has the never-dispatched proof", id)
	}
	for _, id := range parents {
		observe(e, s, id, obs(workflow.ObservedCancelled), ms(401))
	}
	for _, tree := range trees {
		for _, id := range tree {
			assert.Equal(e.T, workflow.RunCancelled, getRun(e, s, id).Status, "run %s", id)
		}
	}
}

// loadTreesOf builds loadTrees composition trees, each a root run with
// child runs c and d and grandchild g (as tree does), with loadPerRun
// pending activations in each of the four runs and room to admit them, and
// their successors, without bound. It returns each tree's runs (root
// first) and the child runs' parent attempts.
func loadTreesOf(e *env, s *workflow.Store) (trees [][]string, parents []string) {
	e.T.Helper()
	for t := range loadTrees {
		r := fmt.Sprintf("load%d", t)
		mkRun(e, s, r, workflow.Limits{ConcurrencyCap: 1000, NodeExecutionCap: 1 << 40}, nil)
		c := spawn(e, s, r, "a", 10)
		d := spawn(e, s, r, "b", 12)
		g := spawn(e, s, c, "x", 14)
		trees = append(trees, []string{r, c, d, g})
		parents = append(parents, parentOf(r, "a"), parentOf(r, "b"), parentOf(c, "x"))
	}
	for i := range loadPerRun {
		for _, tree := range trees {
			for _, id := range tree {
				mkAct(e, s, key(id, loadNode, fmt.Sprintf("a%03d", i)))
			}
		}
	}
	return trees, parents
}
