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
	"github.com/wfstore/wfstore/internal/testkit/pgtest"
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

// apply applies c in one Update.
func apply(t testing.TB, b backend.Backend, c backend.Changes) {
	t.Helper()
	require.NoError(t, b.Update(ctxT(t), func(tx backend.Tx) error {
		return tx.Apply(context.Background(), c)
	}))
}

// runs returns runs with the given ids and every other field zero.
func runs(ids ...string) []backend.Run {
	rs := make([]backend.Run, len(ids))
	for i, id := range ids {
		rs[i] = backend.Run{ID: id}
	}
	return rs
}

// insertRuns inserts runs with the given ids.
func insertRuns(ids ...string) backend.Changes {
	return backend.Changes{Insert: backend.Inserts{Runs: runs(ids...)}}
}

// insertAll inserts one record of each kind (the values of fullRecords).
func insertAll(run backend.Run, link backend.RunLink, act backend.Activation, group backend.FanOutGroup,
	att backend.Attempt, lease backend.Lease, sched backend.RetrySchedule, ev backend.Event) backend.Changes {
	return backend.Changes{Insert: backend.Inserts{
		Runs: []backend.Run{run}, Links: []backend.RunLink{link}, Activations: []backend.Activation{act},
		Groups: []backend.FanOutGroup{group}, Attempts: []backend.Attempt{att}, Leases: []backend.Lease{lease},
		Schedules: []backend.RetrySchedule{sched}, Events: []backend.Event{ev},
	}}
}

// replaceRuns replaces runs.
func replaceRuns(rs ...backend.Run) backend.Changes {
	return backend.Changes{Replace: backend.Replaces{Runs: rs}}
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
