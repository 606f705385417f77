package runner

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/internal/testkit/crashtest"
	"github.com/wfstore/wfstore/workflow"
)

// The memory-owner variant of the SIGKILL test: the owner remembers the
// work it accepted only in its process's memory, so the attempts a killed
// process accepted stay admitted (its successor observes them as running)
// until the attempt timeout settles them; the stuck-work check must count
// exactly the ones left unmoved.
const (
	crashAttemptTimeout = 1500 * time.Millisecond
	crashStuckAge       = 300 * time.Millisecond
)

// memoryOwner observes as succeeded the attempts it accepted in this
// process and as running every other one: what it knew died with the
// process that accepted them.
type memoryOwner struct {
	*ledgerOwner
	mu   sync.Mutex
	mine map[string]bool
}

func newMemoryOwner(o *ledgerOwner) *memoryOwner {
	return &memoryOwner{ledgerOwner: o, mine: map[string]bool{}}
}

func (o *memoryOwner) Dispatch(ctx context.Context, p workflow.PreparedDispatch) (json.RawMessage, error) {
	rc, err := o.ledgerOwner.Dispatch(ctx, p)
	if err == nil {
		o.mu.Lock()
		o.mine[p.Identity] = true
		o.mu.Unlock()
	}
	return rc, err
}

func (o *memoryOwner) Observe(_ context.Context, a workflow.Attempt) (workflow.Observation, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.mine[a.Identity] {
		return workflow.Observation{Kind: workflow.ObservedSucceeded, Output: json.RawMessage(`{}`)}, nil
	}
	return workflow.Observation{Kind: workflow.ObservedRunning}, nil
}

// fixedClock is a Clock stopped at one instant.
type fixedClock struct{ at time.Time }

func (c fixedClock) Now() time.Time                 { return c.at }
func (c fixedClock) NewTimer(d time.Duration) Timer { return SystemClock().NewTimer(d) }

// verifyMemoryCrash checks, after the runners drained: one attempt per
// activation, none prepared, every receipt the owner holds persisted, no
// mutating attempt handed to the owner twice; every attempt settled or
// unmoved for at least the stuck age; and the stuck attempts a fresh
// runner's check counts at one instant are exactly those a count from
// the store finds at that instant.
func verifyMemoryCrash(t *testing.T, ctx context.Context, s *workflow.Store, l *crashtest.Ledger, ledgerPath string, n int) {
	st, err := crashtest.ReadLedger(ledgerPath)
	require.NoError(t, err)
	now := time.Now()
	atts := allAttempts(t, ctx, s)
	perAct := map[workflow.ActivationKey]int{}
	status := map[workflow.AttemptStatus]int{}
	want := map[string]bool{}
	for _, a := range atts {
		perAct[a.Key.ActivationKey]++
		status[a.Status]++
		if st.Receipts[a.Identity] && string(a.Receipt) != string(crashtest.ReceiptOf(a.Identity)) {
			t.Errorf("the owner holds a receipt for %s that was not persisted (status %s)", a.Identity, a.Status)
		}
		if a.SideEffect == workflow.Mutating && st.Calls[a.Identity] > 1 {
			t.Errorf("the owner was called %d times for mutating attempt %s", st.Calls[a.Identity], a.Identity)
		}
		switch a.Status {
		case workflow.AttemptSucceeded, workflow.AttemptFailed, workflow.AttemptRepairRequired:
		case workflow.AttemptAdmitted, workflow.AttemptRunning:
			if now.Sub(a.AdmittedAt) < crashStuckAge {
				t.Errorf("attempt %s is %s and moved %v ago: neither settled nor past the stuck age", a.Identity, a.Status, now.Sub(a.AdmittedAt))
			} else {
				want[a.Identity] = true
			}
		default:
			t.Errorf("attempt %s ended %s", a.Identity, a.Status)
		}
	}
	for i := range n {
		if c := perAct[crashKey(i)]; c != 1 {
			t.Errorf("activation %v has %d attempts, want exactly 1", crashKey(i), c)
		}
	}
	last, err := New(s, newMemoryOwner(&ledgerOwner{l: l, signal: func(string) {}}), WithClock(fixedClock{now}),
		WithStuckCheck(crashStuckAge, 0), WithAttemptTimeout(0))
	require.NoError(t, err)
	for range 100 {
		require.NoError(t, last.checkStuck(ctx))
		if !last.stuck.scanning {
			break
		}
	}
	got := map[string]bool{}
	for _, sa := range last.stuck.stuck() {
		got[sa.Attempt.Identity] = true
	}
	assert.Equal(t, want, got, "the runner's stuck attempts are the store's unsettled ones")
	t.Logf("%d attempts %v; %d stuck; owner ledger: %d identities called, %d receipts", len(atts), status, len(got), len(st.Calls), len(st.Receipts))
}
