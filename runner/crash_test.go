package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/internal/testkit/crashtest"
	"github.com/wfstore/wfstore/internal/testkit/pgtest"
	"github.com/wfstore/wfstore/workflow"
)

// The SIGKILL test: runner processes (this test binary, re-executed) admit
// activations through an owner whose durable ledger is a file, and are
// killed inside the owner call, between intent and handoff, between the
// owner's acceptance and the receipt, and inside a commit; each killed
// process is replaced by a new one at once, which recovers at start while
// the others go on. At the end every activation must have exactly one
// attempt, admitted with the receipt the owner's ledger holds (or, for an
// ambiguous mutation the owner holds no receipt for, repair_required); no
// attempt may stay prepared and no receipt may be lost.
const (
	envCrashChild  = "WFSTORE_RUNNER_CRASH_CHILD" // backend kind; set in a child
	envCrashLoc    = "WFSTORE_RUNNER_CRASH_LOC"
	envCrashLedger = "WFSTORE_RUNNER_CRASH_LEDGER"
	envCrashMemory = "WFSTORE_RUNNER_CRASH_MEMORY" // "1": the owner observes from memory, with an attempt timeout
)

var crashPhases = []string{"owner", "prepared", "accepted", "commit"}

func TestMain(m *testing.M) {
	if kind := os.Getenv(envCrashChild); kind != "" {
		if err := crashChild(kind, os.Getenv(envCrashLoc), os.Getenv(envCrashLedger)); err != nil {
			fmt.Fprintln(os.Stderr, "crash child:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	pgtest.Main(m)
}

// ledgerOwner is idempotent by identity through the ledger and looks
// receipts up in it.
type ledgerOwner struct {
	l      *crashtest.Ledger
	signal func(string)
}

func (o *ledgerOwner) Plan(_ context.Context, a workflow.Activation) (*workflow.Plan, error) {
	return &workflow.Plan{SideEffect: a.Effect, Intent: json.RawMessage(`{"do":"` + a.Key.RunID + `"}`)}, nil
}

func (o *ledgerOwner) Dispatch(_ context.Context, p workflow.PreparedDispatch) (json.RawMessage, error) {
	return o.l.Dispatch(p.Identity, o.signal, nil)
}

func (o *ledgerOwner) LookupReceipt(ctx context.Context, identity string) (json.RawMessage, bool, error) {
	return o.l.LookupReceipt(ctx, identity)
}

// crashChild is one runner process: it runs until SIGTERM (then drains)
// or SIGKILL.
func crashChild(kind, loc, ledgerPath string) error {
	ctx, stop := signalContext()
	defer stop()
	var outMu sync.Mutex
	signal := func(phase string) {
		outMu.Lock()
		os.Stdout.WriteString(phase + "\n")
		outMu.Unlock()
		if phase != "commit" {
			time.Sleep(2 * time.Millisecond) // the parent kills inside this phase
		}
	}
	b, err := crashtest.OpenBackend(context.Background(), kind, loc)
	if err != nil {
		return err
	}
	defer b.Close()
	l, err := crashtest.OpenLedger(ledgerPath)
	if err != nil {
		return err
	}
	var owner workflow.Owner = &ledgerOwner{l: l, signal: signal}
	opts := []Option{withFault(crashtest.SignalBoundaries(signal)), WithLimit(3), WithPollInterval(5*time.Millisecond, 50*time.Millisecond)}
	if os.Getenv(envCrashMemory) == "1" {
		owner = newMemoryOwner(&ledgerOwner{l: l, signal: signal})
		opts = append(opts, WithAttemptTimeout(crashAttemptTimeout), WithStuckCheck(crashStuckAge, 20*time.Millisecond))
	}
	_, err = Run(ctx, workflow.New(crashtest.Signalling{Backend: b, Signal: signal}), owner, opts...)
	return err
}

func signalContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 1)
	signalNotify(ch)
	go func() {
		select {
		case <-ch:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

func TestRunnerProcessesSurviveSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("kills runner processes")
	}
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		crashRunners(t, "sqlite", filepath.Join(t.TempDir(), "store.db"), 2, 32)
	})
	t.Run("sqlite_memory_owner", func(t *testing.T) {
		t.Parallel()
		crashRunners(t, "sqlite", filepath.Join(t.TempDir(), "store.db"), 2, 16, true)
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		dsn, schema := pgtest.Schema(t)
		crashRunners(t, "postgres", schema+"|"+dsn, 3, 21)
	})
}

