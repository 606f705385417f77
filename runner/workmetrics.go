package runner

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"

	"github.com/wfstore/wfstore/workflow"
)

// Work gauges: what the store holds, read by workflow.Store.WorkCounts
// every work-metrics interval (WithWorkMetrics). Each count stops at the
// bound; MetricWorkCapped says when it did (the gauge then means at least
// that many).
const (
	MetricWorkPending           = "wfstore.work.activations.pending"          // {activation}
	MetricWorkAdmitted          = "wfstore.work.attempts.admitted"            // {attempt}
	MetricWorkOldestAdmittedAge = "wfstore.work.attempts.admitted.oldest_age" // s
	MetricWorkRetriesDue        = "wfstore.work.retries.due"                  // {retry}
	MetricWorkRuns              = "wfstore.work.runs"                         // {run} by status
	MetricWorkCapped            = "wfstore.work.capped"                       // 1 by count (and status)
	// MetricAttemptsSettled counts the attempts the runner settled, by
	// node and outcome (the attempt's status).
	MetricAttemptsSettled = "wfstore.runner.attempts.settled" // {attempt} by node, outcome
	// SpanOwnerCall is the span of one owner call.
	SpanOwnerCall = "wfstore.runner.owner_call"
)

// DefaultWorkMetricsInterval is how often the runner reads the work
// counts by default (WithWorkMetrics).
const DefaultWorkMetricsInterval = 30 * time.Second

// WithWorkMetrics sets how often the runner reads the work gauges
// (default DefaultWorkMetricsInterval; 0 turns them off) and the bound of
// each count (0: workflow.DefaultWorkBound).
func WithWorkMetrics(interval time.Duration, bound int) Option {
	return func(c *config) { c.workEvery, c.workBound = interval, bound }
}

// workWatch reads the work counts at most every interval, from the
// runner's passes, and serves the latest to the gauges.
type workWatch struct {
	every  time.Duration
	bound  int
	nextAt time.Time
	latest atomic.Pointer[workflow.WorkCounts]
}

// runStatuses are the statuses MetricWorkRuns reports, in order.
var runStatuses = []workflow.RunStatus{workflow.RunRunning, workflow.RunPaused, workflow.RunCompleted,
	workflow.RunFailed, workflow.RunCancelled, workflow.RunRepairRequired}

// newWorkWatch makes the work gauges; nil when every is 0 (off).
func newWorkWatch(every time.Duration, bound int, mp metric.MeterProvider) (*workWatch, error) {
	if every == 0 {
		return nil, nil
	}
	if mp == nil {
		mp = metricnoop.NewMeterProvider()
	}
	w := &workWatch{every: every, bound: bound}
	m := mp.Meter(instrumentationName)
	pending, err := m.Int64ObservableGauge(MetricWorkPending, metric.WithUnit("{activation}"),
		metric.WithDescription("Admissible activations (a dispatch pass may admit them), at least this many when capped."))
	if err != nil {
		return nil, err
	}
	admitted, err := m.Int64ObservableGauge(MetricWorkAdmitted, metric.WithUnit("{attempt}"),
		metric.WithDescription("Admitted and running attempts (handed to their owner, not observed terminal), at least this many when capped."))
	if err != nil {
		return nil, err
	}
	oldest, err := m.Float64ObservableGauge(MetricWorkOldestAdmittedAge, metric.WithUnit("s"),
		metric.WithDescription("Age of the oldest admitted or running attempt, from its admitted time; 0 when there is none."))
	if err != nil {
		return nil, err
	}
	due, err := m.Int64ObservableGauge(MetricWorkRetriesDue, metric.WithUnit("{retry}"),
		metric.WithDescription("Automatic retries due (schedules due by now) of failed and running runs, at least this many when capped."))
	if err != nil {
		return nil, err
	}
	runs, err := m.Int64ObservableGauge(MetricWorkRuns, metric.WithUnit("{run}"),
		metric.WithDescription("Runs by status, at least this many when capped."))
	if err != nil {
		return nil, err
	}
	capped, err := m.Int64ObservableGauge(MetricWorkCapped, metric.WithUnit("1"),
		metric.WithDescription("1 when a work count stopped at its bound (the gauge is then a lower bound), else 0; by count (pending, admitted, retries_due, runs) and, for runs, status."))
	if err != nil {
		return nil, err
	}
	_, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		wc := w.latest.Load()
		if wc == nil {
			return nil // not read yet
		}
		capAttr := func(c workflow.WorkCount, attrs ...attribute.KeyValue) {
			v := int64(0)
			if c.Capped {
				v = 1
			}
			o.ObserveInt64(capped, v, metric.WithAttributes(attrs...))
		}
		o.ObserveInt64(pending, wc.Pending.N)
		capAttr(wc.Pending, attribute.String("count", "pending"))
		o.ObserveInt64(admitted, wc.Admitted.N)
		capAttr(wc.Admitted, attribute.String("count", "admitted"))
		o.ObserveFloat64(oldest, wc.OldestAdmitted.Seconds())
		o.ObserveInt64(due, wc.RetriesDue.N)
		capAttr(wc.RetriesDue, attribute.String("count", "retries_due"))
		for _, st := range runStatuses {
			c := wc.Runs[st]
			status := attribute.String("status", string(st))
			o.ObserveInt64(runs, c.N, metric.WithAttributes(status))
			capAttr(c, attribute.String("count", "runs"), status)
		}
		return nil
	}, pending, admitted, oldest, due, runs, capped)
	if err != nil {
		return nil, err
	}
	return w, nil
}

// readWork reads the work counts when the interval has passed since the
// last read. A failed read is logged and tried again next pass: the
// gauges keep the last counts, and the pass goes on.
func (r *Runner) readWork(ctx context.Context) {
	w := r.work
	if w == nil {
		return
	}
	now := r.cfg.clock.Now()
	if now.Before(w.nextAt) {
		return
	}
	wc, err := r.store.WorkCounts(ctx, w.bound, now)
	if err != nil {
		r.log.LogAttrs(ctx, slog.LevelWarn, "work counts", slog.String("error", err.Error()))
		return
	}
	w.latest.Store(&wc)
	w.nextAt = now.Add(w.every)
}

// settledAttempt counts one attempt the runner settled.
func (in *instruments) settledAttempt(ctx context.Context, node string, outcome workflow.AttemptStatus) {
	in.settled.Add(ctx, 1, metric.WithAttributes(attribute.String("node", node), attribute.String("outcome", string(outcome))))
}

// EventAttemptAdmitted is the event the pass span records for each
// attempt whose receipt the dispatch committed, between the attempt's
// dispatch span and its observe spans.
const EventAttemptAdmitted = "wfstore.attempt.admitted"

// admittedEvents records an EventAttemptAdmitted on span per attempt.
func admittedEvents(span trace.Span, refs []workflow.AttemptRef) {
	if !span.IsRecording() {
		return
	}
	for _, a := range refs {
		span.AddEvent(EventAttemptAdmitted, trace.WithAttributes(attemptAttrs(a.Key, a.Identity)...))
	}
}

// attemptAttrs are the span attributes naming one attempt.
func attemptAttrs(k workflow.AttemptKey, identity string) []attribute.KeyValue {
	return []attribute.KeyValue{attribute.String("run", k.RunID), attribute.String("node", k.NodeID),
		attribute.String("activation", k.ActivationID), attribute.Int64("attempt", int64(k.Attempt)),
		attribute.String("identity", identity)}
}
