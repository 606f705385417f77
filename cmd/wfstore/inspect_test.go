package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/internal/testkit/pgtest"
	"github.com/wfstore/wfstore/sqlite"
	"github.com/wfstore/wfstore/workflow"
)

// demoStore runs the demo twice on a fresh SQLite file (each run of the
// demo writes four runs) and returns the file and the run ids in id order.
func demoStore(t *testing.T, bin string) (string, []string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "demo.db")
	for range 2 {
		_, stderr, code := runCLI(t, bin, nil, "demo", "--db", path, "--activations", "8", "--members", "3")
		require.Equal(t, 0, code, stderr)
	}
	stdout, stderr, code := runCLI(t, bin, nil, "inspect", "runs", "--db", path, "--json")
	require.Equal(t, 0, code, stderr)
	var page struct {
		Runs []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"runs"`
		Next string `json:"next_cursor"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &page), stdout)
	require.Len(t, page.Runs, 8)
	assert.Empty(t, page.Next)
	var ids []string
	for _, r := range page.Runs {
		ids = append(ids, r.ID)
	}
	require.True(t, sort.StringsAreSorted(ids), "runs come in id order: %v", ids)
	return path, ids
}

func TestInspectCommandOnADemoStore(t *testing.T) {
	t.Parallel()
	bin := wfstoreBinary(t, "")
	path, ids := demoStore(t, bin)

	stdout, stderr, code := runCLI(t, bin, nil, "inspect", "runs", "--db", path)
	require.Equal(t, 0, code, stderr)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	require.Len(t, lines, 1+len(ids), stdout)
	assert.Regexp(t, `^RUN\s+STATUS\s+ROOT`, lines[0])
	for i, id := range ids {
		assert.True(t, strings.HasPrefix(lines[1+i], id+" "), stdout)
	}
	assert.NotContains(t, stdout, "next:")

	// Pages of one, with the printed cursor.
	stdout, _, code = runCLI(t, bin, nil, "inspect", "runs", "--db", path, "--limit", "1")
	require.Equal(t, 0, code)
	assert.Contains(t, stdout, ids[0])
	assert.NotContains(t, stdout, ids[1]+" ")
	m := regexp.MustCompile(`(?m)^next: --cursor (\S+)$`).FindStringSubmatch(stdout)
	require.NotNil(t, m, "a cut listing prints the next page's cursor: %s", stdout)
	assert.NotContains(t, m[1], ids[0], "the cursor is opaque, not the run id")
	for _, from := range [][]string{{"--cursor", m[1]}, {"--after", ids[0]}} {
		stdout, _, code = runCLI(t, bin, nil, append([]string{"inspect", "runs", "--db", path, "--limit", "1", "--json"}, from...)...)
		require.Equal(t, 0, code)
		assert.Contains(t, stdout, ids[1])
		assert.NotContains(t, stdout, `"`+ids[0]+`"`)
		var pg struct {
			Next string `json:"next_cursor"`
		}
		require.NoError(t, json.Unmarshal([]byte(stdout), &pg))
		assert.NotEmpty(t, pg.Next)
		assert.NotEqual(t, ids[1], pg.Next)
	}

	// The status filter, against the statuses the JSON listing gave.
	stdout, _, code = runCLI(t, bin, nil, "inspect", "runs", "--db", path, "--json")
	require.Equal(t, 0, code)
	var all struct {
		Runs []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"runs"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &all))
	for _, st := range []string{"running", "paused", "completed", "failed", "cancelled", "repair_required"} {
		var want []string
		for _, r := range all.Runs {
			if r.Status == st {
				want = append(want, r.ID)
			}
		}
		stdout, _, code = runCLI(t, bin, nil, "inspect", "runs", "--db", path, "--status", st)
		require.Equal(t, 0, code)
		lines := strings.Split(strings.TrimSpace(stdout), "\n")[1:]
		var got []string
		for _, l := range lines {
			got = append(got, strings.Fields(l)[0])
		}
		assert.Equal(t, want, got, "--status %s", st)
	}

	// One run, as a table and as JSON; flags may follow the id.
	stdout, stderr, code = runCLI(t, bin, nil, "inspect", "run", ids[0], "--db", path, "--limit", "3")
	require.Equal(t, 0, code, stderr)
	for _, want := range []string{"run ", ids[0], "allowance", "ACTIVATIONS (3 shown, at most 3)", "ATTEMPTS, NEWEST FIRST", "UNRELEASED LEASES", "RETRY SCHEDULES"} {
		assert.Contains(t, stdout, want)
	}
	stdout, _, code = runCLI(t, bin, nil, "inspect", "run", ids[0], "--db", path, "--json", "--limit", "2")
	require.Equal(t, 0, code)
	var run struct {
		Run struct {
			ID           string `json:"id"`
			AttemptCount int64  `json:"attempt_count"`
		} `json:"run"`
		Attempts []struct {
			PreparedMS int64           `json:"prepared_ms"`
			Intent     json.RawMessage `json:"intent"`
		} `json:"attempts_newest_first"`
		Activations []map[string]any `json:"activations"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &run), stdout)
	assert.Equal(t, ids[0], run.Run.ID)
	assert.Positive(t, run.Run.AttemptCount)
	require.Len(t, run.Attempts, 2)
	assert.GreaterOrEqual(t, run.Attempts[0].PreparedMS, run.Attempts[1].PreparedMS, "newest first")
	assert.True(t, json.Valid(run.Attempts[0].Intent) && run.Attempts[0].Intent[0] == '{', "intent inlined as JSON: %s", run.Attempts[0].Intent)
	assert.Len(t, run.Activations, 2)

	// Events after a sequence, with the next cursor.
	stdout, _, code = runCLI(t, bin, nil, "inspect", "events", ids[1], "--db", path, "--after", "2", "--limit", "3")
	require.Equal(t, 0, code)
	seqs := regexp.MustCompile(`(?m)^(\d+)\s`).FindAllStringSubmatch(stdout, -1)
	require.Len(t, seqs, 3, stdout)
	assert.Equal(t, []string{"3", "4", "5"}, []string{seqs[0][1], seqs[1][1], seqs[2][1]})
	m = regexp.MustCompile(`(?m)^next: --cursor (\S+)$`).FindStringSubmatch(stdout)
	require.NotNil(t, m, stdout)
	assert.NotEqual(t, "5", m[1], "the cursor is opaque, not the sequence number")
	stdout, _, code = runCLI(t, bin, nil, "inspect", "events", ids[1], "--db", path, "--cursor", m[1], "--limit", "1", "--json")
	require.Equal(t, 0, code)
	var evs struct {
		Events []struct {
			Seq int64 `json:"seq"`
		} `json:"events"`
		Next string `json:"next_cursor"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &evs))
	require.Len(t, evs.Events, 1)
	assert.Equal(t, int64(6), evs.Events[0].Seq)
	assert.NotEmpty(t, evs.Next)
	// The cursor of one run's events does not continue another run's.
	_, stderr, code = runCLI(t, bin, nil, "inspect", "events", ids[0], "--db", path, "--cursor", m[1])
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "not a cursor of this listing")

	// Mistakes a user can make.
	_, stderr, code = runCLI(t, bin, nil, "inspect", "run", "no-such-run", "--db", path)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "not found")
	_, _, code = runCLI(t, bin, nil, "inspect", "bogus", "--db", path)
	assert.Equal(t, 2, code)
	_, stderr, code = runCLI(t, bin, nil, "inspect", "runs", "--db", path, "--status", "Running")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, `unknown --status "Running"`)
	_, _, code = runCLI(t, bin, nil, "inspect", "runs", "--db", path, "--limit", "0")
	assert.Equal(t, 2, code)
	_, _, code = runCLI(t, bin, nil, "inspect", "events", ids[0], "--db", path, "--after", "x")
	assert.Equal(t, 2, code)
	_, _, code = runCLI(t, bin, nil, "inspect", "run", "--db", path)
	assert.Equal(t, 2, code)
}

