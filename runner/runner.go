package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/workflow"
)

// ErrInvalidOptions is returned by New for options it cannot run with.
var ErrInvalidOptions = errors.New("runner: invalid options")

// Runner drives one owner over one Store. Create it with New and call
// Run once.
type Runner struct {
	store    *workflow.Store
	owner    workflow.Owner // the shim
	shim     *shim
	lookup   workflow.ReceiptLookup
	observer workflow.Observer
	cfg      config
	log      *slog.Logger
	in       *instruments
	sweep    *sweep
	stuck    *stuckWatch
	work     *workWatch
	timeouts *timeoutWatch
	cancel   *cancels // cancellation state (cancel.go), made on first use
	// rejected holds the runs where a dispatch pass was refused at the
	// handoff, or left attempts unoffered (a stopped batch): such an
	// attempt stays prepared, provably never dispatched, until a
	// redispatch admits it once its run is eligible again.
	rejected map[string]bool
	// doubt holds the attempts of this runner whose admission ended in
	// doubt, by identity, until a re-read resolves them (heal.go).
	doubt map[string]*doubt
	// probing is set after an owner error and cleared by the next
	// admission: while set, a batch-mode pass probes with one attempt
	// first (probe.go).
	probing bool
	// reruns reads the backend's re-run counts, when it keeps them;
	// lastReruns is what the last pass logged.
	reruns     backend.RerunCounter
	lastReruns backend.Reruns
	stopping   atomic.Bool
	ran        atomic.Bool

	total Summary // counters, owned by the Run goroutine
}

// Summary reports what one Run did, and what it leaves for the next start.
type Summary struct {
	Passes int
	// Admitted counts the receipts this runner persisted (dispatch passes
	// and redispatch). A read-only attempt that another runner
	// redispatched during its start-up is admitted once in the store but
	// may count in both runners' summaries.
	Admitted int
	// Raced counts activations another dispatcher took first (or that
	// lost to concurrency capacity or a resource lease).
	Raced           int
	RetriesConsumed int
	Observed        int // observations the receipt-backed pass applied
	Reconciled      workflow.ReconcileSummary
	// Unresolved lists the attempts handed to the owner whose admission
	// this runner did not see (an owner error, or the drain timeout cut
	// the call short). Each stays prepared in the store and is recovered
	// by the next start's reconciliation.
	Unresolved []workflow.AttemptRef
	// Stuck lists the attempts the latest stuck-work scan found (and those
	// the scan in progress found since): attempts that had not moved for
	// the stuck age (WithStuckCheck), whatever runner handed them off.
	// They are unresolved too.
	Stuck []workflow.StuckAttempt
	// TimedOut lists the attempts this runner settled as timed out.
	TimedOut []workflow.AttemptRef
	// DrainExpired: the drain timeout passed with owner calls in flight.
	DrainExpired bool
}

