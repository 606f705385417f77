package etcd_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/wfstore/wfstore/etcd"
	"github.com/wfstore/wfstore/internal/testkit/etcdcluster"
	"github.com/wfstore/wfstore/workflow"
)

// The leader-kill test: a 3-member cluster whose members are child
// processes (this test binary re-executed, running embed), 4 dispatcher
// processes admitting one run's activations, and the leader SIGKILLed in
// the middle and restarted a second later.

const (
	envMember     = "WFSTORE_ETCD_TEST_MEMBER"   // JSON etcdcluster.Member: run a member
	envDispatcher = "WFSTORE_ETCD_TEST_DISPATCH" // endpoints|prefix|report file: run a dispatcher
	memberReady   = "=== wfstore-etcd-member-ready ==="
	lkRun         = "lk"
	lkActs        = 160
	lkDispatchers = 4
)

func init() {
	childMains = append(childMains, memberMain, dispatcherMain)
}

// memberMain runs one cluster member until the process is killed.
func memberMain() (int, bool) {
	raw := os.Getenv(envMember)
	if raw == "" {
		return 0, false
	}
	var s etcdcluster.Member
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2, true
	}
	cfg, err := etcdcluster.Config(s, etcdcluster.Options{Fast: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2, true
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1, true
	}
	<-e.Server.ReadyNotify()
	fmt.Println(memberReady)
	select {
	case err := <-e.Err():
		fmt.Fprintln(os.Stderr, err)
		return 1, true
	case <-e.Server.StopNotify():
		return 0, true
	}
}

// dispatchReport is what a dispatcher process writes to its report file.
type dispatchReport struct {
	Admitted []string
	Errors   []string
	Stats    etcd.Stats
}

// dispatcherMain dispatches run lk with 4 goroutines until a pass of every
// goroutine finds nothing left, then writes its report.
func dispatcherMain() (int, bool) {
	raw := os.Getenv(envDispatcher)
	if raw == "" {
		return 0, false
	}
	parts := strings.SplitN(raw, "|", 3)
	if len(parts) != 3 {
		fmt.Fprintln(os.Stderr, "bad", envDispatcher, raw)
		return 2, true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b, err := etcd.Dial(ctx, strings.Split(parts[0], ","), etcd.WithPrefix(parts[1]), etcd.WithRequestTimeout(2*time.Second))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1, true
	}
	s := workflow.New(b)
	var mu sync.Mutex
	var rep dispatchReport
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			idle := 0
			for idle < 3 && ctx.Err() == nil {
				sum, err := s.Dispatch(ctx, lkOwner{}, workflow.DispatchOptions{RunID: lkRun, Limit: 3}, time.UnixMilli(1_700_000_000_000))
				mu.Lock()
				for _, a := range sum.Admitted {
					rep.Admitted = append(rep.Admitted, a.Identity)
				}
				if err != nil {
					rep.Errors = append(rep.Errors, err.Error())
				}
				mu.Unlock()
				switch {
				case err != nil:
					idle = 0
					time.Sleep(50 * time.Millisecond)
				case len(sum.Admitted)+len(sum.Raced) == 0:
					idle++
					time.Sleep(20 * time.Millisecond)
				default:
					idle = 0
				}
			}
		})
	}
	wg.Wait()
	rep.Stats = b.Stats()
	_ = b.Close()
	out, _ := json.Marshal(rep)
	if err := os.WriteFile(parts[2], out, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1, true
	}
	return 0, true
}

// lkOwner plans every activation and accepts every dispatch.
type lkOwner struct{}

func (lkOwner) Plan(_ context.Context, a workflow.Activation) (*workflow.Plan, error) {
	return &workflow.Plan{SideEffect: workflow.ReadOnly, Intent: json.RawMessage(fmt.Sprintf(`{"do":%q}`, a.Key.ActivationID))}, nil
}

func (lkOwner) Dispatch(_ context.Context, p workflow.PreparedDispatch) (json.RawMessage, error) {
	return json.RawMessage(fmt.Sprintf(`{"accepted":%q}`, p.Identity)), nil
}

// memberProc is a member running in a child process.
type memberProc struct {
	spec etcdcluster.Member
	cmd  *exec.Cmd
	done chan struct{}
}

// startMember starts spec's member in a child process and waits until it
// is ready (a restarted member is ready once it rejoined the cluster).
func startMember(t *testing.T, spec etcdcluster.Member) *memberProc {
	t.Helper()
	raw, err := json.Marshal(spec)
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envMember+"="+string(raw))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	m := &memberProc{spec: spec, cmd: cmd, done: make(chan struct{})}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == memberReady {
				close(ready)
			}
		}
		_ = cmd.Wait()
		close(m.done)
	}()
	t.Cleanup(m.kill)
	select {
	case <-ready:
	case <-m.done:
		t.Fatalf("member %s exited before it was ready", spec.Name)
	case <-time.After(60 * time.Second):
		m.kill()
		t.Fatalf("member %s not ready after 60s", spec.Name)
	}
	return m
}

// kill SIGKILLs the member's process and waits for it to exit.
func (m *memberProc) kill() {
	select {
	case <-m.done:
		return
	default:
	}
	_ = m.cmd.Process.Signal(syscall.SIGKILL)
	<-m.done
}

// startCluster starts an n-member cluster, each member a child process
// (startMember stops it when t ends), and returns the members and their
// client endpoints.
func startCluster(t *testing.T, n int) ([]etcdcluster.Member, []*memberProc, []string) {
	t.Helper()
	specs, err := etcdcluster.Layout(t.TempDir(), n)
	require.NoError(t, err)
	procs := make([]*memberProc, len(specs))
	var wg sync.WaitGroup
	for i, s := range specs {
		wg.Go(func() { procs[i] = startMember(t, s) })
	}
	wg.Wait()
	eps := make([]string, 0, len(specs))
	for _, s := range specs {
		eps = append(eps, s.ClientURL)
	}
	return specs, procs, eps
}

