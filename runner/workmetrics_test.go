package runner

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/wfstore/wfstore/memstore"
	"github.com/wfstore/wfstore/workflow"
)

// floatGauge returns a float gauge's value for the attribute set attrs.
func floatGauge(t *testing.T, m map[string]metricdata.Aggregation, name string, attrs ...attribute.KeyValue) (float64, bool) {
	t.Helper()
	g, ok := m[name].(metricdata.Gauge[float64])
	if !ok {
		return 0, false
	}
	want := attribute.NewSet(attrs...)
	for _, dp := range g.DataPoints {
		if dp.Attributes.Equals(&want) {
			return dp.Value, true
		}
	}
	return 0, false
}

// independentCounts counts the work of the named runs and activations
// through the Store's ordinary reads, not WorkCounts.
type independentCounts struct {
	pending, admitted, retriesDue int64
	runs                          map[workflow.RunStatus]int64
}

func countIndependently(t *testing.T, s *workflow.Store, runs []string, acts []workflow.ActivationKey, now time.Time) independentCounts {
	t.Helper()
	ctx := context.Background()
	c := independentCounts{runs: map[workflow.RunStatus]int64{}}
	status := map[string]workflow.RunStatus{}
	for _, id := range runs {
		run, err := s.GetRun(ctx, id)
		require.NoError(t, err)
		c.runs[run.Status]++
		status[id] = run.Status
	}
	for _, k := range acts {
		a, err := s.GetActivation(ctx, k)
		require.NoError(t, err)
		if a.Status == workflow.ActivationPending && status[k.RunID] == workflow.RunRunning {
			c.pending++
		}
	}
	for _, st := range []workflow.AttemptStatus{workflow.AttemptAdmitted, workflow.AttemptRunning} {
		page, err := s.Attempts(ctx, workflow.AttemptQuery{Status: st, Limit: workflow.MaxPageLimit})
		require.NoError(t, err)
		c.admitted += int64(len(page.Items))
	}
	scan, err := s.Retries(ctx, workflow.RetryQuery{Limit: workflow.MaxPageLimit})
	require.NoError(t, err)
	require.Empty(t, scan.Next)
	for _, rr := range scan.Items {
		if rr.Earliest != nil && !rr.Earliest.Due.After(now) {
			c.retriesDue++
		}
	}
	return c
}

// workFixture builds, before the fake clock's now: r1 failed with a retry
// due, r2 with two activations the runner admits, r3 paused, r4 with an
// activation the runner (restricted to r2) leaves pending.
func workFixture(t *testing.T, clock *fakeClock) (*workflow.Store, []string, []workflow.ActivationKey) {
	t.Helper()
	ctx := context.Background()
	early := clock.Now().Add(-time.Minute)
	s := workflow.New(memstore.New())
	runs := []string{"r1", "r2", "r3", "r4"}
	for _, id := range runs {
		_, err := s.CreateRun(ctx, workflow.NewRun{ID: id}, early)
		require.NoError(t, err)
	}
	addRetryable(t, s, key("r1", "a"), early)
	ds, err := s.Dispatch(ctx, &testOwner{clock: clock}, workflow.DispatchOptions{RunID: "r1"}, early)
	require.NoError(t, err)
	require.Len(t, ds.Admitted, 1)
	res, err := s.ApplyObservation(ctx, ds.Admitted[0].Identity, workflow.Observation{Kind: workflow.ObservedRetryableFailure}, early)
	require.NoError(t, err)
	require.NotNil(t, res.Schedule, "a retry is scheduled, due before now")
	acts := []workflow.ActivationKey{key("r1", "a"), key("r2", "a"), key("r2", "b"), key("r4", "x")}
	for _, k := range acts[1:] {
		_, err := s.AddActivation(ctx, workflow.NewActivation{Key: k, Input: json.RawMessage(`{}`)}, early)
		require.NoError(t, err)
	}
	require.NoError(t, s.PauseRun(ctx, "r3", nil, early))
	return s, runs, acts
}

