package workflow_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/wfstore/wfstore/event"
	"github.com/wfstore/wfstore/sqlite"
	"github.com/wfstore/wfstore/workflow"
)

// echoOwner accepts every activation as read-only work.
type echoOwner struct{}

func (echoOwner) Plan(_ context.Context, a workflow.Activation) (*workflow.Plan, error) {
	return &workflow.Plan{SideEffect: workflow.ReadOnly, Intent: a.Input}, nil
}

func (echoOwner) Dispatch(_ context.Context, p workflow.PreparedDispatch) (json.RawMessage, error) {
	return json.RawMessage(`{"accepted":true}`), nil // after durably accepting p.Identity
}

func Example() {
	dir, _ := os.MkdirTemp("", "wfstore-example")
	defer os.RemoveAll(dir)
	ctx, now := context.Background(), time.Now()

	b, err := sqlite.Open(ctx, filepath.Join(dir, "store.db"))
	if err != nil {
		panic(err)
	}
	defer b.Close()
	s := workflow.New(b)

	s.CreateRun(ctx, workflow.NewRun{ID: "run-1"}, now)
	s.AddActivation(ctx, workflow.NewActivation{
		Key:   workflow.ActivationKey{RunID: "run-1", NodeID: "fetch", ActivationID: "a1"},
		Input: json.RawMessage(`{"url":"https://example.com"}`),
	}, now)

	// However many dispatchers run this at once, a1 is admitted exactly once.
	sum, err := s.Dispatch(ctx, echoOwner{}, workflow.DispatchOptions{Limit: 10}, now)
	fmt.Println(len(sum.Admitted), err)
	// Output: 1 <nil>
}

// ExampleEvent_Decode reads a run's history and decodes each event's
// payload into its typed struct.
func ExampleEvent_Decode() {
	dir, _ := os.MkdirTemp("", "wfstore-example")
	defer os.RemoveAll(dir)
	ctx, now := context.Background(), time.UnixMilli(1_700_000_000_000)

	b, err := sqlite.Open(ctx, filepath.Join(dir, "store.db"))
	if err != nil {
		panic(err)
	}
	defer b.Close()
	s := workflow.New(b)
	s.CreateRun(ctx, workflow.NewRun{ID: "run-1"}, now)
	s.AddActivation(ctx, workflow.NewActivation{
		Key:   workflow.ActivationKey{RunID: "run-1", NodeID: "fetch", ActivationID: "a1"},
		Input: json.RawMessage(`{}`),
	}, now)
	s.Dispatch(ctx, echoOwner{}, workflow.DispatchOptions{Limit: 10}, now)

	page, _ := s.Events(ctx, workflow.EventQuery{RunID: "run-1"})
	for _, e := range page.Items {
		p, err := e.Decode()
		if err != nil {
			panic(err)
		}
		switch p := p.(type) {
		case event.AttemptAdmittedPayload:
			fmt.Println(e.Seq, e.Type, p.NodeID, p.Attempt, string(p.Receipt))
		default:
			fmt.Println(e.Seq, e.Type)
		}
	}
	// Output:
	// 1 run_created
	// 2 activation_created
	// 3 attempt_prepared
	// 4 dispatch_handed_off
	// 5 attempt_admitted fetch 1 {"accepted":true}
}
