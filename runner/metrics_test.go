package runner

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/memstore"
	"github.com/wfstore/wfstore/workflow"
)

// meterProvider returns an SDK meter provider whose metrics the returned
// reader collects, shut down when t ends.
func meterProvider(t *testing.T) (*sdkmetric.ManualReader, *sdkmetric.MeterProvider) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	return reader, mp
}

// tracerProvider returns an SDK tracer provider whose spans the returned
// recorder keeps, shut down when t ends.
func tracerProvider(t *testing.T) (*tracetest.SpanRecorder, *sdktrace.TracerProvider) {
	t.Helper()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return spans, tp
}

// collected reads every metric of the runner's meter by name.
func collected(t *testing.T, reader *sdkmetric.ManualReader) map[string]metricdata.Aggregation {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	out := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != instrumentationName {
			continue
		}
		for _, m := range sm.Metrics {
			out[m.Name] = m.Data
		}
	}
	return out
}

// counter returns a counter's value for the attribute set attrs.
func counter(t *testing.T, m map[string]metricdata.Aggregation, name string, attrs ...attribute.KeyValue) int64 {
	t.Helper()
	sum, ok := m[name].(metricdata.Sum[int64])
	if !ok {
		return 0
	}
	want := attribute.NewSet(attrs...)
	for _, dp := range sum.DataPoints {
		if dp.Attributes.Equals(&want) {
			return dp.Value
		}
	}
	return 0
}

func TestMetricsAndSpansOfAScriptedRun(t *testing.T) {
	t.Parallel()
	reader, mp := meterProvider(t)
	spans, tp := tracerProvider(t)

	clock := newFakeClock()
	s := newStore(t, clock, "r1", "r2")
	t0 := clock.Now()
	addRetryable(t, s, key("r1", "a"), t0)
	addRetryable(t, s, key("r2", "a"), t0)
	o := retryingOwner{&testOwner{clock: clock}}
	st := start(t, newRunner(t, s, o, clock, WithMeterProvider(mp), WithTracerProvider(tp),
		WithPollInterval(time.Minute, time.Minute)))

	// Attempt 1 of both fails at t0; the retries are due at t0+10s, where
	// the runner wakes, consumes both and admits attempt 2 of each.
	tm := clock.nextTimer(t)
	assert.Equal(t, 10*time.Second, tm.d)
	clock.fire(tm)
	clock.nextTimer(t)
	sum, err := st.stop(t)
	require.NoError(t, err)
	assert.Equal(t, 4, sum.Admitted)
	assert.Equal(t, 2, sum.RetriesConsumed)
	for _, id := range []string{"r1", "r2"} {
		run, err := s.GetRun(context.Background(), id)
		require.NoError(t, err)
		assert.Equal(t, workflow.RunCompleted, run.Status, id)
	}

	m := collected(t, reader)
	assert.Equal(t, int64(4), counter(t, m, MetricAdmissions, attribute.String("outcome", OutcomeAdmitted)))
	assert.Equal(t, int64(0), counter(t, m, MetricAdmissions, attribute.String("outcome", OutcomeRaced)))
	assert.Equal(t, int64(2), counter(t, m, MetricRetriesScheduled))
	assert.Equal(t, int64(2), counter(t, m, MetricRetriesConsumed))
	assert.Equal(t, int64(0), counter(t, m, MetricFencedRejections))

	calls, ok := m[MetricOwnerCallDuration].(metricdata.Histogram[float64])
	require.True(t, ok, "owner-call histogram recorded")
	byCall := map[string]uint64{}
	for _, dp := range calls.DataPoints {
		v, _ := dp.Attributes.Value("call")
		byCall[v.AsString()] = dp.Count
	}
	assert.Equal(t, map[string]uint64{"plan": 4, "dispatch": 4, "observe": 4}, byCall)

	batches, ok := m[MetricBatchSize].(metricdata.Histogram[int64])
	require.True(t, ok, "batch-size histogram recorded")
	require.Len(t, batches.DataPoints, 1)
	assert.Equal(t, uint64(2), batches.DataPoints[0].Count, "two dispatch passes admitted work")
	assert.Equal(t, int64(4), batches.DataPoints[0].Sum)

	passes := 0
	for _, sp := range spans.Ended() {
		if sp.Name() == SpanPass {
			passes++
		}
	}
	assert.Equal(t, sum.Passes, passes, "one span per pass")
	assert.GreaterOrEqual(t, passes, 3)
}

func TestFencedRejectionsAreCounted(t *testing.T) {
	t.Parallel()
	reader, mp := meterProvider(t)
	clock := newFakeClock()
	s := newStore(t, clock)
	auth := fencedRun(t, s, clock)
	st := start(t, newRunner(t, s, &testOwner{clock: clock}, clock, WithRun("r1", &auth), WithMeterProvider(mp)))
	_, err := st.wait(t)
	require.ErrorIs(t, err, workflow.ErrStaleAuthority)
	assert.Equal(t, int64(1), counter(t, collected(t, reader), MetricFencedRejections))
}

// rerunBackend is a Backend that counts re-runs, as the SQL and etcd
// adapters do.
type rerunBackend struct {
	backend.Backend
	conflicts atomic.Int64
}

