package etcd_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/etcd"
	"github.com/wfstore/wfstore/internal/benchdata"
	"github.com/wfstore/wfstore/workflow"
)

// envContention enables TestContention, a measurement rather than a
// check of semantics: it takes minutes and its figures depend on the
// machine. WFSTORE_ETCD_CONTENTION_N sets the activations per scenario
// (default 2000), WFSTORE_ETCD_CONTENTION_CAP the time one scenario may
// take (default 5m), WFSTORE_ETCD_CONTENTION_ONLY one scenario by name.
const envContention = "WFSTORE_ETCD_CONTENTION"

// identityOwner accepts everything and counts calls per identity.
type identityOwner struct {
	mu    sync.Mutex
	calls map[string]int
}

func (o *identityOwner) Plan(context.Context, workflow.Activation) (*workflow.Plan, error) {
	return &workflow.Plan{SideEffect: workflow.ReadOnly, Intent: json.RawMessage(`{}`)}, nil
}

func (o *identityOwner) Dispatch(_ context.Context, p workflow.PreparedDispatch) (json.RawMessage, error) {
	o.mu.Lock()
	o.calls[p.Identity]++
	o.mu.Unlock()
	return json.RawMessage(`{"ok":true}`), nil
}

// contentionResult is what one scenario measured.
type contentionResult struct {
	admitted, busy, otherErrs, dups int
	elapsed                         time.Duration
	conflicts                       int64
	firstErr                        error
	stats                           etcd.Stats // summed over the clients
	passes                          int64      // Dispatch calls
}

func (r contentionResult) rate() float64 { return float64(r.admitted) / r.elapsed.Seconds() }

// runContention seeds n pending activations (runs of benchdata.PerRun)
// and admits them with dispatchers Stores, one at a time (Limit 10, as
// the bench's racing workloads), spread over clients Backends of their
// own (each Dial'd, a client each, as separate processes), all with the
// default busy timeout. It stops when every activation is admitted or
// the cap passes.
func runContention(t *testing.T, dispatchers, clients, n int, limit time.Duration) contentionResult {
	p := newPrefix(t)
	ctx, cancel := context.WithTimeout(context.Background(), limit+time.Minute)
	defer cancel()
	bes := make([]*etcd.Backend, clients)
	for i := range bes {
		b, err := openLocator(ctx, locator(p), etcd.WithMaxTxnOps(16384))
		require.NoError(t, err)
		t.Cleanup(func() { _ = b.Close() })
		bes[i] = b
	}
	keys, err := benchdata.SeedRuns(ctx, workflow.New(bes[0]), bes[0], "c", n, benchdata.PerRun, nil, time.Now())
	require.NoError(t, err)
	var before int64
	for _, b := range bes {
		before += b.Stats().Conflicts
	}
	owner := &identityOwner{calls: map[string]int{}}
	var left atomic.Int64
	left.Store(int64(len(keys)))
	var busy, other, passes atomic.Int64
	var errMu sync.Mutex
	var firstErr error
	noteErr := func(err error) {
		errMu.Lock()
		defer errMu.Unlock()
		if firstErr == nil {
			firstErr = err
		}
	}
	deadline := time.Now().Add(limit)
	start := time.Now()
	var wg sync.WaitGroup
	for d := range dispatchers {
		s := workflow.New(bes[d%clients]) // a Store each, as processes have
		wg.Go(func() {
			for left.Load() > 0 && time.Now().Before(deadline) {
				passes.Add(1)
				sum, err := s.Dispatch(ctx, owner, workflow.DispatchOptions{Limit: 10}, time.Now())
				left.Add(-int64(len(sum.Admitted)))
				switch {
				case errors.Is(err, backend.ErrBusy):
					busy.Add(1)
					noteErr(err)
				case err != nil:
					other.Add(1)
					noteErr(err)
				case len(sum.Admitted) == 0 && len(sum.Raced) == 0:
					time.Sleep(time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
	r := contentionResult{elapsed: time.Since(start), busy: int(busy.Load()), otherErrs: int(other.Load())}
	r.firstErr = firstErr
	for _, c := range owner.calls {
		r.admitted++
		r.dups += c - 1
	}
	for _, b := range bes {
		st := b.Stats()
		r.conflicts += st.Conflicts
		r.stats.Updates += st.Updates
		r.stats.Commits += st.Commits
		r.stats.Reads += st.Reads
		r.stats.CommitRequests += st.CommitRequests
		r.stats.Turns += st.Turns
		r.stats.TurnWaits += st.TurnWaits
		r.stats.TurnsByTime += st.TurnsByTime
	}
	r.conflicts -= before
	r.passes = passes.Load()
	return r
}

// TestContention measures admission by dispatchers of separate Stores
// over one backlog (see envContention): 1 dispatcher, 8 over 4 clients
// and 128 over 4 clients, in one run. Every activation must be admitted
// exactly once and no Dispatch may fail with ErrBusy; the rates are
// reported, not checked.
func TestContention(t *testing.T) {
	if os.Getenv(envContention) == "" {
		t.Skip(envContention + " not set: a measurement of minutes")
	}
	n := 2000
	if v, err := strconv.Atoi(os.Getenv(envContention + "_N")); err == nil && v > 0 {
		n = v
	}
	limit := 5 * time.Minute
	if v, err := time.ParseDuration(os.Getenv(envContention + "_CAP")); err == nil && v > 0 {
		limit = v
	}
	only := os.Getenv(envContention + "_ONLY")
	var one float64
	for _, sc := range []struct{ dispatchers, clients int }{{1, 1}, {8, 4}, {128, 4}} {
		name := fmt.Sprintf("%dx%d", sc.dispatchers, sc.clients)
		if only != "" && only != name {
			continue
		}
		t.Run(name, func(t *testing.T) {
			r := runContention(t, sc.dispatchers, sc.clients, n, limit)
			ratio := ""
			if sc.dispatchers == 1 {
				one = r.rate()
			} else if one > 0 {
				ratio = fmt.Sprintf(" (%.2f× one dispatcher)", r.rate()/one)
			}
			t.Logf("%d dispatchers over %d clients: %d of %d admitted in %v: %.1f/s%s; %d ErrBusy, %d other errors, %d duplicates, %d conflicts (%.1f per admission); first error: %v",
				sc.dispatchers, sc.clients, r.admitted, n, r.elapsed.Round(time.Millisecond), r.rate(), ratio,
				r.busy, r.otherErrs, r.dups, r.conflicts, float64(r.conflicts)/float64(max(r.admitted, 1)), r.firstErr)
			t.Logf("%d Dispatch calls; Backend stats (seeding included): %d Updates, %d commits, %d read requests, %d commit requests, %d turns (%d by time), %d waits for a turn",
				r.passes, r.stats.Updates, r.stats.Commits, r.stats.Reads, r.stats.CommitRequests, r.stats.Turns, r.stats.TurnsByTime, r.stats.TurnWaits)
			require.Zero(t, r.dups, "duplicates")
			require.Zero(t, r.busy, "Dispatch calls failed with ErrBusy")
			require.Equal(t, n, r.admitted, "admitted")
		})
	}
}
