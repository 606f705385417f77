package crashtest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/bolt"
	"github.com/wfstore/wfstore/internal/pgtest"
	"github.com/wfstore/wfstore/postgres"
	"github.com/wfstore/wfstore/sqlite"
	"github.com/wfstore/wfstore/workflow"
)

const (
	envChild  = "WFSTORE_CRASH_CHILD" // backend kind; set in the child
	envLoc    = "WFSTORE_CRASH_LOC"
	envLedger = "WFSTORE_CRASH_LEDGER"
	envKills  = "WFSTORE_CRASH_KILLS" // kills per backend (default 52)
)

// Phases the child signals on stdout, one line each.
var phases = []string{"owner", "prepared", "accepted", "commit"}

func TestMain(m *testing.M) {
	if kind := os.Getenv(envChild); kind != "" {
		if err := child(kind, os.Getenv(envLoc), os.Getenv(envLedger)); err != nil {
			fmt.Fprintln(os.Stderr, "crash child:", err)
			os.Exit(2)
		}
		fmt.Println("done")
		os.Exit(0)
	}
	// pgtest.Main stops the throwaway cluster the postgres case may start.
	pgtest.Main(m)
}

func open(ctx context.Context, kind, loc string) (backend.Backend, error) {
	switch kind {
	case "sqlite":
		return sqlite.Open(ctx, loc)
	case "bolt":
		return bolt.Open(ctx, loc)
	case "postgres":
		schema, dsn, _ := strings.Cut(loc, "|")
		return postgres.Open(ctx, dsn, postgres.WithSchema(schema))
	}
	return nil, fmt.Errorf("unknown backend %q", kind)
}

// ---- the owner's durable ledger ----

// ledger is an append-only file, fsynced after every line: "call <id>"
// is written before the owner accepts, "receipt <id>" once it has.
type ledger struct {
	mu   sync.Mutex
	path string
	f    *os.File
}

func openLedger(path string) (*ledger, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	return &ledger{path: path, f: f}, nil
}

func (l *ledger) append(line string) error {
	if _, err := l.f.WriteString(line + "\n"); err != nil {
		return err
	}
	return l.f.Sync()
}

// entries reads the complete lines: calls and receipts by identity.
func readLedger(path string) (calls map[string]int, receipts map[string]bool, err error) {
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return nil, nil, err
	}
	calls, receipts = map[string]int{}, map[string]bool{}
	s := string(b)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	} else {
		s = ""
	}
	for _, line := range strings.Split(s, "\n") {
		kind, id, _ := strings.Cut(line, " ")
		switch kind {
		case "call":
			calls[id]++
		case "receipt":
			receipts[id] = true
		}
	}
	return calls, receipts, nil
}

func receiptOf(identity string) json.RawMessage {
	return json.RawMessage(`{"accepted":"` + identity + `"}`)
}

// owner is idempotent by identity through the ledger, and offers receipt
// lookup by identity (workflow.ReceiptLookup).
type owner struct {
	l      *ledger
	signal func(string)
}

func (o *owner) Plan(ctx context.Context, a workflow.Activation) (*workflow.Plan, error) {
	return &workflow.Plan{SideEffect: a.Effect, Intent: json.RawMessage(`{"do":"` + a.Key.NodeID + `"}`)}, nil
}

func (o *owner) Dispatch(ctx context.Context, p workflow.PreparedDispatch) (json.RawMessage, error) {
	o.l.mu.Lock()
	defer o.l.mu.Unlock()
	_, receipts, err := readLedger(o.l.path)
	if err != nil {
		return nil, err
	}
	if receipts[p.Identity] {
		return receiptOf(p.Identity), nil
	}
	if err := o.l.append("call " + p.Identity); err != nil {
		return nil, err
	}
	o.signal("owner")
	if err := o.l.append("receipt " + p.Identity); err != nil {
		return nil, err
	}
	return receiptOf(p.Identity), nil
}

func (o *owner) LookupReceipt(ctx context.Context, identity string) (json.RawMessage, bool, error) {
	_, receipts, err := readLedger(o.l.path)
	if err != nil || !receipts[identity] {
		return nil, false, err
	}
	return receiptOf(identity), true, nil
}

// signalling wraps a Backend so that the child signals "commit" at the end
// of every successful Update fn, just before the adapter commits.
type signalling struct {
	backend.Backend
	signal func(string)
}

func (b signalling) Update(ctx context.Context, fn func(tx backend.Tx) error) error {
	return b.Backend.Update(ctx, func(tx backend.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		b.signal("commit")
		return nil
	})
}

// ---- the child ----

