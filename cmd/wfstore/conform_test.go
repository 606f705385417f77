package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/internal/pgscratch"
	"github.com/wfstore/wfstore/internal/testkit/pgtest"
)

// runCLI runs the built binary and returns stdout, stderr and the exit code.
func runCLI(t *testing.T, bin string, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = t.TempDir()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return out.String(), errb.String(), code
}

func decodeReport(t *testing.T, stdout string) conformReport {
	t.Helper()
	var r conformReport
	require.NoError(t, json.Unmarshal([]byte(stdout), &r), "report: %s", stdout)
	return r
}

func TestConformCertifiesSQLiteAsJSON(t *testing.T) {
	t.Parallel()
	bin := wfstoreBinary(t, "")
	stdout, stderr, code := runCLI(t, bin, nil, "conform", "--backend", "sqlite", "--relaxed", "--run", "contract/insert", "--json")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	r := decodeReport(t, stdout)
	assert.Equal(t, "sqlite", r.Backend)
	assert.Equal(t, "sqlite", r.Adapter.Name)
	assert.True(t, r.Capabilities.MultiInstance)
	assert.True(t, r.Capabilities.MultiProcess)
	assert.Equal(t, "relaxed", r.Durability)
	require.NotEmpty(t, r.Cases)
	for _, c := range r.Cases {
		assert.Contains(t, c.Name, "insert")
		assert.True(t, strings.HasPrefix(c.Name, "contract/"), c.Name)
		assert.Equal(t, resultPass, c.Result, c.Name)
	}
	assert.Equal(t, len(r.Cases), r.Summary.Passed)
	// The multi-process case ran in child processes of the suite's process.
	names := map[string]bool{}
	for _, c := range r.Cases {
		names[c.Name] = true
	}
	assert.True(t, names["contract/racing_inserts_across_processes_admit_exactly_one"], "cases: %v", names)
}

func TestConformReportsSkipsWithTheCapability(t *testing.T) {
	t.Parallel()
	bin := wfstoreBinary(t, "")
	stdout, stderr, code := runCLI(t, bin, nil, "conform", "--backend", "bolt", "--relaxed", "--run", "contract/no_lost_update_across")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	assert.Contains(t, stdout, "# wfstore conformance: bolt PASSED")
	assert.Contains(t, stdout, "## Skips")
	assert.Contains(t, stdout, "capability MultiInstance=false")
	assert.Contains(t, stdout, "capability MultiProcess=false")
	assert.Contains(t, stdout, "| contract/no_lost_update_across_goroutines | pass |")
}

// A Store mutant that admits a non-pending activation must not be certified.
func TestConformFailsOnASeededMutant(t *testing.T) {
	t.Parallel()
	bin := wfstoreBinary(t, "pending-guard")
	stdout, stderr, code := runCLI(t, bin, nil,
		"conform", "--backend", "sqlite", "--relaxed", "--run", "store/admission")
	assert.Equal(t, 1, code, "stdout: %s\nstderr: %s", stdout, stderr)
	assert.Contains(t, stdout, "# wfstore conformance: sqlite FAILED")
	assert.Contains(t, stdout, "## Failures")
	assert.Contains(t, stdout, "| fail |")
	assert.Contains(t, stderr, "failed")
}

func TestConformPostgresUsesScratchSchemasAndDropsThem(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	bin := wfstoreBinary(t, "")
	stdout, stderr, code := runCLI(t, bin, nil, "conform", "--backend", "postgres", "--dsn", dsn, "--run", "contract/insert", "--json")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	r := decodeReport(t, stdout)
	require.NotEmpty(t, r.Cases)
	assert.Equal(t, len(r.Cases), r.Summary.Passed)
	assert.Equal(t, "on", r.Adapter.Settings["synchronous_commit"])
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer conn.Close(ctx)
	// Only this run's schemas count: other conform runs (of other tests,
	// or interrupted ones of the past) may have theirs on the server.
	require.Regexp(t, `^wfstore_conform_[0-9a-f]{8}_$`, r.Scratch)
	assert.Contains(t, stderr, "scratch schemas "+r.Scratch+"* on ")
	var left int
	require.NoError(t, conn.QueryRow(ctx, "SELECT count(*) FROM pg_namespace WHERE left(nspname, length($1)) = $1", r.Scratch).Scan(&left))
	assert.Zero(t, left, "scratch schemas left behind")
}

