package runner

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"

	"github.com/wfstore/wfstore/workflow"
)

// Defaults of the stuck-work check.
const (
	// DefaultStuckAge is the age from which an attempt that has not moved
	// counts as stuck (WithStuckCheck).
	DefaultStuckAge = 10 * time.Minute
	// DefaultCheckInterval is how often the runner starts a stuck-work
	// scan and a timeout scan (WithStuckCheck).
	DefaultCheckInterval = 10 * time.Second
)

// MetricStuckAttempts is a gauge: the attempts the runner's latest full
// stuck-work scan found (workflow.Engine.StuckAttempts), by stage
// (prepared, admitted, cancelling).
const MetricStuckAttempts = "wfstore.runner.stuck_attempts" // {stage}

// stuckWatch pages workflow.Engine.StuckAttempts, one page per pass, a new
// scan at most every interval; it remembers what the latest full scan
// found and which attempts it has logged.
type stuckWatch struct {
	age, every time.Duration
	cursor     workflow.Cursor
	scanning   bool
	nextAt     time.Time
	cycle      map[string]workflow.StuckAttempt // found by the scan in progress
	last       map[string]workflow.StuckAttempt // found by the latest full scan
	logged     map[string]bool
	counts     atomic.Pointer[map[workflow.StuckStage]int64]
}

func newStuckWatch(age, every time.Duration, mp metric.MeterProvider) (*stuckWatch, error) {
	w := &stuckWatch{age: age, every: every, cycle: map[string]workflow.StuckAttempt{},
		last: map[string]workflow.StuckAttempt{}, logged: map[string]bool{}}
	w.counts.Store(&map[workflow.StuckStage]int64{})
	if mp == nil {
		mp = metricnoop.NewMeterProvider()
	}
	_, err := mp.Meter(instrumentationName).Int64ObservableGauge(MetricStuckAttempts, metric.WithUnit("{attempt}"),
		metric.WithDescription("Attempts that have not moved for longer than the stuck age, by stage, as of the latest full scan."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			for _, st := range []workflow.StuckStage{workflow.StuckPrepared, workflow.StuckAdmitted, workflow.StuckCancelling} {
				o.Observe((*w.counts.Load())[st], metric.WithAttributes(stageAttr(st)))
			}
			return nil
		}))
	return w, err
}

// stuck returns the attempts the latest full scan found, and those the
// scan in progress found since, by identity.
func (w *stuckWatch) stuck() []workflow.StuckAttempt {
	out := make([]workflow.StuckAttempt, 0, len(w.last)+len(w.cycle))
	for id, sa := range w.last {
		if _, again := w.cycle[id]; !again {
			out = append(out, sa)
		}
	}
	for _, sa := range w.cycle {
		out = append(out, sa)
	}
	slices.SortFunc(out, func(a, b workflow.StuckAttempt) int {
		if a.Attempt.Identity < b.Attempt.Identity {
			return -1
		}
		if a.Attempt.Identity > b.Attempt.Identity {
			return 1
		}
		return 0
	})
	return out
}

// checkStuck reads one page of the stuck-work scan when one is due or in
// progress: it logs each stuck attempt once (while it stays stuck) and,
// at the end of a full scan, sets the gauge.
func (r *Runner) checkStuck(ctx context.Context) error {
	w := r.stuck
	now := r.cfg.clock.Now()
	if !w.scanning {
		if now.Before(w.nextAt) {
			return nil
		}
		w.scanning, w.cursor = true, ""
	}
	page, err := r.store.Engine().StuckAttempts(ctx, workflow.StuckQuery{RunID: r.cfg.runID, OlderThan: w.age, After: w.cursor, Limit: workflow.MaxPageLimit}, now)
	if err != nil {
		return fmt.Errorf("stuck attempts: %w", err)
	}
	for _, sa := range page.Items {
		id := sa.Attempt.Identity
		w.cycle[id] = sa
		if w.logged[id] {
			continue
		}
		w.logged[id] = true
		k := sa.Attempt.Key
		r.log.LogAttrs(ctx, slog.LevelWarn, "attempt stuck", slog.String("run", k.RunID), slog.String("node", k.NodeID),
			slog.String("activation", k.ActivationID), slog.Uint64("attempt", uint64(k.Attempt)), slog.String("identity", id),
			slog.String("stage", string(sa.Stage)), slog.String("status", string(sa.Attempt.Status)),
			slog.Duration("age", sa.Age), slog.Time("since", sa.Since))
	}
	if page.Next != "" {
		w.cursor = page.Next
		return nil
	}
	w.last, w.cycle = w.cycle, map[string]workflow.StuckAttempt{}
	counts := map[workflow.StuckStage]int64{}
	for id := range w.logged {
		if _, ok := w.last[id]; !ok {
			delete(w.logged, id) // it moved: log it again if it is stuck again
		}
	}
	for _, sa := range w.last {
		counts[sa.Stage]++
	}
	w.counts.Store(&counts)
	w.scanning, w.nextAt = false, now.Add(w.every)
	r.log.LogAttrs(ctx, levelFor(len(w.last)), "stuck-work scan", slog.Int("stuck", len(w.last)),
		slog.Int64("prepared", counts[workflow.StuckPrepared]), slog.Int64("admitted", counts[workflow.StuckAdmitted]),
		slog.Int64("cancelling", counts[workflow.StuckCancelling]), slog.Duration("older_than", w.age))
	return nil
}

func stageAttr(st workflow.StuckStage) attribute.KeyValue {
	return attribute.String("stage", string(st))
}

// UnresolvedCount is the number of distinct attempts the summary leaves
// unresolved: those handed to the owner whose admission this runner did
// not see, and the stuck ones.
func (s Summary) UnresolvedCount() int {
	ids := map[string]bool{}
	for _, r := range s.Unresolved {
		ids[r.Identity] = true
	}
	for _, sa := range s.Stuck {
		ids[sa.Attempt.Identity] = true
	}
	return len(ids)
}
