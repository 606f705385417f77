package runner

import (
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/wfstore/wfstore/internal/faultseam"
	"github.com/wfstore/wfstore/workflow"
)

// Defaults of a Runner's options.
const (
	DefaultMinPoll         = 50 * time.Millisecond
	DefaultMaxPoll         = 2 * time.Second
	DefaultJitter          = 0.2
	DefaultRetriesPerPass  = 100
	DefaultRunsPerPass     = 256
	DefaultDrainTimeout    = 10 * time.Second
	DefaultReconcileRounds = 10
)

type config struct {
	logger           *slog.Logger
	clock            Clock
	minPoll, maxPoll time.Duration
	jitter           float64
	rand             func() float64
	limit            int
	batchSize        int
	ownerConcurrency int
	retriesPerPass   int
	runsPerPass      int
	drain            time.Duration
	runID            string
	authority        *workflow.Authority
	observer         workflow.Observer
	noObserver       bool
	meters           metric.MeterProvider
	tracers          trace.TracerProvider
	fault            faultseam.Hook[workflow.PreparedDispatch]
	stuckAge         time.Duration
	checkEvery       time.Duration
	attemptTimeout   time.Duration
	cancelTimeout    time.Duration
	workEvery        time.Duration
	workBound        int
}

// Option configures a Runner.
type Option func(*config)

// WithLogger sets the logger of the runner's passes, reconciliations,
// retries and errors. The default discards every record.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithClock sets the clock (default SystemClock()). Every now the runner
// passes to the Store, and every wait, comes from it.
func WithClock(k Clock) Option { return func(c *config) { c.clock = k } }

// WithPollInterval sets the idle backoff: after a pass that found no work
// the runner waits min, then twice as long after each further idle pass,
// up to max; any work resets it to min. Defaults DefaultMinPoll and
// DefaultMaxPoll. A due retry or in-process work wakes it earlier.
func WithPollInterval(min, max time.Duration) Option {
	return func(c *config) { c.minPoll, c.maxPoll = min, max }
}

// WithJitter sets the fraction (0 to 1, default DefaultJitter) by which an
// idle wait is shortened at random, so that runners started together do
// not poll in step. 0 makes waits exact.
func WithJitter(f float64) Option { return func(c *config) { c.jitter = f } }

// WithLimit sets DispatchOptions.Limit of every dispatch pass (default 0:
// workflow.DefaultPageLimit).
func WithLimit(n int) Option { return func(c *config) { c.limit = n } }

// WithBatchSize sets DispatchOptions.BatchSize (default 0: the Store's).
// After an owner error, the next pass probes with one attempt before it
// hands off a batch again, until one admission succeeds.
func WithBatchSize(n int) Option { return func(c *config) { c.batchSize = n } }

// WithOwnerConcurrency sets DispatchOptions.OwnerConcurrency (default 0).
func WithOwnerConcurrency(n int) Option { return func(c *config) { c.ownerConcurrency = n } }

// WithRetriesPerPass bounds the due retries one pass consumes (default
// DefaultRetriesPerPass); the rest wait for the next pass, which follows
// at once.
func WithRetriesPerPass(n int) Option { return func(c *config) { c.retriesPerPass = n } }

// WithRunsPerPass bounds the runs one pass reads while it looks for due
// retries (workflow.Store.Retries; 1 to workflow.MaxPageLimit, default
// DefaultRunsPerPass); a larger store is covered over several passes.
func WithRunsPerPass(n int) Option { return func(c *config) { c.runsPerPass = n } }

// WithDrainTimeout sets how long, after the context of Run is cancelled,
// owner calls already in flight may go on and persist their receipts
// (default DefaultDrainTimeout).
func WithDrainTimeout(d time.Duration) Option { return func(c *config) { c.drain = d } }

// WithRun restricts the runner to one run. With a non-nil authority the
// runner is owned: every pass is fenced by it, and the runner stops with
// an error matching workflow.ErrStaleAuthority once it is replaced.
func WithRun(runID string, authority *workflow.Authority) Option {
	return func(c *config) { c.runID, c.authority = runID, authority }
}

// WithObserver sets the observer of the receipt-backed pass the runner
// runs at start and after every dispatch pass; nil disables the pass. By
// default the owner is the observer when it implements workflow.Observer.
func WithObserver(o workflow.Observer) Option {
	return func(c *config) { c.observer, c.noObserver = o, o == nil }
}

// WithMeterProvider sets where the runner's metrics go (default: none).
func WithMeterProvider(p metric.MeterProvider) Option { return func(c *config) { c.meters = p } }

// WithTracerProvider sets where the runner's spans go (default: none).
func WithTracerProvider(p trace.TracerProvider) Option { return func(c *config) { c.tracers = p } }

// WithStuckCheck sets the stuck-work check: an attempt that has not moved
// for age (prepared without a receipt, admitted or running, cancelling
// without a receipt; see workflow.Engine.StuckAttempts) is logged once,
// counted in MetricStuckAttempts and listed in Summary.Stuck. A scan
// starts at most every interval and reads one page per pass; the timeout
// scan (WithAttemptTimeout) keeps the same interval. age is at least 1ms,
// interval not negative. Defaults DefaultStuckAge and
// DefaultCheckInterval.
func WithStuckCheck(age, interval time.Duration) Option {
	return func(c *config) { c.stuckAge, c.checkEvery = age, interval }
}

// WithAttemptTimeout sets the attempt timeout of activations that declare
// none (default DefaultAttemptTimeout; 0 means none, else
// workflow.MinAttemptTimeout to workflow.MaxAttemptTimeout). An admitted
// attempt not observed terminal by its admitted time plus its timeout is
// settled by workflow.Engine.SettleTimedOut: failed when read-only (no
// automatic retry), repair_required when mutating; so a timeout never
// starts a second attempt while the first may still run. The deadline is
// compared with this runner's clock: a clock ahead of the one that
// admitted the attempt shortens the timeout by the difference.
func WithAttemptTimeout(d time.Duration) Option { return func(c *config) { c.attemptTimeout = d } }

// WithCancelTimeout bounds the owner's Cancel call (an owner with a
// Cancel(ctx, identity) error method) made once before a timed-out
// attempt is settled (default DefaultCancelTimeout, positive). Whatever
// Cancel returns, and when it does not return in time, the settlement
// goes ahead.
func WithCancelTimeout(d time.Duration) Option { return func(c *config) { c.cancelTimeout = d } }

// withRand replaces the jitter's random source (tests).
func withRand(f func() float64) Option { return func(c *config) { c.rand = f } }

// withFault sets the fault hook (internal/faultseam) of every dispatch
// pass (tests).
func withFault(f faultseam.Hook[workflow.PreparedDispatch]) Option {
	return func(c *config) { c.fault = f }
}
