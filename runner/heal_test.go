package runner

import (
	"context"
	"encoding/json"
	"errors"
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

// step names the admission transaction a fault hits.
type step string

const (
	stepHandoff step = "handoff"
	stepReceipt step = "receipt"
)

// fault loses the answer of one commit of an activation's step: after the
// commit applied (applied) or with the transaction rolled back.
type fault struct {
	step    step
	applied bool
}

// lossyBackend loses the answer of the commits its faults name, once
// each, reporting backend.ErrOutcomeUnknown.
type lossyBackend struct {
	backend.Backend
	mu     sync.Mutex
	faults map[string]fault // by activation id
	hit    []string
}

var errLost = fmt.Errorf("test: commit answer lost: %w", backend.ErrOutcomeUnknown)

func (b *lossyBackend) Update(ctx context.Context, fn func(tx backend.Tx) error) error {
	var lost *fault
	err := b.Backend.Update(ctx, func(tx backend.Tx) error {
		lost = nil
		rt := &recordingTx{Tx: tx}
		if err := fn(rt); err != nil {
			return err
		}
		lost = b.match(rt.attempts)
		if lost != nil && !lost.applied {
			return errLost
		}
		return nil
	})
	if lost != nil {
		return errLost
	}
	return err
}

// match consumes every fault the written attempts hit (a batch writes
// several); the commit applies only if every fault hit says so.
func (b *lossyBackend) match(atts []backend.Attempt) *fault {
	b.mu.Lock()
	defer b.mu.Unlock()
	var lost *fault
	for _, a := range atts {
		f, ok := b.faults[a.Key.ActivationID]
		if !ok {
			continue
		}
		hit := (f.step == stepReceipt && a.Receipt != nil) ||
			(f.step == stepHandoff && a.Receipt == nil && a.Handoff == backend.HandoffRecorded)
		if hit {
			delete(b.faults, a.Key.ActivationID)
			b.hit = append(b.hit, a.Key.ActivationID)
			if lost == nil {
				lost = &fault{step: f.step, applied: true}
			}
			lost.applied = lost.applied && f.applied
		}
	}
	return lost
}

func (b *lossyBackend) hits() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.hit...)
}

// recordingTx records the attempts a transaction writes.
type recordingTx struct {
	backend.Tx
	attempts []backend.Attempt
}

func (t *recordingTx) Apply(ctx context.Context, c backend.Changes) error {
	t.attempts = append(t.attempts, c.Insert.Attempts...)
	t.attempts = append(t.attempts, c.Replace.Attempts...)
	return t.Tx.Apply(ctx, c)
}

// healOwner plans "m*" activations as mutating work, the others as
// read-only, counts its Dispatch calls by identity, and observes every
// attempt it accepted as succeeded.
type healOwner struct {
	mu    sync.Mutex
	calls map[string]int
}

func (o *healOwner) Plan(_ context.Context, a workflow.Activation) (*workflow.Plan, error) {
	eff := workflow.ReadOnly
	if a.Key.ActivationID[0] == 'm' {
		eff = workflow.Mutating
	}
	return &workflow.Plan{SideEffect: eff, Intent: json.RawMessage(`{}`)}, nil
}

func (o *healOwner) Dispatch(_ context.Context, p workflow.PreparedDispatch) (json.RawMessage, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls[p.Identity]++
	return json.RawMessage(fmt.Sprintf(`{"accepted":%q}`, p.Identity)), nil
}

func (o *healOwner) Observe(_ context.Context, a workflow.Attempt) (workflow.Observation, error) {
	return workflow.Observation{Kind: workflow.ObservedSucceeded, Output: json.RawMessage(`{}`)}, nil
}

// A commit whose answer is lost, at the handoff or at the receipt, after
// it applied or not, never stalls work until a restart and is never run
// again blindly: the runner re-reads the attempt by its identity on its
// next passes and finishes it. Every activation completes while the
// runner runs, and the owner is called once per attempt.
func TestUnknownCommitOutcomesHealWithoutARestart(t *testing.T) {
	t.Parallel()
	t.Run("one_at_a_time", func(t *testing.T) { t.Parallel(); testUnknownOutcomesHeal(t, 1) })
	t.Run("batch", func(t *testing.T) { t.Parallel(); testUnknownOutcomesHeal(t, 3) })
}

