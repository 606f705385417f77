package runner

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/wfstore/wfstore/workflow"
)

// batchTestOwner is a workflow.BatchOwner: one DispatchBatch call per
// batch, each attempt accepted as testOwner accepts it.
type batchTestOwner struct{ *testOwner }

func (o batchTestOwner) DispatchBatch(ctx context.Context, ps []workflow.PreparedDispatch) ([]workflow.DispatchResult, error) {
	rs := make([]workflow.DispatchResult, len(ps))
	for i, p := range ps {
		rs[i].Receipt, rs[i].Err = o.testOwner.Dispatch(ctx, p)
	}
	return rs, nil
}

// alwaysFailingOwner plans as testOwner and fails every Dispatch call.
type alwaysFailingOwner struct{ *testOwner }

func (alwaysFailingOwner) Dispatch(context.Context, workflow.PreparedDispatch) (json.RawMessage, error) {
	return nil, errors.New("owner down")
}

// attrOf returns the string form of a span's attribute k ("" when unset).
func attrOf(sp sdktrace.ReadOnlySpan, k attribute.Key) string {
	set := attribute.NewSet(sp.Attributes()...)
	v, ok := set.Value(k)
	if !ok {
		return ""
	}
	return v.String()
}

// attemptTrace is what the recorder holds of one attempt: its span, its
// child spans by start order, and the spans its links name.
type attemptTrace struct {
	span     sdktrace.ReadOnlySpan
	children []sdktrace.ReadOnlySpan
}

// attemptTraces returns the ended attempt spans by identity, with their
// children in start order.
func attemptTraces(t *testing.T, spans *tracetest.SpanRecorder) map[string]*attemptTrace {
	t.Helper()
	out := map[string]*attemptTrace{}
	byID := map[trace.SpanID]*attemptTrace{}
	ended := spans.Ended()
	for _, sp := range ended {
		if sp.Name() == SpanAttempt {
			at := &attemptTrace{span: sp}
			out[attrOf(sp, "identity")] = at
			byID[sp.SpanContext().SpanID()] = at
		}
	}
	for _, sp := range ended {
		if at, ok := byID[sp.Parent().SpanID()]; ok && sp.Parent().TraceID() == at.span.SpanContext().TraceID() {
			at.children = append(at.children, sp)
		}
	}
	for _, at := range out {
		slices.SortStableFunc(at.children, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
	}
	return out
}

// childNames names an attempt's child spans, an owner call by its call.
func childNames(at *attemptTrace) []string {
	var names []string
	for _, c := range at.children {
		n := c.Name()
		if n == SpanOwnerCall {
			n += ":" + attrOf(c, "call")
		}
		names = append(names, n)
	}
	return names
}

// linked reports whether sp links to the span sc.
func linked(sp sdktrace.ReadOnlySpan, sc trace.SpanContext) bool {
	return slices.ContainsFunc(sp.Links(), func(l sdktrace.Link) bool { return l.SpanContext.Equal(sc) })
}

// passSpans returns the ended pass spans.
func passSpans(spans *tracetest.SpanRecorder) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, sp := range spans.Ended() {
		if sp.Name() == SpanPass {
			out = append(out, sp)
		}
	}
	return out
}

// checkAttemptSpan checks that at is the root of its own trace, names its
// attempt and outcome, and is linked both ways with one pass span.
func checkAttemptSpan(t *testing.T, spans *tracetest.SpanRecorder, at *attemptTrace, k workflow.AttemptKey, outcome string) {
	t.Helper()
	sp := at.span
	assert.False(t, sp.Parent().IsValid(), "an attempt span is the root of its own trace")
	assert.Equal(t, k.RunID, attrOf(sp, "run"))
	assert.Equal(t, k.NodeID, attrOf(sp, "node"))
	assert.Equal(t, k.ActivationID, attrOf(sp, "activation"))
	assert.Equal(t, "1", attrOf(sp, "attempt"))
	assert.Equal(t, k.Identity(), attrOf(sp, "identity"))
	assert.Equal(t, outcome, attrOf(sp, "outcome"))
	passes := 0
	for _, p := range passSpans(spans) {
		if linked(sp, p.SpanContext()) {
			passes++
			assert.True(t, linked(p, sp.SpanContext()), "the pass links back to the attempt")
		}
	}
	assert.Equal(t, 1, passes, "the attempt links to the pass that dispatched it")
}