func (b *rerunBackend) Reruns() backend.Reruns {
	return backend.Reruns{Conflict: b.conflicts.Load(), Exhausted: 1}
}

func TestBackendRerunsAreObservedByCause(t *testing.T) {
	t.Parallel()
	reader, mp := meterProvider(t)
	b := &rerunBackend{Backend: memstore.New()}
	newRunner(t, workflow.New(b), &testOwner{clock: newFakeClock()}, newFakeClock(), WithMeterProvider(mp))

	b.conflicts.Store(7)
	m := collected(t, reader)
	assert.Equal(t, int64(7), counter(t, m, MetricBackendReruns, attribute.String("cause", "conflict")))
	assert.Equal(t, int64(1), counter(t, m, MetricBackendReruns, attribute.String("cause", "exhausted")))
	assert.Equal(t, int64(0), counter(t, m, MetricBackendReruns, attribute.String("cause", "busy")))
	b.conflicts.Store(9)
	assert.Equal(t, int64(9), counter(t, collected(t, reader), MetricBackendReruns, attribute.String("cause", "conflict")),
		"read from the backend at every collection")

	// A Backend that does not count re-runs has no such metric.
	plain, mp2 := meterProvider(t)
	newRunner(t, workflow.New(memstore.New()), &testOwner{clock: newFakeClock()}, newFakeClock(), WithMeterProvider(mp2))
	_, ok := collected(t, plain)[MetricBackendReruns]
	assert.False(t, ok)
}

// An observation that fails an attempt retryably but schedules nothing
// (the activation has no retry policy) is counted and logged as refused,
// with the reason.
func TestRetryRefusedAtObservationIsCountedAndLogged(t *testing.T) {
	t.Parallel()
	reader, mp := meterProvider(t)
	clock := newFakeClock()
	s := newStore(t, clock, "r1")
	_, err := s.AddActivation(context.Background(), workflow.NewActivation{Key: key("r1", "a"), Input: []byte(`{}`),
		Effect: workflow.ReadOnly, Reconciliation: workflow.IdempotentReplay}, clock.Now())
	require.NoError(t, err)
	var logs logBuffer
	st := start(t, newRunner(t, s, retryingOwner{&testOwner{clock: clock}}, clock, WithMeterProvider(mp),
		WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))), WithPollInterval(time.Minute, time.Minute)))
	clock.nextTimer(t) // idle: attempt 1 was admitted and observed
	_, err = st.stop(t)
	require.NoError(t, err)

	m := collected(t, reader)
	assert.Equal(t, int64(1), counter(t, m, MetricRetriesRefused, attribute.String("reason", string(workflow.RefusedNoPolicy))))
	assert.Equal(t, int64(0), counter(t, m, MetricRetriesScheduled))
	assert.Equal(t, 1, count(logs.messages(t), "retry refused"))
	run, err := s.GetRun(context.Background(), "r1")
	require.NoError(t, err)
	assert.Equal(t, workflow.RunFailed, run.Status)
}

// Every transaction of the Store while the runner runs lands in the
// transaction histogram, by kind; none after it stopped.
func TestTransactionLatencyIsRecordedWhileTheRunnerRuns(t *testing.T) {
	t.Parallel()
	reader, mp := meterProvider(t)
	clock := newFakeClock()
	s := newStore(t, clock, "r1")
	addRetryable(t, s, key("r1", "a"), clock.Now())
	st := start(t, newRunner(t, s, &testOwner{clock: clock}, clock, WithMeterProvider(mp), WithPollInterval(time.Minute, time.Minute)))
	clock.nextTimer(t)
	_, err := st.stop(t)
	require.NoError(t, err)

	counts := func() map[string]uint64 {
		h, ok := collected(t, reader)[MetricTransactionDuration].(metricdata.Histogram[float64])
		require.True(t, ok, "transaction histogram recorded")
		out := map[string]uint64{}
		for _, dp := range h.DataPoints {
			kind, _ := dp.Attributes.Value("kind")
			res, _ := dp.Attributes.Value("result")
			out[kind.AsString()+"/"+res.AsString()] += dp.Count
		}
		return out
	}
	before := counts()
	assert.Positive(t, before["update/ok"], "the admission's writes")
	assert.Positive(t, before["view/ok"], "discovery and the retry scan")
	_, err = s.GetRun(context.Background(), "r1")
	require.NoError(t, err)
	assert.Equal(t, before, counts(), "a stopped runner records nothing")
}

// The re-runs a backend made since the last pass are logged by cause after
// the pass: at debug level, nothing when there were none.
func TestBackendRerunsAreLoggedPerPass(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	b := &rerunBackend{Backend: memstore.New()}
	b.conflicts.Store(3) // before the runner: not its to log
	var logs logBuffer
	st := start(t, newRunner(t, workflow.New(b), &testOwner{clock: clock}, clock,
		WithLogger(slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))),
		WithPollInterval(time.Minute, time.Minute)))
	tm := clock.nextTimer(t) // the first pass found nothing
	b.conflicts.Store(8)
	clock.fire(tm)
	clock.nextTimer(t) // the second pass ran
	_, err := st.stop(t)
	require.NoError(t, err)
	assert.Equal(t, 1, count(logs.messages(t), "backend re-runs"))
	assert.Contains(t, logs.String(), `"msg":"backend re-runs","busy":0,"conflict":5,`)
}
