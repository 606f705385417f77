package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/sqlite"
	"github.com/wfstore/wfstore/workflow"
)

// flat joins the story's wrapped lines so a test can match sentences.
func flat(s string) string { return strings.Join(strings.Fields(s), " ") }

// TestDemoTellsTheStory runs the built demo and checks that its sentences
// say what happened and that the file afterwards holds those states.
func TestDemoTellsTheStory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the wfstore binary")
	}
	bin := wfstoreBinary(t, "")
	db := filepath.Join(t.TempDir(), "story.db")
	stdout, stderr, code := runCLI(t, bin, nil, "demo", "-db", db, "-activations", "10", "-members", "6", "-dispatchers", "3", "-seed", "s1", "-events", "2")
	require.Equal(t, 0, code, stderr)
	out := flat(stdout)
	m := demoRunLine.FindStringSubmatch(stdout)
	require.NotNil(t, m, stdout)
	base := m[1]

	for i := 1; i <= 10; i++ {
		assert.Regexp(t, fmt.Sprintf(`(?m)^%2d\. `, i), stdout, "sentence %d is numbered", i)
	}
	assert.Contains(t, out, "3 runners raced for its 10 activations on one simulated clock")
	assert.Contains(t, out, "9 of the 10 activations have exactly one attempt")
	assert.Contains(t, out, "scheduled attempt 2 after a backoff of 20 ms.")
	assert.Contains(t, out, "The runners slept until the schedule was due and consumed it 20 ms after the failure, requeuing attempt 2 after attempt 1")
	assert.Contains(t, out, "attempt 2 was admitted after the scheduled retry")
	assert.Contains(t, out, "the run is completed")
	assert.Contains(t, out, `refused to schedule a retry, reason "ineligible: unsafe_effect_or_reconciliation"`)
	assert.Contains(t, out, "with policy fail_fast and at most 3 running at once")
	assert.Contains(t, out, "moved its 2 running siblings to sibling_cancelling, cancelled the 3 members that had not started, and failed the run (now failed)")
	assert.Contains(t, out, "the Store settled 2 as cancelled")
	assert.Contains(t, out, "A runner then reached the work: it cancelled the attempt that provably never reached its owner")
	assert.Contains(t, out, "called the owner's Cancel for the 2 in flight and only then recorded each signal (2 signals")
	assert.Contains(t, out, "finalised the run as cancelled")
	assert.Contains(t, out, "Read back from "+db)
	assert.Equal(t, 4, strings.Count(stdout, "\nlast 2 events of "), "-events prints each run's last events")

	// The file holds those states, read through the Store.
	ctx := context.Background()
	b, err := sqlite.Open(ctx, db)
	require.NoError(t, err)
	defer b.Close()
	s := workflow.New(b)
	status := func(id string) workflow.RunStatus {
		r, err := s.GetRun(ctx, id)
		require.NoError(t, err, id)
		return r.Status
	}
	assert.Equal(t, workflow.RunCompleted, status(base))
	assert.Equal(t, workflow.RunFailed, status(base+"-refusal"))
	assert.Equal(t, workflow.RunFailed, status(base+"-fanout"))
	assert.Equal(t, workflow.RunCancelled, status(base+"-cancel"))

	// The retried activation: attempt 1 failed, attempt 2 succeeded.
	attsPage, err := s.Attempts(ctx, workflow.AttemptQuery{RunID: base, Limit: workflow.MaxPageLimit})
	require.NoError(t, err)
	atts := attsPage.Items
	per := map[workflow.ActivationKey][]workflow.AttemptStatus{}
	for _, a := range atts {
		per[a.Key.ActivationKey] = append(per[a.Key.ActivationKey], a.Status)
	}
	require.Len(t, per, 10)
	retried := 0
	for k, sts := range per {
		if len(sts) == 2 {
			retried++
			assert.ElementsMatch(t, []workflow.AttemptStatus{workflow.AttemptFailed, workflow.AttemptSucceeded}, sts, "%v", k)
			assert.Contains(t, out, "attempt 1 of "+k.NodeID+"/"+k.ActivationID+" as a retryable failure")
		} else {
			assert.Equal(t, []workflow.AttemptStatus{workflow.AttemptSucceeded}, sts, "%v", k)
		}
	}
	assert.Equal(t, 1, retried, "one activation was retried")

	ref, err := s.RunSummary(ctx, base+"-refusal")
	require.NoError(t, err)
	assert.Equal(t, map[workflow.AttemptStatus]int{workflow.AttemptFailed: 1}, ref.Attempts)
	evsPage, err := s.Events(ctx, workflow.EventQuery{RunID: base + "-refusal", Limit: workflow.MaxPageLimit})
	require.NoError(t, err)
	evs := evsPage.Items
	var refusals []string
	for _, ev := range evs {
		if ev.Type == "automatic_retry_not_scheduled" {
			refusals = append(refusals, string(ev.Payload))
		}
	}
	require.Len(t, refusals, 1)
	assert.Contains(t, refusals[0], `"ineligible_reason":"unsafe_effect_or_reconciliation"`)

	fan, err := s.RunSummary(ctx, base+"-fanout")
	require.NoError(t, err)
	assert.Equal(t, map[workflow.AttemptStatus]int{workflow.AttemptSucceeded: 1, workflow.AttemptFailed: 1, workflow.AttemptCancelled: 2}, fan.Attempts,
		"controller succeeded, one member failed, its two running siblings cancelled")
	assert.Equal(t, map[workflow.ActivationStatus]int{workflow.ActivationCompleted: 1, workflow.ActivationFailed: 1, workflow.ActivationCancelled: 5}, fan.Activations)

	cnl, err := s.RunSummary(ctx, base+"-cancel")
	require.NoError(t, err)
	assert.Equal(t, map[workflow.AttemptStatus]int{workflow.AttemptCancelled: 3}, cnl.Attempts)
	assert.Equal(t, map[workflow.ActivationStatus]int{workflow.ActivationCancelled: 4}, cnl.Activations)
	assert.False(t, cnl.Run.CancelRequestedAt.IsZero())

	// The same seed tells the same story (run ids and the race counts aside).
	stdout2, stderr2, code := runCLI(t, bin, nil, "demo", "-db", db, "-activations", "10", "-members", "6", "-dispatchers", "3", "-seed", "s1")
	require.Equal(t, 0, code, stderr2)
	m2 := demoRunLine.FindStringSubmatch(stdout2)
	require.NotNil(t, m2)
	assert.NotEqual(t, base, m2[1], "every demo adds new runs")
	norm := func(s, id string) string {
		s = flat(strings.ReplaceAll(s, id, "RUN"))
		s = regexp.MustCompile(`told "raced" (\d+ times|once)`).ReplaceAllString(s, "told raced N times")
		s = regexp.MustCompile(`\(\d+ pass(es)? between them\)`).ReplaceAllString(s, "(N passes between them)")
		s = regexp.MustCompile(`identity [0-9a-f]+…`).ReplaceAllString(s, "identity X")
		s = regexp.MustCompile(`recorded \d+ ms`).ReplaceAllString(s, "recorded N ms")
		return s[:strings.Index(s, "Read back from")]
	}
	assert.Equal(t, norm(stdout, base), norm(stdout2, m2[1]))
}

