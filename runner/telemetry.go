package runner

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// instrumentationName names the runner's meter and tracer.
const instrumentationName = "github.com/wfstore/wfstore/runner"

// Metric names. Counters count events since the runner started; the
// owner-call histogram is in seconds.
const (
	MetricAdmissions        = "wfstore.runner.admissions"          // {outcome}
	MetricRetriesConsumed   = "wfstore.runner.retries.consumed"    //
	MetricRetriesScheduled  = "wfstore.runner.retries.scheduled"   //
	MetricRetriesRefused    = "wfstore.runner.retries.refused"     // {reason}
	MetricFencedRejections  = "wfstore.runner.fenced_rejections"   //
	MetricTransientErrors   = "wfstore.runner.transient_errors"    //
	MetricOwnerCallDuration = "wfstore.runner.owner_call.duration" // {call}
	MetricBatchSize         = "wfstore.runner.batch.size"          //
	SpanPass                = "wfstore.runner.pass"                //
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
}

func newInstruments(mp metric.MeterProvider, tp trace.TracerProvider) (*instruments, error) {
	if mp == nil {
		mp = metricnoop.NewMeterProvider()
	}
	if tp == nil {
		tp = tracenoop.NewTracerProvider()
	}
	m := mp.Meter(instrumentationName)
	in := &instruments{tracer: tp.Tracer(instrumentationName)}
	var err error
	counter := func(dst *metric.Int64Counter, name, desc string) {
		if err == nil {
			*dst, err = m.Int64Counter(name, metric.WithDescription(desc))
		}
	}
	counter(&in.admissions, MetricAdmissions, "Activations a dispatch pass handled, by outcome.")
	counter(&in.consumed, MetricRetriesConsumed, "Due automatic retries consumed (activation requeued).")
	counter(&in.scheduled, MetricRetriesScheduled, "Automatic retries scheduled by observations the runner applied.")
	counter(&in.refused, MetricRetriesRefused, "Automatic retries refused or discarded, by reason.")
	counter(&in.fenced, MetricFencedRejections, "Passes refused because the execution authority changed.")
	counter(&in.transient, MetricTransientErrors, "Passes that failed on an error the runner backs off from.")
	if err != nil {
		return nil, err
	}
	if in.ownerCall, err = m.Float64Histogram(MetricOwnerCallDuration, metric.WithUnit("s"),
		metric.WithDescription("Latency of owner calls (plan, dispatch, dispatch_batch, lookup, observe).")); err != nil {
		return nil, err
	}
	if in.batchSize, err = m.Int64Histogram(MetricBatchSize,
		metric.WithDescription("Activations one dispatch pass handled.")); err != nil {
		return nil, err
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
