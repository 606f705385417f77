package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/wfstore/wfstore/internal/testkit/pgtest"
	"github.com/wfstore/wfstore/sqlite"
	"github.com/wfstore/wfstore/workflow"
)

// signalOwner accepts everything and reports each Dispatch's identity on got.
type signalOwner struct{ got chan string }

func (signalOwner) Plan(_ context.Context, a workflow.Activation) (*workflow.Plan, error) {
	return &workflow.Plan{SideEffect: workflow.ReadOnly, Intent: a.Input}, nil
}

func (o signalOwner) Dispatch(_ context.Context, p workflow.PreparedDispatch) (json.RawMessage, error) {
	o.got <- p.Identity
	return json.RawMessage(`{}`), nil
}

func benchStore(b *testing.B) *workflow.Store {
	b.Helper()
	be, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { be.Close() })
	s := workflow.New(be)
	if _, err := s.CreateRun(context.Background(), workflow.NewRun{ID: "r"}, time.Now()); err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkWakeLatency measures, per op, the time from AddActivation to the
// owner's Dispatch of that activation, with the runner idle in between (the
// default poll interval: 50ms doubling to 2s). notify adds through the
// runner's own Store, which wakes it; poll adds through another Store on
// the same SQLite database, which the runner finds only when it polls;
// listen adds through another Backend on the same PostgreSQL schema (as
// another process would), whose commit's NOTIFY wakes the runner (skipped
// without a PostgreSQL server, see internal/testkit/pgtest).
func BenchmarkWakeLatency(b *testing.B) {
	for _, mode := range []string{"notify", "poll", "listen"} {
		b.Run(mode, func(b *testing.B) {
			var s, adder *workflow.Store
			switch mode {
			case "notify":
				s = benchStore(b)
				adder = s
			case "poll":
				s = benchStore(b)
				adder = workflow.New(s.Engine().Backend())
			case "listen":
				dsn, schema := pgtest.Schema(b)
				s = workflow.New(openPostgres(b, dsn, schema))
				adder = workflow.New(openPostgres(b, dsn, schema))
			}
			o := signalOwner{got: make(chan string, 1)}
			ctx, cancel := context.WithCancel(context.Background())
			r, err := New(s, o)
			if err != nil {
				b.Fatal(err)
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				_, _ = r.Run(ctx)
			}()
			defer func() {
				cancel()
				<-done
			}()
			time.Sleep(200 * time.Millisecond) // idle: the backoff has grown
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				run := fmt.Sprintf("r%d", i) // a run completes with its activation
				if _, err := adder.CreateRun(ctx, workflow.NewRun{ID: run}, time.Now()); err != nil {
					b.Fatal(err)
				}
				time.Sleep(30 * time.Millisecond) // let the runner go idle again
				b.StartTimer()
				na := workflow.NewActivation{Key: workflow.ActivationKey{RunID: run, NodeID: "n", ActivationID: "a"}, Input: json.RawMessage(`{}`)}
				if _, err := adder.AddActivation(ctx, na, time.Now()); err != nil {
					b.Fatal(err)
				}
				id := <-o.got
				b.StopTimer()
				// Settle it, so that the run's concurrency cap never fills.
				for {
					_, err := adder.ApplyObservation(ctx, id, workflow.Observation{Kind: workflow.ObservedSucceeded, Output: json.RawMessage(`{}`)}, time.Now())
					if err == nil {
						break
					}
					if !errors.Is(err, workflow.ErrIneligible) { // the receipt is not committed yet
						b.Fatal(err)
					}
					time.Sleep(time.Millisecond)
				}
				b.StartTimer()
			}
		})
	}
}

// BenchmarkIdleCPU runs a runner with nothing to do for 2s per op and
// reports the CPU time the process used, as a percentage of one core.
func BenchmarkIdleCPU(b *testing.B) {
	s := benchStore(b)
	ctx, cancel := context.WithCancel(context.Background())
	r, err := New(s, signalOwner{got: make(chan string, 1)})
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan Summary)
	go func() {
		sum, _ := r.Run(ctx)
		done <- sum
	}()
	time.Sleep(5 * time.Second) // past start-up, at the maximum poll interval
	cpu := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			b.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	b.ResetTimer()
	c0, t0 := cpu(), time.Now()
	for range b.N {
		time.Sleep(2 * time.Second)
	}
	used, wall := cpu()-c0, time.Since(t0)
	b.StopTimer()
	cancel()
	sum := <-done
	b.ReportMetric(100*used.Seconds()/wall.Seconds(), "%cpu")
	b.ReportMetric(float64(sum.Passes), "passes")
}
