package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"pgregory.net/rapid"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/conformance/internal/model"
	"github.com/wfstore/wfstore/workflow"
)

// The model tier: random operation sequences run on the adapter (through
// workflow.Store) and on the reference model (conformance/internal/model);
// every result, its error class and a digest of the durable state must
// agree after every step.
// rapid shrinks a failing sequence and prints it with the seed. One store
// serves every sequence of a case; each sequence uses fresh run ids.

// envModelSteps sets the total number of model steps per adapter (long runs).
const envModelSteps = "WFSTORE_MODEL_STEPS"

// defaultModelSteps is the default total per adapter.
const defaultModelSteps = 1000

func modelCases(batchTier bool) []testCase {
	if batchTier {
		return nil
	}
	return []testCase{{
		Name: "model_recorded_sequences_match_the_reference_model",
		Run: func(e *env) {
			replayModel(e.T, e.Ctx, e.B)
		},
	}, {
		Name: "model_random_sequences_match_the_reference_model",
		Run: func(e *env) {
			checkModel(e.T, e.Ctx, e.B, modelSteps(), false)
		},
	}, {
		// The differential check of batch mode: the same random operations,
		// with every Dispatch in batch mode on the adapter and in the
		// model's batch mode, whose decisions are one-at-a-time's taken
		// step by step over the batch. Owners alternate between a plain
		// Owner called concurrently and a BatchOwner.
		Name: "model_random_sequences_in_batch_mode_match_the_reference_model",
		Run: func(e *env) {
			checkModel(e.T, e.Ctx, e.B, modelSteps()/2, true)
		},
	}}
}

func modelSteps() int {
	if v := os.Getenv(envModelSteps); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			return n
		}
	}
	return defaultModelSteps
}

// rapidChecks is the number of sequences rapid.Check will run (its
// -rapid.checks flag, divided by 5 under -short as rapid does).
func rapidChecks() int {
	n := 100
	if f := flag.Lookup("rapid.checks"); f != nil {
		if v, err := strconv.Atoi(f.Value.String()); err == nil && v > 0 {
			n = v
		}
	}
	if testing.Short() {
		n = max(n/5, 1)
	}
	return n
}

var modelSeq atomic.Int64

// checkModel runs rapid sequences totalling about steps operations against b,
// every Dispatch in batch mode when batch is set. t is a *testing.T or any
// rapid.TB (the self-test passes a recorder).
func checkModel(t rapid.TB, ctx context.Context, b backend.Backend, steps int, batch bool) {
	t.Helper()
	maxLen := max(6, 2*steps/rapidChecks())
	var total atomic.Int64
	defer func() { t.Logf("model tier: %d steps in sequences of up to %d", total.Load(), maxLen) }()
	rapid.Check(t, func(rt *rapid.T) {
		limits := rapid.IntRange(0, len(modelLimits)-1).Draw(rt, "limits")
		n := rapid.IntRange(1, maxLen).Draw(rt, "steps")
		sq := newSequence(ctx, b, fmt.Sprintf("m%d", modelSeq.Add(1)))
		if batch {
			sq.batch = rapid.IntRange(1, 2).Draw(rt, "batch owner") // 1: plain Owner, 2: BatchOwner
		}
		sq.createRun(rt, limits, true)
		gen := opGen()
		for i := range n {
			sq.step(rt, i, gen.Draw(rt, fmt.Sprintf("op%d", i)))
			total.Add(1)
		}
		sq.eventsNameTheirAttempts(rt)
	})
}

// modelRegressions are sequences on which the random search once found
// the model and a Store disagreeing: every adapter replays each of them.
var modelRegressions = []struct {
	name   string
	limits int
	ops    []op
}{{
	// A fail-fast group of one is retired when its member fails; an
	// explicit retry of that member is refused (ineligible) and changes
	// nothing: the member stays failed.
	name:   "a refused retry of a retired group's member",
	limits: 1,
	ops: []op{
		{K: opAddAct}, {K: opDispatch}, {K: opAddFanOut, D: 1}, {K: opObserve, D: 2},
		{K: opDispatch, A: 5, B: 1, D: 2}, {K: opObserve, A: 1, B: 5, C: 1}, {K: opRetryFailed, A: 5, C: 2, D: 1},
	},
}}

