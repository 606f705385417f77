package pgtest_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/internal/pgscratch"
	"github.com/wfstore/wfstore/internal/testkit/pgtest"
)

// envSchemaChild makes TestChildSchema the child of
// TestSchemasOfDeadBinariesAreReaped.
const envSchemaChild = "WFSTORE_PGTEST_SCHEMA_CHILD"

// TestChildSchema is a role, not a test: it makes a schema with
// pgtest.Schema, prints its name, and then dies without its cleanup
// ("die": SIGKILL, as a killed or timed-out binary) or ends normally.
func TestChildSchema(t *testing.T) {
	mode := os.Getenv(envSchemaChild)
	if mode == "" {
		t.Skip("the child role of TestSchemasOfDeadBinariesAreReaped")
	}
	_, schema := pgtest.Schema(t)
	fmt.Printf("schema %s\n", schema)
	if mode == "die" {
		_ = os.Stdout.Sync()
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
}

// A binary that dies without its cleanup leaves its schema; the first
// Schema of the next binary drops it, and keeps the schema of a live
// process and a wfstore_test_ schema without our comment.
func TestSchemasOfDeadBinariesAreReaped(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	admin := pgtest.Admin(t)
	ctx := context.Background()
	_, live := pgtest.Schema(t)
	bare := pgtest.NewSchemaName()
	_, err := admin.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{bare}.Sanitize())
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = admin.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{bare}.Sanitize()) })
	exists := func(schema string) bool {
		var n int
		require.NoError(t, admin.QueryRow(ctx, "SELECT count(*) FROM pg_namespace WHERE nspname = $1", schema).Scan(&n))
		return n == 1
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	child := func(mode string) (schema string, pid int) {
		cmd := exec.Command(exe, "-test.run=^TestChildSchema$", "-test.count=1")
		// The child uses this test's server, whichever it is.
		cmd.Env = append(os.Environ(), envSchemaChild+"="+mode, pgtest.EnvDSN+"="+dsn)
		out, _ := cmd.CombinedOutput()
		m := regexp.MustCompile(`(?m)^schema (\S+)$`).FindStringSubmatch(string(out))
		require.NotNil(t, m, "child %s: %s", mode, out)
		t.Cleanup(func() { _, _ = admin.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{m[1]}.Sanitize()+" CASCADE") })
		return m[1], cmd.ProcessState.Pid()
	}

	leaked, pid := child("die")
	require.True(t, exists(leaked), "a killed binary leaves its schema")
	var comment string
	require.NoError(t, admin.QueryRow(ctx, "SELECT obj_description(oid, 'pg_namespace') FROM pg_namespace WHERE nspname = $1", leaked).Scan(&comment))
	p, ok := pgscratch.ParseComment(comment)
	require.True(t, ok, comment)
	assert.Equal(t, pid, p.PID, "the comment names the binary that made the schema")

	next, _ := child("live")
	assert.False(t, exists(leaked), "the next binary's first Schema drops the dead binary's schema")
	assert.False(t, exists(next), "the next binary drops its own schema when its test ends")
	assert.True(t, exists(live), "a live process's schema is kept")
	assert.True(t, exists(bare), "a schema without our comment is kept")
}
