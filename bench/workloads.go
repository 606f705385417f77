package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/internal/faultseam"
	"github.com/wfstore/wfstore/workflow"
)

// Workload names, as they appear in benchmark names, tables and JSON.
const (
	WBare       = "bare"
	WRaw        = "raw"
	WSequential = "sequential"
	WParallel   = "parallel"
	WRacing     = "racing"
	WGrowth     = "growth"
	WRetry      = "retry"

	// Batch mode (DispatchOptions.BatchSize = batchSize).
	WBatch         = "batch"          // one dispatcher over a backlog
	WBatchParallel = "batch-parallel" // Workers dispatchers, each on its own runs
	WRacingBatch   = "racing-batch"   // Workers dispatchers on the same backlog
	// Workers dispatchers on the same activations, each through a Store of
	// its own on the one Backend, as separate processes would be: the
	// in-process claims that spread the dispatchers of one Store do not
	// apply, so only the prepare transaction keeps them apart.
	WRacingStores      = "racing-stores"
	WRacingStoresBatch = "racing-stores-batch"
)

// Workloads lists every workload in report order.
var Workloads = []string{WBare, WRaw, WSequential, WBatch, WParallel, WBatchParallel,
	WRacing, WRacingBatch, WRacingStores, WRacingStoresBatch, WGrowth, WRetry}

// batchWorkloads are the workloads that admit in batch mode; they run
// Config.BatchN admissions each.
var batchWorkloads = []string{WBatch, WBatchParallel, WRacingBatch, WRacingStoresBatch}

// isBatch reports whether workload w admits in batch mode.
func isBatch(w string) bool { return slices.Contains(batchWorkloads, w) }

// dispatchLimit is the discovery batch of one Dispatch call.
const dispatchLimit = 100

// batchSize is the BatchSize of the batch-mode workloads: one pass of
// dispatchLimit activations is one batch.
const batchSize = 100

// bareP (1): one tiny durable write transaction per operation.
type bareP struct {
	env  *Env
	next int64
}

func (p *bareP) run(ctx context.Context, k int, rec *recorder) error {
	for range k {
		t := time.Now()
		if err := p.env.bare(ctx, p.next); err != nil {
			return fmt.Errorf("bare commit: %w", err)
		}
		p.next++
		rec.add(time.Since(t))
	}
	return nil
}

// rawP (2): admissions written by the hand-coded transactions of raw.go.
type rawP struct {
	env  *Env
	keys []workflow.ActivationKey
	next int
}

func newRaw(ctx context.Context, env *Env, n int) (*rawP, error) {
	keys, err := seedRuns(ctx, env, "raw", n, perRun, nil, time.Now())
	return &rawP{env: env, keys: keys}, err
}

func (p *rawP) run(ctx context.Context, k int, rec *recorder) error {
	for range k {
		if p.next >= len(p.keys) {
			return errors.New("raw: no seeded activation left")
		}
		t := time.Now()
		if err := rawAdmit(ctx, p.env.Backend, backend.ActivationKey(p.keys[p.next]), time.Now()); err != nil {
			return fmt.Errorf("raw admission: %w", err)
		}
		p.next++
		rec.add(time.Since(t))
	}
	return nil
}

// seqP (3): one dispatcher admitting through workflow.Store.Dispatch.
type seqP struct {
	env   *Env
	runID string // restrict discovery to one run ("" = all)
	owner noopOwner
}

func newSequential(ctx context.Context, env *Env, prefix string, n int) (*seqP, error) {
	_, err := seedRuns(ctx, env, prefix, n, perRun, nil, time.Now())
	return &seqP{env: env}, err
}

func (p *seqP) run(ctx context.Context, k int, rec *recorder) error {
	n, err := dispatchN(ctx, p.env.Store, &p.owner, rec, p.runID, k, 0)
	if err == nil && n < k {
		err = fmt.Errorf("sequential: admitted %d of %d: no pending work left", n, k)
	}
	return err
}

// batchP (3b): one dispatcher admitting a pre-seeded backlog in batch
// mode, one batch of batchSize per Dispatch call.
type batchP struct {
	env   *Env
	owner noopOwner
}

func newBatch(ctx context.Context, env *Env, prefix string, n int) (*batchP, error) {
	_, err := seedRuns(ctx, env, prefix, n, perRun, nil, time.Now())
	return &batchP{env: env}, err
}

func (p *batchP) run(ctx context.Context, k int, rec *recorder) error {
	n, err := dispatchN(ctx, p.env.Store, &p.owner, rec, "", k, batchSize)
	if err == nil && n < k {
		err = fmt.Errorf("batch: admitted %d of %d: no pending work left", n, k)
	}
	return err
}

// dispatchN calls Dispatch until k activations are admitted or discovery
// finds nothing more; it returns how many it admitted. batch is the
// BatchSize (0: one activation at a time).
func dispatchN(ctx context.Context, s *workflow.Store, o *noopOwner, rec *recorder, runID string, k, batch int) (int, error) {
	o.rec = rec
	admitted := 0
	for admitted < k {
		sum, err := s.Dispatch(faultseam.With(ctx, o.fault), o, workflow.DispatchOptions{RunID: runID, Limit: min(dispatchLimit, k-admitted),
			BatchSize: batch}, time.Now())
		admitted += len(sum.Admitted)
		if err != nil {
			return admitted, err
		}
		if len(sum.Admitted) == 0 {
			break
		}
	}
	return admitted, nil
}

