package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
)

// TestOpenErrorsNameThePath: every way Open can fail on a file says which
// file, once, and keeps the cause visible to errors.Is.
func TestOpenErrorsNameThePath(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()

	missing := filepath.Join(dir, "no-such-dir", "store.db")
	_, err := Open(ctx, missing)
	require.Error(t, err)
	require.Contains(t, err.Error(), "sqlite: open "+missing+": ")
	require.NotContains(t, err.Error(), "sqlite: open "+missing+": sqlite:", "no stutter")

	foreign := filepath.Join(dir, "foreign.db")
	require.NoError(t, os.WriteFile(foreign, []byte("hello, not a database, but long enough to look like a file header\n"), 0o600))
	_, err = Open(ctx, foreign)
	require.ErrorIs(t, err, backend.ErrForeignStore)
	require.Contains(t, err.Error(), foreign)

	isDir := filepath.Join(dir, "adir")
	require.NoError(t, os.Mkdir(isDir, 0o700))
	_, err = Open(ctx, isDir)
	require.Error(t, err)
	require.Contains(t, err.Error(), isDir)

	if os.Geteuid() != 0 { // root reads any file
		unreadable := filepath.Join(dir, "locked-dir")
		require.NoError(t, os.Mkdir(unreadable, 0o000))
		t.Cleanup(func() { _ = os.Chmod(unreadable, 0o700) })
		_, err = Open(ctx, filepath.Join(unreadable, "s.db"))
		require.Error(t, err)
		require.Contains(t, err.Error(), filepath.Join(unreadable, "s.db"))
	}
}
