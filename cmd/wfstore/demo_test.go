package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/sqlite"
	"github.com/wfstore/wfstore/workflow"
)

var demoRunLine = regexp.MustCompile(`wfstore demo — run (\S+) in `)

// TestDemoProcessesStartedTogether starts four `wfstore demo` processes at
// the same moment on one SQLite file: every one exits 0 with a run of its
// own, and no activation of any run has more than one live attempt.
func TestDemoProcessesStartedTogether(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the wfstore binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "wfstore")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Stderr = os.Stderr
	require.NoError(t, build.Run(), "go build")
	db := filepath.Join(dir, "demo.db")

	const procs = 4
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmds := make([]*exec.Cmd, procs)
	outs := make([]*bytes.Buffer, procs)
	errs := make([]*bytes.Buffer, procs)
	for i := range cmds {
		outs[i], errs[i] = &bytes.Buffer{}, &bytes.Buffer{}
		cmds[i] = exec.CommandContext(ctx, bin, "demo", "-db", db, "-activations", "12", "-members", "4", "-dispatchers", "3", "-events", "1")
		cmds[i].Stdout, cmds[i].Stderr = outs[i], errs[i]
	}
	// Start them together: every process is forked before any is waited on.
	var wg sync.WaitGroup
	results := make([]error, procs)
	start := make(chan struct{})
	for i, c := range cmds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results[i] = c.Run()
		}()
	}
	close(start)
	wg.Wait()

	runs := map[string]int{}
	for i := range cmds {
		require.NoError(t, results[i], "demo %d exits 0; stderr:\n%s", i, errs[i])
		m := demoRunLine.FindStringSubmatch(outs[i].String())
		require.NotNil(t, m, "demo %d names its run; stdout:\n%s", i, outs[i])
		runs[m[1]]++
	}
	for id, n := range runs {
		assert.Equal(t, 1, n, "run %s is used by exactly one demo", id)
	}
	require.Len(t, runs, procs, "each demo has its own run")

	b, err := sqlite.Open(context.Background(), db)
	require.NoError(t, err)
	defer b.Close()
	s := workflow.New(b)
	for id := range runs {
		live := map[workflow.ActivationKey]int{}
		p := workflow.AttemptQuery{RunID: id, Limit: workflow.MaxPageLimit}
		total := 0
		for {
			page, err := s.Attempts(context.Background(), p)
			require.NoError(t, err)
			for _, a := range page.Items {
				total++
				switch a.Status {
				case workflow.AttemptPrepared, workflow.AttemptAdmitted, workflow.AttemptRunning,
					workflow.AttemptCancelling, workflow.AttemptSiblingCancelling:
					live[a.Key.ActivationKey]++
				}
			}
			if page.Next == "" {
				break
			}
			p.After = page.Next
		}
		assert.NotZero(t, total, "run %s admitted work", id)
		for k, n := range live {
			assert.LessOrEqual(t, n, 1, "run %s: activation %v has %d live attempts", id, k, n)
		}
	}
}

// TestDemoRunIDsDifferAtOneInstant: two demos starting in the same
// millisecond (the race the process test above can only hit by chance) get
// different run ids, each a valid id.
func TestDemoRunIDsDifferAtOneInstant(t *testing.T) {
	at := time.UnixMilli(1_700_000_000_123).UTC()
	seen := map[string]bool{}
	for range 100 {
		id, err := demoRunID(at)
		require.NoError(t, err)
		require.NoError(t, workflow.ValidateID("run id", id))
		assert.Contains(t, id, "20231114T221320.123Z", "the start time stays readable")
		assert.False(t, seen[id], "run id %s repeated", id)
		seen[id] = true
	}
}