// The work gauges equal what the Store's ordinary reads count, are read
// again once the interval passed (the oldest admitted attempt ages), and
// say when a count stopped at the bound.
func TestWorkGaugesMatchAnIndependentCountOfTheStore(t *testing.T) {
	t.Parallel()
	reader, mp := meterProvider(t)
	clock := newFakeClock()
	s, runs, acts := workFixture(t, clock)
	st := start(t, newRunner(t, s, &testOwner{clock: clock}, clock, WithRun("r2", nil), WithMeterProvider(mp),
		WithWorkMetrics(30*time.Second, 0), WithPollInterval(time.Minute, time.Minute)))
	tm := clock.nextTimer(t) // idle: r2's attempts admitted

	want := countIndependently(t, s, runs, acts, clock.Now())
	assert.Equal(t, independentCounts{pending: 1, admitted: 2, retriesDue: 1,
		runs: map[workflow.RunStatus]int64{workflow.RunRunning: 2, workflow.RunPaused: 1, workflow.RunFailed: 1}}, want)
	m := collected(t, reader)
	assert.Equal(t, want.pending, gauge(t, m, MetricWorkPending))
	assert.Equal(t, want.admitted, gauge(t, m, MetricWorkAdmitted))
	assert.Equal(t, want.retriesDue, gauge(t, m, MetricWorkRetriesDue))
	for _, st := range []workflow.RunStatus{workflow.RunRunning, workflow.RunPaused, workflow.RunCompleted,
		workflow.RunFailed, workflow.RunCancelled, workflow.RunRepairRequired} {
		assert.Equal(t, want.runs[st], gauge(t, m, MetricWorkRuns, attribute.String("status", string(st))), st)
	}
	age, ok := floatGauge(t, m, MetricWorkOldestAdmittedAge)
	require.True(t, ok, "oldest admitted age observed")
	assert.Equal(t, 0.0, age, "admitted at the runner's first pass")
	assert.Equal(t, int64(0), gauge(t, m, MetricWorkCapped, attribute.String("count", "admitted")))

	clock.fire(tm) // a minute later: read again
	clock.nextTimer(t)
	age, _ = floatGauge(t, collected(t, reader), MetricWorkOldestAdmittedAge)
	assert.Equal(t, 60.0, age)
	_, err := st.stop(t)
	require.NoError(t, err)

	// A bound of 1 reports at least 1 where there is more. (A new clock:
	// the stopped runner's timers are not the new one's.)
	clock = newFakeClock()
	capReader, capMP := meterProvider(t)
	st = start(t, newRunner(t, s, &testOwner{clock: clock}, clock, WithRun("r2", nil), WithMeterProvider(capMP),
		WithWorkMetrics(30*time.Second, 1), WithPollInterval(time.Minute, time.Minute)))
	clock.nextTimer(t)
	_, err = st.stop(t)
	require.NoError(t, err)
	m = collected(t, capReader)
	assert.Equal(t, int64(1), gauge(t, m, MetricWorkAdmitted))
	assert.Equal(t, int64(1), gauge(t, m, MetricWorkCapped, attribute.String("count", "admitted")))
	assert.Equal(t, int64(1), gauge(t, m, MetricWorkRuns, attribute.String("status", "running")))
	assert.Equal(t, int64(1), gauge(t, m, MetricWorkCapped, attribute.String("count", "runs"), attribute.String("status", "running")))
	assert.Equal(t, int64(0), gauge(t, m, MetricWorkCapped, attribute.String("count", "runs"), attribute.String("status", "paused")))
	assert.Equal(t, int64(0), gauge(t, m, MetricWorkCapped, attribute.String("count", "pending")), "one pending: exact")

	// Off: no gauge at all.
	clock = newFakeClock()
	offReader, offMP := meterProvider(t)
	st = start(t, newRunner(t, s, &testOwner{clock: clock}, clock, WithRun("r2", nil), WithMeterProvider(offMP),
		WithWorkMetrics(0, 0), WithPollInterval(time.Minute, time.Minute)))
	clock.nextTimer(t)
	_, err = st.stop(t)
	require.NoError(t, err)
	_, on := collected(t, offReader)[MetricWorkAdmitted]
	assert.False(t, on, "WithWorkMetrics(0, 0) reads no work counts")
}

