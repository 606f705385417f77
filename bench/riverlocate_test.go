package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEmbeddedRiverPeerIsBenchRiver keeps the copy of bench/river embedded
// in the binary identical to bench/river (go generate ./bench/ refreshes it).
func TestEmbeddedRiverPeerIsBenchRiver(t *testing.T) {
	for _, name := range []string{"main.go", "go.mod", "go.sum"} {
		want, err := os.ReadFile(filepath.Join("river", name))
		require.NoError(t, err)
		got, err := riverSources.ReadFile("riversrc/" + name + ".txt")
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "riversrc/%s.txt differs from river/%s: run go generate ./bench/", name, name)
	}
}

// riverDSN is the database the River tests drain on: the test server when
// there is one, else an address nothing listens on (the peer then builds
// and its drain fails, which the Skipped text says).
func riverDSN() (dsn string, real bool) {
	if d := os.Getenv("WFSTORE_POSTGRES_DSN"); d != "" {
		return d, true
	}
	return "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=2", false
}

// checkRiverRan asserts that the peer was built: it drained (on a real
// server) or its drain, not its locating or building, failed.
func checkRiverRan(t *testing.T, p Peer, real bool) {
	t.Helper()
	if real {
		require.Empty(t, p.Skipped)
		require.Positive(t, p.JobsPerSec)
		return
	}
	require.True(t, strings.HasPrefix(p.Skipped, "the River drain failed"), "skipped: %s", p.Skipped)
}

// TestRiverRunsFromAnyWorkingDirectory starts the peer from a directory
// outside the repository: it is found in the source tree the binary was
// built from, built and run.
func TestRiverRunsFromAnyWorkingDirectory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds River")
	}
	src, err := filepath.Abs("river")
	require.NoError(t, err)
	t.Chdir(t.TempDir())
	path, from, cleanup, err := LocateRiver(RiverAuto)
	defer cleanup()
	require.NoError(t, err)
	require.Equal(t, src, path)
	assert.Contains(t, from, "source tree this binary was built from")

	dsn, real := riverDSN()
	p := RunRiver(t.Context(), RiverAuto, dsn, 200, nil)
	checkRiverRan(t, p, real)
	require.Equal(t, from, p.Source)
}

// TestRiverRunsFromTheEmbeddedCopy hides the source tree, as for a binary
// built with -trimpath or copied to another machine: the embedded copy is
// written to a temporary directory, built and run, and removed.
func TestRiverRunsFromTheEmbeddedCopy(t *testing.T) {
	if testing.Short() {
		t.Skip("builds River")
	}
	t.Chdir(t.TempDir())
	saved := riverSourceDir
	riverSourceDir = func() string { return "" }
	defer func() { riverSourceDir = saved }()

	path, from, cleanup, err := LocateRiver(RiverAuto)
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(path, "go.sum"))
	assert.Contains(t, from, "embedded")
	cleanup()
	require.NoDirExists(t, path)

	dsn, real := riverDSN()
	p := RunRiver(t.Context(), RiverAuto, dsn, 200, nil)
	checkRiverRan(t, p, real)
	require.Contains(t, p.Source, "embedded")
}

// TestRiverWithoutGoSaysWhy: with no go command to build the peer, the
// report says so, with the lookup's error.
func TestRiverWithoutGoSaysWhy(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	p := RunRiver(t.Context(), RiverAuto, "postgres://unused", 10, nil)
	require.Contains(t, p.Skipped, "cannot build the River peer")
	require.Contains(t, p.Skipped, `exec: "go": executable file not found in $PATH`)
}
