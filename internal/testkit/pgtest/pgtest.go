// Package pgtest gives tests a PostgreSQL server and a fresh schema per
// test.
//
// The server is, in order of preference:
//
//  1. the one at WFSTORE_POSTGRES_DSN, when set (a connection failure then
//     fails the test: an explicit server never skips);
//  2. a throwaway cluster started once per test binary with the local
//     initdb and pg_ctl (found in WFSTORE_POSTGRES_BIN when set, else in
//     PATH or /usr/lib/postgresql/*/bin), in a temporary directory,
//     listening on 127.0.0.1 at a random port and on a unix socket in that
//     directory. When the process runs as root (initdb refuses root) the
//     cluster is created and run as the "postgres" user. It is stopped and
//     deleted however the binary ends: by Main after the tests or on
//     SIGINT/SIGTERM, and by the cluster's watchdog process when the binary
//     dies without running Main's cleanup (a panicking test, a timeout,
//     SIGKILL);
//  3. none: the test is skipped with a message saying how to provide one
//     (and Main reports the skips at the end, see Main), or fails when
//     WFSTORE_REQUIRE_POSTGRES=1.
//
// Use it from a package's TestMain:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
// and in tests:
//
//	dsn, schema := pgtest.Schema(t)
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/term"

	"github.com/wfstore/wfstore/internal/pgscratch"
)

// Environment variables.
const (
	// EnvDSN names an existing server to use.
	EnvDSN = "WFSTORE_POSTGRES_DSN"
	// EnvRequire, when "1", turns a missing server into a test failure.
	EnvRequire = "WFSTORE_REQUIRE_POSTGRES"
	// EnvBinDir names the one directory to take initdb and pg_ctl from.
	EnvBinDir = "WFSTORE_POSTGRES_BIN"
)

// SchemaPrefix starts the name of every schema Schema creates.
const SchemaPrefix = "wfstore_test_"

var (
	srvOnce sync.Once
	srv     *server
	srvErr  error
	srvSkip string // why there is no server (skip unless required)

	clusterMu sync.Mutex
	clusters  []*Cluster // started by this binary, stopped by Main

	skipped atomic.Int64 // tests skipped for want of a server
)

type server struct {
	dsn   string
	admin *pgxpool.Pool
	// cluster is set when this binary started the server.
	cluster *Cluster
}

// Main runs the tests and then stops every cluster this binary started.
// Call it from TestMain.
//
// The clusters are stopped and removed on every way out: after the tests,
// when m.Run panics, and on SIGINT or SIGTERM (the binary then still dies
// of that signal). A test panicking on its own goroutine, or a SIGKILL,
// ends the process without running any of that: each cluster's watchdog
// (see StartCluster) then stops it.
//
// When tests were skipped for want of a server, Main says so on stderr
// and, because "go test ./..." shows nothing of a passing package but its
// "ok" line, also on the controlling terminal when there is one (see
// notice).
func Main(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	finished := make(chan struct{})
	go func() {
		select {
		case sig := <-sigs:
			n := StopAll()
			fmt.Fprintf(os.Stderr, "pgtest: %v: the tests were interrupted; stopped and removed %d throwaway PostgreSQL cluster(s)\n", sig, n)
			// Die of the signal, as the binary would have without us.
			signal.Reset(sig)
			_ = syscall.Kill(os.Getpid(), sig.(syscall.Signal))
			time.Sleep(time.Second)
			os.Exit(128 + int(sig.(syscall.Signal)))
		case <-finished:
		}
	}()
	defer func() {
		signal.Stop(sigs)
		close(finished)
		StopAll()
	}()
	code := m.Run()
	notice()
	return code
}

// StopAll stops every cluster started by this binary (Main calls it) and
// returns how many it stopped.
func StopAll() int {
	clusterMu.Lock()
	cs := clusters
	clusters = nil
	clusterMu.Unlock()
	if srv != nil && srv.admin != nil {
		srv.admin.Close()
	}
	for _, c := range cs {
		if err := c.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: stopping the throwaway cluster: %v\n", err)
		}
	}
	return len(cs)
}

// notice reports the tests skipped for want of a server, once per binary:
// on stderr, where "go test -v" and a failing package show it, and, when
// go test hides this binary's output (a passing package in package-list
// mode, not -v), also on the controlling terminal, so that a person running
// "go test ./..." sees it just above the package's "ok" line. Without a
// terminal (CI) only stderr carries it: set WFSTORE_REQUIRE_POSTGRES=1
// there to turn the skip into a failure.
func notice() {
	n := skipped.Load()
	if n == 0 || Required() {
		return
	}
	msg := fmt.Sprintf("%s: %d test(s) SKIPPED: %s\n", testPackage(), n, srvSkip)
	fmt.Fprint(os.Stderr, msg)
	if testing.Verbose() || term.IsTerminal(int(os.Stderr.Fd())) {
		return // stderr already reaches the person
	}
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		fmt.Fprint(tty, msg)
		_ = tty.Close()
	}
}

// testPackage names the package under test.
func testPackage() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Path != "" && bi.Path != "command-line-arguments" {
		return strings.TrimSuffix(bi.Path, ".test")
	}
	return strings.TrimSuffix(filepath.Base(os.Args[0]), ".test")
}