func child(kind, loc, ledgerPath string) error {
	ctx := context.Background()
	signal := func(phase string) {
		os.Stdout.WriteString(phase + "\n")
		if phase != "commit" {
			time.Sleep(3 * time.Millisecond) // the parent kills inside this phase
		}
	}
	b, err := open(ctx, kind, loc)
	if err != nil {
		return err
	}
	defer b.Close()
	l, err := openLedger(ledgerPath)
	if err != nil {
		return err
	}
	s := workflow.New(signalling{Backend: b, signal: signal})
	o := &owner{l: l, signal: signal}
	fault := func(ctx context.Context, bd workflow.Boundary, p workflow.PreparedDispatch) error {
		switch bd {
		case workflow.IntentCommitted:
			signal("prepared")
		case workflow.OwnerAccepted:
			signal("accepted")
		}
		return nil
	}
	for {
		sum, err := s.Dispatch(ctx, o, workflow.DispatchOptions{Limit: 1, Fault: fault}, time.Now())
		if err != nil {
			return err
		}
		if len(sum.Admitted)+len(sum.Raced)+len(sum.Rejected)+len(sum.Exhausted) == 0 {
			return nil
		}
	}
}

// ---- the parent ----

func TestCrashKills(t *testing.T) {
	kills := 52
	if v := os.Getenv(envKills); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			kills = n
		}
	}
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		crash(t, "sqlite", filepath.Join(t.TempDir(), "store.db"), kills)
	})
	t.Run("bolt", func(t *testing.T) {
		t.Parallel()
		crash(t, "bolt", filepath.Join(t.TempDir(), "store.bolt"), kills)
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		dsn, schema := pgtest.Schema(t)
		crash(t, "postgres", schema+"|"+dsn, kills)
	})
}

type crashRun struct {
	t        *testing.T
	kind     string
	loc      string
	ledger   string
	attempts int // activations
}

func crash(t *testing.T, kind, loc string, kills int) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := &crashRun{t: t, kind: kind, loc: loc, ledger: filepath.Join(t.TempDir(), "ledger"), attempts: 2*kills + 16}
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 1))
	t.Logf("seed %d, %d activations", seed, c.attempts)

	// Setup: one run per activation (an ambiguous mutation stops its run
	// for repair), half of them read-only and half mutating.
	c.withStore(ctx, func(s *workflow.Store) {
		for i := range c.attempts {
			if _, err := s.CreateRun(ctx, workflow.NewRun{ID: key(i).RunID}, time.Now()); err != nil {
				t.Fatal(err)
			}
			eff := workflow.ReadOnly
			if i%2 == 1 {
				eff = workflow.Mutating
			}
			na := workflow.NewActivation{Key: key(i), Input: json.RawMessage(`{}`), Effect: eff}
			if _, err := s.AddActivation(ctx, na, time.Now()); err != nil {
				t.Fatal(err)
			}
		}
	})

	perPhase := map[string]int{}
	done := false
	for k := 0; k < kills+len(phases) && !done; k++ {
		phase := phases[k%len(phases)]
		if k >= kills && perPhase[phase] >= kills/len(phases) {
			continue
		}
		killed, finished := c.runChild(ctx, phase, 1+rng.IntN(2))
		if killed {
			perPhase[phase]++
		}
		done = finished
		c.reconcile(ctx)
	}
	if !done {
		if killed, _ := c.runChild(ctx, "", 0); killed {
			t.Fatal("the final child was killed")
		}
		c.reconcile(ctx)
	}
	total := 0
	for _, p := range phases {
		total += perPhase[p]
		if perPhase[p] < kills/len(phases)-1 {
			t.Errorf("only %d kills in phase %s (want >= %d)", perPhase[p], p, kills/len(phases)-1)
		}
	}
	t.Logf("%s: %d kills %v", kind, total, perPhase)
	c.verify(ctx)
}

func key(i int) workflow.ActivationKey {
	return workflow.ActivationKey{RunID: fmt.Sprintf("crash-%04d", i), NodeID: "node", ActivationID: "a"}
}

func (c *crashRun) withStore(ctx context.Context, f func(s *workflow.Store)) {
	c.t.Helper()
	b, err := open(ctx, c.kind, c.loc)
	if err != nil {
		c.t.Fatalf("reopen: %v", err)
	}
	defer func() {
		if err := b.Close(); err != nil {
			c.t.Errorf("close: %v", err)
		}
	}()
	f(workflow.New(b))
}

// runChild starts a dispatching child and kills it at the nth signal of
// phase ("" never). It reports whether it killed it and whether the child
// finished every activation.
func (c *crashRun) runChild(ctx context.Context, phase string, nth int) (killed, finished bool) {
	t := c.t
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"="+c.kind, envLoc+"="+c.loc, envLedger+"="+c.ledger)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	seen := 0
	for sc.Scan() {
		line := sc.Text()
		if line == "done" {
			finished = true
		}
		if phase != "" && line == phase && !killed {
			if seen++; seen == nth {
				_ = cmd.Process.Signal(syscall.SIGKILL)
				killed = true
			}
		}
	}
	err = cmd.Wait()
	if !killed && err != nil {
		t.Fatalf("child failed: %v\n%s", err, stderr.String())
	}
	return killed, finished
}

