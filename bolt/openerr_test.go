package bolt

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"

	"github.com/wfstore/wfstore/backend"
)

// TestOpenErrorsNameThePath: every way Open can fail on a file says which
// file, and keeps the cause visible to errors.Is.
func TestOpenErrorsNameThePath(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()

	missing := filepath.Join(dir, "no-such-dir", "store.db")
	_, err := Open(ctx, missing)
	require.ErrorIs(t, err, os.ErrNotExist)
	require.Contains(t, err.Error(), missing)

	text := filepath.Join(dir, "text.db")
	require.NoError(t, os.WriteFile(text, []byte("hello, not a database\n"), 0o600))
	_, err = Open(ctx, text)
	require.ErrorIs(t, err, backend.ErrForeignStore)
	require.Contains(t, err.Error(), text)

	other := filepath.Join(dir, "other-app.db")
	rawBolt(t, other, func(tx *bbolt.Tx) error { _, err := tx.CreateBucket([]byte("users")); return err })
	_, err = Open(ctx, other)
	require.ErrorIs(t, err, backend.ErrForeignStore)
	require.Contains(t, err.Error(), "bolt: open "+other+": ")
	require.Equal(t, 1, strings.Count(err.Error(), "bolt:"), "no stutter: %v", err)

	locked := filepath.Join(dir, "locked.db")
	b, err := Open(ctx, locked)
	require.NoError(t, err)
	defer b.Close()
	_, err = Open(ctx, locked, WithLockTimeout(50*time.Millisecond))
	require.ErrorIs(t, err, ErrLocked)
	require.Contains(t, err.Error(), locked)
}