// New returns a Runner of owner over store. A nil store or owner, or an
// option out of range, fails with ErrInvalidOptions.
func New(store *workflow.Store, owner workflow.Owner, opts ...Option) (*Runner, error) {
	if store == nil || owner == nil {
		return nil, fmt.Errorf("%w: store and owner are required", ErrInvalidOptions)
	}
	cfg := config{
		clock: SystemClock(), minPoll: DefaultMinPoll, maxPoll: DefaultMaxPoll, jitter: DefaultJitter,
		rand: rand.Float64, retriesPerPass: DefaultRetriesPerPass, runsPerPass: DefaultRunsPerPass,
		drain: DefaultDrainTimeout, stuckAge: DefaultStuckAge, checkEvery: DefaultCheckInterval,
		attemptTimeout: DefaultAttemptTimeout, cancelTimeout: DefaultCancelTimeout, workEvery: DefaultWorkMetricsInterval,
	}
	for _, o := range opts {
		o(&cfg)
	}
	switch {
	case cfg.minPoll <= 0 || cfg.maxPoll < cfg.minPoll:
		return nil, fmt.Errorf("%w: poll interval needs 0 < min <= max", ErrInvalidOptions)
	case cfg.jitter < 0 || cfg.jitter > 1:
		return nil, fmt.Errorf("%w: jitter must be 0 to 1", ErrInvalidOptions)
	case cfg.retriesPerPass < 1:
		return nil, fmt.Errorf("%w: retries per pass must be positive", ErrInvalidOptions)
	case cfg.runsPerPass < 1 || cfg.runsPerPass > workflow.MaxPageLimit:
		return nil, fmt.Errorf("%w: runs per pass must be 1 to %d", ErrInvalidOptions, workflow.MaxPageLimit)
	case cfg.drain < 0:
		return nil, fmt.Errorf("%w: drain timeout must not be negative", ErrInvalidOptions)
	case cfg.authority != nil && cfg.runID == "":
		return nil, fmt.Errorf("%w: an authority needs a run id", ErrInvalidOptions)
	case cfg.clock == nil:
		return nil, fmt.Errorf("%w: clock is nil", ErrInvalidOptions)
	case cfg.stuckAge < time.Millisecond || cfg.checkEvery < 0:
		return nil, fmt.Errorf("%w: stuck age must be at least 1ms and the check interval not negative", ErrInvalidOptions)
	case cfg.attemptTimeout != 0 && (cfg.attemptTimeout < workflow.MinAttemptTimeout || cfg.attemptTimeout > workflow.MaxAttemptTimeout):
		return nil, fmt.Errorf("%w: attempt timeout must be 0 or %v to %v", ErrInvalidOptions, workflow.MinAttemptTimeout, workflow.MaxAttemptTimeout)
	case cfg.workEvery < 0 || cfg.workBound < 0 || cfg.workBound > workflow.MaxWorkBound:
		return nil, fmt.Errorf("%w: work metrics interval must not be negative and the bound 0 to %d", ErrInvalidOptions, workflow.MaxWorkBound)
	case cfg.cancelTimeout <= 0:
		return nil, fmt.Errorf("%w: cancel timeout must be positive", ErrInvalidOptions)
	}
	if cfg.logger == nil {
		cfg.logger = slog.New(slog.DiscardHandler)
	}
	in, err := newInstruments(cfg.meters, cfg.tracers, store.Engine().Backend())
	if err != nil {
		return nil, fmt.Errorf("runner: instruments: %w", err)
	}
	r := &Runner{store: store, cfg: cfg, log: cfg.logger, in: in, sweep: newSweep(cfg.runID), rejected: map[string]bool{}}
	if r.work, err = newWorkWatch(cfg.workEvery, cfg.workBound, cfg.meters); err != nil {
		return nil, fmt.Errorf("runner: instruments: %w", err)
	}
	if r.stuck, err = newStuckWatch(cfg.stuckAge, cfg.checkEvery, cfg.meters); err != nil {
		return nil, fmt.Errorf("runner: instruments: %w", err)
	}
	c, _ := owner.(canceller)
	if r.timeouts, err = newTimeoutWatch(cfg.attemptTimeout, cfg.checkEvery, cfg.cancelTimeout, c, cfg.meters); err != nil {
		return nil, fmt.Errorf("runner: instruments: %w", err)
	}
	if rc, ok := store.Engine().Backend().(backend.RerunCounter); ok {
		r.reruns, r.lastReruns = rc, rc.Reruns()
	}
	r.shim = &shim{owner: owner, clock: cfg.clock, in: in, spans: newAttemptSpans(cfg.tracers), stopping: &r.stopping, inFlight: map[string]workflow.AttemptRef{},
		planned: map[string]workflow.AttemptRef{}, answers: map[string]answer{}}
	r.doubt = map[string]*doubt{}
	r.owner = r.shim.wrap()
	if l, ok := owner.(workflow.ReceiptLookup); ok {
		r.lookup = timedLookup{r.shim, l}
	}
	obs := cfg.observer
	if obs == nil && !cfg.noObserver {
		obs, _ = owner.(workflow.Observer)
	}
	if obs != nil {
		r.observer = timedObserver{r.shim, obs}
	}
	if cfg.authority != nil {
		a := *cfg.authority
		r.cfg.authority = &a
	}
	return r, nil
}