// unitMeter records the unit of every instrument the runner makes.
type unitMeter struct {
	metricnoop.Meter
	mu    *sync.Mutex
	units map[string]string
}

func (m unitMeter) note(name, unit string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.units[name] = unit
}

func (m unitMeter) Int64Counter(n string, o ...metric.Int64CounterOption) (metric.Int64Counter, error) {
	m.note(n, metric.NewInt64CounterConfig(o...).Unit())
	return m.Meter.Int64Counter(n, o...)
}

func (m unitMeter) Int64UpDownCounter(n string, o ...metric.Int64UpDownCounterOption) (metric.Int64UpDownCounter, error) {
	m.note(n, metric.NewInt64UpDownCounterConfig(o...).Unit())
	return m.Meter.Int64UpDownCounter(n, o...)
}

func (m unitMeter) Int64Histogram(n string, o ...metric.Int64HistogramOption) (metric.Int64Histogram, error) {
	m.note(n, metric.NewInt64HistogramConfig(o...).Unit())
	return m.Meter.Int64Histogram(n, o...)
}

func (m unitMeter) Int64Gauge(n string, o ...metric.Int64GaugeOption) (metric.Int64Gauge, error) {
	m.note(n, metric.NewInt64GaugeConfig(o...).Unit())
	return m.Meter.Int64Gauge(n, o...)
}

func (m unitMeter) Int64ObservableCounter(n string, o ...metric.Int64ObservableCounterOption) (metric.Int64ObservableCounter, error) {
	m.note(n, metric.NewInt64ObservableCounterConfig(o...).Unit())
	return m.Meter.Int64ObservableCounter(n, o...)
}

func (m unitMeter) Int64ObservableGauge(n string, o ...metric.Int64ObservableGaugeOption) (metric.Int64ObservableGauge, error) {
	m.note(n, metric.NewInt64ObservableGaugeConfig(o...).Unit())
	return m.Meter.Int64ObservableGauge(n, o...)
}

func (m unitMeter) Float64Counter(n string, o ...metric.Float64CounterOption) (metric.Float64Counter, error) {
	m.note(n, metric.NewFloat64CounterConfig(o...).Unit())
	return m.Meter.Float64Counter(n, o...)
}

func (m unitMeter) Float64Histogram(n string, o ...metric.Float64HistogramOption) (metric.Float64Histogram, error) {
	m.note(n, metric.NewFloat64HistogramConfig(o...).Unit())
	return m.Meter.Float64Histogram(n, o...)
}

func (m unitMeter) Float64Gauge(n string, o ...metric.Float64GaugeOption) (metric.Float64Gauge, error) {
	m.note(n, metric.NewFloat64GaugeConfig(o...).Unit())
	return m.Meter.Float64Gauge(n, o...)
}

func (m unitMeter) Float64ObservableGauge(n string, o ...metric.Float64ObservableGaugeOption) (metric.Float64ObservableGauge, error) {
	m.note(n, metric.NewFloat64ObservableGaugeConfig(o...).Unit())
	return m.Meter.Float64ObservableGauge(n, o...)
}

type unitProvider struct {
	metricnoop.MeterProvider
	m unitMeter
}

func (p unitProvider) Meter(string, ...metric.MeterOption) metric.Meter { return p.m }

