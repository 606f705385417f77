package crashtest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/internal/faultseam"
	"github.com/wfstore/wfstore/internal/testkit/pgtest"
	"github.com/wfstore/wfstore/workflow"
)

const (
	envChild  = "WFSTORE_CRASH_CHILD" // backend kind; set in the child
	envLoc    = "WFSTORE_CRASH_LOC"
	envLedger = "WFSTORE_CRASH_LEDGER"
	envMode   = "WFSTORE_CRASH_MODE"  // single, batch or batchowner
	envAt     = "WFSTORE_CRASH_AT"    // "phase:n": the child stops at the nth signal of phase
	envBatch  = "WFSTORE_CRASH_BATCH" // batch size, in the batch modes
	envConc   = "WFSTORE_CRASH_CONC"  // owner concurrency, in batch mode
	envPass   = "WFSTORE_CRASH_PASS"  // batches per pass, in the batch modes
	envKills  = "WFSTORE_CRASH_KILLS" // kills per backend and mode (default 50; 20 under -race)
)

// Dispatch modes of the child.
const (
	// modeSingle admits one activation at a time (three transactions each).
	modeSingle = "single"
	// modeBatch admits batches with a plain Owner, called concurrently.
	modeBatch = "batch"
	// modeBatchOwner admits batches with a BatchOwner, which accepts a
	// whole batch in one durable ledger write.
	modeBatchOwner = "batchowner"
)

var modes = []string{modeSingle, modeBatch, modeBatchOwner}

// Phases where the parent kills the child. At every phase but commit the
// child stops at the nth signal and waits to be killed there, so each kill
// lands in its window:
//
//	prepared: intents committed, no handoff recorded (IntentCommitted)
//	handoff:  handoff recorded, the owner called but not yet at work
//	owner:    the owner at work ("call" in its ledger, no receipt yet)
//	accepted: the owner holds the receipt, the store not yet (OwnerAccepted)
//	commit:   at the end of an Update, just before the adapter commits;
//	          the child goes on, so the kill lands in or after the commit
var phases = []string{"prepared", "handoff", "owner", "accepted", "commit"}

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

// owner is idempotent by identity through the ledger, and offers receipt
// lookup by identity (workflow.ReceiptLookup). With refuse set (the batch
// modes of the child) it refuses about one attempt in eight once, without
// doing any work, so that batches carry owner failures next to
// acceptances.
type owner struct {
	l      *Ledger
	signal func(string)
	refuse bool

	mu         sync.Mutex
	refusedBy  map[string]bool // refused by this process, since the last take
	acceptedBy map[string]bool // accepted by this process, since the last take
}

func newOwner(l *Ledger, signal func(string), refuse bool) *owner {
	return &owner{l: l, signal: signal, refuse: refuse, refusedBy: map[string]bool{}, acceptedBy: map[string]bool{}}
}

func (o *owner) Plan(ctx context.Context, a workflow.Activation) (*workflow.Plan, error) {
	return &workflow.Plan{SideEffect: a.Effect, Intent: json.RawMessage(`{"do":"` + a.Key.NodeID + `"}`)}, nil
}

// refuses decides, for an attempt without a receipt, whether to refuse it
// now, and notes the refusal.
func (o *owner) refuses(id string, st LedgerState) bool {
	h := fnv.New32a()
	h.Write([]byte(id))
	if !o.refuse || st.Refused[id] || h.Sum32()%8 != 0 {
		return false
	}
	o.mu.Lock()
	o.refusedBy[id] = true
	o.mu.Unlock()
	return true
}

// accept notes that the owner holds the receipt of id and returns it.
func (o *owner) accept(id string) json.RawMessage {
	o.mu.Lock()
	o.acceptedBy[id] = true
	o.mu.Unlock()
	return ReceiptOf(id)
}

// take returns the identities refused and accepted since the last call.
func (o *owner) take() (refused, accepted map[string]bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	refused, accepted = o.refusedBy, o.acceptedBy
	o.refusedBy, o.acceptedBy = map[string]bool{}, map[string]bool{}
	return refused, accepted
}

func (o *owner) Dispatch(ctx context.Context, p workflow.PreparedDispatch) (json.RawMessage, error) {
	o.signal("handoff")
	if _, err := o.l.Dispatch(p.Identity, o.signal, func(st LedgerState) bool { return o.refuses(p.Identity, st) }); err != nil {
		return nil, err
	}
	return o.accept(p.Identity), nil
}