// Run recovers, then runs passes until ctx is cancelled or an error that
// cannot heal occurs. After a cancellation it drains (see the package
// documentation) and returns the summary with a nil error; otherwise it
// returns the error that stopped it (an owned runner whose authority was
// replaced: one matching workflow.ErrStaleAuthority). Run may be called
// once.
func (r *Runner) Run(ctx context.Context) (Summary, error) {
	if !r.ran.CompareAndSwap(false, true) {
		return Summary{}, fmt.Errorf("%w: Run called twice", ErrInvalidOptions)
	}
	// Store calls run under work, which outlives ctx by the drain timeout.
	work, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	done := make(chan struct{})
	var drainExpired atomic.Bool
	var drainWG sync.WaitGroup
	drainWG.Add(1)
	stop := context.AfterFunc(ctx, func() {
		defer drainWG.Done()
		r.stopping.Store(true)
		r.log.LogAttrs(work, slog.LevelInfo, "runner stopping", slog.Duration("drain_timeout", r.cfg.drain))
		t := r.cfg.clock.NewTimer(r.cfg.drain)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C():
			drainExpired.Store(true)
			cancelWork()
		}
	})
	defer func() {
		close(done)
		if !stop() {
			drainWG.Wait()
		}
	}()

	defer r.store.Engine().OnTransaction(r.in.transaction)()
	err := r.loop(ctx, work)
	sum := r.total
	sum.Unresolved = r.shim.unresolved()
	sum.Stuck = r.stuck.stuck()
	sum.DrainExpired = drainExpired.Load()
	if err == nil || (ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded))) {
		r.log.LogAttrs(work, slog.LevelInfo, "runner stopped", slog.Int("passes", sum.Passes),
			slog.Int("admitted", sum.Admitted), slog.Int("retries_consumed", sum.RetriesConsumed),
			slog.Int("unresolved", sum.UnresolvedCount()), slog.Int("stuck", len(sum.Stuck)),
			slog.Int("timed_out", len(sum.TimedOut)), slog.Bool("drain_expired", sum.DrainExpired))
		return sum, nil
	}
	r.log.LogAttrs(work, slog.LevelError, "runner stopped on error", slog.String("error", err.Error()))
	return sum, err
}

// loop runs recovery and passes until ctx is done or an error cannot heal.
func (r *Runner) loop(ctx, work context.Context) error {
	backoff := r.cfg.minPoll
	recovered := false
	lctx, stopListening := context.WithCancel(ctx)
	defer stopListening()
	wake := r.listen(lctx)
	for {
		if ctx.Err() != nil {
			return nil
		}
		wake.arm()
		var progress bool
		var err error
		if !recovered {
			progress, err = r.recover(work)
			recovered = err == nil
		} else {
			progress, err = r.pass(work)
		}
		if err != nil {
			if ctx.Err() != nil || work.Err() != nil {
				return nil
			}
			if r.fatal(err) {
				return err
			}
			r.in.transient.Add(work, 1)
			r.log.LogAttrs(work, slog.LevelWarn, "pass failed; backing off", slog.String("error", err.Error()),
				slog.Duration("backoff", backoff))
			progress = false
		}
		if progress {
			backoff = r.cfg.minPoll
			continue
		}
		wait := r.jittered(backoff)
		if err == nil {
			if next, ok := r.sweep.next(r.cfg.clock.Now().UnixMilli()); ok {
				if d := time.UnixMilli(next).Sub(r.cfg.clock.Now()); d < wait {
					wait = max(d, 0)
				}
			}
		}
		backoff = min(2*backoff, r.cfg.maxPoll)
		r.log.LogAttrs(work, slog.LevelDebug, "idle", slog.Duration("wait", wait))
		t := r.cfg.clock.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-wake.c():
			backoff = r.cfg.minPoll
		case <-t.C():
		}
		t.Stop()
	}
}

func (r *Runner) jittered(d time.Duration) time.Duration {
	if r.cfg.jitter == 0 {
		return d
	}
	return d - time.Duration(r.cfg.jitter*r.cfg.rand()*float64(d))
}