// parallelP (4): workers dispatchers, each admitting only its own runs,
// one activation at a time or (batch > 1) in batch mode, one run per pass.
type parallelP struct {
	env     *Env
	workers int
	batch   int
	runs    [][]string // per worker
}

func newParallel(ctx context.Context, env *Env, n, workers, batch int) (*parallelP, error) {
	keys, err := seedRuns(ctx, env, "par", n, perRun, nil, time.Now())
	if err != nil {
		return nil, err
	}
	p := &parallelP{env: env, workers: workers, batch: batch, runs: make([][]string, workers)}
	seen := map[string]bool{}
	w := 0
	for _, k := range keys {
		if !seen[k.RunID] {
			seen[k.RunID] = true
			p.runs[w%workers] = append(p.runs[w%workers], k.RunID)
			w++
		}
	}
	return p, nil
}

func (p *parallelP) run(ctx context.Context, _ int, rec *recorder) error {
	recs := make([]recorder, p.workers)
	for w := range recs {
		recs[w].tick = rec.tick
	}
	errs := make([]error, p.workers)
	var wg sync.WaitGroup
	for w := range p.workers {
		wg.Go(func() {
			o := &noopOwner{}
			for _, runID := range p.runs[w] {
				if _, err := dispatchN(ctx, p.env.Store, o, &recs[w], runID, perRun, p.batch); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	for w := range recs {
		rec.merge(&recs[w])
	}
	return errors.Join(errs...)
}

// racingP (5): workers dispatchers on the same activations, sharing the
// env's Store (its passes claim disjoint work) or (stores) each through a
// Store of its own on the same Backend, one activation at a time or
// (batch > 1) in batch mode. Every owner call is counted per identity;
// afterwards each activation must have exactly one attempt and each
// identity exactly one owner call.
type racingP struct {
	env     *Env
	workers int
	batch   int
	stores  bool
	keys    []workflow.ActivationKey
	calls   callCounter
	raced   int
	dups    int
}

func newRacing(ctx context.Context, env *Env, n, workers, batch int, stores bool) (*racingP, error) {
	keys, err := seedRuns(ctx, env, "race", n, perRun, nil, time.Now())
	return &racingP{env: env, workers: workers, batch: batch, stores: stores, keys: keys}, err
}

// racingIdle is how long a racing dispatcher looks for work while no
// dispatcher admits anything before it gives up.
const racingIdle = 10 * time.Second

// racingLimit is smaller than dispatchLimit so that dispatchers keep
// meeting on the same activations instead of splitting long batches.
const racingLimit = 10

func (p *racingP) run(ctx context.Context, _ int, rec *recorder) error {
	recs := make([]recorder, p.workers)
	for w := range recs {
		recs[w].tick = rec.tick
	}
	raced := make([]int, p.workers)
	errs := make([]error, p.workers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	limit := racingLimit
	if p.batch > 1 {
		limit = dispatchLimit
	}
	// Every dispatcher keeps going until all the work is admitted. A pass
	// that finds nothing (what is left is claimed by passes of the same
	// Store, in flight) waits a millisecond and looks again, as a
	// dispatcher polling for work would; it gives up once no dispatcher
	// has admitted anything for racingIdle (check then reports what is
	// missing).
	var left, progress atomic.Int64
	left.Store(int64(len(p.keys)))
	progress.Store(time.Now().UnixNano())
	for w := range p.workers {
		s := p.env.Store
		if p.stores {
			s = workflow.New(p.env.Backend)
		}
		wg.Go(func() {
			o := &noopOwner{rec: &recs[w], calls: &p.calls}
			<-start
			for left.Load() > 0 {
				sum, err := s.Dispatch(faultseam.With(ctx, o.fault), o, workflow.DispatchOptions{Limit: limit, BatchSize: p.batch}, time.Now())
				raced[w] += len(sum.Raced)
				if n := len(sum.Admitted); n > 0 {
					left.Add(-int64(n))
					progress.Store(time.Now().UnixNano())
				}
				if err != nil {
					errs[w] = err
					return
				}
				if len(sum.Admitted) == 0 && len(sum.Raced) == 0 {
					if time.Since(time.Unix(0, progress.Load())) > racingIdle {
						return
					}
					time.Sleep(time.Millisecond)
				}
			}
		})
	}
	close(start)
	wg.Wait()
	for w := range recs {
		rec.merge(&recs[w])
		p.raced += raced[w]
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return p.check(ctx)
}

// check counts duplicates: owner calls beyond one per identity, plus
// attempts beyond one per activation, and verifies every activation was
// admitted.
func (p *racingP) check(ctx context.Context) error {
	_, distinct, dups := p.calls.duplicates()
	attempts := 0
	runs := map[string]int{}
	for _, k := range p.keys {
		runs[k.RunID]++
	}
	err := p.env.Backend.View(ctx, func(r backend.ReadTx) error {
		for runID := range runs {
			c, err := r.CountAttempts(ctx, backend.AttemptCountQuery{RunID: runID, Limit: 10 * perRun})
			if err != nil {
				return err
			}
			attempts += c
		}
		return nil
	})
	if err != nil {
		return err
	}
	if attempts > len(p.keys) {
		dups += attempts - len(p.keys)
	}
	p.dups = dups
	if distinct != len(p.keys) || attempts < len(p.keys) {
		return fmt.Errorf("racing: %d of %d activations reached the owner, %d attempts", distinct, len(p.keys), attempts)
	}
	return nil
}

// retryP (7): one retry round trip per operation, each activation in a run
// of its own: admit attempt 1, observe a retryable failure (which schedules
// the retry in the same transaction), consume the due schedule, admit
// attempt 2.
type retryP struct {
	env   *Env
	keys  []workflow.ActivationKey
	next  int
	owner noopOwner
	clock time.Time
}

// retryPolicy: an owner-reported retryable failure of an idempotent,
// read-only node is retried after 1 ms.
var retryPolicy = &workflow.RetryPolicy{Version: workflow.RetryPolicyVersion, MaxAttempts: 3,
	EligibleFailures: []workflow.FailureKind{workflow.FailureOwnerReportedRetryable},
	InitialBackoff:   time.Millisecond, BackoffMultiplier: 2, MaximumBackoff: time.Second}

func newRetry(ctx context.Context, env *Env, n int) (*retryP, error) {
	keys, err := seedRuns(ctx, env, "retry", n, 1, retryPolicy, time.Now())
	return &retryP{env: env, keys: keys}, err
}

// now is a clock that never goes backwards, even after skip.
func (p *retryP) now() time.Time {
	t := time.Now()
	if !t.After(p.clock) {
		t = p.clock.Add(time.Millisecond)
	}
	p.clock = t
	return t
}

func (p *retryP) run(ctx context.Context, k int, rec *recorder) error {
	var discard recorder
	p.owner.rec = &discard
	for range k {
		if p.next >= len(p.keys) {
			return errors.New("retry: no seeded activation left")
		}
		key := p.keys[p.next]
		p.next++
		t := time.Now()
		sum, err := p.env.Store.Dispatch(faultseam.With(ctx, p.owner.fault), &p.owner, workflow.DispatchOptions{RunID: key.RunID, Limit: 1}, p.now())
		if err != nil || len(sum.Admitted) != 1 {
			return fmt.Errorf("retry: first admission: %v %+v", err, sum)
		}
		res, err := p.env.Store.ApplyObservation(ctx, sum.Admitted[0].Identity, workflow.Observation{Kind: workflow.ObservedRetryableFailure}, p.now())
		if err != nil || res.Schedule == nil {
			return fmt.Errorf("retry: retryable failure scheduled nothing: %v", err)
		}
		p.clock = res.Schedule.Due
		rq, err := p.env.Store.Engine().ConsumeNextDueRetry(ctx, key.RunID, p.now())
		if err != nil || rq == nil || rq.NextAttempt != 2 {
			return fmt.Errorf("retry: consume: %v %+v", err, rq)
		}
		sum, err = p.env.Store.Dispatch(faultseam.With(ctx, p.owner.fault), &p.owner, workflow.DispatchOptions{RunID: key.RunID, Limit: 1}, p.now())
		if err != nil || len(sum.Admitted) != 1 || sum.Admitted[0].Identity != workflow.DispatchIdentity(key.RunID, key.NodeID, key.ActivationID, 2) {
			return fmt.Errorf("retry: second admission: %v %+v", err, sum)
		}
		rec.add(time.Since(t))
	}
	return nil
}

// newPhase prepares workload name for n operations on env: the one
// definition behind both wfstore bench and go test -bench. Growth is
// sequential admission after history attempts were loaded.
func newPhase(ctx context.Context, env *Env, name string, n, workers, history int) (phase, error) {
	switch name {
	case WBare:
		return &bareP{env: env}, nil
	case WRaw:
		return newRaw(ctx, env, n)
	case WSequential:
		return newSequential(ctx, env, "seq", n)
	case WBatch:
		return newBatch(ctx, env, "batch", n)
	case WParallel:
		return newParallel(ctx, env, n, workers, 0)
	case WBatchParallel:
		return newParallel(ctx, env, n, workers, batchSize)
	case WRacing:
		return newRacing(ctx, env, n, workers, 0, false)
	case WRacingBatch:
		return newRacing(ctx, env, n, workers, batchSize, false)
	case WRacingStores:
		return newRacing(ctx, env, n, workers, 0, true)
	case WRacingStoresBatch:
		return newRacing(ctx, env, n, workers, batchSize, true)
	case WGrowth:
		if _, err := loadHistory(ctx, env, "hist", 0, history, time.Now(), nil); err != nil {
			return nil, err
		}
		return newSequential(ctx, env, "grow", n)
	case WRetry:
		return newRetry(ctx, env, n)
	}
	return nil, fmt.Errorf("bench: unknown workload %q", name)
}
