package workflow_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/wfstore/wfstore/memstore"
	"github.com/wfstore/wfstore/workflow"
)

// Every listing pages the same way: pass a page's Next as the next query's
// After, and stop at an empty Next (there is never an empty last page to
// fetch).
func ExampleStore_Events() {
	ctx, now := context.Background(), time.UnixMilli(1_700_000_000_000)
	s := workflow.New(memstore.New())
	s.CreateRun(ctx, workflow.NewRun{ID: "run-1"}, now)
	for _, id := range []string{"a1", "a2"} {
		s.AddActivation(ctx, workflow.NewActivation{
			Key:   workflow.ActivationKey{RunID: "run-1", NodeID: "fetch", ActivationID: id},
			Input: json.RawMessage(`{}`),
		}, now)
	}

	q := workflow.EventQuery{RunID: "run-1", Limit: 2}
	for {
		page, err := s.Events(ctx, q)
		if err != nil {
			panic(err)
		}
		for _, e := range page.Items {
			fmt.Println(e.Seq, e.Type)
		}
		if page.Next == "" {
			break
		}
		fmt.Println("-- next page")
		q.After = page.Next
	}
	// A consumer that stored the Seq of the last event it handled resumes
	// after it.
	page, _ := s.Events(ctx, workflow.EventQuery{RunID: "run-1", After: workflow.EventCursor(2)})
	fmt.Println(len(page.Items), "event(s) after seq 2")
	// Output:
	// 1 run_created
	// 2 activation_created
	// -- next page
	// 3 activation_created
	// 1 event(s) after seq 2
}