// fatal reports whether err stops the runner: what waiting cannot heal.
func (r *Runner) fatal(err error) bool {
	if errors.Is(err, workflow.ErrStaleAuthority) {
		r.in.fenced.Add(context.Background(), 1)
		r.log.LogAttrs(context.Background(), slog.LevelWarn, "fenced: execution authority changed",
			slog.String("run", r.cfg.runID), slog.Bool("owned", r.cfg.authority != nil), slog.String("error", err.Error()))
		return r.cfg.authority != nil
	}
	if r.cfg.runID != "" && errors.Is(err, workflow.ErrNotFound) {
		return true
	}
	if errors.Is(err, workflow.ErrOwner) {
		// What the owner said or returned (a failed call, a plan or an
		// observation the Store cannot keep) is the owner's to fix: the
		// runner logs it and backs off, whatever the cause matches.
		return false
	}
	return errors.Is(err, backend.ErrClosed) || errors.Is(err, backend.ErrSchemaVersion) ||
		errors.Is(err, backend.ErrForeignStore) || errors.Is(err, workflow.ErrInvalidInput) ||
		errors.Is(err, workflow.ErrCorrupt)
}

// recover runs the start-up reconciliation: prepared attempts (with the
// owner's ReceiptLookup), redispatch of never-dispatched ones, and the
// receipt-backed pass. Each step is repeated while it makes progress on
// full pages, up to DefaultReconcileRounds times.
func (r *Runner) recover(ctx context.Context) (bool, error) {
	ropts := workflow.ReconcileOptions{RunID: r.cfg.runID, Authority: r.cfg.authority, Limit: workflow.MaxPageLimit, Lookup: r.lookup}
	for round := 0; round < DefaultReconcileRounds && !r.stopping.Load(); round++ {
		rs, err := r.store.Engine().ReconcilePrepared(ctx, ropts, r.cfg.clock.Now())
		if err != nil {
			return false, fmt.Errorf("reconcile prepared: %w", err)
		}
		acc := &r.total.Reconciled
		acc.NeverDispatched = append(acc.NeverDispatched, rs.NeverDispatched...)
		acc.Recovered = append(acc.Recovered, rs.Recovered...)
		acc.RepairRequired = append(acc.RepairRequired, rs.RepairRequired...)
		acc.SafeReadOnly = append(acc.SafeReadOnly, rs.SafeReadOnly...)
		examined := len(rs.NeverDispatched) + len(rs.Recovered) + len(rs.RepairRequired) + len(rs.SafeReadOnly)
		r.log.LogAttrs(ctx, levelFor(examined), "reconciled prepared attempts",
			slog.Int("never_dispatched", len(rs.NeverDispatched)), slog.Int("recovered", len(rs.Recovered)),
			slog.Int("repair_required", len(rs.RepairRequired)), slog.Int("safe_read_only", len(rs.SafeReadOnly)))
		ds, err := r.store.Engine().Redispatch(ctx, r.owner, ropts, r.cfg.clock.Now())
		r.shim.admitted(ds.Admitted)
		r.shim.spans.finish(workflow.DispatchSummary{Admitted: ds.Admitted}, err)
		r.total.Admitted += len(ds.Admitted)
		r.in.admissions.Add(ctx, int64(len(ds.Admitted)), outcomeAttr(OutcomeAdmitted))
		if err != nil {
			return false, fmt.Errorf("redispatch: %w", err)
		}
		r.log.LogAttrs(ctx, levelFor(len(ds.Admitted)+len(ds.Skipped)), "redispatched",
			slog.Int("admitted", len(ds.Admitted)), slog.Int("skipped", len(ds.Skipped)))
		if examined < workflow.MaxPageLimit || len(rs.Recovered)+len(rs.RepairRequired)+len(ds.Admitted) == 0 {
			break
		}
	}
	if err := r.lateReceipts(ctx); err != nil {
		return false, err
	}
	if _, err := r.observe(ctx); err != nil {
		return false, err
	}
	return true, nil // the first pass follows at once
}