func crashKey(i int) workflow.ActivationKey {
	return workflow.ActivationKey{RunID: fmt.Sprintf("crash-%04d", i), NodeID: "node", ActivationID: "a"}
}

type crashProc struct {
	cmd    *exec.Cmd
	killed bool
	done   chan error
}

type crashEvent struct {
	p     *crashProc
	phase string
}

func crashRunners(t *testing.T, kind, loc string, procs, kills int, memory ...bool) {
	mem := len(memory) > 0 && memory[0]
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	ledgerPath := filepath.Join(t.TempDir(), "ledger")
	n := 5*kills + 20
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 2))
	t.Logf("seed %d, %d activations, %d runner processes at once", seed, n, procs)

	b, err := crashtest.OpenBackend(ctx, kind, loc)
	require.NoError(t, err)
	defer b.Close()
	s := workflow.New(b)
	// One run per activation (an ambiguous mutation stops its run for
	// repair), half read-only and half mutating.
	addWork := func(from, to int) {
		for i := from; i < to; i++ {
			_, err := s.CreateRun(ctx, workflow.NewRun{ID: crashKey(i).RunID}, time.Now())
			require.NoError(t, err)
			eff := workflow.ReadOnly
			if i%2 == 1 {
				eff = workflow.Mutating
			}
			_, err = s.AddActivation(ctx, workflow.NewActivation{Key: crashKey(i), Input: json.RawMessage(`{}`), Effect: eff}, time.Now())
			require.NoError(t, err)
		}
	}
	addWork(0, n)

	events := make(chan crashEvent, 4096)
	var live []*crashProc
	start := func() {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envCrashChild+"="+kind, envCrashLoc+"="+loc, envCrashLedger+"="+ledgerPath)
		if mem {
			cmd.Env = append(cmd.Env, envCrashMemory+"=1")
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		p := &crashProc{cmd: cmd, done: make(chan error, 1)}
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				events <- crashEvent{p, sc.Text()}
			}
			err := cmd.Wait()
			if err != nil && !p.killed {
				err = fmt.Errorf("%w: %s", err, stderr.String())
			}
			p.done <- err
		}()
		live = append(live, p)
	}
	for range procs {
		start()
	}
	perPhase := map[string]int{}
	phase, nth, seen := crashPhases[0], 1+rng.IntN(3), 0
	// On a loaded machine the survivors can finish every activation while
	// a killed runner's replacement starts: a quiet phase gets more work,
	// and only a phase that stays quiet with work waiting is a stall.
	quiet := time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for k := 0; k < kills; {
		select {
		case e := <-events:
			if e.p.killed || e.phase != phase {
				continue
			}
			quiet = time.Now()
			if seen++; seen < nth {
				continue
			}
			e.p.killed = true
			_ = e.p.cmd.Process.Signal(syscall.SIGKILL)
			k++
			perPhase[phase]++
			for i, p := range live {
				if p == e.p {
					live = append(live[:i], live[i+1:]...)
					break
				}
			}
			start()
			phase, nth, seen = crashPhases[k%len(crashPhases)], 1+rng.IntN(3), 0
			quiet = time.Now()
		case <-tick.C:
			if time.Since(quiet) > 30*time.Second {
				t.Fatalf("no %q signal for 30s after %d kills %v, with work added while quiet: the runners stalled", phase, k, perPhase)
			}
			if time.Since(quiet) > 3*time.Second {
				addWork(n, n+10)
				n += 10
			}
		}
	}
	t.Logf("%s: %d kills %v", kind, kills, perPhase)

	// The survivors and the replacements finish the work, then drain.
	deadline := time.Now().Add(90 * time.Second)
	for !crashSettled(t, ctx, s, n) {
		require.True(t, time.Now().Before(deadline), "the runners did not settle every activation within 90s")
		select {
		case <-events:
		case <-time.After(20 * time.Millisecond):
		}
	}
	if mem {
		// The live runners observe what they accepted; what killed ones
		// accepted stays admitted, past the stuck age, or times out.
		time.Sleep(2 * crashStuckAge)
	}
	go func() { // keep the pipes flowing while the children drain
		for range events {
		}
	}()
	for _, p := range live {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range live {
		require.NoError(t, <-p.done, "a runner process stopped by SIGTERM exits 0")
	}
	// A last start recovers what the survivors' own starts could not see.
	l, err := crashtest.OpenLedger(ledgerPath)
	require.NoError(t, err)
	defer l.Close()
	if mem {
		verifyMemoryCrash(t, ctx, s, l, ledgerPath, n)
		return
	}
	last, err := New(s, &ledgerOwner{l: l, signal: func(string) {}})
	require.NoError(t, err)
	_, err = last.recover(ctx)
	require.NoError(t, err)
	verifyCrash(t, ctx, s, ledgerPath, n)
}

