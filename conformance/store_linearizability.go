package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/conformance/internal/model"
	"github.com/wfstore/wfstore/internal/faultseam"
	"github.com/wfstore/wfstore/workflow"
)

// Linearizability of racing admissions: many goroutines (over several
// instances when the adapter is MultiInstance) dispatch, hand off, persist
// receipts, observe failures, consume retries and transfer authority on a
// few runs of one activation each. Every call is recorded with its invoke
// and return times; Dispatch is recorded as the transactions it is made of
// (prepare, handoff, receipt), delimited by the owner's Plan and Dispatch
// calls and the fault hook. Each run's history is checked with porcupine
// against a sequential model of one activation.

func linearizabilityCases() []testCase {
	return []testCase{{
		Name: "racing_admissions_handoffs_receipts_retries_and_transfers_are_linearizable",
		Run: func(e *env) {
			bs := []backend.Backend{e.B}
			if e.Caps.MultiInstance {
				bs = append(bs, e.Open(), e.Open())
			}
			cfg := defaultLinConfig
			cfg.Batch = e.batch
			checkLinearizable(e.T, e.Ctx, bs, cfg)
		},
	}}
}

type linConfig struct {
	Runs, Workers, OpsPerWorker int
	Batch                       int           // the workers' Stores' batch size
	Timeout                     time.Duration // porcupine's check timeout per run
}

var defaultLinConfig = linConfig{Runs: 2, Workers: 8, OpsPerWorker: 25, Timeout: 20 * time.Second}

// reporter is what the check reports through (a *testing.T or the
// self-test's recorder).
type reporter interface {
	Helper()
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
}

var linSeq atomic.Int64

// ---- the sequential model of one activation ----

type linIn struct {
	Op  string // verify, discover, prepare, handoff, receipt, observe, consume, transfer
	Run string
	N   uint32 // attempt (handoff, receipt, observe)
	Gen int64  // the caller's authority generation (verify, prepare, handoff, receipt, transfer)
}

type linOut struct {
	Kind  string // "ok", "raced", "none", or an error class
	N     uint32 // prepare: the attempt; consume: the next attempt
	Sched bool   // observe: a retry was scheduled
}

type linAtt struct {
	St      byte // 'p' prepared, 'a' admitted, 'f' failed
	Handed  bool
	Receipt bool
}

type linState struct {
	Gen       int64
	RunFailed bool
	Act       byte // 'p' pending, 'r' running, 'f' failed
	Last      uint32
	Atts      []linAtt // by attempt number - 1
	Sched     bool     // schedule for failed Last → Last+1
}

const linRetryCap = 100

func (s linState) clone() linState {
	s.Atts = slices.Clone(s.Atts)
	return s
}

func linStep(st any, in, out any) (bool, any) {
	s, i, o := st.(linState), in.(linIn), out.(linOut)
	want, next := linApply(s, i)
	return o == want, next
}

// linApply is the sequential specification: the result of in on s and the
// state afterwards.
func linApply(s linState, in linIn) (linOut, linState) {
	stale := linOut{Kind: string(model.Stale)}
	att := func(n uint32) *linAtt {
		if n == 0 || int(n) > len(s.Atts) {
			return nil
		}
		return &s.Atts[n-1]
	}
	switch in.Op {
	case "verify":
		if s.Gen != in.Gen {
			return stale, s
		}
		return linOut{Kind: "ok"}, s
	case "discover":
		if s.Act == 'p' && !s.RunFailed {
			return linOut{Kind: "found"}, s
		}
		return linOut{Kind: "none"}, s
	case "prepare":
		if s.Gen != in.Gen {
			return stale, s
		}
		if s.Act != 'p' || s.RunFailed {
			return linOut{Kind: "raced"}, s
		}
		n := s.Last + 1
		if n > linRetryCap+1 {
			return linOut{Kind: "rejected"}, s
		}
		s = s.clone()
		s.Act, s.Last = 'r', n
		s.Atts = append(s.Atts, linAtt{St: 'p'})
		return linOut{Kind: "ok", N: n}, s
	case "handoff":
		if s.Gen != in.Gen {
			return stale, s
		}
		a := att(in.N)
		if a == nil || a.St != 'p' || s.Act != 'r' || s.RunFailed {
			return linOut{Kind: string(model.Ineligible)}, s
		}
		if a.Handed {
			return linOut{Kind: string(model.Conflict)}, s
		}
		s = s.clone()
		s.Atts[in.N-1].Handed = true
		return linOut{Kind: "ok"}, s
	case "receipt":
		if s.Gen != in.Gen {
			return stale, s
		}
		a := att(in.N)
		if a == nil {
			return linOut{Kind: string(model.NotFound)}, s
		}
		if a.Receipt {
			if a.St == 'a' {
				return linOut{Kind: "ok"}, s
			}
			return linOut{Kind: string(model.Conflict)}, s
		}
		if a.St != 'p' {
			return linOut{Kind: string(model.Conflict)}, s
		}
		s = s.clone()
		s.Atts[in.N-1].St, s.Atts[in.N-1].Receipt = 'a', true
		return linOut{Kind: "ok"}, s
	case "observe":
		a := att(in.N)
		switch {
		case a == nil:
			return linOut{Kind: string(model.NotFound)}, s
		case a.St == 'f':
			return linOut{Kind: "ok"}, s
		case !a.Receipt:
			return linOut{Kind: string(model.Ineligible)}, s
		}
		s = s.clone()
		s.Atts[in.N-1].St = 'f'
		s.Act, s.RunFailed = 'f', true
		s.Sched = in.N+1 <= linRetryCap
		return linOut{Kind: "ok", Sched: s.Sched}, s
	case "consume":
		if !s.Sched {
			return linOut{Kind: string(model.NotFound)}, s
		}
		s = s.clone()
		s.Sched, s.Act, s.RunFailed = false, 'p', false
		return linOut{Kind: "ok", N: s.Last + 1}, s
	case "transfer":
		if s.Gen != in.Gen {
			return stale, s
		}
		if s.RunFailed {
			return linOut{Kind: string(model.Ineligible)}, s
		}
		s = s.clone()
		s.Gen = in.Gen + 1
		return linOut{Kind: "ok"}, s
	}
	return linOut{Kind: "unknown op"}, s
}