// One attempt dispatched alone is one trace: its span names the attempt
// and the outcome, and its children are the plan call, the prepare, the
// handoff, the dispatch call and the receipt, in that order.
func TestADispatchedAttemptIsOneTraceOfItsSteps(t *testing.T) {
	t.Parallel()
	spans, tp := tracerProvider(t)
	clock := newFakeClock()
	s := newStore(t, clock, "r1")
	addRetryable(t, s, key("r1", "a"), clock.Now())
	st := start(t, newRunner(t, s, &testOwner{clock: clock}, clock, WithTracerProvider(tp)))
	clock.nextTimer(t)
	_, err := st.stop(t)
	require.NoError(t, err)

	k := workflow.AttemptKey{ActivationKey: key("r1", "a"), Attempt: 1}
	traces := attemptTraces(t, spans)
	require.Len(t, traces, 1)
	at := traces[k.Identity()]
	require.NotNil(t, at)
	checkAttemptSpan(t, spans, at, k, OutcomeAdmitted)
	assert.Equal(t, codes.Unset, at.span.Status().Code)
	assert.Equal(t, []string{SpanOwnerCall + ":plan", SpanAttemptPrepare, SpanAttemptHandoff, SpanOwnerCall + ":dispatch",
		SpanAttemptReceipt}, childNames(at))
	for i := 1; i < len(at.children); i++ {
		assert.False(t, at.children[i].StartTime().Before(at.children[i-1].EndTime()), "%s starts after %s ends",
			at.children[i].Name(), at.children[i-1].Name())
	}
}

// In batch mode every attempt of the batch is its own trace with the same
// steps; a BatchOwner's one call is linked with each attempt both ways.
func TestABatchDispatchGivesEachAttemptItsTrace(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		owner func(*testOwner) workflow.Owner
		call  string
		conc  int
	}{
		{"owner", func(o *testOwner) workflow.Owner { return o }, "dispatch", 0},
		{"owner called concurrently", func(o *testOwner) workflow.Owner { return o }, "dispatch", 2},
		{"batch owner", func(o *testOwner) workflow.Owner { return batchTestOwner{o} }, "dispatch_batch", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spans, tp := tracerProvider(t)
			clock := newFakeClock()
			s := newStore(t, clock, "r1")
			for _, a := range []string{"a", "b"} {
				addRetryable(t, s, key("r1", a), clock.Now())
			}
			st := start(t, newRunner(t, s, tc.owner(&testOwner{clock: clock}), clock, WithTracerProvider(tp), WithBatchSize(2),
				WithOwnerConcurrency(tc.conc)))
			clock.nextTimer(t)
			_, err := st.stop(t)
			require.NoError(t, err)

			traces := attemptTraces(t, spans)
			require.Len(t, traces, 2)
			var batchCalls []sdktrace.ReadOnlySpan
			for _, sp := range spans.Ended() {
				if sp.Name() == SpanOwnerCall && attrOf(sp, "call") == "dispatch_batch" {
					batchCalls = append(batchCalls, sp)
				}
			}
			for _, a := range []string{"a", "b"} {
				k := workflow.AttemptKey{ActivationKey: key("r1", a), Attempt: 1}
				at := traces[k.Identity()]
				require.NotNil(t, at, a)
				checkAttemptSpan(t, spans, at, k, OutcomeAdmitted)
				want := []string{SpanOwnerCall + ":plan", SpanAttemptPrepare, SpanAttemptHandoff, SpanAttemptReceipt}
				if tc.call == "dispatch" {
					want = slices.Insert(want, 3, SpanOwnerCall+":dispatch")
				}
				assert.Equal(t, want, childNames(at), a)
				if tc.call == "dispatch_batch" {
					require.Len(t, batchCalls, 1)
					assert.True(t, linked(at.span, batchCalls[0].SpanContext()), "%s links to the batch call", a)
					assert.True(t, linked(batchCalls[0], at.span.SpanContext()), "the batch call links to %s", a)
				}
			}
		})
	}
}