// lateReceipts asks the owner's ReceiptLookup about repair_required
// attempts whose handoff was recorded, and persists each receipt it holds:
// a late receipt admits such an attempt. This recovers an attempt another
// process marked ambiguous while its owner call was still running, when
// the process that made the call stopped before persisting the receipt.
func (r *Runner) lateReceipts(ctx context.Context) error {
	if r.lookup == nil {
		return nil
	}
	q := workflow.AttemptQuery{RunID: r.cfg.runID, Status: workflow.AttemptRepairRequired, Limit: workflow.MaxPageLimit}
	for range DefaultReconcileRounds {
		page, err := r.store.Attempts(ctx, q)
		if err != nil {
			return fmt.Errorf("late receipts: %w", err)
		}
		for _, a := range page.Items {
			// An attempt with a receipt was admitted before it became
			// repair_required (a timeout settled it): no receipt is late.
			if a.Handoff != workflow.HandoffRecorded || len(a.Receipt) > 0 || r.stopping.Load() {
				continue
			}
			rc, found, err := r.lookup.LookupReceipt(ctx, a.Identity)
			if err != nil {
				return fmt.Errorf("late receipts: %w: %w", workflow.ErrOwner, err)
			}
			if !found {
				continue
			}
			if err := r.store.Engine().PersistReceipt(ctx, workflow.OwnerReceipt{Key: a.Key, Receipt: rc, Authority: r.cfg.authority}, r.cfg.clock.Now()); err != nil {
				if errors.Is(err, workflow.ErrInvalidInput) {
					// A receipt the store cannot keep (too large, too deep,
					// invalid): the attempt stays repair_required for an
					// operator; the owner would return the same receipt.
					r.log.LogAttrs(ctx, slog.LevelWarn, "late receipt cannot be stored", slog.String("identity", a.Identity),
						slog.String("error", err.Error()))
					continue
				}
				if errors.Is(err, workflow.ErrConflict) || errors.Is(err, workflow.ErrIneligible) {
					// It moved on since the page was read (another process
					// settled it): one attempt never stops the pass.
					r.log.LogAttrs(ctx, slog.LevelWarn, "late receipt not applied: the attempt moved on", slog.String("identity", a.Identity),
						slog.String("error", err.Error()))
					continue
				}
				return fmt.Errorf("late receipts: %w", err)
			}
			ref := workflow.AttemptRef{Key: a.Key, Identity: a.Identity}
			r.total.Reconciled.Recovered = append(r.total.Reconciled.Recovered, ref)
			r.log.LogAttrs(ctx, slog.LevelInfo, "late receipt persisted", slog.String("identity", a.Identity))
		}
		if page.Next == "" {
			return nil
		}
		q.After = page.Next
	}
	return nil
}

// levelFor logs a step at Info when it found something (n > 0), else at
// Debug.
func levelFor(n int) slog.Level {
	if n > 0 {
		return slog.LevelInfo
	}
	return slog.LevelDebug
}

// Run is New followed by Run: it runs owner over store until ctx is
// cancelled or an error that cannot heal occurs.
func Run(ctx context.Context, store *workflow.Store, owner workflow.Owner, opts ...Option) (Summary, error) {
	r, err := New(store, owner, opts...)
	if err != nil {
		return Summary{}, err
	}
	return r.Run(ctx)
}