func (o *owner) LookupReceipt(ctx context.Context, identity string) (json.RawMessage, bool, error) {
	return o.l.LookupReceipt(ctx, identity)
}

// batchOwner accepts a whole batch in one durable ledger write: it records
// the calls (and refusals) of the batch in one write, does the work, then
// records every receipt of the batch in one write.
type batchOwner struct{ *owner }

func (o batchOwner) DispatchBatch(ctx context.Context, ps []workflow.PreparedDispatch) ([]workflow.DispatchResult, error) {
	o.signal("handoff")
	st, err := o.l.Read()
	if err != nil {
		return nil, err
	}
	out := make([]workflow.DispatchResult, len(ps))
	var calls, receipts []string
	for i, p := range ps {
		id := p.Identity
		switch {
		case st.Receipts[id]:
			out[i].Receipt = o.accept(id)
		case o.refuses(id, st):
			calls = append(calls, "refuse "+id)
			out[i].Err = ErrRefused
		default:
			calls = append(calls, "call "+id)
			receipts = append(receipts, "receipt "+id)
		}
	}
	if err := o.l.Append(calls...); err != nil {
		return nil, err
	}
	if len(receipts) > 0 {
		o.signal("owner")
	}
	if err := o.l.Append(receipts...); err != nil {
		return nil, err
	}
	for i, p := range ps {
		if out[i].Receipt == nil && out[i].Err == nil {
			out[i].Receipt = o.accept(p.Identity)
		}
	}
	return out, nil
}

// ---- the child ----

// childConfig is what the parent tells one child.
type childConfig struct {
	mode        string
	phase       string // "" never stops
	nth         int
	batch, conc int
	batches     int // per Dispatch pass
}

func (c childConfig) env() []string {
	return []string{envMode + "=" + c.mode, envAt + "=" + c.phase + ":" + strconv.Itoa(c.nth),
		envBatch + "=" + strconv.Itoa(c.batch), envConc + "=" + strconv.Itoa(c.conc), envPass + "=" + strconv.Itoa(c.batches)}
}

func childConfigFromEnv() (childConfig, error) {
	c := childConfig{mode: os.Getenv(envMode)}
	phase, nth, _ := strings.Cut(os.Getenv(envAt), ":")
	var errs [4]error
	c.phase = phase
	c.nth, errs[0] = strconv.Atoi(nth)
	c.batch, errs[1] = strconv.Atoi(os.Getenv(envBatch))
	c.conc, errs[2] = strconv.Atoi(os.Getenv(envConc))
	c.batches, errs[3] = strconv.Atoi(os.Getenv(envPass))
	return c, errors.Join(errs[:]...)
}

func child(kind, loc, ledgerPath string) error {
	ctx := context.Background()
	cfg, err := childConfigFromEnv()
	if err != nil {
		return err
	}
	var seen atomic.Int64
	signal := func(phase string) {
		if phase != cfg.phase || seen.Add(1) != int64(cfg.nth) {
			return
		}
		os.Stdout.WriteString(phase + "\n")
		if phase != "commit" {
			time.Sleep(time.Hour) // the parent kills inside this phase
		}
	}
	b, err := OpenBackend(ctx, kind, loc)
	if err != nil {
		return err
	}
	defer b.Close()
	l, err := OpenLedger(ledgerPath)
	if err != nil {
		return err
	}
	s := workflow.New(Signalling{Backend: b, Signal: signal})
	o := newOwner(l, signal, cfg.mode != modeSingle)
	var ow workflow.Owner = o
	opts := workflow.DispatchOptions{Limit: 1, BatchSize: 1}
	switch cfg.mode {
	case modeBatch:
		opts = workflow.DispatchOptions{Limit: cfg.batches * cfg.batch, BatchSize: cfg.batch, OwnerConcurrency: cfg.conc}
	case modeBatchOwner:
		opts = workflow.DispatchOptions{Limit: cfg.batches * cfg.batch, BatchSize: cfg.batch}
		ow = batchOwner{o}
	}
	fault := SignalBoundaries(signal)
	for {
		sum, err := s.Dispatch(faultseam.With(ctx, fault), ow, opts, time.Now())
		if err = checkPass(o, sum, err); err != nil {
			return err
		}
		os.Stdout.WriteString("checked\n")
		if len(sum.Admitted)+len(sum.Raced)+len(sum.Rejected)+len(sum.Exhausted)+len(sum.OwnerFailed) == 0 {
			return nil
		}
	}
}

