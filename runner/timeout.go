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

// Defaults of the attempt timeout.
const (
	// DefaultAttemptTimeout is the attempt timeout of activations that
	// declare none (WithAttemptTimeout).
	DefaultAttemptTimeout = time.Hour
	// DefaultCancelTimeout bounds the owner's Cancel call made before a
	// timeout settles its attempt (WithCancelTimeout).
	DefaultCancelTimeout = 10 * time.Second
)

// MetricAttemptsTimedOut counts the attempts the runner settled as timed
// out, by the status they took (failed, repair_required).
const MetricAttemptsTimedOut = "wfstore.runner.attempts.timed_out" // {status}

// canceller is the owner's optional cancellation capability: Cancel asks
// the owner to stop the work of one dispatch identity, idempotently. The
// runner calls it, when the owner has it, before a timeout settles the
// attempt.
type canceller interface {
	Cancel(ctx context.Context, identity string) error
}

// timeoutWatch pages workflow.Engine.TimedOutAttempts, one page per pass, a
// new scan at most every interval.
type timeoutWatch struct {
	def, every, cancelBound time.Duration
	cancel                  canceller
	cursor                  workflow.Cursor
	scanning                bool
	nextAt                  time.Time
	// cancelled holds the identities whose Cancel was called and whose
	// settlement has not been seen: Cancel is called once per attempt.
	cancelled map[string]bool
	settled   metric.Int64Counter
}

func newTimeoutWatch(def, every, cancelBound time.Duration, c canceller, mp metric.MeterProvider) (*timeoutWatch, error) {
	if mp == nil {
		mp = metricnoop.NewMeterProvider()
	}
	ctr, err := mp.Meter(instrumentationName).Int64Counter(MetricAttemptsTimedOut, metric.WithUnit("{attempt}"),
		metric.WithDescription("Attempts settled because they were not observed terminal by their deadline, by the status they took."))
	return &timeoutWatch{def: def, every: every, cancelBound: cancelBound, cancel: c, cancelled: map[string]bool{}, settled: ctr}, err
}

// settleTimeouts reads one page of the timeout scan when one is due or in
// progress and settles each attempt past its deadline: the owner's Cancel
// first (once, bounded by the cancel timeout; its result is logged and
// never holds the settlement back), then workflow.Engine.SettleTimedOut,
// which decides again. It returns how many it settled.
func (r *Runner) settleTimeouts(ctx context.Context) (int, error) {
	w := r.timeouts
	now := r.cfg.clock.Now()
	late := 0
	if !w.scanning {
		if now.Before(w.nextAt) {
			return 0, nil
		}
		w.scanning, w.cursor = true, ""
		var err error
		if late, err = r.observeTimedOut(ctx); err != nil {
			return 0, err
		}
	}
	page, err := r.store.Engine().TimedOutAttempts(ctx, workflow.TimeoutQuery{RunID: r.cfg.runID, Default: w.def, After: w.cursor, Limit: workflow.MaxPageLimit}, now)
	if err != nil {
		return 0, fmt.Errorf("timed-out attempts: %w", err)
	}
	if page.Next == "" {
		w.scanning, w.nextAt = false, now.Add(w.every)
	} else {
		w.cursor = page.Next
	}
	settled := late
	for _, t := range page.Items {
		if r.stopping.Load() {
			break
		}
		id := t.Attempt.Identity
		if w.cancel != nil && !w.cancelled[id] {
			w.cancelled[id] = true
			cerr := r.cancelBounded(ctx, id)
			if cerr != nil {
				r.log.LogAttrs(ctx, slog.LevelWarn, "cancel of a timed-out attempt failed; settling anyway",
					slog.String("identity", id), slog.String("error", cerr.Error()))
			}
		}
		opts := workflow.TimeoutOptions{Default: w.def}
		if t.Attempt.Key.RunID == r.cfg.runID {
			opts.Authority = r.cfg.authority
		}
		res, err := r.store.Engine().SettleTimedOut(ctx, id, opts, r.cfg.clock.Now())
		if errors.Is(err, workflow.ErrIneligible) {
			delete(w.cancelled, id) // it moved on, or is not due by this runner's clock
			continue
		}
		if err != nil {
			return settled, fmt.Errorf("settle timed-out attempt %s: %w", id, err)
		}
		delete(w.cancelled, id)
		settled++
		r.total.TimedOut = append(r.total.TimedOut, t.Attempt.Ref())
		w.settled.Add(ctx, 1, metric.WithAttributes(statusAttr(res.Status)))
		r.in.settledAttempt(ctx, t.Attempt.Key.NodeID, res.Status)
		k := t.Attempt.Key
		r.log.LogAttrs(ctx, slog.LevelWarn, "attempt timed out", slog.String("run", k.RunID), slog.String("node", k.NodeID),
			slog.String("activation", k.ActivationID), slog.String("identity", id), slog.String("status", string(res.Status)),
			slog.Duration("timeout", res.Timeout), slog.Time("deadline", res.Deadline))
	}
	return settled, nil
}

// cancelBounded calls the owner's Cancel for identity and waits for it at
// most the cancel timeout: an owner that ignores its context is left
// running in the background and its answer is dropped.
func (r *Runner) cancelBounded(ctx context.Context, identity string) error {
	w := r.timeouts
	cctx, stop := context.WithTimeout(ctx, w.cancelBound)
	defer stop()
	done := make(chan error, 1)
	go r.shim.timed(cctx, "cancel", func() { done <- w.cancel.Cancel(cctx, identity) }, attribute.String("identity", identity))
	select {
	case err := <-done:
		return err
	case <-cctx.Done():
		return fmt.Errorf("cancel of %s: %w", identity, cctx.Err())
	}
}

func statusAttr(st workflow.AttemptStatus) attribute.KeyValue {
	return attribute.String("status", string(st))
}

// observeTimedOut asks the observer, when there is one, about the
// repair_required attempts a timeout settled (one page of them, earliest
// first) and applies each answer that settles something: a late word of
// the owner settles such an attempt as a late receipt would. It returns
// how many it settled.
func (r *Runner) observeTimedOut(ctx context.Context) (int, error) {
	if r.observer == nil {
		return 0, nil
	}
	page, err := r.store.Attempts(ctx, workflow.AttemptQuery{RunID: r.cfg.runID, Status: workflow.AttemptRepairRequired, Limit: workflow.MaxPageLimit})
	if err != nil {
		return 0, fmt.Errorf("timed-out attempts: %w", err)
	}
	settled := 0
	for _, a := range page.Items {
		if !a.TimedOut() || r.stopping.Load() {
			continue
		}
		obs, err := r.observer.Observe(ctx, a)
		if err != nil {
			return settled, fmt.Errorf("observe timed-out attempt %s: %w: %w", a.Identity, workflow.ErrOwner, err)
		}
		switch obs.Kind {
		case workflow.ObservedSucceeded, workflow.ObservedFailed, workflow.ObservedRetryableFailure,
			workflow.ObservedPaused, workflow.ObservedCancelled:
		default:
			continue
		}
		res, err := r.store.ApplyObservation(ctx, a.Identity, obs, r.cfg.clock.Now())
		if err != nil {
			return settled, fmt.Errorf("late observation of %s: %w", a.Identity, err)
		}
		settled++
		r.log.LogAttrs(ctx, slog.LevelInfo, "late observation of a timed-out attempt applied", slog.String("identity", a.Identity),
			slog.String("observed", string(obs.Kind)), slog.String("status", string(res.Status)))
	}
	return settled, nil
}