// Required reports whether WFSTORE_REQUIRE_POSTGRES=1.
func Required() bool { return os.Getenv(EnvRequire) == "1" }

func getServer() (*server, string, error) {
	srvOnce.Do(func() {
		srv, srvSkip, srvErr = findServer()
	})
	return srv, srvSkip, srvErr
}

func findServer() (*server, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if dsn := os.Getenv(EnvDSN); dsn != "" {
		s, err := connect(ctx, dsn)
		if err != nil {
			return nil, "", fmt.Errorf("pgtest: %s=%q: %w", EnvDSN, dsn, err)
		}
		return s, "", nil
	}
	bins, err := FindBinaries()
	if err != nil {
		return nil, fmt.Sprintf("pgtest: NO POSTGRES SERVER: %s is not set and %v; "+
			"set %s=postgres://user@host:port/db?sslmode=disable or install PostgreSQL (initdb, pg_ctl) to run these tests",
			EnvDSN, err, EnvDSN), nil
	}
	c, err := StartCluster(ctx, bins)
	if err != nil {
		return nil, "", fmt.Errorf("pgtest: %s is not set and starting a throwaway cluster with %s failed: %w", EnvDSN, bins.Dir, err)
	}
	s, err := connect(ctx, c.DSN())
	if err != nil {
		_ = c.Stop()
		return nil, "", fmt.Errorf("pgtest: connect to the throwaway cluster: %w", err)
	}
	s.cluster = c
	return s, "", nil
}

func connect(ctx context.Context, dsn string) (*server, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return &server{dsn: dsn, admin: pool}, nil
}

// noServer skips t, or fails it when a server is required.
func noServer(t testing.TB, why string) {
	t.Helper()
	skipped.Add(1)
	if Required() {
		t.Fatalf("%s (%s=1, so this fails instead of skipping)", why, EnvRequire)
	}
	t.Skip(why)
}

// DSN returns the server's connection string, skipping (or failing) t when
// there is none. Tests that create objects should use Schema instead.
func DSN(t testing.TB) string {
	t.Helper()
	s, skip, err := getServer()
	if err != nil {
		t.Fatal(err)
	}
	if s == nil {
		noServer(t, skip)
	}
	return s.dsn
}

// ServerCluster returns the throwaway cluster serving the tests, or nil when the
// server came from WFSTORE_POSTGRES_DSN. It skips or fails t like DSN.
func ServerCluster(t testing.TB) *Cluster {
	t.Helper()
	DSN(t)
	return srv.cluster
}

// Schema creates a fresh, empty schema with a random name on the server and
// returns the server's DSN and the schema's name. The schema (and whatever
// was created in it) is dropped when t ends. Its comment names this
// process (internal/pgscratch), so that when the binary dies
// before t ends (killed, or a test timeout, which skips every cleanup)
// the first Schema of a later binary on this host drops it. Schema drops
// nothing else: never a schema of a live process, nor one without that
// comment.
func Schema(t testing.TB) (dsn, schema string) {
	t.Helper()
	dsn = DSN(t)
	schema = NewSchemaName()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reapOnce.Do(func() {
		dropped, err := pgscratch.Reap(ctx, srv.admin, SchemaPrefix)
		if err != nil {
			t.Logf("pgtest: dropping the schemas of test binaries that are gone: %v", err)
		}
		if len(dropped) > 0 {
			t.Logf("pgtest: dropped %d schema(s) left by test binaries that are gone: %s", len(dropped), strings.Join(dropped, ", "))
		}
	})
	if err := pgscratch.Create(ctx, srv.admin, schema); err != nil {
		t.Fatalf("pgtest: create schema %s: %v", schema, err)
	}
	t.Cleanup(func() { dropSchema(t, schema) })
	return dsn, schema
}

// reapOnce makes the first Schema of a binary reap the schemas of binaries
// that are gone.
var reapOnce sync.Once

// SchemaName returns a fresh random schema name (not created) and drops a
// schema of that name, if one exists, when t ends. It is for tests of code
// that creates the schema itself; the random name is this test's alone.
// Such a schema carries no comment naming this process, so a binary that
// dies before t ends leaves it (drop wfstore_test_* schemas by hand when
// no test runs).
func SchemaName(t testing.TB) (dsn, schema string) {
	t.Helper()
	dsn = DSN(t)
	schema = NewSchemaName()
	t.Cleanup(func() { dropSchema(t, schema) })
	return dsn, schema
}

func dropSchema(t testing.TB, schema string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := srv.admin.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
		t.Errorf("pgtest: drop schema %s: %v", schema, err)
	}
}

// NewSchemaName returns SchemaPrefix followed by 16 random hex digits.
func NewSchemaName() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return SchemaPrefix + hex.EncodeToString(b[:])
}

// Admin returns a small pool on the server for test assertions (do not
// close it).
func Admin(t testing.TB) *pgxpool.Pool {
	t.Helper()
	DSN(t)
	return srv.admin
}

// ErrNoBinaries reports that initdb/pg_ctl were not found.
var ErrNoBinaries = errors.New("no initdb/pg_ctl found")