// checkPass checks one Dispatch pass against the owner: the attempts the
// owner refused, and only those, are reported OwnerFailed (the pass's
// error joins their failures and nothing else), and the attempts the owner
// accepted, and only those, are reported admitted, their receipts
// persisted in the same pass, each one in the owner's ledger.
func checkPass(o *owner, sum workflow.DispatchSummary, err error) error {
	refused, accepted := o.take()
	var errs []error
	if err != nil {
		errs = []error{err}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			errs = j.Unwrap()
		}
	}
	if len(errs) != len(sum.OwnerFailed) {
		return fmt.Errorf("pass failed with %d errors for %d owner failures: %w", len(errs), len(sum.OwnerFailed), err)
	}
	failed := map[string]bool{}
	for _, f := range sum.OwnerFailed {
		id := f.Attempt.Identity
		failed[id] = true
		if !refused[id] || !errors.Is(f.Err, workflow.ErrOwner) || !errors.Is(f.Err, ErrRefused) {
			return fmt.Errorf("attempt %s reported owner failed (%v), but the owner did not refuse it", id, f.Err)
		}
	}
	for id := range refused {
		if !failed[id] {
			return fmt.Errorf("the owner refused attempt %s, which the pass does not report owner failed", id)
		}
	}
	st, err := o.l.Read()
	if err != nil {
		return err
	}
	admitted := map[string]bool{}
	for _, a := range sum.Admitted {
		admitted[a.Identity] = true
		if !accepted[a.Identity] || !st.Receipts[a.Identity] {
			return fmt.Errorf("attempt %s reported admitted without the owner's receipt", a.Identity)
		}
	}
	for id := range accepted {
		if !admitted[id] {
			return fmt.Errorf("the owner accepted attempt %s, which the pass does not report admitted", id)
		}
	}
	return nil
}

// ---- the parent ----

func TestCrashKills(t *testing.T) {
	kills := 50
	if raceKills > 0 {
		kills = raceKills
	}
	if v := os.Getenv(envKills); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			kills = n
		}
	}
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			t.Run("sqlite", func(t *testing.T) {
				t.Parallel()
				crash(t, "sqlite", filepath.Join(t.TempDir(), "store.db"), mode, kills)
			})
			t.Run("bolt", func(t *testing.T) {
				t.Parallel()
				crash(t, "bolt", filepath.Join(t.TempDir(), "store.bolt"), mode, kills)
			})
			t.Run("postgres", func(t *testing.T) {
				t.Parallel()
				dsn, schema := pgtest.Schema(t)
				crash(t, "postgres", schema+"|"+withParams(t, dsn, "synchronous_commit", "off"), mode, kills)
			})
		})
	}
}

// withParams returns dsn with the session parameters kv (name, value, ...)
// added. The postgres case sets synchronous_commit off: the kills here end
// the client, never the server, and a commit the server acknowledged
// survives a client's death either way; the test spends its time on kills,
// not on the server's fsyncs.
func withParams(t *testing.T, dsn string, kv ...string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("dsn: %v", err)
	}
	q := u.Query()
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// childLoc returns the location a child opens: for postgres, the DSN names
// the child's sessions (application_name) so that the parent can wait for
// them to end.
func (c *crashRun) childLoc() string {
	if c.kind != "postgres" {
		return c.loc
	}
	schema, dsn, _ := strings.Cut(c.loc, "|")
	return schema + "|" + withParams(c.t, dsn, "application_name", c.appName())
}

func (c *crashRun) appName() string {
	schema, _, _ := strings.Cut(c.loc, "|")
	return "crashchild_" + schema
}

