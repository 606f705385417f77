package pgtest_test

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/internal/testkit/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestStartClusterInitdb exercises the initdb path whatever
// WFSTORE_POSTGRES_DSN says: it starts its own throwaway cluster (as the
// postgres user when we are root), uses it over TCP and the unix socket,
// and stops it.
func TestStartClusterInitdb(t *testing.T) {
	t.Parallel()
	bins, err := pgtest.FindBinaries()
	if err != nil {
		if pgtest.Required() {
			t.Fatalf("%v (WFSTORE_REQUIRE_POSTGRES=1)", err)
		}
		t.Skipf("SKIP: cannot test the initdb path: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := pgtest.StartCluster(ctx, bins)
	require.NoError(t, err)
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = c.Stop()
		}
	})

	st, err := os.Stat(c.DataDir())
	require.NoError(t, err)
	if os.Geteuid() == 0 {
		require.Equal(t, "postgres", c.RunAs)
		require.NotEqual(t, uint32(0), st.Sys().(*syscall.Stat_t).Uid, "data directory must not be owned by root")
	}

	for _, dsn := range []string{c.DSN(), c.SocketDSN()} {
		conn, err := pgx.Connect(ctx, dsn)
		require.NoError(t, err, dsn)
		var one int
		var listen string
		require.NoError(t, conn.QueryRow(ctx, "SELECT 1, current_setting('listen_addresses')").Scan(&one, &listen))
		require.Equal(t, 1, one)
		require.Equal(t, "127.0.0.1", listen)
		require.NoError(t, conn.Close(ctx))
	}

	require.NoError(t, c.Stop())
	stopped = true
	_, err = os.Stat(c.DataDir())
	require.True(t, os.IsNotExist(err), "Stop removes the cluster's directory")
	conn, err := pgx.Connect(ctx, c.DSN())
	if err == nil {
		conn.Close(ctx)
		t.Fatal("the cluster still answers after Stop")
	}
}

// TestSchemaIsFreshAndDropped: each Schema is new and empty, and is dropped
// at cleanup; nothing else is touched.
func TestSchemaIsFreshAndDropped(t *testing.T) {
	t.Parallel()
	var name string
	t.Run("inner", func(t *testing.T) {
		dsn, schema := pgtest.Schema(t)
		name = schema
		require.Regexp(t, `^wfstore_test_[0-9a-f]{16}$`, schema)
		_, other := pgtest.Schema(t)
		require.NotEqual(t, schema, other)
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, dsn)
		require.NoError(t, err)
		defer conn.Close(ctx)
		var n int
		require.NoError(t, conn.QueryRow(ctx, "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1", schema).Scan(&n))
		require.Zero(t, n)
		_, err = conn.Exec(ctx, "CREATE TABLE "+pgx.Identifier{schema, "t"}.Sanitize()+" (x int)")
		require.NoError(t, err)
	})
	var exists bool
	require.NoError(t, pgtest.Admin(t).QueryRow(context.Background(),
		"SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", name).Scan(&exists))
	require.False(t, exists, "schema %s must be dropped at cleanup", name)
}