// A conform run drops the scratch schemas of conform processes of this
// host that are gone (killed before they could drop theirs), and keeps
// those of live processes and those without the comment naming their
// process.
func TestConformDropsTheScratchSchemasOfGoneProcesses(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	admin := pgtest.Admin(t)
	ctx := context.Background()
	prefix, err := newScratchPrefix()
	require.NoError(t, err)
	name := func(s string) string { return prefix + s }
	t.Cleanup(func() { _, _, _ = dropScratchSchemas(context.Background(), dsn, prefix) })
	dead, err := pgscratch.ExitedProcess()
	require.NoError(t, err)
	self, err := pgscratch.Self()
	require.NoError(t, err)
	for s, comment := range map[string]string{"dead": dead.Comment(), "live": self.Comment(), "bare": ""} {
		_, err := admin.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{name(s)}.Sanitize())
		require.NoError(t, err)
		if comment != "" {
			_, err = admin.Exec(ctx, "COMMENT ON SCHEMA "+pgx.Identifier{name(s)}.Sanitize()+" IS "+pgscratch.Literal(comment))
			require.NoError(t, err)
		}
	}
	bin := wfstoreBinary(t, "")
	_, stderr, code := runCLI(t, bin, nil, "conform", "--backend", "postgres", "--dsn", dsn, "--run", "contract/insert", "--json")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	rows, err := admin.Query(ctx, "SELECT nspname FROM pg_namespace WHERE left(nspname, length($1)) = $1 ORDER BY nspname", prefix)
	require.NoError(t, err)
	left, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	assert.Equal(t, []string{name("bare"), name("live")}, left)
}

// conform stopped by SIGTERM or SIGINT while its cases hold scratch
// schemas drops them before it exits and says so.
func TestConformInterruptedDropsItsScratchSchemas(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	admin := pgtest.Admin(t)
	bin := wfstoreBinary(t, "")
	for _, tc := range []struct {
		sig  syscall.Signal
		code int
		name string
	}{{syscall.SIGTERM, 143, "SIGTERM"}, {syscall.SIGINT, 130, "SIGINT (Ctrl-C)"}} {
		t.Run(strings.Fields(tc.name)[0], func(t *testing.T) {
			ctx := context.Background()
			cmd := exec.Command(bin, "conform", "--backend", "postgres", "--dsn", dsn, "--run", "store/", "--json")
			var so bytes.Buffer
			cmd.Stdout = &so
			se, err := cmd.StderrPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			t.Cleanup(func() { _ = cmd.Process.Kill() })
			sc := bufio.NewScanner(se)
			require.True(t, sc.Scan(), "no line on stderr")
			first := sc.Text()
			m := regexp.MustCompile(`^wfstore conform: scratch schemas (wfstore_conform_[0-9a-f]{8}_)\* on `).FindStringSubmatch(first)
			require.NotNil(t, m, "first line: %q", first)
			prefix := m[1]
			count := func() int {
				var n int
				require.NoError(t, admin.QueryRow(ctx, "SELECT count(*) FROM pg_namespace WHERE left(nspname, length($1)) = $1", prefix).Scan(&n))
				return n
			}
			t.Cleanup(func() {
				// Whatever happened, leave nothing of ours on the server.
				_, _, _ = dropScratchSchemas(context.Background(), dsn, prefix)
			})
			// Signal it while its cases hold scratch schemas.
			deadline := time.Now().Add(time.Minute)
			for count() < 2 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			require.GreaterOrEqual(t, count(), 2, "no case made a scratch schema")
			require.NoError(t, cmd.Process.Signal(tc.sig))
			var rest strings.Builder
			for sc.Scan() {
				rest.WriteString(sc.Text() + "\n")
			}
			_ = cmd.Wait()
			assert.Equal(t, tc.code, cmd.ProcessState.ExitCode(), "stderr: %s", rest.String())
			assert.Zero(t, count(), "scratch schemas left after the signal")
			assert.Contains(t, rest.String(), "wfstore conform: interrupted by "+tc.name+"; the partial report (the cases that ended) is on stdout; no scratch schema is left (dropped the ")
			assert.Contains(t, rest.String(), "named "+prefix+"*)")
			assert.True(t, decodeReport(t, so.String()).Partial)
		})
	}
}