func TestVerifyCommandPassesAndFailsOnACorruptedSQLiteStore(t *testing.T) {
	t.Parallel()
	bin := wfstoreBinary(t, "")
	path, ids := demoStore(t, bin)
	stdout, stderr, code := runCLI(t, bin, nil, "verify", "--db", path)
	require.Equal(t, 0, code, "%s%s", stdout, stderr)
	assert.Equal(t, fmt.Sprintf("%d runs checked, 0 violations\n", len(ids)), stdout)

	// Corrupt one counter of the second run through the contract.
	ctx := context.Background()
	b, err := sqlite.Open(ctx, path)
	require.NoError(t, err)
	require.NoError(t, b.Update(ctx, func(tx backend.Tx) error {
		run, err := backend.GetRun(ctx, tx, ids[1])
		if err != nil {
			return err
		}
		run.ActiveCount += 2
		return tx.Apply(ctx, backend.Changes{Replace: backend.Replaces{Runs: []backend.Run{run}}})
	}))
	require.NoError(t, b.Close())

	stdout, stderr, code = runCLI(t, bin, nil, "verify", "--db", path)
	assert.Equal(t, 1, code, "%s%s", stdout, stderr)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	require.Len(t, lines, 2, stdout)
	assert.Regexp(t, `^run_counters run "`+regexp.QuoteMeta(ids[1])+`" ActiveCount: is (\d+), the run has \d+ active attempts$`, lines[0])
	assert.Equal(t, fmt.Sprintf("%d runs checked, 1 violations", len(ids)), lines[1])
	assert.Contains(t, stderr, "violates its invariants")

	stdout, _, code = runCLI(t, bin, nil, "verify", "--db", path, "--json")
	assert.Equal(t, 1, code)
	var rep struct {
		Runs       int `json:"runs"`
		Violations []struct {
			Check   string `json:"check"`
			RunID   string `json:"run_id"`
			Subject string `json:"subject"`
		} `json:"violations"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep), stdout)
	assert.Equal(t, len(ids), rep.Runs)
	require.Len(t, rep.Violations, 1)
	assert.Equal(t, "run_counters", rep.Violations[0].Check)
	assert.Equal(t, ids[1], rep.Violations[0].RunID)
	assert.Equal(t, "ActiveCount", rep.Violations[0].Subject)

	// The clean run alone passes.
	stdout, _, code = runCLI(t, bin, nil, "verify", "--db", path, "--run", ids[0])
	assert.Equal(t, 0, code, stdout)
	_, _, code = runCLI(t, bin, nil, "verify")
	assert.Equal(t, 2, code, "no --db: a usage error")
}

var digestLine = regexp.MustCompile(`(\d+) records, digest ([0-9a-f]{64})`)

func digestOf(t *testing.T, out string) []string {
	t.Helper()
	m := digestLine.FindAllStringSubmatch(out, -1)
	var ds []string
	for _, x := range m {
		ds = append(ds, x[1]+" "+x[2])
	}
	return ds
}

func TestExportImportDemoStoreIntoPostgresAndBolt(t *testing.T) {
	t.Parallel()
	bin := wfstoreBinary(t, "")
	path, _ := demoStore(t, bin)
	dir := t.TempDir()
	stream := filepath.Join(dir, "demo.jsonl")
	_, stderr, code := runCLI(t, bin, nil, "export", "--db", path, "--out", stream, "--verify")
	require.Equal(t, 0, code, stderr)
	exported := digestOf(t, stderr)
	require.Len(t, exported, 2, stderr)
	assert.Equal(t, exported[0], exported[1], "the store read again gives the stream's digest")

	dsn, schema := pgtest.SchemaName(t)
	targets := map[string][]string{
		"postgres": {"--backend", "postgres", "--dsn", dsn, "--schema", schema},
		"bolt":     {"--backend", "bolt", "--db", filepath.Join(dir, "copy.bolt")},
	}
	for name, target := range targets {
		stdout, stderr, code := runCLI(t, bin, nil, append([]string{"import", "--in", stream}, target...)...)
		require.Equal(t, 0, code, "%s: %s%s", name, stdout, stderr)
		ds := digestOf(t, stdout)
		require.Len(t, ds, 2, stdout)
		assert.Equal(t, exported[0], ds[0], "%s: stream digest", name)
		assert.Equal(t, exported[0], ds[1], "%s: imported store digest", name)
		stdout, stderr, code = runCLI(t, bin, nil, append([]string{"verify"}, target...)...)
		assert.Equal(t, 0, code, "%s: %s%s", name, stdout, stderr)
		// The copy exports to the very same stream.
		again := filepath.Join(dir, name+".jsonl")
		_, stderr, code = runCLI(t, bin, nil, append([]string{"export", "--out", again}, target...)...)
		require.Equal(t, 0, code, stderr)
		assertSameFile(t, stream, again)
		// A non-empty target is refused, unchanged.
		_, stderr, code = runCLI(t, bin, nil, append([]string{"import", "--in", stream}, target...)...)
		assert.Equal(t, 1, code)
		assert.Contains(t, stderr, "is not empty")
	}
}

func assertSameFile(t *testing.T, a, b string) {
	t.Helper()
	x, err := os.ReadFile(a)
	require.NoError(t, err)
	y, err := os.ReadFile(b)
	require.NoError(t, err)
	assert.True(t, string(x) == string(y), "%s and %s differ", a, b)
}

// everyKind is one record of every kind with every field set (and a
// released and an unreleased lease), written straight through the
// contract.
func everyKind() []record {
	ak := backend.ActivationKey{RunID: "run-é", NodeID: "n/1", ActivationID: "A"}
	mk := backend.ActivationKey{RunID: "run-é", NodeID: "n/1::member::0", ActivationID: "m0"}
	at := backend.AttemptKey{ActivationKey: ak, Attempt: 3}
	return []record{
		backend.Run{ID: "run-é", RootID: "run-é", Depth: 1, Status: backend.RunPaused,
			Limits: backend.Limits{NodeExecutionCap: 11, ConcurrencyCap: 12, CycleCap: 13, RetryCap: 14}, DeadlineMS: 1_800_000_000_000,
			CancelRequestedMS: 1_700_000_000_002,
			Authority:         &backend.Authority{TargetArtifactID: "art", DaemonInstanceID: "d", Generation: 7, FencingToken: "tok"},
			Metadata:          []byte(`{"m":"ü"}`), CreatedMS: 1_700_000_000_003, UpdatedMS: 1_700_000_000_004, LastEventSeq: 2,
			AttemptCount: 2, ActiveCount: 1, TreeAttemptCount: 2, DescendantCount: 1, ExhaustionRecorded: true},
		backend.Run{ID: "child", RootID: "run-é", ParentID: "run-é", Depth: 2, Status: backend.RunRunning, CreatedMS: 1_700_000_000_005},
		backend.RunLink{ChildRunID: "child", RootRunID: "run-é", Parent: at, Target: []byte(`{"t":1}`), Depth: 2, CreatedMS: 1_700_000_000_006},
		backend.Activation{Key: ak, Generation: 4, Status: backend.ActivationRunning, Input: []byte(`{"i":[1,2]}`),
			Output: []byte(`{"o":null}`), Claims: []backend.ResourceClaim{{Resource: "r", Mode: backend.LeaseWrite}, {Resource: "R", Mode: backend.LeaseRead}},
			Effect: backend.Mutating, Reconciliation: backend.ReceiptStatus, RetryPolicy: []byte(`{"v":1}`),
			Predecessors: []backend.NodeRef{{NodeID: "p", ActivationID: "q"}}, HasSuccessors: true, LastAttempt: 3,
			CreatedMS: 1_700_000_000_007, UpdatedMS: 1_700_000_000_008, AttemptTimeoutMS: 120_000},
		backend.Activation{Key: mk, Status: backend.ActivationWaiting, Input: []byte(`{}`), Effect: backend.ReadOnly,
			Reconciliation: backend.IdempotentReplay, Group: &backend.GroupMember{Controller: ak, Index: 0}, LastAttempt: 1, CreatedMS: 1_700_000_000_009},
		backend.Activation{Key: backend.ActivationKey{RunID: "child", NodeID: "c", ActivationID: "p"}, Status: backend.ActivationPending,
			Admissible: true, Input: []byte(`{}`), Effect: backend.ReadOnly, Reconciliation: backend.IdempotentReplay, CreatedMS: 1_700_000_000_021},
		backend.FanOutGroup{Controller: ak, Size: 1, MaxConcurrency: 1, Promoted: 1, Settled: 1, Retiring: true, RetiredMS: 1_700_000_000_010,
			CreatedMS: 1_700_000_000_011, FailFast: true},
		backend.Attempt{Key: at, Identity: "ident-3", Status: backend.AttemptCancelling, SideEffect: backend.Mutating, Intent: []byte(`{"x":1}`),
			IntentChecksum: workflow.Checksum([]byte(`{"x":1}`)), Receipt: []byte(`{"r":true}`), Handoff: backend.HandoffRecorded, Detail: []byte(`{"d":"x"}`),
			PreparedMS: 1_700_000_000_012, AdmittedMS: 1_700_000_000_013, TerminalMS: 1_700_000_000_014,
			HandoffToken: "7c4a8d09ca3762af61e59520943dc264"},
		backend.Attempt{Key: backend.AttemptKey{ActivationKey: mk, Attempt: 1}, Identity: "ident-m1", Status: backend.AttemptFailed,
			SideEffect: backend.ReadOnly, Intent: []byte(`{}`), IntentChecksum: workflow.Checksum([]byte(`{}`)), Handoff: backend.HandoffUnknown,
			PreparedMS: 1_700_000_000_022, TerminalMS: 1_700_000_000_023},
		backend.Lease{Key: backend.LeaseKey{AttemptKey: at, Resource: "r", Mode: backend.LeaseWrite}, AcquiredMS: 1_700_000_000_015},
		backend.Lease{Key: backend.LeaseKey{AttemptKey: at, Resource: "R", Mode: backend.LeaseRead}, AcquiredMS: 1_700_000_000_016, ReleasedMS: 1_700_000_000_017},
		backend.RetrySchedule{Key: mk, FailedAttempt: 1, NextAttempt: 2, FailureKind: "owner_reported_retryable", BackoffMS: 1000,
			DueMS: 1_700_000_001_000, ScheduledMS: 1_700_000_000_018},
		backend.Event{RunID: "run-é", Seq: 1, Type: "run_created", Payload: []byte(`{"a":1}`), CreatedMS: 1_700_000_000_019},
		backend.Event{RunID: "run-é", Seq: 2, Type: "other", Payload: []byte(`{}`), CreatedMS: 1_700_000_000_020},
	}
}

func TestExportImportRoundTripsEveryRecordKind(t *testing.T) {
	t.Parallel()
	bin := wfstoreBinary(t, "")
	dir := t.TempDir()
	src := filepath.Join(dir, "src.db")
	ctx := context.Background()
	b, err := sqlite.Open(ctx, src)
	require.NoError(t, err)
	recs := everyKind()
	require.NoError(t, insertRecords(ctx, b, recs))
	require.NoError(t, b.Close())

	stream := filepath.Join(dir, "all.jsonl")
	_, stderr, code := runCLI(t, bin, nil, "export", "--db", src, "--out", stream, "--verify")
	require.Equal(t, 0, code, stderr)
	data, err := os.ReadFile(stream)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	require.Len(t, lines, len(recs)+2, "a header, one line per record, a trailer")
	assert.Equal(t, `{"format":"wfstore-export","version":3}`, lines[0])
	assert.Regexp(t, `^\{"trailer":\{"records":14,"sha256":"[0-9a-f]{64}"\}\}$`, lines[len(lines)-1])
	kinds := map[string]int{}
	for _, l := range lines[1 : len(lines)-1] {
		rec, err := decodeLine(exportVersion, []byte(l))
		require.NoError(t, err)
		kinds[kindOf(rec)]++
		assert.Contains(t, recs, rec, "the stream's %s is a stored record, field for field", kindOf(rec))
	}
	assert.Equal(t, map[string]int{"run": 2, "run_link": 1, "activation": 3, "fan_out_group": 1, "attempt": 2, "lease": 2, "retry_schedule": 1, "event": 2}, kinds)

	dst := filepath.Join(dir, "dst.bolt")
	stdout, stderr, code := runCLI(t, bin, nil, "import", "--backend", "bolt", "--db", dst, "--in", stream)
	require.Equal(t, 0, code, "%s%s", stdout, stderr)
	ds := digestOf(t, stdout)
	require.Len(t, ds, 2)
	assert.Equal(t, ds[0], ds[1])
	again := filepath.Join(dir, "again.jsonl")
	_, stderr, code = runCLI(t, bin, nil, "export", "--backend", "bolt", "--db", dst, "--out", again)
	require.Equal(t, 0, code, stderr)
	assertSameFile(t, stream, again)

	// A stream with a damaged line is refused, naming the line.
	bad := filepath.Join(dir, "bad.jsonl")
	require.NoError(t, os.WriteFile(bad, []byte(lines[0]+"\n{\"kind\":\"nope\",\"record\":{}}\n"), 0o600))
	_, stderr, code = runCLI(t, bin, nil, "import", "--backend", "bolt", "--db", filepath.Join(dir, "bad.bolt"), "--in", bad)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, `line 2: unknown record kind "nope"`)
}

// retryOwner admits every activation read-only.
type retryOwner struct{}

func (retryOwner) Plan(context.Context, workflow.Activation) (*workflow.Plan, error) {
	return &workflow.Plan{SideEffect: workflow.ReadOnly, Intent: json.RawMessage(`{}`)}, nil
}

func (retryOwner) Dispatch(_ context.Context, p workflow.PreparedDispatch) (json.RawMessage, error) {
	return json.RawMessage(`{"ok":true}`), nil
}

func TestInspectRunTellsAFailedRunWithARetryDueFromAFinallyFailedOne(t *testing.T) {
	t.Parallel()
	bin := wfstoreBinary(t, "")
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "retry.db")
	b, err := sqlite.Open(ctx, path)
	require.NoError(t, err)
	s := workflow.New(b)
	at := time.UnixMilli(1_000_000).UTC()
	for _, run := range []string{"retrying", "failed"} {
		_, err = s.CreateRun(ctx, workflow.NewRun{ID: run}, at)
		require.NoError(t, err)
		na := workflow.NewActivation{Key: workflow.ActivationKey{RunID: run, NodeID: "n", ActivationID: "a"}, Input: json.RawMessage(`{}`)}
		if run == "retrying" {
			na.Effect, na.Reconciliation = workflow.ReadOnly, workflow.IdempotentReplay
			na.RetryPolicy = &workflow.RetryPolicy{Version: workflow.RetryPolicyVersion, MaxAttempts: 3,
				EligibleFailures: []workflow.FailureKind{workflow.FailureOwnerReportedRetryable},
				InitialBackoff:   5 * time.Second, BackoffMultiplier: 1, MaximumBackoff: 5 * time.Second}
		}
		_, err = s.AddActivation(ctx, na, at)
		require.NoError(t, err)
	}
	sum, err := s.Dispatch(ctx, retryOwner{}, workflow.DispatchOptions{}, at)
	require.NoError(t, err)
	require.Len(t, sum.Admitted, 2)
	for _, a := range sum.Admitted {
		_, err = s.ApplyObservation(ctx, a.Identity, workflow.Observation{Kind: workflow.ObservedRetryableFailure}, at)
		require.NoError(t, err)
	}
	require.NoError(t, b.Close())

	stdout, stderr, code := runCLI(t, bin, nil, "inspect", "run", "retrying", "--db", path)
	require.Equal(t, 0, code, stderr)
	assert.Regexp(t, `(?m)^status\s+failed, retry due at `+regexp.QuoteMeta(at.Add(5*time.Second).Format("2006-01-02T15:04:05.000Z"))+`$`, stdout)
	stdout, _, code = runCLI(t, bin, nil, "inspect", "run", "failed", "--db", path)
	require.Equal(t, 0, code)
	assert.Regexp(t, `(?m)^status\s+failed$`, stdout, "failed for good")
	stdout, _, code = runCLI(t, bin, nil, "inspect", "run", "retrying", "--db", path, "--json")
	require.Equal(t, 0, code)
	var got struct {
		NextRetry *struct {
			Due time.Time `json:"due"`
		} `json:"next_retry"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &got), stdout)
	require.NotNil(t, got.NextRetry)
	assert.True(t, got.NextRetry.Due.Equal(at.Add(5*time.Second)))
}