// awaitChildSessions waits until the server has ended every session of the
// killed child. The server may still be running what the child sent before
// it died, a COMMIT say; a restart that recovered while such a transaction
// was still in flight would race with it (the store's guards keep that
// safe, but this test's checks read the state the recovery left).
func (c *crashRun) awaitChildSessions(ctx context.Context) {
	t := c.t
	admin := pgtest.Admin(t)
	start := time.Now()
	for polls := 0; ; polls++ {
		var n int
		if err := admin.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", c.appName()).Scan(&n); err != nil {
			t.Fatalf("child sessions: %v", err)
		}
		switch {
		case n == 0:
			return
		case polls == 0:
			c.lingered++
		case time.Since(start) > time.Minute:
			t.Fatalf("%d sessions of the killed child still open after a minute", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type crashRun struct {
	t           *testing.T
	kind        string
	loc         string
	mode        string
	ledger      string
	activations int             // created so far
	kept        backend.Backend // the parent's postgres backend, kept open
	passes      int             // Dispatch passes the children checked
	lingered    int             // killed children whose postgres sessions outlived them
}

// windows counts the prepared attempts one reconciliation found, by the
// window their child was killed in.
type windows struct {
	intent  int // handoff pending (NeverDispatched)
	handoff int // handoff recorded, owner never at work on it
	owner   int // owner at work, no receipt
	receipt int // owner holds the receipt, the store did not (Recovered)
	refused int // handed off and refused by the owner (no kill needed)
}

func (w *windows) add(o windows) {
	w.intent += o.intent
	w.handoff += o.handoff
	w.owner += o.owner
	w.receipt += o.receipt
	w.refused += o.refused
}

// of returns the count of the window a kill at phase lands in.
func (w windows) of(phase string) int {
	switch phase {
	case "prepared":
		return w.intent
	case "handoff":
		return w.handoff
	case "owner":
		return w.owner
	case "accepted":
		return w.receipt
	}
	return 0
}

// mixed reports whether one reconciliation found attempts of more than one
// window.
func (w windows) mixed() bool {
	n := 0
	for _, c := range []int{w.intent, w.handoff, w.owner, w.receipt} {
		if c > 0 {
			n++
		}
	}
	return n > 1
}

func crash(t *testing.T, kind, loc, mode string, kills int) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	c := &crashRun{t: t, kind: kind, loc: loc, mode: mode, ledger: filepath.Join(t.TempDir(), "ledger")}
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 1))
	// Activations a kill consumes, about: a batch kill lands in the first
	// or the second batch its child admits (see pick).
	perKill := 2
	if mode != modeSingle {
		perKill = 12
	}
	t.Logf("seed %d", seed)
	c.addActivations(ctx, perKill*kills+16)

	perPhase := map[string]int{}
	var seen windows
	mixed, misses := 0, 0
	for k := 0; k < kills+len(phases); k++ {
		phase := phases[k%len(phases)]
		if k >= kills && perPhase[phase] >= kills/len(phases) {
			continue
		}
		cfg := c.pick(rng, phase)
		killed, finished := c.runChild(ctx, cfg)
		w := c.reconcile(ctx)
		seen.add(w)
		if w.mixed() {
			mixed++
		}
		switch {
		case killed:
			perPhase[phase]++
			if phase != "commit" && w.of(phase) == 0 {
				t.Errorf("killed at %+v, but reconciliation found no attempt of that window (%+v)", cfg, w)
			}
		case finished:
			// Out of work before the kill: add some and try again.
			if misses++; misses > 2 {
				t.Fatalf("children finished %d times without reaching %+v", misses, cfg)
			}
			c.addActivations(ctx, 4*perKill+16)
			k--
			continue
		}
		misses = 0
	}
	if killed, _ := c.runChild(ctx, childConfig{mode: mode, batch: 12, conc: 4, batches: 2}); killed {
		t.Fatal("the final child was killed")
	}
	c.reconcile(ctx)
	total := 0
	for _, p := range phases {
		total += perPhase[p]
		if perPhase[p] < kills/len(phases) {
			t.Errorf("only %d kills in phase %s (want >= %d)", perPhase[p], p, kills/len(phases))
		}
	}
	if total < kills {
		t.Errorf("%d kills, want >= %d", total, kills)
	}
	if mode != modeSingle && seen.refused == 0 {
		t.Errorf("no owner refusal in batch mode")
	}
	if mode == modeBatch && mixed == 0 {
		t.Errorf("no kill left one reconciliation attempts in different windows")
	}
	t.Logf("%s/%s: %d kills %v; attempts found per window %+v; %d reconciliations saw several windows; %d passes checked; %d children's sessions outlived them",
		mode, kind, total, perPhase, seen, mixed, c.passes, c.lingered)
	c.verify(ctx)
}

