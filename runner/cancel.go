package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"

	"github.com/wfstore/wfstore/workflow"
)

// MetricCancellations counts what the runner did for the attempts of runs
// whose cancellation is requested, by outcome (the Cancel* values).
const MetricCancellations = "wfstore.runner.cancellations" // {outcome}

// Cancellation outcomes, the values of the "outcome" attribute of
// MetricCancellations.
const (
	// CancelSignalled: the owner's Cancel returned nil and the signal is
	// recorded.
	CancelSignalled = "signalled"
	// CancelFailed: the owner's Cancel failed; it is retried with backoff.
	CancelFailed = "cancel_failed"
	// CancelNeverDispatched: a prepared attempt that provably never
	// reached its owner was cancelled without asking it.
	CancelNeverDispatched = "never_dispatched"
	// CancelReceiptFound: a cancelling attempt without a receipt (its
	// dispatcher stopped) got its receipt from the owner's ReceiptLookup.
	CancelReceiptFound = "receipt_found"
	// CancelSignalledNotObserved: the attempt of an owner with a Canceller
	// and no Observer was settled cancelled once signalled.
	CancelSignalledNotObserved = string(workflow.SignalledNotObserved)
	// CancelNotSignalled: the attempt of an owner with neither a Canceller
	// nor an Observer was settled cancelled without a signal or an
	// observation; its work is never stopped (a warning is logged).
	CancelNotSignalled = string(workflow.NeitherSignalledNorObserved)
	// CancelOrphaned: a cancelling attempt without a receipt that no
	// ReceiptLookup resolved was settled as an orphaned cancellation once
	// its attempt timeout had passed since the cancellation request
	// (repair_required when mutating, cancelled when read-only).
	CancelOrphaned = "orphaned"
)

// cancelBackoff is the retry state of one identity whose Cancel failed.
type cancelBackoff struct {
	next  time.Time
	delay time.Duration
}

// cancels is what the runner keeps for cancellation: where its scan of
// cancelled runs resumes, the owner's Canceller, and the backoff of each
// identity whose Cancel failed. It is used by the Run goroutine only.
type cancels struct {
	canceller workflow.Canceller // nil when the owner has none
	cursor    workflow.Cursor
	backoff   map[string]cancelBackoff
	counter   metric.Int64Counter
	last      time.Time // when the last page was read
	again     bool      // the last page found work: read the next at once
	// siblingAfter is where the scan of sibling_cancelling attempts
	// resumes; siblingSignalled holds the identities signalled by this
	// process, siblingSeen those the current cycle of that scan read
	// (sibling.go).
	siblingAfter     workflow.Cursor
	siblingSignalled map[string]bool
	siblingSeen      map[string]bool
}

// cancelState returns the runner's cancellation state, made on first use.
func (r *Runner) cancelState() (*cancels, error) {
	if r.cancel != nil {
		return r.cancel, nil
	}
	mp := r.cfg.meters
	if mp == nil {
		mp = metricnoop.NewMeterProvider()
	}
	c := &cancels{backoff: map[string]cancelBackoff{}, siblingSignalled: map[string]bool{}}
	var err error
	c.counter, err = mp.Meter(instrumentationName).Int64Counter(MetricCancellations, metric.WithUnit("{attempt}"),
		metric.WithDescription("What the runner did for attempts of runs whose cancellation is requested, by outcome."))
	if err != nil {
		return nil, fmt.Errorf("runner: instruments: %w", err)
	}
	if cn, ok := r.shim.owner.(workflow.Canceller); ok {
		c.canceller = cn
	}
	r.cancel = c
	return c, nil
}

// cancellations reaches the work of runs whose cancellation is requested,
// a page of runs per pass (the runner's runs-per-pass, resuming where the
// last pass stopped; a busy pass, one that admitted or requeued work,
// reads one at most once per minimum poll interval unless the last page
// moved something or a Cancel awaits its retry): an attempt that provably never reached its owner is
// cancelled (CancelNeverDispatched); the owner of one that may hold the
// work is told through its Canceller, and only after Cancel returned nil
// is the signal recorded (MarkCancellationSignalled), so a crash between
// the two leaves the attempt unsignalled and the next pass (or runner)
// signals again; a cancelling attempt without a receipt is resolved
// through the owner's ReceiptLookup. An owner with an Observer then
// reports on the work in the receipt-backed pass; one without is settled
// by SettleCancelledUnobserved, saying whether it was signalled (an owner
// with neither capability gets a warning: its work is never stopped). The
// attempts a fail-fast fan-out stopped (sibling_cancelling) are signalled
// the same way (sibling.go). It returns how many attempts it moved.
func (r *Runner) cancellations(ctx context.Context, busy bool) (int, error) {
	c, err := r.cancelState()
	if err != nil {
		return 0, err
	}
	now := r.cfg.clock.Now()
	if busy && !c.again && !c.last.IsZero() && now.Sub(c.last) < r.cfg.minPoll {
		return 0, nil
	}
	c.last, c.again = now, false
	page, err := r.store.Engine().Cancellations(ctx, workflow.CancellationQuery{RunID: r.cfg.runID, After: c.cursor, Limit: r.cfg.runsPerPass})
	if err != nil {
		return 0, fmt.Errorf("cancellation scan: %w", err)
	}
	c.cursor = page.Next
	moved := 0
	for _, rc := range page.Items {
		for _, a := range rc.Attempts {
			if r.stopping.Load() {
				return moved, nil
			}
			n, err := r.cancelAttempt(ctx, c, a)
			moved += n
			if err != nil {
				return moved, err
			}
		}
	}
	n, err := r.siblings(ctx, c)
	moved += n
	if err != nil {
		return moved, err
	}
	c.again = moved > 0 || len(c.backoff) > 0
	return moved, nil
}