var linModel = porcupine.Model{
	Init:  func() any { return linState{Gen: 1, Act: 'p'} },
	Step:  linStep,
	Equal: func(a, b any) bool { return reflect.DeepEqual(a, b) },
	DescribeOperation: func(in, out any) string {
		i, o := in.(linIn), out.(linOut)
		return fmt.Sprintf("%s(n=%d gen=%d) -> %s n=%d sched=%v", i.Op, i.N, i.Gen, o.Kind, o.N, o.Sched)
	},
	DescribeState: func(st any) string {
		s := st.(linState)
		return fmt.Sprintf("gen=%d run_failed=%v act=%c last=%d atts=%v sched=%v", s.Gen, s.RunFailed, s.Act, s.Last, s.Atts, s.Sched)
	},
}

// ---- recording ----

type linHistory struct {
	mu    sync.Mutex
	start time.Time
	ops   []porcupine.Operation
}

func (h *linHistory) now() int64 { return time.Since(h.start).Nanoseconds() }

func (h *linHistory) add(client int, in linIn, call int64, out linOut) {
	ret := h.now()
	h.mu.Lock()
	h.ops = append(h.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
	h.mu.Unlock()
}

// linWorker is one racing client with its own owner and fault hook, which
// delimit the transactions of its Dispatch calls.
type linWorker struct {
	id   int
	s    *workflow.Store
	h    *linHistory
	rng  *rand.Rand
	runs []*linRun
	clk  *atomic.Int64

	// the transaction of the current Dispatch in flight
	curIn   *linIn
	curCall int64
	started bool
	gen     int64
	run     string
}

type linRun struct {
	id   string
	gen  atomic.Int64  // latest generation a client saw
	last atomic.Uint32 // latest attempt a client saw
}

func (w *linWorker) begin(in linIn) {
	w.curIn, w.curCall, w.started = &in, w.h.now(), true
}

func (w *linWorker) end(out linOut) {
	if w.curIn != nil {
		w.h.add(w.id, *w.curIn, w.curCall, out)
		w.curIn = nil
	}
}

func (w *linWorker) Plan(ctx context.Context, a workflow.Activation) (*workflow.Plan, error) {
	w.begin(linIn{Op: "prepare", Run: w.run, Gen: w.gen})
	return &workflow.Plan{SideEffect: workflow.ReadOnly, Intent: json.RawMessage(`{"do":"x"}`)}, nil
}

func (w *linWorker) Dispatch(ctx context.Context, p workflow.PreparedDispatch) (json.RawMessage, error) {
	w.end(linOut{Kind: "ok"}) // the handoff succeeded
	return ownerReceipt(p.Identity), nil
}

func (w *linWorker) fault(ctx context.Context, b faultseam.Boundary, p workflow.PreparedDispatch) error {
	switch b {
	case faultseam.IntentCommitted:
		w.end(linOut{Kind: "ok", N: p.Attempt})
		w.noteAttempt(p.Attempt)
		w.begin(linIn{Op: "handoff", Run: w.run, N: p.Attempt, Gen: w.gen})
	case faultseam.OwnerAccepted:
		w.begin(linIn{Op: "receipt", Run: w.run, N: p.Attempt, Gen: w.gen})
	case faultseam.ReceiptCommitted:
		w.end(linOut{Kind: "ok"})
	}
	return nil
}

func (w *linWorker) noteAttempt(n uint32) {
	for _, r := range w.runs {
		if r.id == w.run {
			for {
				cur := r.last.Load()
				if n <= cur || r.last.CompareAndSwap(cur, n) {
					return
				}
			}
		}
	}
}

func (w *linWorker) now() time.Time { return ms(1000 + w.clk.Add(1)) }

func linErr(err error) linOut {
	if err == nil {
		return linOut{Kind: "ok"}
	}
	return linOut{Kind: string(errClass(err))}
}

func (w *linWorker) loop(ctx context.Context, n int) {
	for range n {
		if ctx.Err() != nil {
			return
		}
		r := w.runs[w.rng.IntN(len(w.runs))]
		gen := r.gen.Load()
		if w.rng.IntN(10) == 0 {
			gen-- // sometimes act on a stale belief
		}
		gen = max(gen, 1)
		last := r.last.Load()
		if w.rng.IntN(10) == 0 {
			last++
		}
		last = max(last, 1)
		auth := linAuth(gen)
		k := workflow.ActivationKey{RunID: r.id, NodeID: "n", ActivationID: "x"}
		ak := workflow.AttemptKey{ActivationKey: k, Attempt: last}
		identity := workflow.DispatchIdentity(r.id, "n", "x", last)
		switch p := w.rng.IntN(100); {
		case p < 30:
			w.dispatch(ctx, r, gen)
		case p < 45:
			call := w.h.now()
			err := w.s.Engine().Handoff(ctx, ak, auth, w.now())
			w.h.add(w.id, linIn{Op: "handoff", Run: r.id, N: last, Gen: gen}, call, linErr(err))
		case p < 55:
			call := w.h.now()
			err := w.s.Engine().PersistReceipt(ctx, workflow.OwnerReceipt{Key: ak, Receipt: ownerReceipt(identity), Authority: auth}, w.now())
			w.h.add(w.id, linIn{Op: "receipt", Run: r.id, N: last, Gen: gen}, call, linErr(err))
		case p < 70:
			call := w.h.now()
			res, err := w.s.ApplyObservation(ctx, identity, workflow.Observation{Kind: workflow.ObservedRetryableFailure}, w.now())
			out := linErr(err)
			out.Sched = err == nil && res.Schedule != nil
			w.h.add(w.id, linIn{Op: "observe", Run: r.id, N: last}, call, out)
		case p < 90:
			call := w.h.now()
			rq, err := w.s.Engine().ConsumeDueRetry(ctx, k, ms(10_000_000))
			out := linErr(err)
			if err == nil {
				out.N = rq.NextAttempt
			}
			w.h.add(w.id, linIn{Op: "consume", Run: r.id}, call, out)
		default:
			call := w.h.now()
			err := w.s.TransferAuthority(ctx, workflow.AuthorityTransfer{RunID: r.id, Expected: *auth, Replacement: *linAuth(gen + 1)}, w.now())
			w.h.add(w.id, linIn{Op: "transfer", Run: r.id, Gen: gen}, call, linErr(err))
			if err == nil {
				r.gen.CompareAndSwap(gen, gen+1)
			}
		}
	}
}

func (w *linWorker) dispatch(ctx context.Context, r *linRun, gen int64) {
	w.run, w.gen, w.started, w.curIn = r.id, gen, false, nil
	call := w.h.now()
	sum, err := w.s.Dispatch(faultseam.With(ctx, w.fault), w, workflow.DispatchOptions{RunID: r.id, Authority: linAuth(gen), Limit: 1}, w.now())
	// A handoff refused inside Dispatch is reported in the summary, not as
	// an error: a run-state refusal as Rejected, a handoff another caller
	// recorded first as Raced. The handoff operation itself failed with
	// ErrIneligible or ErrConflict.
	handoff := w.curIn != nil && w.curIn.Op == "handoff"
	switch {
	case handoff && err == nil && len(sum.Rejected) > 0:
		w.end(linOut{Kind: string(model.Ineligible)})
	case handoff && err == nil && len(sum.Raced) > 0:
		w.end(linOut{Kind: string(model.Conflict)})
	case w.curIn != nil && err == nil && len(sum.Raced) > 0:
		w.end(linOut{Kind: "raced"})
	case w.curIn != nil && err == nil && len(sum.Rejected) > 0:
		w.end(linOut{Kind: "rejected"})
	case w.curIn != nil:
		w.end(linErr(err))
	case !w.started && err != nil:
		w.h.add(w.id, linIn{Op: "verify", Run: r.id, Gen: gen}, call, linErr(err))
	case !w.started:
		w.h.add(w.id, linIn{Op: "discover", Run: r.id}, call, linOut{Kind: "none"})
	}
}

func linAuth(gen int64) *workflow.Authority {
	return &workflow.Authority{TargetArtifactID: "artifact", DaemonInstanceID: fmt.Sprintf("d%d", gen),
		Generation: gen, FencingToken: fmt.Sprintf("t%d", gen)}
}

// checkLinearizable runs the racing clients over the instances and checks
// every run's history; it reports through t and returns false on a
// violation (or a setup error).
func checkLinearizable(t reporter, ctx context.Context, instances []backend.Backend, cfg linConfig) bool {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	prefix := fmt.Sprintf("lin%d", linSeq.Add(1))
	s0 := workflow.New(instances[0])
	policy := &workflow.RetryPolicy{Version: 1, MaxAttempts: linRetryCap, InitialBackoff: time.Millisecond * 1, BackoffMultiplier: 1,
		MaximumBackoff: time.Millisecond * 1, EligibleFailures: []workflow.FailureKind{workflow.FailureOwnerReportedRetryable}}
	var runs []*linRun
	for i := range cfg.Runs {
		r := &linRun{id: fmt.Sprintf("%s.r%d", prefix, i)}
		r.gen.Store(1)
		if _, err := s0.CreateRun(ctx, workflow.NewRun{ID: r.id, Authority: linAuth(1),
			Limits: workflow.RunLimits{RetryCap: workflow.RetryCap(linRetryCap), NodeExecutionCap: 1000}}, ms(0)); err != nil {
			t.Errorf("linearizability: create run: %v", err)
			return false
		}
		if _, err := s0.AddActivation(ctx, workflow.NewActivation{
			Key:   workflow.ActivationKey{RunID: r.id, NodeID: "n", ActivationID: "x"},
			Input: json.RawMessage(`{}`), Effect: workflow.ReadOnly, Reconciliation: workflow.IdempotentReplay,
			RetryPolicy: policy,
		}, ms(0)); err != nil {
			t.Errorf("linearizability: add activation: %v", err)
			return false
		}
		runs = append(runs, r)
	}
	h := &linHistory{start: time.Now()}
	var clk atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range cfg.Workers {
		w := &linWorker{id: i, s: workflow.New(instances[i%len(instances)], workflow.WithBatchSize(cfg.Batch)), h: h, runs: runs, clk: &clk,
			rng: rand.New(rand.NewPCG(seed, uint64(i)))}
		wg.Go(func() {
			<-start
			w.loop(ctx, cfg.OpsPerWorker)
		})
	}
	close(start)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		t.Errorf("linearizability: %v", err)
		return false
	}
	ok := true
	kinds := map[string]int{}
	for _, r := range runs {
		var part []porcupine.Operation
		for _, o := range h.ops {
			if o.Input.(linIn).Run == r.id {
				part = append(part, o)
				kinds[o.Input.(linIn).Op+"->"+o.Output.(linOut).Kind]++
			}
		}
		res, info := porcupine.CheckOperationsVerbose(linModel, part, cfg.Timeout)
		switch res {
		case porcupine.Ok:
		case porcupine.Unknown:
			t.Logf("linearizability: checking run %s (%d operations) timed out after %v; inconclusive", r.id, len(part), cfg.Timeout)
		default:
			ok = false
			path := filepath.Join(os.TempDir(), fmt.Sprintf("wfstore-linearizability-%s-%d.html", r.id, seed))
			if err := porcupine.VisualizePath(linModel, info, path); err != nil {
				path = "(visualization failed: " + err.Error() + ")"
			}
			t.Errorf("linearizability: the history of run %s is not linearizable (seed %d; visualization %s):\n%s",
				r.id, seed, path, describeHistory(part))
		}
	}
	t.Logf("linearizability: %d operations by %d clients over %d instance(s); outcomes %v", len(h.ops), cfg.Workers, len(instances), kinds)
	return ok
}

func describeHistory(ops []porcupine.Operation) string {
	ops = slices.Clone(ops)
	slices.SortFunc(ops, func(a, b porcupine.Operation) int { return int(a.Call - b.Call) })
	var b strings.Builder
	for _, o := range ops {
		fmt.Fprintf(&b, "  client %d [%8.3fms, %8.3fms] %s\n", o.ClientId, float64(o.Call)/1e6, float64(o.Return)/1e6,
			linModel.DescribeOperation(o.Input, o.Output))
	}
	return b.String()
}