// pick chooses where the next child stops: the nth signal of phase, in the
// batch modes within the first or the second batch the child admits. A
// pass takes one or two batches, so a kill may follow a pass the child
// completed and checked, or land in the second batch of a pass.
func (c *crashRun) pick(rng *rand.Rand, phase string) childConfig {
	cfg := childConfig{mode: c.mode, phase: phase, batch: 8 + rng.IntN(5), conc: 1 + rng.IntN(4), batches: 1 + rng.IntN(2)}
	perAttempt := phase == "prepared" || phase == "accepted" ||
		(c.mode == modeBatch && (phase == "handoff" || phase == "owner"))
	switch {
	case c.mode == modeSingle:
		cfg.nth = 1 + rng.IntN(2)
	case phase == "commit":
		cfg.nth = 1 + rng.IntN(4)
	case perAttempt:
		cfg.nth = 1 + rng.IntN(cfg.batch+cfg.batch/4)
	default: // once per batch
		cfg.nth = 1 + rng.IntN(2)
	}
	return cfg
}

func key(i int) workflow.ActivationKey {
	return workflow.ActivationKey{RunID: fmt.Sprintf("crash-%05d", i), NodeID: "node", ActivationID: "a"}
}

// addActivations adds n activations, one run each (an ambiguous mutation
// stops its run for repair), alternately read-only and mutating. Several
// writers add them at once, which group commit (or the server) absorbs.
func (c *crashRun) addActivations(ctx context.Context, n int) {
	t := c.t
	from := c.activations
	c.withStore(ctx, func(s *workflow.Store) {
		const writers = 8
		errs := make([]error, writers)
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for i := from + w; i < from+n && errs[w] == nil; i += writers {
					errs[w] = addActivation(ctx, s, i)
				}
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("add activations: %v", err)
		}
	})
	c.activations += n
}

func addActivation(ctx context.Context, s *workflow.Store, i int) error {
	if _, err := s.CreateRun(ctx, workflow.NewRun{ID: key(i).RunID}, time.Now()); err != nil {
		return err
	}
	eff := workflow.ReadOnly
	if i%2 == 1 {
		eff = workflow.Mutating
	}
	_, err := s.AddActivation(ctx, workflow.NewActivation{Key: key(i), Input: json.RawMessage(`{}`), Effect: eff}, time.Now())
	return err
}

// withStore runs f on a new Store over the backend, reopened for the
// file stores (a child needs bolt's file lock, and a restart reopens the
// file). A postgres backend is only a client of the server: it is opened
// once and kept, and every call still builds a new Store over it.
func (c *crashRun) withStore(ctx context.Context, f func(s *workflow.Store)) {
	c.t.Helper()
	if c.kept != nil {
		f(workflow.New(c.kept))
		return
	}
	b, err := OpenBackend(ctx, c.kind, c.loc)
	if err != nil {
		c.t.Fatalf("reopen: %v", err)
	}
	if c.kind == "postgres" {
		c.kept = b
		c.t.Cleanup(func() {
			if err := b.Close(); err != nil {
				c.t.Errorf("close: %v", err)
			}
		})
		f(workflow.New(b))
		return
	}
	defer func() {
		if err := b.Close(); err != nil {
			c.t.Errorf("close: %v", err)
		}
	}()
	f(workflow.New(b))
}

// runChild starts a dispatching child and kills it when it reports the
// phase it was told to stop at. It reports whether it killed it and
// whether the child finished every activation.
func (c *crashRun) runChild(ctx context.Context, cfg childConfig) (killed, finished bool) {
	t := c.t
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"="+c.kind, envLoc+"="+c.childLoc(), envLedger+"="+c.ledger)
	cmd.Env = append(cmd.Env, cfg.env()...)
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
	for sc.Scan() {
		switch line := sc.Text(); {
		case line == "done":
			finished = true
		case line == "checked":
			c.passes++
		case cfg.phase != "" && line == cfg.phase && !killed:
			_ = cmd.Process.Signal(syscall.SIGKILL)
			killed = true
		}
	}
	err = cmd.Wait()
	if !killed && err != nil {
		t.Fatalf("child %+v failed: %v\n%s", cfg, err, stderr.String())
	}
	if c.kind == "postgres" {
		c.awaitChildSessions(ctx)
	}
	return killed, finished
}