// TestDemoRejectsNonsenseFlags: impossible sizes exit 2 before any file is
// made.
func TestDemoRejectsNonsenseFlags(t *testing.T) {
	bin := wfstoreBinary(t, "")
	for _, args := range [][]string{
		{"-activations", "0"}, {"-members", "2"}, {"-members", "100000"}, {"-dispatchers", "0"}, {"-events", "-1"}, {"-fail", "30"},
	} {
		dir := t.TempDir()
		db := filepath.Join(dir, "x.db")
		_, stderr, code := runCLI(t, bin, nil, append([]string{"demo", "-db", db}, args...)...)
		assert.Equal(t, 2, code, "%q: %s", args, stderr)
		assert.NotEmpty(t, stderr, "%q", args)
		_, err := os.Stat(db)
		assert.True(t, os.IsNotExist(err), "%q made no file", args)
	}
}

// TestDemoDefaultFileInAFreshDirectory: the README's first command runs
// the demo without flags; in a fresh directory it creates wfstore-demo.db
// there and tells the whole story.
func TestDemoDefaultFileInAFreshDirectory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the wfstore binary")
	}
	bin := wfstoreBinary(t, "")
	dir := t.TempDir()
	cmd := exec.Command(bin, "demo")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), " in wfstore-demo.db\n")
	assert.Contains(t, flat(string(out)), "finalised the run as cancelled")
	m := demoRunLine.FindStringSubmatch(string(out))
	require.NotNil(t, m)
	b, err := sqlite.Open(context.Background(), filepath.Join(dir, "wfstore-demo.db"))
	require.NoError(t, err)
	defer b.Close()
	r, err := workflow.New(b).GetRun(context.Background(), m[1])
	require.NoError(t, err)
	assert.Equal(t, workflow.RunCompleted, r.Status)
}