// authorityFor is the authority the runner writes to run under.
func (r *Runner) authorityFor(runID string) *workflow.Authority {
	if runID == r.cfg.runID {
		return r.cfg.authority
	}
	return nil
}

// cancelAttempt acts on one attempt of a cancelled run; it returns 1 when
// the attempt moved.
func (r *Runner) cancelAttempt(ctx context.Context, c *cancels, a workflow.Attempt) (int, error) {
	auth := r.authorityFor(a.Key.RunID)
	switch a.Status {
	case workflow.AttemptPrepared:
		if a.Handoff == workflow.HandoffPending && a.Receipt == nil {
			done, err := r.store.Engine().CancelNeverDispatched(ctx, a.Identity, auth, r.cfg.clock.Now())
			if err != nil || !done {
				return 0, ignoreIneligible(err)
			}
			r.cancelled(ctx, c, a, CancelNeverDispatched, slog.LevelInfo, "never-dispatched attempt cancelled")
			return 1, nil
		}
		return r.signal(ctx, c, a) // handed off: the owner may hold it
	case workflow.AttemptAdmitted, workflow.AttemptRunning:
		if c.canceller != nil {
			return r.signal(ctx, c, a)
		}
		if r.observer != nil {
			return 0, nil // the receipt-backed pass asks the owner
		}
		return r.settleUnobserved(ctx, c, a, workflow.NeitherSignalledNorObserved)
	case workflow.AttemptCancelling:
		if a.Receipt == nil {
			return r.cancellingWithoutReceipt(ctx, c, a)
		}
		if r.observer != nil {
			return 0, nil
		}
		return r.settleUnobserved(ctx, c, a, workflow.SignalledNotObserved)
	}
	return 0, nil
}

// signal tells the owner to cancel a's work and, once Cancel returned
// nil, records the signal. A failing Cancel is retried with backoff (from
// the poll interval's minimum, doubling up to its maximum) on later
// passes; nothing is recorded until it succeeds.
func (r *Runner) signal(ctx context.Context, c *cancels, a workflow.Attempt) (int, error) {
	if c.canceller == nil {
		return 0, nil
	}
	now := r.cfg.clock.Now()
	b, retrying := c.backoff[a.Identity]
	if retrying && now.Before(b.next) {
		return 0, nil
	}
	var err error
	r.shim.traced(ctx, "cancel", attemptAttrs(a.Key, a.Identity), func(ctx context.Context) error { err = c.canceller.Cancel(ctx, a.Identity); return err })
	if err != nil {
		b.delay = min(max(2*b.delay, r.cfg.minPoll), r.cfg.maxPoll)
		b.next = r.cfg.clock.Now().Add(b.delay)
		c.backoff[a.Identity] = b
		c.counter.Add(ctx, 1, metric.WithAttributes(attribute.String("outcome", CancelFailed)))
		r.log.LogAttrs(ctx, slog.LevelWarn, "cancel failed; retrying with backoff", slog.String("identity", a.Identity),
			slog.String("error", err.Error()), slog.Duration("backoff", b.delay))
		return 0, nil
	}
	delete(c.backoff, a.Identity)
	if err := r.store.Engine().MarkCancellationSignalled(ctx, a.Identity, r.cfg.clock.Now()); err != nil {
		return 0, ignoreIneligible(err) // settled meanwhile, or left for the next pass to signal again
	}
	r.cancelled(ctx, c, a, CancelSignalled, slog.LevelInfo, "cancellation signalled")
	return 1, nil
}