// reconcile is the restart path: reopen, reconcile with the ledger's
// receipt lookup, redispatch what may go again. It checks that nothing the
// store reports as never dispatched ever reached the owner, and that only
// recorded handoffs are reported ambiguous or recovered, and returns the
// windows of the attempts it found.
func (c *crashRun) reconcile(ctx context.Context) windows {
	t := c.t
	l, err := OpenLedger(c.ledger)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	o := newOwner(l, func(string) {}, false)
	var w windows
	c.withStore(ctx, func(s *workflow.Store) {
		sum, err := s.Engine().ReconcilePrepared(ctx, workflow.ReconcileOptions{Limit: workflow.MaxPageLimit, Lookup: o}, time.Now())
		if err != nil {
			t.Fatalf("reconcile: %v", err)
		}
		st, err := ReadLedger(c.ledger)
		if err != nil {
			t.Fatal(err)
		}
		for _, ref := range sum.NeverDispatched {
			id := ref.Identity
			if st.Calls[id] > 0 || st.Refused[id] {
				t.Errorf("attempt %s reported never dispatched, but the owner was called for it", id)
			}
			if a := attempt(t, ctx, s, id); a.Handoff != workflow.HandoffPending {
				t.Errorf("attempt %s reported never dispatched with handoff %s", id, a.Handoff)
			}
			w.intent++
		}
		for _, ref := range sum.Recovered {
			if !st.Receipts[ref.Identity] {
				t.Errorf("attempt %s recovered without the owner's receipt", ref.Identity)
			}
			w.receipt++
		}
		for _, list := range [][]workflow.AttemptRef{sum.Recovered, sum.RepairRequired, sum.SafeReadOnly} {
			for _, ref := range list {
				if a := attempt(t, ctx, s, ref.Identity); a.Handoff != workflow.HandoffRecorded {
					t.Errorf("attempt %s reported ambiguous or recovered without a recorded handoff (%s)", ref.Identity, a.Handoff)
				}
			}
		}
		for _, list := range [][]workflow.AttemptRef{sum.RepairRequired, sum.SafeReadOnly} {
			for _, ref := range list {
				switch id := ref.Identity; {
				case st.Receipts[id]:
					t.Errorf("attempt %s reported ambiguous, but the owner holds its receipt", id)
				case st.Refused[id]:
					w.refused++
				case st.Calls[id] > 0:
					w.owner++
				default:
					w.handoff++
				}
			}
		}
		if _, err := s.Engine().Redispatch(ctx, o, workflow.ReconcileOptions{Limit: workflow.MaxPageLimit}, time.Now()); err != nil {
			t.Fatalf("redispatch: %v", err)
		}
	})
	return w
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
	st, err := ReadLedger(c.ledger)
	if err != nil {
		t.Fatal(err)
	}
	calls, receipts := st.Calls, st.Receipts
	c.withStore(ctx, func(s *workflow.Store) {
		atts, err := AllAttempts(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		status := map[workflow.AttemptStatus]int{}
		for _, a := range atts {
			status[a.Status]++
			if a.Identity != workflow.DispatchIdentity(a.Key.RunID, a.Key.NodeID, a.Key.ActivationID, a.Key.Attempt) {
				t.Errorf("attempt %v has identity %s", a.Key, a.Identity)
			}
			switch {
			case a.Status == workflow.AttemptStatus("admitted") && string(a.Receipt) == string(ReceiptOf(a.Identity)):
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
			if a.Handoff == workflow.HandoffPending && (calls[a.Identity] > 0 || st.Refused[a.Identity]) {
				t.Errorf("attempt %s has no recorded handoff but the owner was called", a.Identity)
			}
		}
		keys := make([]workflow.ActivationKey, c.activations)
		for i := range keys {
			keys[i] = key(i)
		}
		for _, p := range LedgerProblems(atts, st, keys) {
			t.Error(p)
		}
		t.Logf("%d attempts %v; owner ledger: %d identities called, %d receipts, %d refusals", len(atts), status, len(calls), len(receipts), len(st.Refused))
		if vb, ok := s.Engine().Backend().(interface{ Verify(context.Context) error }); ok {
			if err := vb.Verify(ctx); err != nil {
				t.Errorf("Verify: %v", err)
			}
		}
	})
}
