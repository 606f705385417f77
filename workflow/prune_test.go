package workflow_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/wfstore/wfstore/sqlite"
	"github.com/wfstore/wfstore/workflow"
)

// A finished run is pruned: its history goes, the run record stays, and
// one run_pruned event says what went.
func ExampleStore_Prune() {
	dir, _ := os.MkdirTemp("", "wfstore-example-prune")
	defer os.RemoveAll(dir)
	ctx, now := context.Background(), time.Now()
	b, err := sqlite.Open(ctx, filepath.Join(dir, "store.db"))
	if err != nil {
		panic(err)
	}
	defer b.Close()
	s := workflow.New(b)

	s.CreateRun(ctx, workflow.NewRun{ID: "run-1"}, now)
	k := workflow.ActivationKey{RunID: "run-1", NodeID: "fetch", ActivationID: "a1"}
	s.AddActivation(ctx, workflow.NewActivation{Key: k, Input: json.RawMessage(`{}`)}, now)
	s.Dispatch(ctx, echoOwner{}, workflow.DispatchOptions{Limit: 10}, now)
	id := workflow.DispatchIdentity(k.RunID, k.NodeID, k.ActivationID, 1)
	s.ApplyObservation(ctx, id, workflow.Observation{Kind: workflow.ObservedSucceeded, Output: json.RawMessage(`{}`)}, now)

	dry, _ := s.Prune(ctx, workflow.PruneOptions{Runs: []string{"run-1"}, DryRun: true}, now)
	fmt.Printf("%s would lose %d attempt(s)\n", dry.Runs[0].Status, dry.Runs[0].Deleted.Attempts)
	rep, err := s.Prune(ctx, workflow.PruneOptions{Runs: []string{"run-1"}}, now)
	fmt.Println(rep.Runs[0].Deleted == dry.Runs[0].Deleted, err)
	evs, _ := s.Events(ctx, workflow.EventQuery{RunID: "run-1", Limit: 10})
	run, _ := s.GetRun(ctx, "run-1")
	fmt.Println(len(evs.Items), evs.Items[0].Type, run.Status)

	// A live run is refused and left as it was.
	s.CreateRun(ctx, workflow.NewRun{ID: "run-2"}, now)
	_, err = s.Prune(ctx, workflow.PruneOptions{Runs: []string{"run-2"}}, now)
	fmt.Println(err)
	// Output:
	// completed would lose 1 attempt(s)
	// true <nil>
	// 1 run_pruned completed
	// workflow: not eligible: run "run-2" is running: only completed, cancelled and finished failed runs are pruned
}