// Every instrument the runner makes declares its unit.
func TestEveryInstrumentHasAUnit(t *testing.T) {
	t.Parallel()
	p := unitProvider{m: unitMeter{mu: &sync.Mutex{}, units: map[string]string{}}}
	clock := newFakeClock()
	b := &rerunBackend{Backend: memstore.New()}
	s := workflow.New(b)
	st := start(t, newRunner(t, s, retryingOwner{&testOwner{clock: clock}}, clock, WithMeterProvider(p),
		WithPollInterval(time.Minute, time.Minute)))
	clock.nextTimer(t) // one full pass made every lazily made instrument
	_, err := st.stop(t)
	require.NoError(t, err)
	p.m.mu.Lock()
	defer p.m.mu.Unlock()
	for _, name := range []string{MetricAdmissions, MetricRetriesConsumed, MetricRetriesScheduled, MetricRetriesRefused,
		MetricFencedRejections, MetricTransientErrors, MetricOwnerCallDuration, MetricBatchSize, MetricTransactionDuration,
		MetricBackendReruns, MetricStuckAttempts, MetricAttemptsTimedOut, MetricCancellations, MetricAttemptsSettled,
		MetricWorkPending, MetricWorkAdmitted, MetricWorkOldestAdmittedAge, MetricWorkRetriesDue, MetricWorkRuns, MetricWorkCapped} {
		_, made := p.m.units[name]
		assert.True(t, made, "%s is made", name)
	}
	for name, unit := range p.m.units {
		assert.NotEmpty(t, unit, "%s has a unit", name)
	}
}

// A lookup of something that does not exist is not a failed transaction.
func TestNotFoundLookupsAreNotCountedAsErrors(t *testing.T) {
	t.Parallel()
	reader, mp := meterProvider(t)
	clock := newFakeClock()
	s := newStore(t, clock, "r1")
	st := start(t, newRunner(t, s, &testOwner{clock: clock}, clock, WithMeterProvider(mp), WithPollInterval(time.Minute, time.Minute)))
	clock.nextTimer(t)
	_, err := s.GetRun(context.Background(), "missing")
	require.ErrorIs(t, err, workflow.ErrNotFound)
	_, err = s.GetAttempt(context.Background(), "missing")
	require.ErrorIs(t, err, workflow.ErrNotFound)
	_, err = st.stop(t)
	require.NoError(t, err)

	h, ok := collected(t, reader)[MetricTransactionDuration].(metricdata.Histogram[float64])
	require.True(t, ok)
	byResult := map[string]uint64{}
	for _, dp := range h.DataPoints {
		res, _ := dp.Attributes.Value("result")
		byResult[res.AsString()] += dp.Count
	}
	assert.Zero(t, byResult["error"], "not found is not an error")
	assert.Equal(t, uint64(2), byResult["not_found"])
}

