// Command metrics runs the runner with the OpenTelemetry SDK: metrics go
// to a stdout exporter (JSON, exported when the meter provider shuts
// down), and each attempt's spans are printed as they end, by trace: the
// attempt's steps (plan, prepare, handoff, dispatch, receipt) and then the
// attempt span itself with its outcome; observe calls follow in the pass
// traces, naming the attempt.
//
// Two orders: order-1's charge fails once and succeeds on its retry;
// order-2's shipment is handed to the carrier and never reported back, so
// it stays admitted and ages (wfstore.work.attempts.admitted and its
// oldest_age); order-3 is paused.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/wfstore/wfstore/memstore"
	"github.com/wfstore/wfstore/runner"
	"github.com/wfstore/wfstore/workflow"
)

// owner charges (attempt 1 fails, attempt 2 succeeds) and ships (never
// reported back).
type owner struct{ done context.CancelFunc }

func (owner) Plan(_ context.Context, a workflow.Activation) (*workflow.Plan, error) {
	return &workflow.Plan{SideEffect: workflow.ReadOnly, Intent: a.Input}, nil
}

func (owner) Dispatch(context.Context, workflow.PreparedDispatch) (json.RawMessage, error) {
	return json.RawMessage(`{"queued":true}`), nil
}

func (o owner) Observe(_ context.Context, a workflow.Attempt) (workflow.Observation, error) {
	switch {
	case a.Key.NodeID == "ship":
		return workflow.Observation{Kind: workflow.ObservedRunning}, nil
	case a.Key.Attempt == 1:
		return workflow.Observation{Kind: workflow.ObservedRetryableFailure}, nil
	}
	defer o.done()
	return workflow.Observation{Kind: workflow.ObservedSucceeded, Output: json.RawMessage(`{"ok":true}`)}, nil
}

// spanPrinter prints each attempt span, its steps and owner-call span as
// it ends, with its trace, and the admissions a pass recorded.
type spanPrinter struct{}

func (spanPrinter) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (spanPrinter) Shutdown(context.Context) error                  { return nil }
func (spanPrinter) ForceFlush(context.Context) error                { return nil }
func (spanPrinter) OnEnd(s sdktrace.ReadOnlySpan) {
	for _, ev := range s.Events() {
		if ev.Name == runner.EventAttemptAdmitted {
			fmt.Printf("event %s%s\n", ev.Name, attrs(ev.Attributes))
		}
	}
	switch s.Name() {
	case runner.SpanOwnerCall, runner.SpanAttempt, runner.SpanAttemptPrepare, runner.SpanAttemptHandoff, runner.SpanAttemptReceipt:
		fmt.Printf("trace %s span %s%s\n", s.SpanContext().TraceID().String()[:8], s.Name(), attrs(s.Attributes()))
	}
}

func attrs(kvs []attribute.KeyValue) string {
	var b strings.Builder
	for _, kv := range kvs {
		fmt.Fprintf(&b, " %s=%s", kv.Key, kv.Value.String())
	}
	return b.String()
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "metrics:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	exp, err := stdoutmetric.New()
	if err != nil {
		return err
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(time.Hour))))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spanPrinter{}))

	s := workflow.New(memstore.New())
	now := time.Now()
	retry := &workflow.RetryPolicy{Version: 1, MaxAttempts: 2, InitialBackoff: 500 * time.Millisecond,
		MaximumBackoff: time.Second, BackoffMultiplier: 1, EligibleFailures: []workflow.FailureKind{workflow.FailureOwnerReportedRetryable}}
	for _, id := range []string{"order-1", "order-2", "order-3"} {
		if _, err := s.CreateRun(ctx, workflow.NewRun{ID: id}, now); err != nil {
			return err
		}
	}
	for _, na := range []workflow.NewActivation{
		{Key: workflow.ActivationKey{RunID: "order-1", NodeID: "charge", ActivationID: "c1"}, RetryPolicy: retry},
		{Key: workflow.ActivationKey{RunID: "order-2", NodeID: "ship", ActivationID: "s1"}},
		{Key: workflow.ActivationKey{RunID: "order-3", NodeID: "charge", ActivationID: "c1"}},
	} {
		na.Input, na.Reconciliation = json.RawMessage(`{}`), workflow.IdempotentReplay
		if _, err := s.AddActivation(ctx, na, now); err != nil {
			return err
		}
	}
	if err := s.PauseRun(ctx, "order-3", nil, now); err != nil {
		return err
	}

	// The work gauges are read every 100ms here (30s by default).
	sum, err := runner.Run(ctx, s, owner{done: stop}, runner.WithMeterProvider(mp), runner.WithTracerProvider(tp),
		runner.WithWorkMetrics(100*time.Millisecond, 0))
	if err != nil {
		return err
	}
	fmt.Printf("runner stopped: admitted=%d retries_consumed=%d\n", sum.Admitted, sum.RetriesConsumed)
	if err := tp.Shutdown(context.Background()); err != nil {
		return err
	}
	fmt.Println("metrics:")
	return mp.Shutdown(context.Background()) // exports the metrics to stdout
}
