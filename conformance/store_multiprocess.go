package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/workflow"
)

const roleDispatch = "store.dispatch"

func multiProcessCases() []testCase {
	return []testCase{
		{Name: "admission_processes_dispatching_one_store_admit_each_activation_once", Run: caseProcessesDispatch},
	}
}

// dispatchReport is what a dispatching child process reports.
type dispatchReport struct {
	Admitted []string `json:"admitted"`
	Calls    []string `json:"calls"` // owner calls, by identity
	Raced    int      `json:"raced"`
}

// caseProcessesDispatch: OS processes (the test binary re-executed), each
// with its own Backend and several dispatching goroutines, released
// together, on the same activations.
func caseProcessesDispatch(e *env) {
	e.RequireMultiProcess()
	const acts, procs = 120, 3
	s := store(e)
	mkRun(e, s, "mp", workflow.Limits{ConcurrencyCap: 1000}, nil)
	for i := range acts {
		mkAct(e, s, key("mp", "n", fmt.Sprintf("a%03d", i)))
	}
	args := make([][]byte, procs)
	for i := range args {
		args[i] = []byte(strconv.Itoa(e.batch))
	}
	results := e.RunChildren(roleDispatch, procs, args)
	admitted := map[string]int{}
	calls := map[string]int{}
	raced := 0
	for i, raw := range results {
		var r dispatchReport
		require.NoError(e.T, json.Unmarshal(raw, &r), "child %d result", i)
		e.T.Logf("process %d: admitted %d, raced %d", i, len(r.Admitted), r.Raced)
		for _, id := range r.Admitted {
			admitted[id]++
		}
		for _, id := range r.Calls {
			calls[id]++
		}
		raced += r.Raced
	}
	assert.Len(e.T, admitted, acts, "every activation admitted")
	for id, n := range admitted {
		assert.Equal(e.T, 1, n, "admitted once across processes: %s", id)
	}
	assert.Len(e.T, calls, acts)
	for id, n := range calls {
		assert.Equal(e.T, 1, n, "owner called once across processes: %s", id)
	}
	e.T.Logf("raced across processes: %d", raced)
	for _, a := range attemptsOf(e, s, "mp") {
		assert.Equal(e.T, workflow.AttemptAdmitted, a.Status)
		assert.Equal(e.T, uint32(1), a.Key.Attempt)
	}
}

// childDispatch is the child side: four goroutines dispatch until nothing
// is left, in the dispatch mode args names (the batch size).
func childDispatch(ctx context.Context, b backend.Backend, args []byte, wait func()) ([]byte, error) {
	batch, err := strconv.Atoi(string(args))
	if err != nil {
		return nil, fmt.Errorf("batch size %q: %w", args, err)
	}
	s := workflow.New(b, workflow.WithBatchSize(batch))
	o := newOwner()
	wait()
	var rep dispatchReport
	errs := make(chan error, 4)
	results := make(chan workflow.DispatchSummary, 1024)
	for range 4 {
		go func() {
			for {
				sum, err := s.Dispatch(ctx, o, workflow.DispatchOptions{RunID: "mp", Limit: 5}, ms(10))
				results <- sum
				if err != nil || len(sum.Admitted)+len(sum.Raced) == 0 {
					errs <- err
					return
				}
			}
		}()
	}
	var firstErr error
	for done := 0; done < 4; {
		select {
		case sum := <-results:
			rep.Admitted = append(rep.Admitted, refIdentities(sum.Admitted)...)
			rep.Raced += len(sum.Raced)
		case err := <-errs:
			done++
			if err != nil && firstErr == nil {
				firstErr = err
			}
		}
	}
	for len(results) > 0 {
		sum := <-results
		rep.Admitted = append(rep.Admitted, refIdentities(sum.Admitted)...)
		rep.Raced += len(sum.Raced)
	}
	if firstErr != nil {
		return nil, firstErr
	}
	o.mu.Lock()
	rep.Calls = append(rep.Calls, o.order...)
	o.mu.Unlock()
	return json.Marshal(rep)
}
