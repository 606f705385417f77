package runner

import (
	"context"
	"errors"
	"log/slog"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/workflow"
)

// instrumentationName names the runner's meter and tracer.
const instrumentationName = "github.com/wfstore/wfstore/runner"

// Metric names, each with its unit and attributes. Counters count events
// since the runner started; durations are in seconds.
const (
	MetricAdmissions        = "wfstore.runner.admissions"          // {activation} by outcome
	MetricRetriesConsumed   = "wfstore.runner.retries.consumed"    // {retry}
	MetricRetriesScheduled  = "wfstore.runner.retries.scheduled"   // {retry}
	MetricRetriesRefused    = "wfstore.runner.retries.refused"     // {retry} by reason
	MetricFencedRejections  = "wfstore.runner.fenced_rejections"   // {pass}
	MetricTransientErrors   = "wfstore.runner.transient_errors"    // {pass}
	MetricOwnerCallDuration = "wfstore.runner.owner_call.duration" // s by call
	MetricBatchSize         = "wfstore.runner.batch.size"          // {activation}
	// MetricTransactionDuration is the latency, in seconds, of every
	// transaction the Store ran while the runner ran (its own and those of
	// other callers of the Store), re-runs included, by kind (update,
	// view) and result (ok; not_found when it failed because what it
	// looked up does not exist, an answer rather than a failure; error).
	MetricTransactionDuration = "wfstore.store.transaction.duration" // s by kind, result
	SpanPass                  = "wfstore.runner.pass"                //
	// MetricBackendReruns is observed from the Store's Backend when it is
	// a backend.RerunCounter: its transaction re-runs since it was opened,
	// by cause (busy, conflict, deadlock, transient, outcome_unknown), and
	// the Updates that gave up (exhausted).
	MetricBackendReruns = "wfstore.backend.reruns" // {rerun} by cause
)

// Admission outcomes, the values of the "outcome" attribute of
// MetricAdmissions.
const (
	OutcomeAdmitted    = "admitted"
	OutcomeUnsupported = "unsupported"
	OutcomeRaced       = "raced"
	OutcomeExhausted   = "exhausted"
	OutcomeRejected    = "rejected"
	OutcomeOwnerFailed = "owner_failed"
)

type instruments struct {
	tracer     trace.Tracer
	admissions metric.Int64Counter
	consumed   metric.Int64Counter
	scheduled  metric.Int64Counter
	refused    metric.Int64Counter
	fenced     metric.Int64Counter
	transient  metric.Int64Counter
	ownerCall  metric.Float64Histogram
	batchSize  metric.Int64Histogram
	txDuration metric.Float64Histogram
	settled    metric.Int64Counter
}

// transaction records one Store transaction (workflow.Engine.OnTransaction).
func (in *instruments) transaction(ctx context.Context, ti workflow.TransactionInfo) {
	kind, result := "view", "ok"
	if ti.Write {
		kind = "update"
	}
	switch {
	case ti.Err == nil:
	case errors.Is(ti.Err, workflow.ErrNotFound), errors.Is(ti.Err, backend.ErrNotFound):
		result = "not_found"
	default:
		result = "error"
	}
	in.txDuration.Record(ctx, ti.Duration.Seconds(),
		metric.WithAttributes(attribute.String("kind", kind), attribute.String("result", result)))
}

func newInstruments(mp metric.MeterProvider, tp trace.TracerProvider, b backend.Backend) (*instruments, error) {
	if mp == nil {
		mp = metricnoop.NewMeterProvider()
	}
	if tp == nil {
		tp = tracenoop.NewTracerProvider()
	}
	m := mp.Meter(instrumentationName)
	in := &instruments{tracer: tp.Tracer(instrumentationName)}
	var err error
	counter := func(dst *metric.Int64Counter, name, unit, desc string) {
		if err == nil {
			*dst, err = m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		}
	}
	counter(&in.admissions, MetricAdmissions, "{activation}", "Activations a dispatch pass handled, by outcome.")
	counter(&in.consumed, MetricRetriesConsumed, "{retry}", "Due automatic retries consumed (activation requeued).")
	counter(&in.scheduled, MetricRetriesScheduled, "{retry}", "Automatic retries scheduled by observations the runner applied.")
	counter(&in.refused, MetricRetriesRefused, "{retry}", "Automatic retries refused or discarded, by reason.")
	counter(&in.fenced, MetricFencedRejections, "{pass}", "Passes refused because the execution authority changed.")
	counter(&in.transient, MetricTransientErrors, "{pass}", "Passes that failed on an error the runner backs off from.")
	counter(&in.settled, MetricAttemptsSettled, "{attempt}", "Attempts the runner's observations settled, by node and outcome (the attempt's status).")
	if err != nil {
		return nil, err
	}
	if in.ownerCall, err = m.Float64Histogram(MetricOwnerCallDuration, metric.WithUnit("s"),
		metric.WithDescription("Latency of owner calls (plan, dispatch, dispatch_batch, lookup, observe).")); err != nil {
		return nil, err
	}
	if in.txDuration, err = m.Float64Histogram(MetricTransactionDuration, metric.WithUnit("s"),
		metric.WithDescription("Latency of the Store's transactions, backend re-runs included.")); err != nil {
		return nil, err
	}
	if in.batchSize, err = m.Int64Histogram(MetricBatchSize, metric.WithUnit("{activation}"),
		metric.WithDescription("Activations one dispatch pass handled.")); err != nil {
		return nil, err
	}
	if rc, ok := b.(backend.RerunCounter); ok {
		if _, err := m.Int64ObservableCounter(MetricBackendReruns, metric.WithUnit("{rerun}"),
			metric.WithDescription("Transaction re-runs of the Store's backend since it was opened, by cause; exhausted counts Updates that gave up."),
			metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
				r := rc.Reruns()
				for _, c := range []struct {
					cause string
					n     int64
				}{{"busy", r.Busy}, {"conflict", r.Conflict}, {"deadlock", r.Deadlock}, {"transient", r.Transient},
					{"outcome_unknown", r.OutcomeUnknown}, {"exhausted", r.Exhausted}} {
					o.Observe(c.n, metric.WithAttributes(attribute.String("cause", c.cause)))
				}
				return nil
			})); err != nil {
			return nil, err
		}
	}
	return in, nil
}

func outcomeAttr(o string) metric.MeasurementOption {
	return metric.WithAttributes(attribute.String("outcome", o))
}

func reasonAttr(r string) metric.MeasurementOption {
	return metric.WithAttributes(attribute.String("reason", r))
}

func callAttr(c string) metric.MeasurementOption {
	return metric.WithAttributes(attribute.String("call", c))
}

// logReruns logs the backend's re-runs since the last pass, by cause: at
// debug level, or as a warning when an Update gave up. Re-runs are how
// optimistic and serializable backends resolve contention; a steady stream
// of them says dispatchers compete for the same runs.
func (r *Runner) logReruns(ctx context.Context) {
	if r.reruns == nil {
		return
	}
	now := r.reruns.Reruns()
	d := now.Since(r.lastReruns)
	r.lastReruns = now
	if d == (backend.Reruns{}) {
		return
	}
	level := slog.LevelDebug
	if d.Exhausted > 0 {
		level = slog.LevelWarn
	}
	r.log.LogAttrs(ctx, level, "backend re-runs", slog.Int64("busy", d.Busy), slog.Int64("conflict", d.Conflict),
		slog.Int64("deadlock", d.Deadlock), slog.Int64("transient", d.Transient),
		slog.Int64("outcome_unknown", d.OutcomeUnknown), slog.Int64("gave_up", d.Exhausted))
}