// A failed owner call marks its span and its attempt's span with an error
// status, and the attempt's outcome says the owner failed.
func TestAFailedOwnerCallMarksTheAttemptSpan(t *testing.T) {
	t.Parallel()
	for _, batch := range []int{1, 2} {
		t.Run(map[int]string{1: "single", 2: "batch"}[batch], func(t *testing.T) {
			t.Parallel()
			spans, tp := tracerProvider(t)
			clock := newFakeClock()
			s := newStore(t, clock, "r1")
			addRetryable(t, s, key("r1", "a"), clock.Now())
			st := start(t, newRunner(t, s, alwaysFailingOwner{&testOwner{clock: clock}}, clock, WithTracerProvider(tp),
				WithBatchSize(batch), WithPollInterval(time.Minute, time.Minute)))
			clock.nextTimer(t) // the pass failed on the owner and backed off
			_, err := st.stop(t)
			require.NoError(t, err)

			k := workflow.AttemptKey{ActivationKey: key("r1", "a"), Attempt: 1}
			at := attemptTraces(t, spans)[k.Identity()]
			require.NotNil(t, at)
			checkAttemptSpan(t, spans, at, k, OutcomeOwnerFailed)
			assert.Equal(t, codes.Error, at.span.Status().Code)
			assert.Contains(t, at.span.Status().Description, "owner down")
			names := childNames(at)
			require.Contains(t, names, SpanOwnerCall+":dispatch")
			call := at.children[slices.Index(names, SpanOwnerCall+":dispatch")]
			assert.Equal(t, codes.Error, call.Status().Code)
			assert.NotContains(t, names, SpanAttemptReceipt, "no receipt step after a failed call")
		})
	}
}

// An attempt refused at its handoff ends its trace rejected; the pass
// that redispatches it later gives it a second trace, of that dispatch
// call, ending admitted.
func TestARedispatchedAttemptHasATraceOfItsRedispatch(t *testing.T) {
	t.Parallel()
	spans, tp := tracerProvider(t)
	clock := newFakeClock()
	ctx := context.Background()
	s := newStore(t, clock, "r1")
	_, err := s.AddActivation(ctx, workflow.NewActivation{Key: key("r1", "a"), Input: json.RawMessage(`{}`)}, clock.Now())
	require.NoError(t, err)
	var prepared string
	st := start(t, newRunner(t, s, &testOwner{clock: clock}, clock, withFault(pauseAtFirstIntent(t, s, clock, &prepared)), WithTracerProvider(tp)))
	tm := clock.nextTimer(t)
	require.NoError(t, s.ResumeRun(ctx, "r1", nil, clock.Now()))
	clock.fire(tm)
	clock.nextTimer(t)
	_, err = st.stop(t)
	require.NoError(t, err)

	k := workflow.AttemptKey{ActivationKey: key("r1", "a"), Attempt: 1}
	require.Equal(t, k.Identity(), prepared)
	var outcomes []string
	var children [][]string
	for _, sp := range spans.Ended() {
		if sp.Name() == SpanAttempt && attrOf(sp, "identity") == k.Identity() {
			at := &attemptTrace{span: sp}
			for _, c := range spans.Ended() {
				if c.Parent().SpanID() == sp.SpanContext().SpanID() {
					at.children = append(at.children, c)
				}
			}
			slices.SortStableFunc(at.children, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
			checkAttemptSpan(t, spans, at, k, attrOf(sp, "outcome"))
			outcomes = append(outcomes, attrOf(sp, "outcome"))
			children = append(children, childNames(at))
		}
	}
	assert.Equal(t, []string{OutcomeRejected, OutcomeAdmitted}, outcomes)
	assert.Equal(t, [][]string{
		{SpanOwnerCall + ":plan", SpanAttemptPrepare, SpanAttemptHandoff},
		{SpanOwnerCall + ":dispatch"},
	}, children)
}
