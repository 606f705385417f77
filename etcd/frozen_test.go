package etcd_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/wfstore/wfstore/etcd"
	"github.com/wfstore/wfstore/workflow"
)

// The frozen-member test: a 3-member cluster of child processes, four
// dispatchers in this process each adding and admitting activations one
// after another, and the leader SIGSTOPped for 10 s in the middle. The
// request timeout bounds what was in flight to the frozen member, and the
// Backend then sends its requests only to the members that answer, so
// admissions go on within a few seconds of the freeze instead of stopping
// until it ends.

const (
	frozenFor         = 10 * time.Second
	frozenDispatchers = 4
	// frozenGap is the longest the test lets admission stop while the
	// member is frozen.
	frozenGap = 5 * time.Second
)

func TestFrozenMemberCostsSeconds(t *testing.T) {
	if os.Getenv(envEndpoints) != "" {
		t.Skip("the frozen-member test runs its own cluster of child processes; it does not run against " + envEndpoints)
	}
	specs, procs, eps := startCluster(t, 3)
	ctx := ctxT(t)
	b, err := etcd.Dial(ctx, eps, etcd.WithPrefix("frozen/"), etcd.WithRequestTimeout(time.Second))
	require.NoError(t, err)
	defer b.Close()
	s := workflow.New(b)
	now := time.UnixMilli(1_700_000_000_000)

	// Each dispatcher adds an activation to its own run and admits it,
	// again and again, recording when each admission returned.
	type admission struct {
		at       time.Time
		identity string
	}
	var (
		mu       sync.Mutex
		admitted []admission
		errs     []string
	)
	dctx, stop := context.WithCancel(ctx)
	defer stop()
	var dispatchers sync.WaitGroup
	for d := range frozenDispatchers {
		run := fmt.Sprintf("f%d", d)
		_, err := s.CreateRun(ctx, workflow.NewRun{ID: run, Limits: workflow.RunLimits{NodeExecutionCap: 1 << 20, ConcurrencyCap: 1 << 20}}, now)
		require.NoError(t, err)
		dispatchers.Go(func() {
			for i := 0; dctx.Err() == nil; {
				k := workflow.ActivationKey{RunID: run, NodeID: "n", ActivationID: fmt.Sprintf("a%06d", i)}
				_, err := s.AddActivation(dctx, workflow.NewActivation{Key: k, Input: json.RawMessage(`{}`)}, now)
				var sum workflow.DispatchSummary
				if err == nil {
					sum, err = s.Dispatch(dctx, lkOwner{}, workflow.DispatchOptions{RunID: run, Limit: 1}, now)
				}
				mu.Lock()
				for _, a := range sum.Admitted {
					admitted = append(admitted, admission{time.Now(), a.Identity})
				}
				if err != nil && dctx.Err() == nil {
					errs = append(errs, fmt.Sprintf("%s: %v", time.Now().Format("15:04:05.000"), err))
				}
				mu.Unlock()
				if len(sum.Admitted) > 0 {
					i++
				}
			}
		})
	}
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(admitted)
	}
	for deadline := time.Now().Add(time.Minute); count() < 20 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	require.GreaterOrEqual(t, count(), 20, "admission under way before the freeze")

	// Freeze the leader; thaw it on every way out.
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	require.NoError(t, err)
	defer cli.Close()
	leader := -1
	for i, p := range procs {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		st, err := cli.Status(sctx, p.spec.ClientURL)
		cancel()
		if err == nil && st.Leader == st.Header.MemberId {
			leader = i
		}
	}
	require.GreaterOrEqual(t, leader, 0, "found the leader")
	frozen := procs[leader]
	var thawOnce sync.Once
	thaw := func() { thawOnce.Do(func() { _ = frozen.cmd.Process.Signal(syscall.SIGCONT) }) }
	t.Cleanup(thaw)
	before := count()
	require.NoError(t, frozen.cmd.Process.Signal(syscall.SIGSTOP))
	froze := time.Now()
	t.Logf("froze leader %s with %d admissions done", specs[leader].Name, before)
	time.Sleep(frozenFor)
	thaw()
	thawed := time.Now()
	t.Logf("thawed %s after %v", specs[leader].Name, thawed.Sub(froze).Round(time.Millisecond))
	time.Sleep(2 * time.Second)
	stop()
	dispatchers.Wait()

	// While the member was frozen, admission never stopped for long.
	mu.Lock()
	defer mu.Unlock()
	sort.Slice(admitted, func(i, j int) bool { return admitted[i].at.Before(admitted[j].at) })
	last, longest, during := froze, time.Duration(0), 0
	for _, a := range admitted {
		if a.at.Before(froze) || a.at.After(thawed) {
			continue
		}
		during++
		longest = max(longest, a.at.Sub(last))
		last = a.at
	}
	longest = max(longest, thawed.Sub(last))
	t.Logf("%d admissions before the freeze, %d during it, %d in all; longest pause while frozen %v; %d errors",
		before, during, len(admitted), longest.Round(time.Millisecond), len(errs))
	for i, e := range errs {
		if i == 10 {
			t.Logf("... %d more errors", len(errs)-10)
			break
		}
		t.Logf("dispatch error: %s", e)
	}
	assert.Positive(t, during, "admissions while the leader was frozen")
	assert.LessOrEqual(t, longest, frozenGap, "the longest pause in admission while the leader was frozen")
	st := b.Stats()
	t.Logf("adapter: %d conflicts, %d transient reads, %d unknown outcomes (%d applied, %d fenced), %d busy",
		st.Conflicts, st.TransientReads, st.Unknown, st.UnknownApplied, st.UnknownFenced, st.Busy)

	// Exactly once: every admission reported is one admitted attempt, and
	// no attempt was admitted without being reported.
	seen := map[string]bool{}
	for _, a := range admitted {
		assert.False(t, seen[a.identity], "admitted once: %s", a.identity)
		seen[a.identity] = true
	}
	stored := 0
	for d := range frozenDispatchers {
		var atts workflow.Page[workflow.Attempt]
		// The thawed member may still be catching up: a read that times
		// out is asked again.
		for try := 0; ; try++ {
			atts, err = s.Attempts(ctx, workflow.AttemptQuery{RunID: fmt.Sprintf("f%d", d), Limit: workflow.MaxPageLimit})
			if err == nil || try == 10 {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		require.NoError(t, err)
		for _, a := range atts.Items {
			if a.Status == workflow.AttemptAdmitted {
				stored++
				assert.True(t, seen[a.Identity], "admitted attempt %s was reported", a.Identity)
			}
		}
	}
	assert.Equal(t, len(seen), stored, "every reported admission is stored")
}

// Dial refuses a keepalive or request timeout it cannot use, before it
// connects.
func TestKeepAliveAndRequestTimeoutOptionsAreValidated(t *testing.T) {
	t.Parallel()
	for _, opt := range []etcd.Option{
		etcd.WithKeepAlive(-time.Second, time.Second),
		etcd.WithKeepAlive(10*time.Second, 0),
		etcd.WithRequestTimeout(0),
	} {
		_, err := etcd.Dial(context.Background(), []string{"http://127.0.0.1:1"}, opt)
		require.Error(t, err)
	}
	b, err := etcd.Dial(ctxT(t), testEndpoints, etcd.WithPrefix(newPrefix(t)), etcd.WithKeepAlive(0, 0))
	require.NoError(t, err, "keepalive off")
	require.NoError(t, b.Close())
}