func TestLeaderKillDuringDispatchLosesNothing(t *testing.T) {
	if os.Getenv(envEndpoints) != "" {
		t.Skip("the leader-kill test runs its own cluster of child processes; it does not run against " + envEndpoints)
	}
	specs, procs, eps := startCluster(t, 3)
	ctx := ctxT(t)
	const prefix = "lk/"
	b, err := etcd.Dial(ctx, eps, etcd.WithPrefix(prefix))
	require.NoError(t, err)
	defer b.Close()
	s := workflow.New(b)
	now := time.UnixMilli(1_700_000_000_000)
	_, err = s.CreateRun(ctx, workflow.NewRun{ID: lkRun, Limits: workflow.RunLimits{NodeExecutionCap: 10 * lkActs, ConcurrencyCap: 10 * lkActs, CycleCap: 10}}, now)
	require.NoError(t, err)
	for i := range lkActs {
		_, err := s.AddActivation(ctx, workflow.NewActivation{
			Key:   workflow.ActivationKey{RunID: lkRun, NodeID: "n", ActivationID: fmt.Sprintf("a%03d", i)},
			Input: json.RawMessage(`{}`),
		}, now)
		require.NoError(t, err)
	}

	// The dispatchers.
	dir := t.TempDir()
	type child struct {
		cmd    *exec.Cmd
		report string
		stderr strings.Builder
	}
	children := make([]*child, lkDispatchers)
	for i := range children {
		c := &child{report: fmt.Sprintf("%s/dispatcher-%d.json", dir, i)}
		c.cmd = exec.Command(os.Args[0], "-test.run=^$")
		c.cmd.Env = append(os.Environ(), envDispatcher+"="+strings.Join(eps, ",")+"|"+prefix+"|"+c.report)
		c.cmd.Stderr = &c.stderr
		require.NoError(t, c.cmd.Start())
		children[i] = c
	}

	// Kill the leader once admission is under way, restart it a second later.
	admittedSoFar := func() int {
		attsPage, err := s.Attempts(ctx, workflow.AttemptQuery{RunID: lkRun, Limit: 1000})
		require.NoError(t, err)
		atts := attsPage.Items
		return len(atts)
	}
	deadline := time.Now().Add(time.Minute)
	for admittedSoFar() < lkActs/5 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	require.NoError(t, err)
	defer cli.Close()
	leader := -1
	for i, p := range procs {
		st, err := cli.Status(ctx, p.spec.ClientURL)
		if err == nil && st.Leader == st.Header.MemberId {
			leader = i
		}
	}
	require.GreaterOrEqual(t, leader, 0, "found the leader")
	before := admittedSoFar()
	killed := time.Now()
	procs[leader].kill()
	t.Logf("killed leader %s with %d of %d activations admitted", specs[leader].Name, before, lkActs)
	time.Sleep(time.Second)
	procs[leader] = startMember(t, specs[leader])
	t.Logf("restarted %s after %v", specs[leader].Name, time.Since(killed).Round(time.Millisecond))

	// Every dispatcher finishes; together they admitted each activation once.
	admitted := map[string]int{}
	var total etcd.Stats
	for i, c := range children {
		err := c.cmd.Wait()
		require.NoError(t, err, "dispatcher %d: %s", i, c.stderr.String())
		raw, err := os.ReadFile(c.report)
		require.NoError(t, err)
		var rep dispatchReport
		require.NoError(t, json.Unmarshal(raw, &rep))
		t.Logf("dispatcher %d: admitted %d, errors %d, stats %+v", i, len(rep.Admitted), len(rep.Errors), rep.Stats)
		for _, e := range rep.Errors {
			t.Logf("dispatcher %d error: %s", i, e)
		}
		for _, id := range rep.Admitted {
			admitted[id]++
		}
		total.Conflicts += rep.Stats.Conflicts
		total.TransientReads += rep.Stats.TransientReads
		total.Unknown += rep.Stats.Unknown
		total.UnknownApplied += rep.Stats.UnknownApplied
		total.UnknownFenced += rep.Stats.UnknownFenced
		total.Busy += rep.Stats.Busy
	}
	assert.Len(t, admitted, lkActs, "every activation admitted")
	for id, n := range admitted {
		assert.Equal(t, 1, n, "admitted once: %s", id)
	}
	// Every acknowledged admission is in the store, after the restart.
	attsPage, err := s.Attempts(ctx, workflow.AttemptQuery{RunID: lkRun, Limit: 1000})
	require.NoError(t, err)
	atts := attsPage.Items
	stored := map[string]bool{}
	for _, a := range atts {
		assert.Equal(t, workflow.AttemptAdmitted, a.Status, "attempt %s", a.Identity)
		assert.Equal(t, uint32(1), a.Key.Attempt)
		stored[a.Identity] = true
	}
	assert.Len(t, atts, lkActs)
	for id := range admitted {
		assert.True(t, stored[id], "acknowledged admission %s is stored", id)
	}
	require.NoError(t, b.Verify(ctx))
	t.Logf("retries across dispatchers: %d conflicts, %d transient reads, %d unknown outcomes (%d applied, %d fenced), %d busy",
		total.Conflicts, total.TransientReads, total.Unknown, total.UnknownApplied, total.UnknownFenced, total.Busy)
	assert.Positive(t, total.Conflicts+total.TransientReads+total.Unknown, "the adapter's re-runs are visible in its counters")
}