// Settled attempts are counted by node and outcome, and every owner call
// has its span, inside the pass's, naming the attempt it is about.
func TestSettledAttemptsAreCountedAndOwnerCallsHaveSpans(t *testing.T) {
	t.Parallel()
	reader, mp := meterProvider(t)
	spans, tp := tracerProvider(t)
	clock := newFakeClock()
	s := newStore(t, clock, "r1")
	addRetryable(t, s, key("r1", "a"), clock.Now())
	st := start(t, newRunner(t, s, retryingOwner{&testOwner{clock: clock}}, clock, WithMeterProvider(mp), WithTracerProvider(tp),
		WithPollInterval(time.Minute, time.Minute)))
	clock.fire(clock.nextTimer(t)) // attempt 1 failed; attempt 2 at the retry's due time
	clock.nextTimer(t)
	_, err := st.stop(t)
	require.NoError(t, err)

	m := collected(t, reader)
	assert.Equal(t, int64(1), counter(t, m, MetricAttemptsSettled, attribute.String("node", "n"), attribute.String("outcome", "failed")))
	assert.Equal(t, int64(1), counter(t, m, MetricAttemptsSettled, attribute.String("node", "n"), attribute.String("outcome", "succeeded")))

	passes := map[string]bool{}
	for _, sp := range spans.Ended() {
		if sp.Name() == SpanPass {
			passes[sp.SpanContext().SpanID().String()] = true
		}
	}
	// A plan or dispatch call is inside its attempt's span, which a pass
	// links to (attempt spans are roots of their own traces); the other
	// calls are inside a pass.
	attempts := map[string]sdktrace.ReadOnlySpan{}
	for _, sp := range spans.Ended() {
		if sp.Name() == SpanAttempt {
			attempts[sp.SpanContext().SpanID().String()] = sp
		}
	}
	calls := map[string]int{}
	for _, sp := range spans.Ended() {
		if sp.Name() != SpanOwnerCall {
			continue
		}
		attrs := attribute.NewSet(sp.Attributes()...)
		call, _ := attrs.Value("call")
		calls[call.AsString()]++
		if c := call.AsString(); c == "plan" || c == "dispatch" {
			at, ok := attempts[sp.Parent().SpanID().String()]
			require.True(t, ok, "%s span is inside an attempt span", c)
			assert.Equal(t, attrOf(sp, "identity"), attrOf(at, "identity"), "%s span is inside its own attempt's span", c)
			require.Len(t, at.Links(), 1)
			assert.True(t, passes[at.Links()[0].SpanContext.SpanID().String()], "%s span's attempt is linked to a pass", c)
		} else {
			assert.True(t, passes[sp.Parent().SpanID().String()], "%s span is inside a pass", call.AsString())
		}
		if call.AsString() == "plan" {
			continue
		}
		for _, k := range []attribute.Key{"run", "node", "activation", "attempt", "identity"} {
			assert.True(t, attrs.HasValue(k), "%s span has %s", call.AsString(), k)
		}
		run, _ := attrs.Value("run")
		assert.Equal(t, "r1", run.AsString())
	}
	assert.Equal(t, map[string]int{"plan": 2, "dispatch": 2, "observe": 2}, calls)

	// Between an attempt's dispatch span and its observe span, its pass
	// records that its receipt was committed.
	var admitted []string
	for _, sp := range spans.Ended() {
		for _, ev := range sp.Events() {
			if ev.Name == EventAttemptAdmitted {
				attrs := attribute.NewSet(ev.Attributes...)
				n, _ := attrs.Value("attempt")
				admitted = append(admitted, sp.Name()+"/"+n.String())
			}
		}
	}
	assert.Equal(t, []string{SpanPass + "/1", SpanPass + "/2"}, admitted)
}

// The owner's Cancel call has its span naming the attempt, and a failing
// one records the error.
func TestCancelCallsHaveSpansNamingTheAttempt(t *testing.T) {
	t.Parallel()
	spans, tp := tracerProvider(t)
	clock := newFakeClock()
	s := newStore(t, clock, "r")
	co := newCancelOwner(clock, s)
	co.fail = func(n int) bool { return n == 1 }
	_, id := admitThenCancel(t, s, co.testOwner, clock, newRunner(t, s, co, clock, WithTracerProvider(tp)))
	clock.fire(clock.nextTimer(t)) // the first Cancel failed: backing off
	eventually(t, runCancelled(s, "r"), "the second Cancel succeeds")
	eventually(t, func() bool {
		n := 0
		for _, sp := range spans.Ended() {
			if sp.Name() != SpanOwnerCall {
				continue
			}
			attrs := attribute.NewSet(sp.Attributes()...)
			if call, _ := attrs.Value("call"); call.AsString() != "cancel" {
				continue
			}
			identity, _ := attrs.Value("identity")
			node, _ := attrs.Value("node")
			if identity.AsString() == id && node.AsString() == "n" {
				n++
			}
		}
		return n == 2
	}, "two cancel spans naming the attempt")
	failed := 0
	for _, sp := range spans.Ended() {
		if sp.Name() == SpanOwnerCall && sp.Status().Code == codes.Error {
			failed++
		}
	}
	assert.Equal(t, 1, failed, "the failed Cancel's span records the error")
}
