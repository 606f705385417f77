package memstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/wfstore/wfstore/memstore"
	"github.com/wfstore/wfstore/workflow"
)

// acceptOwner accepts every activation as read-only work.
type acceptOwner struct{}

func (acceptOwner) Plan(_ context.Context, a workflow.Activation) (*workflow.Plan, error) {
	return &workflow.Plan{SideEffect: workflow.ReadOnly, Intent: a.Input}, nil
}

func (acceptOwner) Dispatch(_ context.Context, p workflow.PreparedDispatch) (json.RawMessage, error) {
	return json.RawMessage(`{"accepted":true}`), nil
}

// A unit test builds its Store over a fresh memstore: no file, no server,
// the semantics of every other adapter.
func Example() {
	ctx, now := context.Background(), time.Now()
	b := memstore.New()
	defer b.Close()
	s := workflow.New(b)

	s.CreateRun(ctx, workflow.NewRun{ID: "run-1"}, now)
	s.AddActivation(ctx, workflow.NewActivation{
		Key:   workflow.ActivationKey{RunID: "run-1", NodeID: "fetch", ActivationID: "a1"},
		Input: json.RawMessage(`{"url":"https://example.com"}`),
	}, now)

	first, err := s.Dispatch(ctx, acceptOwner{}, workflow.DispatchOptions{Limit: 10}, now)
	fmt.Println(len(first.Admitted), err)

	// Another Backend over the same store (as a second dispatcher would
	// use) sees the admission: a1 is not admitted twice.
	other := b.Open()
	defer other.Close()
	again, err := workflow.New(other).Dispatch(ctx, acceptOwner{}, workflow.DispatchOptions{Limit: 10}, now)
	fmt.Println(len(again.Admitted), err)
	// Output:
	// 1 <nil>
	// 0 <nil>
}