// pass is one iteration: due retries, a dispatch batch, the receipt-backed
// pass. It reports whether anything happened that calls for another pass
// at once.
func (r *Runner) pass(ctx context.Context) (progress bool, err error) {
	ctx, span := r.in.tracer.Start(ctx, SpanPass, trace.WithAttributes(attribute.String("run", r.cfg.runID)))
	defer func() {
		// An attempt still open here (one heal handed to the owner) ends
		// with the pass.
		r.shim.spans.finish(workflow.DispatchSummary{}, err)
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}()
	r.total.Passes++
	defer r.logReruns(ctx)
	if err := r.sweep.visit(ctx, r.store, r.cfg.runsPerPass); err != nil {
		return false, fmt.Errorf("retry sweep: %w", err)
	}
	consumed, more, err := r.consumeDue(ctx, r.cfg.clock.Now())
	span.SetAttributes(attribute.Int("retries_consumed", consumed))
	if err != nil {
		return consumed > 0, fmt.Errorf("consume due retries: %w", err)
	}
	if r.stopping.Load() {
		return false, nil
	}
	healed := r.heal(ctx)
	redone, err := r.redispatchRejected(ctx)
	if err != nil {
		r.collectDoubts(workflow.DispatchSummary{}, nil)
		return consumed > 0 || redone > 0 || healed > 0, fmt.Errorf("redispatch: %w", err)
	}
	admitted, derr := r.dispatch(ctx)
	span.SetAttributes(attribute.Int("admitted", admitted))
	if derr != nil {
		return consumed > 0 || admitted > 0, fmt.Errorf("dispatch: %w", derr)
	}
	cancelled, err := r.cancellations(ctx, consumed > 0 || admitted > 0)
	if err != nil {
		return true, err
	}
	observed, err := r.observe(ctx)
	if err != nil {
		return true, err
	}
	timedOut, err := r.settleTimeouts(ctx)
	if err != nil {
		return true, err
	}
	if err := r.checkStuck(ctx); err != nil {
		return true, err
	}
	r.readWork(ctx)
	return consumed > 0 || more || redone > 0 || healed > 0 || admitted > 0 || cancelled > 0 || observed > 0 || timedOut > 0, nil
}

// redispatchRejected redispatches, run by run, the attempts a dispatch
// pass left prepared when their handoff was refused (the run was paused or
// failed at that moment, say) or when a stopped batch never offered them
// (DispatchSummary.Unoffered); it returns how many it admitted. A run
// leaves the set once none of its prepared attempts has a pending handoff.
func (r *Runner) redispatchRejected(ctx context.Context) (int, error) {
	if len(r.rejected) == 0 {
		return 0, nil
	}
	runs := make([]string, 0, len(r.rejected))
	for id := range r.rejected {
		runs = append(runs, id)
	}
	slices.Sort(runs)
	admitted := 0
	for _, id := range runs {
		opts := workflow.ReconcileOptions{RunID: id, Limit: r.cfg.limit}
		if id == r.cfg.runID {
			opts.Authority = r.cfg.authority
		}
		ds, err := r.store.Engine().Redispatch(ctx, r.owner, opts, r.cfg.clock.Now())
		r.shim.admitted(ds.Admitted)
		r.shim.spans.finish(workflow.DispatchSummary{Admitted: ds.Admitted}, err)
		r.total.Admitted += len(ds.Admitted)
		admitted += len(ds.Admitted)
		if len(ds.Admitted) > 0 {
			r.in.admissions.Add(ctx, int64(len(ds.Admitted)), outcomeAttr(OutcomeAdmitted))
			r.log.LogAttrs(ctx, slog.LevelInfo, "redispatched", slog.String("run", id), slog.Int("admitted", len(ds.Admitted)))
		}
		if err != nil {
			return admitted, err
		}
		page, err := r.store.Attempts(ctx, workflow.AttemptQuery{RunID: id, Status: workflow.AttemptPrepared, Limit: workflow.MaxPageLimit})
		if err != nil {
			return admitted, err
		}
		if !slices.ContainsFunc(page.Items, func(a workflow.Attempt) bool { return a.Handoff == workflow.HandoffPending }) {
			delete(r.rejected, id)
		}
	}
	return admitted, nil
}