// reconcile is the restart path: reopen, reconcile with the ledger's
// receipt lookup, redispatch what may go again. It checks that nothing the
// store reports as never dispatched ever reached the owner, and that only
// recorded handoffs are reported ambiguous.
func (c *crashRun) reconcile(ctx context.Context) {
	t := c.t
	l, err := openLedger(c.ledger)
	if err != nil {
		t.Fatal(err)
	}
	defer l.f.Close()
	o := &owner{l: l, signal: func(string) {}}
	c.withStore(ctx, func(s *workflow.Store) {
		sum, err := s.ReconcilePrepared(ctx, workflow.ReconcileOptions{Limit: workflow.MaxPageLimit, Lookup: o}, time.Now())
		if err != nil {
			t.Fatalf("reconcile: %v", err)
		}
		calls, _, err := readLedger(c.ledger)
		if err != nil {
			t.Fatal(err)
		}
		for _, ref := range sum.NeverDispatched {
			id := ref.Identity
			if calls[id] > 0 {
				t.Errorf("attempt %s reported never dispatched, but the owner was called for it", id)
			}
			if a := attempt(t, ctx, s, id); a.Handoff != workflow.HandoffPending {
				t.Errorf("attempt %s reported never dispatched with handoff %s", id, a.Handoff)
			}
		}
		for _, list := range [][]workflow.AttemptRef{sum.Recovered, sum.RepairRequired, sum.SafeReadOnly} {
			for _, ref := range list {
				if a := attempt(t, ctx, s, ref.Identity); a.Handoff != workflow.HandoffRecorded {
					t.Errorf("attempt %s reported ambiguous or recovered without a recorded handoff (%s)", ref.Identity, a.Handoff)
				}
			}
		}
		if _, err := s.Redispatch(ctx, o, workflow.ReconcileOptions{Limit: workflow.MaxPageLimit}, time.Now()); err != nil {
			t.Fatalf("redispatch: %v", err)
		}
	})
}

func attempt(t *testing.T, ctx context.Context, s *workflow.Store, id string) workflow.Attempt {
	t.Helper()
	a, err := s.GetAttempt(ctx, id)
	if err != nil {
		t.Fatalf("attempt %s: %v", id, err)
	}
	return a
}

// verify checks the final state against the ledger.
func (c *crashRun) verify(ctx context.Context) {
	t := c.t
	calls, receipts, err := readLedger(c.ledger)
	if err != nil {
		t.Fatal(err)
	}
	c.withStore(ctx, func(s *workflow.Store) {
		var atts []workflow.Attempt
		p := workflow.AttemptPage{Limit: workflow.MaxPageLimit}
		for {
			page, err := s.Attempts(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			atts = append(atts, page...)
			if len(page) < p.Limit {
				break
			}
			p.After = &page[len(page)-1]
		}
		byIdentity := map[string]workflow.Attempt{}
		perAct := map[workflow.ActivationKey]int{}
		status := map[workflow.AttemptStatus]int{}
		for _, a := range atts {
			byIdentity[a.Identity] = a
			perAct[a.Key.ActivationKey]++
			status[a.Status]++
			if a.Identity != workflow.DispatchIdentity(a.Key.RunID, a.Key.NodeID, a.Key.ActivationID, a.Key.Attempt) {
				t.Errorf("attempt %v has identity %s", a.Key, a.Identity)
			}
			switch {
			case a.Status == workflow.AttemptStatus("admitted") && string(a.Receipt) == string(receiptOf(a.Identity)):
				if !receipts[a.Identity] {
					t.Errorf("attempt %s admitted with the owner's receipt, which the owner ledger lacks", a.Identity)
				}
			case a.Status == workflow.AttemptStatus("repair_required"):
				if a.SideEffect != workflow.Mutating || a.Handoff != workflow.HandoffRecorded || receipts[a.Identity] {
					t.Errorf("attempt %s is repair_required (effect %s, handoff %s, owner holds receipt %v)", a.Identity, a.SideEffect, a.Handoff, receipts[a.Identity])
				}
			default:
				t.Errorf("attempt %s ended %s (receipt %s)", a.Identity, a.Status, a.Receipt)
			}
			if a.Handoff == workflow.HandoffPending && calls[a.Identity] > 0 {
				t.Errorf("attempt %s has no recorded handoff but the owner was called", a.Identity)
			}
		}
		for i := range c.attempts {
			if n := perAct[key(i)]; n != 1 {
				t.Errorf("activation %v has %d attempts, want exactly 1", key(i), n)
			}
		}
		for id, n := range calls {
			a, ok := byIdentity[id]
			if !ok {
				t.Errorf("the owner ledger names %s, which matches no attempt", id)
				continue
			}
			if a.SideEffect == workflow.Mutating && n > 1 {
				t.Errorf("the owner was called %d times for mutating attempt %s", n, id)
			}
		}
		for id := range receipts {
			if a, ok := byIdentity[id]; !ok || string(a.Receipt) != string(receiptOf(id)) {
				t.Errorf("the owner holds a receipt for %s that was not persisted (status %s)", id, a.Status)
			}
		}
		t.Logf("%d attempts %v; owner ledger: %d identities called, %d receipts", len(atts), status, len(calls), len(receipts))
		if vb, ok := s.Backend().(interface{ Verify(context.Context) error }); ok {
			if err := vb.Verify(ctx); err != nil {
				t.Errorf("Verify: %v", err)
			}
		}
	})
}
