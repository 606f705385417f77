package postgres_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/postgres"
)

// closedPort returns a local TCP port nothing listens on.
func closedPort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	return port
}

// TestOpenErrorsNameTheDSNWithoutPassword: an Open that fails says which
// server and schema it tried, in the DSN's own form with the password
// replaced, never the password; the cause stays visible to errors.As.
func TestOpenErrorsNameTheDSNWithoutPassword(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-Pa55"
	port := strconv.Itoa(closedPort(t))
	for _, tc := range []struct {
		name, dsn, want string
		connect         bool // the failure is a connection failure
	}{
		{"url", "postgres://alice:" + secret + "@127.0.0.1:" + port + "/appdb?sslmode=disable&connect_timeout=5",
			"postgres: open postgres://alice:xxxxx@127.0.0.1:" + port + "/appdb?sslmode=disable&connect_timeout=5 (schema wfs_open): ", true},
		{"url query password", "postgres://alice@127.0.0.1:" + port + "/appdb?password=" + secret + "&sslmode=disable",
			"postgres: open postgres://alice@127.0.0.1:" + port + "/appdb?password=xxxxx&sslmode=disable (schema wfs_open): ", true},
		{"keyword/value", "host=127.0.0.1 port=" + port + " user=alice password=" + secret + " dbname=appdb sslmode=disable",
			"postgres: open host=127.0.0.1 port=" + port + " user=alice password=xxxxx dbname=appdb sslmode=disable (schema wfs_open): ", true},
		{"quoted keyword/value", "host=127.0.0.1 port=" + port + " user=alice password='" + secret + " x' dbname=appdb sslmode=disable",
			"password=xxxxx dbname=appdb", true},
		{"unparseable", "postgres://alice:" + secret + "@127.0.0.1:notaport/appdb",
			"postgres: open postgres://xxxxx@127.0.0.1:notaport/appdb (schema wfs_open): parse dsn: ", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			b, err := postgres.Open(ctx, tc.dsn, postgres.WithSchema("wfs_open"))
			if err == nil {
				b.Close()
				t.Fatal("Open succeeded on a closed port")
			}
			msg := err.Error()
			require.Contains(t, msg, tc.want)
			require.NotContains(t, msg, secret)
			require.NotContains(t, msg, "postgres: open postgres: ", "no stutter")
			if tc.connect {
				var ce *pgconn.ConnectError
				require.True(t, errors.As(err, &ce), "the cause is pgx's connection error: %v", err)
			}
		})
	}
}