// account records one dispatch summary in the totals, metrics and logs.
func (r *Runner) account(ctx context.Context, sum workflow.DispatchSummary) {
	r.shim.admitted(sum.Admitted)
	r.total.Admitted += len(sum.Admitted)
	r.total.Raced += len(sum.Raced)
	n := len(sum.Admitted) + len(sum.Unsupported) + len(sum.Raced) + len(sum.Exhausted) + len(sum.Rejected) + len(sum.OwnerFailed)
	if n == 0 {
		return
	}
	r.in.batchSize.Record(ctx, int64(n))
	for _, c := range []struct {
		o string
		n int
	}{{OutcomeAdmitted, len(sum.Admitted)}, {OutcomeUnsupported, len(sum.Unsupported)}, {OutcomeRaced, len(sum.Raced)},
		{OutcomeExhausted, len(sum.Exhausted)}, {OutcomeRejected, len(sum.Rejected)}, {OutcomeOwnerFailed, len(sum.OwnerFailed)}} {
		if c.n > 0 {
			r.in.admissions.Add(ctx, int64(c.n), outcomeAttr(c.o))
		}
	}
	r.log.LogAttrs(ctx, slog.LevelInfo, "dispatch pass", slog.Int("admitted", len(sum.Admitted)),
		slog.Int("unsupported", len(sum.Unsupported)), slog.Int("raced", len(sum.Raced)),
		slog.Int("exhausted", len(sum.Exhausted)), slog.Int("rejected", len(sum.Rejected)),
		slog.Int("owner_failed", len(sum.OwnerFailed)))
	for _, rj := range sum.Rejected {
		r.rejected[rj.Key.RunID] = true
		r.log.LogAttrs(ctx, slog.LevelInfo, "activation rejected", slog.String("run", rj.Key.RunID),
			slog.String("node", rj.Key.NodeID), slog.String("activation", rj.Key.ActivationID), slog.String("reason", rj.Err.Error()))
	}
	for _, u := range sum.Unoffered {
		// Prepared with the handoff pending (never offered, or released):
		// redispatched by identity on the next pass, as a refused handoff.
		r.rejected[u.Key.RunID] = true
	}
	for _, of := range sum.OwnerFailed {
		r.log.LogAttrs(ctx, slog.LevelWarn, "owner failed; attempt left for reconciliation",
			slog.String("identity", of.Attempt.Identity), slog.String("error", of.Err.Error()))
	}
}

// observe runs the receipt-backed pass when there is an observer and
// returns how many attempts it settled.
func (r *Runner) observe(ctx context.Context) (int, error) {
	if r.observer == nil || r.stopping.Load() {
		return 0, nil
	}
	sum, err := r.store.Engine().ReconcileReceiptBacked(ctx, r.observer, workflow.ReceiptPassOptions{
		RunID: r.cfg.runID, Authority: r.cfg.authority, Limit: r.cfg.limit,
	}, r.cfg.clock.Now())
	if err != nil {
		return 0, fmt.Errorf("receipt-backed pass: %w", err)
	}
	settled := 0
	for _, o := range sum.Attempts {
		if o.Err != nil {
			r.log.LogAttrs(ctx, slog.LevelWarn, "observation failed; asked again next pass",
				slog.String("identity", o.Attempt.Identity), slog.String("error", o.Err.Error()))
			continue
		}
		switch o.Applied {
		case workflow.ObservedAdmitted, workflow.ObservedRunning, workflow.ObservedDeferred:
			continue
		}
		if o.Unresolved {
			continue
		}
		settled++
		r.in.settledAttempt(ctx, o.Attempt.Key.NodeID, o.Status)
		attrs := []slog.Attr{slog.String("identity", o.Attempt.Identity), slog.String("observed", string(o.Applied)),
			slog.String("status", string(o.Status))}
		if o.Schedule != nil {
			r.in.scheduled.Add(ctx, 1)
			attrs = append(attrs, slog.Time("retry_due", o.Schedule.Due), slog.Uint64("next_attempt", uint64(o.Schedule.NextAttempt)))
			r.log.LogAttrs(ctx, slog.LevelInfo, "retry scheduled", attrs...)
			continue
		}
		if ns := o.NotScheduled; ns != nil {
			r.in.refused.Add(ctx, 1, reasonAttr(string(ns.Reason)))
			attrs = append(attrs, slog.String("reason", string(ns.Reason)))
			if ns.Ineligible != "" {
				attrs = append(attrs, slog.String("ineligible", string(ns.Ineligible)))
			}
			r.log.LogAttrs(ctx, slog.LevelWarn, "retry refused", attrs...)
			continue
		}
		r.log.LogAttrs(ctx, slog.LevelInfo, "observation applied", attrs...)
	}
	r.total.Observed += settled
	return settled, nil
}