func testUnknownOutcomesHeal(t *testing.T, batch int) {
	clock := newFakeClock()
	ctx := context.Background()
	lb := &lossyBackend{Backend: memstore.New(), faults: map[string]fault{
		"m-receipt-applied":  {stepReceipt, true},
		"m-receipt-lost":     {stepReceipt, false},
		"m-handoff-lost":     {stepHandoff, false},
		"ma-handoff-applied": {stepHandoff, true}, // mutating, own token
		"r-handoff-applied":  {stepHandoff, true},
		"r-receipt-lost":     {stepReceipt, false},
	}}
	s := workflow.New(lb)
	acts := []string{"m-handoff-lost", "m-receipt-applied", "m-receipt-lost", "ma-handoff-applied", "r-handoff-applied", "r-plain", "r-receipt-lost"}
	for _, a := range acts {
		_, err := s.CreateRun(ctx, workflow.NewRun{ID: a}, clock.Now())
		require.NoError(t, err)
		eff, rec := workflow.ReadOnly, workflow.IdempotentReplay
		if a[0] == 'm' {
			eff, rec = workflow.Mutating, workflow.ReceiptStatus
		}
		_, err = s.AddActivation(ctx, workflow.NewActivation{Key: key(a, a), Input: json.RawMessage(`{}`), Effect: eff, Reconciliation: rec}, clock.Now())
		require.NoError(t, err)
	}
	o := &healOwner{calls: map[string]int{}}
	st := start(t, newRunner(t, s, o, clock, WithAttemptTimeout(0), WithBatchSize(batch)))
	deadline := time.Now().Add(10 * time.Second)
	for {
		done := 0
		for _, a := range acts {
			run, err := s.GetRun(ctx, a)
			require.NoError(t, err)
			if run.Status == workflow.RunCompleted {
				done++
			}
		}
		if done == len(acts) {
			break
		}
		require.True(t, time.Now().Before(deadline), "only %d of %d runs completed without a restart", done, len(acts))
		clock.fire(clock.nextTimer(t))
	}
	sum, err := st.stop(t)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"m-receipt-applied", "m-receipt-lost", "m-handoff-lost", "ma-handoff-applied", "r-handoff-applied", "r-receipt-lost"}, lb.hits(),
		"every fault fired")
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, a := range acts {
		assert.Equal(t, 1, o.calls[workflow.DispatchIdentity(a, "n", a, 1)], "owner calls of %s", a)
	}
	assert.Empty(t, sum.Unresolved)
	assert.Equal(t, len(acts), sum.Admitted)
	for _, a := range acts {
		att, err := s.GetAttempt(ctx, workflow.DispatchIdentity(a, "n", a, 1))
		require.NoError(t, err)
		assert.NotEqual(t, workflow.AttemptRepairRequired, att.Status, "%s needs no repair", a)
	}
	for _, a := range acts {
		_, err := s.GetAttempt(ctx, workflow.DispatchIdentity(a, "n", a, 2))
		assert.True(t, errors.Is(err, workflow.ErrNotFound), "%s has one attempt", a)
	}
}

// stealingBackend is a lossyBackend that, right after the lost commit of
// a handoff applied, lets "another process" replace that handoff's holder
// token, as a release and a new handoff by someone else would.
type stealingBackend struct{ *lossyBackend }

func (b *stealingBackend) Update(ctx context.Context, fn func(tx backend.Tx) error) error {
	before := len(b.hits())
	err := b.lossyBackend.Update(ctx, fn)
	hits := b.hits()
	if len(hits) == before {
		return err
	}
	id := hits[len(hits)-1]
	k := backend.AttemptKey{ActivationKey: backend.ActivationKey{RunID: id, NodeID: "n", ActivationID: id}, Attempt: 1}
	if serr := b.Backend.Update(ctx, func(tx backend.Tx) error {
		f, err := tx.Load(ctx, backend.Lookup{Attempts: []backend.AttemptKey{k}})
		if err != nil {
			return err
		}
		a := f.Attempts[k]
		a.HandoffToken = "another-holder"
		return tx.Apply(ctx, backend.Changes{Replace: backend.Replaces{Attempts: []backend.Attempt{a}}})
	}); serr != nil {
		panic(serr)
	}
	return err
}

// A mutating attempt whose handoff commit answer was lost, and whose
// recorded handoff carries another holder's token by the time the runner
// re-reads it, is never handed to the owner by this runner: it is another
// process's, left for that process or for reconciliation.
func TestLostHandoffOfAnotherHolderIsNotDispatched(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	ctx := context.Background()
	lb := &lossyBackend{Backend: memstore.New(), faults: map[string]fault{"m-stolen": {stepHandoff, true}}}
	s := workflow.New(&stealingBackend{lb})
	_, err := s.CreateRun(ctx, workflow.NewRun{ID: "m-stolen"}, clock.Now())
	require.NoError(t, err)
	_, err = s.AddActivation(ctx, workflow.NewActivation{Key: key("m-stolen", "m-stolen"), Input: json.RawMessage(`{}`),
		Effect: workflow.Mutating, Reconciliation: workflow.ReceiptStatus}, clock.Now())
	require.NoError(t, err)
	o := &healOwner{calls: map[string]int{}}
	st := start(t, newRunner(t, s, o, clock, WithAttemptTimeout(0)))
	for range 4 {
		clock.fire(clock.nextTimer(t))
	}
	_, err = st.stop(t)
	require.NoError(t, err)
	require.Equal(t, []string{"m-stolen"}, lb.hits())
	id := workflow.DispatchIdentity("m-stolen", "n", "m-stolen", 1)
	o.mu.Lock()
	assert.Zero(t, o.calls[id], "the owner is not called under another holder's handoff")
	o.mu.Unlock()
	a, err := s.GetAttempt(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, workflow.AttemptPrepared, a.Status)
	assert.Equal(t, "another-holder", a.HandoffToken)
}
