package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/bolt"
	"github.com/wfstore/wfstore/sqlite"
)

// envUmaskChild names the folder the umask-0 child of
// TestFilesAreOwnerOnlyEvenUnderUmaskZero works in.
const envUmaskChild = "WFSTORE_TEST_UMASK_CHILD_DIR"

// Stores, their SQLite -wal and -shm files, and backups are created 0600
// even when the umask lets everyone read (umask is process-wide, so the
// files are made by a child process of this test binary with umask 0);
// opening an existing store never changes its mode.
func TestFilesAreOwnerOnlyEvenUnderUmaskZero(t *testing.T) {
	if dir := os.Getenv(envUmaskChild); dir != "" {
		umaskZeroChild(t, dir)
		return
	}
	t.Parallel()
	dir := t.TempDir()
	// A store an operator made group-readable keeps its mode.
	ctx := context.Background()
	loose := filepath.Join(dir, "loose.db")
	b, err := sqlite.Open(ctx, loose)
	require.NoError(t, err)
	require.NoError(t, b.Close())
	require.NoError(t, os.Chmod(loose, 0o640))

	cmd := exec.Command(os.Args[0], "-test.run=^TestFilesAreOwnerOnlyEvenUnderUmaskZero$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), envUmaskChild+"="+dir)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "child:\n%s", out)
	require.Contains(t, string(out), "--- PASS")

	for _, name := range []string{"a.db", "a.db-wal", "a.db-shm", "a.bak", "c.bolt", "c.bak", "d.db"} {
		fi, err := os.Stat(filepath.Join(dir, "modes", name))
		require.NoError(t, err, name)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), name)
	}
	fi, err := os.Stat(loose)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o640), fi.Mode().Perm(), "an existing store's mode changed")
}

// umaskZeroChild makes the files under umask 0 and copies each one's mode
// to an empty file of the same name under dir/modes (the -wal and -shm
// files exist only while a store is open).
func umaskZeroChild(t *testing.T, dir string) {
	syscall.Umask(0)
	modes := filepath.Join(dir, "modes")
	require.NoError(t, os.Mkdir(modes, 0o700))
	record := func(path string) {
		fi, err := os.Stat(path)
		require.NoError(t, err, path)
		p := filepath.Join(modes, filepath.Base(path))
		require.NoError(t, os.WriteFile(p, nil, 0o600))
		require.NoError(t, os.Chmod(p, fi.Mode().Perm()))
	}
	ctx := context.Background()
	in := func(args ...string) {
		code, _, stderr := runInProcess(t, time.Minute, args...)
		require.Equal(t, 0, code, "%v: %s", args, stderr)
	}
	a := filepath.Join(dir, "a.db")
	in("migrate", "up", "--db", a)
	b, err := sqlite.Open(ctx, a)
	require.NoError(t, err)
	record(a)
	record(a + "-wal")
	record(a + "-shm")
	require.NoError(t, b.Close())
	in("backup", "--db", a, "--to", filepath.Join(dir, "a.bak"))
	record(filepath.Join(dir, "a.bak"))

	d := filepath.Join(dir, "d.db") // created by the library directly
	b, err = sqlite.Open(ctx, d)
	require.NoError(t, err)
	require.NoError(t, b.Close())
	record(d)

	c := filepath.Join(dir, "c.bolt")
	bb, err := bolt.Open(ctx, c)
	require.NoError(t, err)
	require.NoError(t, bb.Close())
	record(c)
	in("backup", "--backend", "bolt", "--db", c, "--to", filepath.Join(dir, "c.bak"))
	record(filepath.Join(dir, "c.bak"))

	loose := filepath.Join(dir, "loose.db")
	in("verify", "--db", loose)
	in("migrate", "up", "--db", loose)
}