// replayModel runs every recorded sequence once against b, comparing
// results and durable state with the model after every step as the random
// search does.
func replayModel(t *testing.T, ctx context.Context, b backend.Backend) {
	t.Helper()
	for _, r := range modelRegressions {
		var once atomic.Bool
		rapid.Check(t, func(rt *rapid.T) {
			if once.Swap(true) {
				return // the sequence is fixed: one run of it is the check
			}
			sq := newSequence(ctx, b, fmt.Sprintf("m%d", modelSeq.Add(1)))
			sq.createRun(rt, r.limits, true)
			for i, o := range r.ops {
				sq.step(rt, i, o)
			}
			sq.eventsNameTheirAttempts(rt)
			rt.Logf("replayed %q: %d steps", r.name, len(r.ops))
		})
	}
}

// sequence is one random operation sequence: the Store over the adapter
// and the model side by side, with the runs, activations and attempts its
// operations address by index.
type sequence struct {
	ctx    context.Context
	s      *workflow.Store
	b      backend.Backend
	m      *model.Model
	o      *modelOwner
	prefix string
	runs   []string
	acts   []model.ActivationKey
	atts   []model.AttemptKey
	seen   map[model.AttemptKey]bool
	now    int64 // ms after t0
	// batch, when set, puts every Dispatch in batch mode: 1 with the plain
	// owner called concurrently, 2 with the owner as a BatchOwner.
	batch int
}

func newSequence(ctx context.Context, b backend.Backend, prefix string) *sequence {
	f := model.Funcs{
		Identity: workflow.DispatchIdentity,
		ChildID: func(root, parent, act string, n uint32, target string) string {
			return workflow.ChildRunID(root, parent, act, n, []byte(target))
		},
		MemberID: workflow.FanOutMemberID,
	}
	return &sequence{ctx: ctx, s: workflow.New(b), b: b, m: model.New(f), o: newModelOwner(), prefix: prefix,
		seen: map[model.AttemptKey]bool{}}
}

var modelLimits = []model.Limits{
	{NodeExecutionCap: 1000, ConcurrencyCap: 8, CycleCap: 100, RetryCap: 3},
	{NodeExecutionCap: 3, ConcurrencyCap: 1, CycleCap: 100, RetryCap: 1},
	{NodeExecutionCap: 5, ConcurrencyCap: 2, CycleCap: 100, RetryCap: 2},
	{NodeExecutionCap: 4, ConcurrencyCap: 2, CycleCap: 100, RetryCap: 0}, // never retry
	{NodeExecutionCap: 1, ConcurrencyCap: 2, CycleCap: 100, RetryCap: 1}, // exhausts at the second attempt
}

func (sq *sequence) at() int64 { return sq.now }

func (sq *sequence) run(i int) (string, bool) {
	if len(sq.runs) == 0 {
		return "", false
	}
	if i < 4 {
		i = 0 // half the operations go to the first run, so its states get deep
	}
	if i == 7 {
		i = len(sq.runs) - 1 // and some to the newest, often a child run
	}
	return sq.runs[i%len(sq.runs)], true
}

// auth picks an authority argument: 0 none, 1 the run's current one (a
// made-up one when it has none), 2 a stale one.
func (sq *sequence) auth(runID string, opt int) *model.Authority {
	cur := sq.m.Runs[runID].Authority
	switch opt % 3 {
	case 0:
		return nil
	case 1:
		if cur != nil {
			c := *cur
			return &c
		}
		return &model.Authority{Generation: 1, Tag: "made-up"}
	default:
		g := int64(7)
		if cur != nil {
			g = cur.Generation + 5
		}
		return &model.Authority{Generation: g, Tag: "stale"}
	}
}

// fenced picks the authority of a fenced operation: mostly the run's
// current one (nil when it has none), sometimes a stale one (opt 2).
func (sq *sequence) fenced(runID string, opt int) *model.Authority {
	if opt%3 == 2 {
		return sq.auth(runID, 2)
	}
	if cur := sq.m.Runs[runID].Authority; cur != nil {
		c := *cur
		return &c
	}
	return nil
}

func (sq *sequence) createRun(rt *rapid.T, limits int, withAuth bool) {
	id := fmt.Sprintf("%s.r%d", sq.prefix, len(sq.runs))
	l := modelLimits[limits%len(modelLimits)]
	var a *model.Authority
	if withAuth {
		a = &model.Authority{Generation: 1, Tag: "g1"}
	}
	wc, werr := sq.s.CreateRun(sq.ctx, workflow.NewRun{ID: id, Authority: wfAuthority(a), Limits: workflow.RunLimits{
		NodeExecutionCap: l.NodeExecutionCap, ConcurrencyCap: l.ConcurrencyCap, CycleCap: l.CycleCap, RetryCap: workflow.RetryCap(uint32(l.RetryCap))}}, ms(sq.at()))
	mc, merr := sq.m.CreateRun(id, l, a)
	sq.agree(rt, "create_run", fmt.Sprint(wc), werr, fmt.Sprint(mc), merr)
	if merr == model.OK {
		sq.runs = append(sq.runs, id)
	}
}

