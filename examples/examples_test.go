// Package examples builds and runs every example program, so that CI
// proves each one works as documented.
package examples

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/internal/testkit/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// build compiles the example in dir and returns the binary's path.
func build(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), filepath.Base(dir))
	out, err := exec.Command("go", "build", "-o", bin, "./"+dir).CombinedOutput()
	require.NoError(t, err, "go build ./%s:\n%s", dir, out)
	return bin
}

// run runs bin with env added to the test's environment and returns its
// combined output; it fails t unless bin exits 0 within two minutes.
func run(t *testing.T, bin string, env []string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Run(), "%s:\n%s", filepath.Base(bin), out.String())
	return out.String()
}

func TestQuickstart(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("quickstart/main.go")
	require.NoError(t, err)
	lines := strings.Count(string(src), "\n")
	assert.Less(t, lines, 45, "the quickstart stays under 45 lines")

	out := run(t, build(t, "quickstart"), nil)
	for _, want := range []string{
		"retry scheduled", "next_attempt=2",
		"retry consumed run=run-1 node=fetch activation=a1 previous_attempt=1 next_attempt=2",
		"observed=succeeded status=succeeded",
		"runner stopped", "admitted=2 retries_consumed=1 unresolved=0",
	} {
		assert.Contains(t, out, want)
	}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	out := run(t, build(t, "cancel"), nil)
	for _, want := range []string{
		"cancel: 3 items shipping; requesting cancellation",
		`msg="cancellation signalled" run=order-1`,
		"observed=cancelled status=cancelled",
		"cancel: run cancelled; 3 signals recorded, 3 attempts cancelled, 0 items still shipping",
	} {
		assert.Contains(t, out, want)
	}
}

func TestMultiworkerSkipsWithoutAServer(t *testing.T) {
	t.Parallel()
	bin := build(t, "multiworker")
	out := run(t, bin, []string{"WFSTORE_POSTGRES_DSN="})
	assert.Contains(t, out, "multiworker: skipped: set WFSTORE_POSTGRES_DSN")
	out = run(t, bin, []string{"WFSTORE_POSTGRES_DSN=postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=5"})
	assert.Contains(t, out, "multiworker: skipped: cannot reach the PostgreSQL server")
}

func TestMultiworker(t *testing.T) {
	t.Parallel()
	dsn, schema := pgtest.SchemaName(t)
	out := run(t, build(t, "multiworker"), []string{"WFSTORE_POSTGRES_DSN=" + dsn}, "-schema", schema, "-workers", "3")
	assert.Contains(t, out, "multiworker: 100 activations, 100 admissions in the ledger")
	assert.Contains(t, out, "multiworker: every activation admitted exactly once")
	for _, w := range []string{"worker 0:", "worker 1:", "worker 2:"} {
		assert.Contains(t, out, w)
	}
}

func TestReadmeShowsTheQuickstart(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("quickstart/main.go")
	require.NoError(t, err)
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	assert.Contains(t, string(readme), "```go\n"+string(src)+"```\n", "README's quickstart is examples/quickstart/main.go verbatim")
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	out := run(t, build(t, "metrics"), nil)
	for _, want := range []string{
		"span wfstore.runner.owner_call call=dispatch run=order-1 node=charge activation=c1 attempt=2 identity=",
		"span wfstore.runner.owner_call call=observe run=order-2 node=ship activation=s1 attempt=1 identity=",
		"event wfstore.attempt.admitted run=order-1 node=charge activation=c1 attempt=2 identity=",
		"runner stopped: admitted=3 retries_consumed=1",
		`"Name":"wfstore.work.attempts.admitted","Description":`,
		`"Unit":"{attempt}"`,
		`"Name":"wfstore.work.runs"`,
		`"Name":"wfstore.runner.attempts.settled"`,
		`{"Key":"outcome","Value":{"Type":"STRING","Value":"failed"}}`,
	} {
		assert.Contains(t, out, want)
	}
}