// settleUnobserved settles a of an owner without an Observer as cancelled.
func (r *Runner) settleUnobserved(ctx context.Context, c *cancels, a workflow.Attempt, how workflow.CancelSettlement) (int, error) {
	done, err := r.store.Engine().SettleCancelledUnobserved(ctx, workflow.UnobservedCancellation{Identity: a.Identity, How: how, Authority: r.authorityFor(a.Key.RunID)}, r.cfg.clock.Now())
	if err != nil || !done {
		return 0, ignoreIneligible(err)
	}
	if how == workflow.NeitherSignalledNorObserved {
		r.cancelled(ctx, c, a, CancelNotSignalled, slog.LevelWarn,
			"attempt settled cancelled without a signal or an observation: the owner has neither a Canceller nor an Observer, so its work is never stopped and its leases are released while it may still run")
		return 1, nil
	}
	r.cancelled(ctx, c, a, CancelSignalledNotObserved, slog.LevelInfo, "attempt settled cancelled once signalled (the owner has no Observer)")
	return 1, nil
}

// cancellingWithoutReceipt resolves a cancelling attempt whose dispatcher
// stopped before persisting a receipt: a receipt the owner's ReceiptLookup
// holds is persisted (the attempt stays cancelling and is then observed,
// or settled unobserved); otherwise it is settled by
// unresolvedCancellation once its attempt timeout has passed.
func (r *Runner) cancellingWithoutReceipt(ctx context.Context, c *cancels, a workflow.Attempt) (int, error) {
	if r.lookup == nil {
		return r.unresolvedCancellation(ctx, c, a)
	}
	rc, found, err := r.lookup.LookupReceipt(ctx, a.Identity)
	if err != nil {
		return 0, fmt.Errorf("cancellation receipt lookup: %w: %w", workflow.ErrOwner, err)
	}
	if !found {
		return r.unresolvedCancellation(ctx, c, a)
	}
	if err := r.store.Engine().PersistReceipt(ctx, workflow.OwnerReceipt{Key: a.Key, Receipt: rc, Authority: r.authorityFor(a.Key.RunID)}, r.cfg.clock.Now()); err != nil {
		return 0, ignoreIneligible(err)
	}
	r.cancelled(ctx, c, a, CancelReceiptFound, slog.LevelInfo, "receipt of a cancelling attempt persisted")
	return 1, nil
}

// unresolvedCancellation settles a cancelling attempt without a receipt
// that no ReceiptLookup resolves (the owner may have its work, or may
// never have received it) as an orphaned cancellation
// (workflow.Engine.SettleOrphanedCancellation: repair_required when
// mutating, cancelled when read-only) once the attempt timeout (the
// activation's, else the runner's default) has passed since the run's
// cancellation was requested. Until then, or without any timeout, it is
// left as is and the stuck-work query reports it.
func (r *Runner) unresolvedCancellation(ctx context.Context, c *cancels, a workflow.Attempt) (int, error) {
	act, err := r.store.GetActivation(ctx, a.Key.ActivationKey)
	if err != nil {
		return 0, fmt.Errorf("orphaned cancellation: %w", err)
	}
	timeout := act.AttemptTimeout
	if timeout == 0 {
		timeout = r.timeouts.def
	}
	if timeout <= 0 {
		return 0, nil
	}
	run, err := r.store.GetRun(ctx, a.Key.RunID)
	if err != nil {
		return 0, fmt.Errorf("orphaned cancellation: %w", err)
	}
	now := r.cfg.clock.Now()
	if run.CancelRequestedAt.IsZero() || now.Before(run.CancelRequestedAt.Add(timeout)) {
		return 0, nil
	}
	if _, err := r.store.Engine().SettleOrphanedCancellation(ctx, a.Identity, now); err != nil {
		return 0, ignoreIneligible(err)
	}
	after, err := r.store.GetAttempt(ctx, a.Identity)
	if err != nil {
		return 0, fmt.Errorf("orphaned cancellation: %w", err)
	}
	if after.Status == workflow.AttemptCancelling {
		return 0, nil
	}
	r.cancelled(ctx, c, a, CancelOrphaned, slog.LevelWarn, "cancelling attempt without a receipt settled as an orphaned cancellation: no receipt was found within its attempt timeout")
	return 1, nil
}

// cancelled records one cancellation step in the metrics and the log.
func (r *Runner) cancelled(ctx context.Context, c *cancels, a workflow.Attempt, outcome string, level slog.Level, msg string) {
	c.counter.Add(ctx, 1, metric.WithAttributes(attribute.String("outcome", outcome)))
	r.log.LogAttrs(ctx, level, msg, slog.String("run", a.Key.RunID), slog.String("identity", a.Identity),
		slog.String("outcome", outcome))
}

// ignoreIneligible drops an ErrIneligible: the attempt or run moved on
// since the scan read it (another runner settled it, say), and the next
// pass reads it again.
func ignoreIneligible(err error) error {
	if errors.Is(err, workflow.ErrIneligible) {
		return nil
	}
	return err
}
