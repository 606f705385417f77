// Command cancel shows a run's cancellation reaching the work. The owner
// implements workflow.Canceller: when the run's cancellation is requested
// the runner tells it to stop each attempt it holds, and records that it
// did only once Cancel returned. The owner remembers every identity it was
// asked to cancel, so a Dispatch of one that arrives later starts nothing;
// its Observer then reports the work stopped, and the run ends cancelled.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/wfstore/wfstore/event"
	"github.com/wfstore/wfstore/memstore"
	"github.com/wfstore/wfstore/runner"
	"github.com/wfstore/wfstore/workflow"
)

// owner ships order items; its work runs until it is cancelled.
type owner struct {
	mu        sync.Mutex
	running   map[string]bool // identity → shipping
	cancelled map[string]bool // every identity ever cancelled (remembered)
	started   chan string
}

func (o *owner) Plan(_ context.Context, a workflow.Activation) (*workflow.Plan, error) {
	return &workflow.Plan{SideEffect: workflow.Mutating, Intent: a.Input}, nil
}

func (o *owner) Dispatch(_ context.Context, p workflow.PreparedDispatch) (json.RawMessage, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.cancelled[p.Identity] { // cancelled before it arrived: start nothing
		return json.RawMessage(`{"started":false}`), nil
	}
	o.running[p.Identity] = true
	o.started <- p.Identity
	return json.RawMessage(`{"started":true}`), nil
}

// Cancel is idempotent on the identity.
func (o *owner) Cancel(_ context.Context, identity string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.cancelled[identity] = true
	delete(o.running, identity) // stop shipping
	return nil
}

func (o *owner) Observe(_ context.Context, a workflow.Attempt) (workflow.Observation, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.cancelled[a.Identity] {
		return workflow.Observation{Kind: workflow.ObservedCancelled}, nil
	}
	return workflow.Observation{Kind: workflow.ObservedRunning}, nil
}

func main() {
	ctx, stop := context.WithCancel(context.Background())
	s := workflow.New(memstore.New())
	s.CreateRun(ctx, workflow.NewRun{ID: "order-1"}, time.Now())
	for i := 1; i <= 3; i++ {
		s.AddActivation(ctx, workflow.NewActivation{Key: workflow.ActivationKey{RunID: "order-1", NodeID: "ship", ActivationID: fmt.Sprint("item-", i)},
			Input: json.RawMessage(`{}`), Effect: workflow.Mutating}, time.Now())
	}
	o := &owner{running: map[string]bool{}, cancelled: map[string]bool{}, started: make(chan string, 3)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		runner.Run(ctx, s, o, runner.WithLogger(slog.New(slog.NewTextHandler(os.Stdout, nil))),
			runner.WithPollInterval(10*time.Millisecond, 50*time.Millisecond))
	}()
	for range 3 {
		<-o.started
	}
	fmt.Println("cancel: 3 items shipping; requesting cancellation")
	s.RequestCancellation(ctx, "order-1", nil, time.Now())
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		run, err := s.GetRun(ctx, "order-1")
		if err == nil && run.Status == workflow.RunCancelled {
			break
		}
		if time.Now().After(deadline) {
			fmt.Println("cancel: the run was not cancelled in time")
			os.Exit(1)
		}
	}
	stop()
	<-done
	page, err := s.Events(context.Background(), workflow.EventQuery{RunID: "order-1", Limit: workflow.MaxPageLimit})
	if err != nil {
		panic(err)
	}
	counts := map[event.Type]int{}
	for _, ev := range page.Items {
		counts[ev.Type]++
	}
	o.mu.Lock()
	fmt.Printf("cancel: run cancelled; %d signals recorded, %d attempts cancelled, %d items still shipping\n",
		counts[event.AttemptCancellationSignalled], counts[event.AttemptCancelled], len(o.running))
	o.mu.Unlock()
}