func TestConformRejectsBadArguments(t *testing.T) {
	t.Parallel()
	bin := wfstoreBinary(t, "")
	for _, tc := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"conform", "--backend", "oracle"}, `unknown --backend "oracle" (valid values: sqlite, postgres, bolt or etcd)`, 2},
		{[]string{"conform", "--backend", "etcd"}, "--backend etcd needs --endpoints", 2},
		{[]string{"conform", "--backend", "etcd", "--endpoints", "http://127.0.0.1:1", "--relaxed"}, "--relaxed is for --backend sqlite, postgres or bolt", 2},
		{[]string{"conform", "--backend", "sqlite", "--endpoints", "x"}, "--endpoints is for --backend etcd", 2},
		{[]string{"conform", "--backend", "postgres"}, "needs --dsn", 2},
		{[]string{"conform", "--backend", "sqlite", "--dsn", "x"}, "--dsn is for --backend postgres", 2},
		{[]string{"conform", "extra"}, `unexpected arguments ["extra"]`, 2},
		{[]string{"conform", "--backend", "sqlite", "--run", "no_such_case_anywhere"}, "no case matched", 1},
	} {
		_, stderr, code := runCLI(t, bin, nil, tc.args...)
		assert.Equal(t, tc.code, code, "%v: %s", tc.args, stderr)
		assert.Contains(t, stderr, tc.want, "%v", tc.args)
	}
}

func TestTestOutputParserAttributesOutputToEachCase(t *testing.T) {
	const out = "\x16=== RUN   TestConformance\n" +
		"\x16=== RUN   TestConformance/store/a\n" +
		"\x16=== PAUSE TestConformance/store/a\n" +
		"\x16=== NAME  TestConformance\n" +
		"\x16=== RUN   TestConformance/contract/b\n" +
		"\x16=== PAUSE TestConformance/contract/b\n" +
		"\x16=== CONT  TestConformance/store/a\n" +
		"    x.go:10: hello\n" +
		"        world\n" +
		"\x16=== CONT  TestConformance/contract/b\n" +
		"    y.go:3: capability MultiProcess=false: no\n" +
		"\x16=== NAME  TestConformance/store/a\n" +
		"    x.go:12: bad\n" +
		"\x16--- FAIL: TestConformance/store/a (0.25s)\n" +
		"\x16--- SKIP: TestConformance/contract/b (0.00s)\n" +
		"\x16--- FAIL: TestConformance (0.25s)\n" +
		"\x16FAIL\n"
	p := newTestOutputParser("TestConformance")
	require.NoError(t, p.read(strings.NewReader(out)))
	assert.Equal(t, []conformCase{
		{Name: "store/a", Result: resultFail, Seconds: 0.25, Output: "x.go:10: hello\n    world\nx.go:12: bad\n"},
		{Name: "contract/b", Result: resultSkip, Output: "y.go:3: capability MultiProcess=false: no\n"},
	}, p.results())
}

// A broken adapter (an SQLite whose Expect never fails) must not be
// certified either: the contract tier catches it.
func TestConformFailsOnASeededMutantAdapter(t *testing.T) {
	t.Parallel()
	bin := wfstoreBinary(t, "sqlite-expect-ignored")
	stdout, stderr, code := runCLI(t, bin, nil,
		"conform", "--backend", "sqlite", "--relaxed", "--run", "contract/expect", "--json")
	assert.Equal(t, 1, code, "stdout: %s\nstderr: %s", stdout, stderr)
	r := decodeReport(t, stdout)
	assert.Positive(t, r.Summary.Failed)
	failed := map[string]bool{}
	for _, c := range r.Cases {
		if c.Result == resultFail {
			failed[c.Name] = true
		}
	}
	assert.True(t, failed["contract/expect_fails_with_err_changed_when_any_field_differs_and_nothing_commits"], "failed: %v", failed)
}