// crashSettled reports whether every activation has an attempt and none
// is prepared.
func crashSettled(t *testing.T, ctx context.Context, s *workflow.Store, n int) bool {
	t.Helper()
	atts := allAttempts(t, ctx, s)
	if len(atts) < n {
		return false
	}
	for _, a := range atts {
		if a.Status == workflow.AttemptPrepared {
			return false
		}
	}
	return true
}

func allAttempts(t *testing.T, ctx context.Context, s *workflow.Store) []workflow.Attempt {
	t.Helper()
	atts, err := crashtest.AllAttempts(ctx, s)
	require.NoError(t, err)
	return atts
}

func verifyCrash(t *testing.T, ctx context.Context, s *workflow.Store, ledgerPath string, n int) {
	st, err := crashtest.ReadLedger(ledgerPath)
	calls, receipts := st.Calls, st.Receipts
	require.NoError(t, err)
	atts := allAttempts(t, ctx, s)
	status := map[workflow.AttemptStatus]int{}
	for _, a := range atts {
		status[a.Status]++
		switch {
		case a.Status == workflow.AttemptAdmitted && string(a.Receipt) == string(crashtest.ReceiptOf(a.Identity)):
			if !receipts[a.Identity] {
				t.Errorf("attempt %s admitted with a receipt the owner's ledger lacks", a.Identity)
			}
		case a.Status == workflow.AttemptRepairRequired:
			if a.SideEffect != workflow.Mutating || a.Handoff != workflow.HandoffRecorded || receipts[a.Identity] {
				t.Errorf("attempt %s is repair_required (effect %s, handoff %s, owner holds a receipt: %v)", a.Identity, a.SideEffect, a.Handoff, receipts[a.Identity])
			}
		default:
			t.Errorf("attempt %s ended %s (receipt %s): stuck", a.Identity, a.Status, a.Receipt)
		}
		if a.Handoff == workflow.HandoffPending && calls[a.Identity] > 0 {
			t.Errorf("attempt %s has no recorded handoff but the owner was called", a.Identity)
		}
	}
	keys := make([]workflow.ActivationKey, n)
	for i := range keys {
		keys[i] = crashKey(i)
	}
	problems := crashtest.LedgerProblems(atts, st, keys)
	for _, p := range problems {
		t.Error(p)
	}
	t.Logf("%d attempts %v; owner ledger: %d identities called, %d receipts; %d problems", len(atts), status, len(calls), len(receipts), len(problems))
}