func (sq *sequence) step(rt *rapid.T, i int, o op) {
	sq.now += 10
	desc := sq.exec(rt, o)
	sq.m.SettleJoins() // the store settles joins in each transaction
	rt.Logf("step %d: %s: %s", i, o, desc)
	sq.addFresh()
	want := sq.m.View(sq.runs)
	got, err := sq.storeView()
	if err != nil {
		rt.Logf("step %d (%s): reading the store: %v", i, o, err)
		rt.Fatalf("reading the store failed")
	}
	if got != want {
		// The failure message stays the same while rapid shrinks (it
		// compares messages); the details go to the log.
		rt.Logf("step %d (%s): durable state differs from the model\n%s", i, o, lineDiff(got, want))
		rt.Fatalf("durable state differs from the model after %s", opNames[o.K])
	}
}

// addFresh makes new attempts addressable by later steps.
func (sq *sequence) addFresh() {
	var fresh []model.AttemptKey
	for k := range sq.m.Attempts {
		if !sq.seen[k] {
			fresh = append(fresh, k)
		}
	}
	slices.SortFunc(fresh, func(a, b model.AttemptKey) int { return strings.Compare(a.String(), b.String()) })
	for _, k := range fresh {
		sq.seen[k] = true
		sq.atts = append(sq.atts, k)
	}
}

// agree compares one result and its error class.
func (sq *sequence) agree(rt *rapid.T, what string, got string, gerr error, want string, werr model.Err) {
	rt.Helper()
	gc := errClass(gerr)
	if gc != werr {
		rt.Logf("%s: store returned error class %q (%v), model %q", what, gc, gerr, werr)
		rt.Fatalf("%s: store error class %s, model %s", what, gc, werr)
	}
	if werr == model.OK && got != want {
		rt.Logf("%s: store returned %s, model %s", what, got, want)
		rt.Fatalf("%s: result differs from the model", what)
	}
}

func errClass(err error) model.Err {
	switch {
	case err == nil:
		return model.OK
	case errors.Is(err, workflow.ErrOwner):
		return model.Owner
	case errors.Is(err, workflow.ErrInvalidInput):
		return model.Invalid
	case errors.Is(err, workflow.ErrNotFound):
		return model.NotFound
	case errors.Is(err, workflow.ErrConflict):
		return model.Conflict
	case errors.Is(err, workflow.ErrIneligible):
		return model.Ineligible
	case errors.Is(err, workflow.ErrStaleAuthority):
		return model.Stale
	case errors.Is(err, workflow.ErrNodeAllowanceExhausted):
		return model.NodeExhausted
	case errors.Is(err, workflow.ErrRootAllowanceExhausted):
		return model.RootExhausted
	case errors.Is(err, workflow.ErrConcurrencyCapacity):
		return model.Capacity
	case errors.Is(err, workflow.ErrResourceConflict):
		return model.Resource
	}
	return model.Err("other: " + err.Error())
}

// eventsNameTheirAttempts checks every event of the sequence's runs that
// carries a dispatch identity: it names its run, node, activation and
// attempt number (failed_attempt on a retry refusal), and those names
// derive that identity, so an event about an attempt reads on its own.
func (sq *sequence) eventsNameTheirAttempts(rt *rapid.T) {
	for _, run := range sq.runs {
		evsPage, err := sq.s.Events(sq.ctx, workflow.EventQuery{RunID: run, Limit: workflow.MaxPageLimit})
		if err != nil {
			rt.Fatalf("events of %s: %v", run, err)
		}
		evs := evsPage.Items
		for _, ev := range evs {
			var p struct {
				RunID         string  `json:"run_id"`
				NodeID        string  `json:"node_id"`
				ActivationID  string  `json:"activation_id"`
				Attempt       *uint32 `json:"attempt"`
				FailedAttempt *uint32 `json:"failed_attempt"`
				Identity      string  `json:"dispatch_identity"`
			}
			if err := json.Unmarshal(ev.Payload, &p); err != nil {
				rt.Fatalf("event %d of %s (%s): %v", ev.Seq, run, ev.Type, err)
			}
			if p.Identity == "" {
				continue
			}
			n := p.Attempt
			if n == nil {
				n = p.FailedAttempt
			}
			if p.RunID != run || n == nil || workflow.DispatchIdentity(p.RunID, p.NodeID, p.ActivationID, *n) != p.Identity {
				rt.Fatalf("event %d of %s (%s) does not name its attempt: %s", ev.Seq, run, ev.Type, ev.Payload)
			}
		}
	}
}
