package pgscratch_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/internal/pgscratch"
	"github.com/wfstore/wfstore/internal/testkit/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// deadProcess returns the record of a process that ran on this host and
// is gone.
func deadProcess(t *testing.T) pgscratch.Process {
	t.Helper()
	p, err := pgscratch.ExitedProcess()
	require.NoError(t, err)
	return p
}

func TestACommentNamesItsProcessAndParsesBack(t *testing.T) {
	self, err := pgscratch.Self()
	require.NoError(t, err)
	assert.Equal(t, os.Getpid(), self.PID)
	got, ok := pgscratch.ParseComment(self.Comment())
	require.True(t, ok, self.Comment())
	assert.Equal(t, self, got)
	for _, c := range []string{"", "some user's note", "wfstore-test", "wfstore-test pid=x start=1", "wfstore-testx pid=1 start=1 boot=b pidns=n host=h"} {
		_, ok := pgscratch.ParseComment(c)
		assert.False(t, ok, "%q is not ours", c)
	}
}

func TestAProcessIsGoneOnlyWhenThisHostProvesIt(t *testing.T) {
	self, err := pgscratch.Self()
	require.NoError(t, err)
	dead := deadProcess(t)
	assert.True(t, dead.Gone(), "a process that exited is gone")
	reused := self
	reused.Start++ // the pid is alive, but another process holds it
	assert.True(t, reused.Gone(), "a reused pid does not keep a schema alive")
	assert.False(t, self.Gone(), "a live process is not gone")
	for name, p := range map[string]pgscratch.Process{
		"another kernel (a different host or a reboot)": func() pgscratch.Process { p := dead; p.Boot = "another-boot"; return p }(),
		"another pid namespace (a container)":           func() pgscratch.Process { p := dead; p.PIDNS = "pid:[1]"; return p }(),
		"another host name":                             func() pgscratch.Process { p := dead; p.Host = "elsewhere"; return p }(),
	} {
		assert.False(t, p.Gone(), "%s: this host cannot tell, so it is never reaped", name)
	}
}

// Reap drops the scratch schemas of processes that are gone, and keeps
// those of live processes, those of other hosts and those without our
// comment.
func TestReapDropsOnlyTheSchemasOfGoneProcesses(t *testing.T) {
	dsn := pgtest.DSN(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	// Closed after the cleanup below, which drops this test's schemas.
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	// A prefix of this test's own, outside pgtest's, so that other tests'
	// schemas are out of reach and no other test binary reaps these.
	prefix := "wfstore_reaptest_" + strings.TrimPrefix(pgtest.NewSchemaName(), pgtest.SchemaPrefix) + "_"
	name := func(s string) string { return prefix + s }
	t.Cleanup(func() {
		for _, s := range []string{"dead", "reused", "live", "bare", "other", "foreign"} {
			_, err := conn.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{name(s)}.Sanitize())
			assert.NoError(t, err, "dropping %s", name(s))
		}
	})
	self, err := pgscratch.Self()
	require.NoError(t, err)
	dead := deadProcess(t)
	reused := self
	reused.Start++
	other := dead
	other.Host = "elsewhere"
	for s, comment := range map[string]string{
		"dead":    dead.Comment(),
		"reused":  reused.Comment(),
		"other":   other.Comment(),
		"foreign": "a schema of someone else's, pid=1",
	} {
		_, err := conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{name(s)}.Sanitize())
		require.NoError(t, err)
		_, err = conn.Exec(ctx, "COMMENT ON SCHEMA "+pgx.Identifier{name(s)}.Sanitize()+" IS "+pgscratch.Literal(comment))
		require.NoError(t, err)
	}
	require.NoError(t, pgscratch.Create(ctx, conn, name("live")))
	_, err = conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{name("bare")}.Sanitize())
	require.NoError(t, err)
	var comment string
	require.NoError(t, conn.QueryRow(ctx, "SELECT obj_description(oid, 'pg_namespace') FROM pg_namespace WHERE nspname = $1", name("live")).Scan(&comment))
	assert.Equal(t, self.Comment(), comment, "Create records this process")

	dropped, err := pgscratch.Reap(ctx, conn, prefix)
	require.NoError(t, err)
	slices.Sort(dropped)
	assert.Equal(t, []string{name("dead"), name("reused")}, dropped)
	rows, err := conn.Query(ctx, "SELECT nspname FROM pg_namespace WHERE left(nspname, length($1)) = $1 ORDER BY nspname", prefix)
	require.NoError(t, err)
	left, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	assert.Equal(t, []string{name("bare"), name("foreign"), name("live"), name("other")}, left)
}
