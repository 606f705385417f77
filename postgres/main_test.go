package postgres_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/internal/pgtest"
	"github.com/wfstore/wfstore/postgres"
)

// envChild makes the test binary a child process running one role.
const (
	envChild       = "WFSTORE_PG_TEST_CHILD"
	envChildDSN    = "WFSTORE_PG_TEST_CHILD_DSN"
	envChildSchema = "WFSTORE_PG_TEST_CHILD_SCHEMA"
	envChildArg    = "WFSTORE_PG_TEST_CHILD_ARG"
)

func TestMain(m *testing.M) {
	if role := os.Getenv(envChild); role != "" {
		os.Exit(runChild(role))
	}
	pgtest.Main(m)
}

// childRoles are the roles a re-executed test binary can play.
var childRoles = map[string]func(ctx context.Context, dsn, schema, arg string) error{}

func runChild(role string) int {
	fn, ok := childRoles[role]
	if !ok {
		fmt.Fprintf(os.Stderr, "unknown child role %q\n", role)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := fn(ctx, os.Getenv(envChildDSN), os.Getenv(envChildSchema), os.Getenv(envChildArg)); err != nil {
		fmt.Fprintf(os.Stderr, "child %s: %v\n", role, err)
		return 1
	}
	return 0
}

// withMaxConns adds a pool size to a DSN (URL or key=value form).
func withMaxConns(dsn string, n int) string {
	if strings.Contains(dsn, "://") {
		u, err := url.Parse(dsn)
		if err == nil {
			q := u.Query()
			q.Set("pool_max_conns", fmt.Sprint(n))
			u.RawQuery = q.Encode()
			return u.String()
		}
	}
	return dsn + fmt.Sprintf(" pool_max_conns=%d", n)
}

// ctxT returns a context bounded for one test.
func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// openFresh opens a Backend over a fresh schema (pool of 3).
func openFresh(t testing.TB, opts ...postgres.Option) (*postgres.Backend, string, string) {
	t.Helper()
	dsn, schema := pgtest.Schema(t)
	return openOn(t, dsn, schema, opts...), dsn, schema
}

// openOn opens another Backend over schema, closed at cleanup.
func openOn(t testing.TB, dsn, schema string, opts ...postgres.Option) *postgres.Backend {
	t.Helper()
	b, err := postgres.Open(ctxT(t), withMaxConns(dsn, 3), append([]postgres.Option{postgres.WithSchema(schema)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	return b
}

// apply runs writes in one Update.
func apply(t testing.TB, b backend.Backend, writes ...backend.Write) {
	t.Helper()
	require.NoError(t, b.Update(ctxT(t), func(tx backend.Tx) error {
		return tx.Apply(context.Background(), writes...)
	}))
}

// load runs one Lookup in a View.
func load(t testing.TB, b backend.Backend, l backend.Lookup) backend.Found {
	t.Helper()
	var f backend.Found
	require.NoError(t, b.View(ctxT(t), func(r backend.ReadTx) error {
		var err error
		f, err = r.Load(context.Background(), l)
		return err
	}))
	return f
}

func newPool(t testing.TB, dsn string, n int) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dsn)
	require.NoError(t, err)
	cfg.MaxConns = int32(n)
	pool, err := pgxpool.NewWithConfig(ctxT(t), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}
