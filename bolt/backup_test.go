package bolt

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
)

func backupRun(id string) backend.Run {
	return backend.Run{ID: id, RootID: id, Depth: 1, Status: backend.RunRunning,
		Limits: backend.Limits{NodeExecutionCap: 10, ConcurrencyCap: 2, CycleCap: 3, RetryCap: 1}, CreatedMS: 1, UpdatedMS: 1}
}

func runIDs(t *testing.T, b *Backend, ids ...string) map[string]bool {
	t.Helper()
	found := map[string]bool{}
	view(t, b, func(ctx context.Context, r backend.ReadTx) {
		f, err := r.Load(ctx, backend.Lookup{Runs: ids})
		require.NoError(t, err)
		for id := range f.Runs {
			found[id] = true
		}
	})
	return found
}

func TestBackupIsAConsistentStoreOfWhatWasCommitted(t *testing.T) {
	t.Parallel()
	b := openTemp(t)
	apply(t, b, insertRuns(backupRun("before")))
	dst := filepath.Join(t.TempDir(), "copy.db")
	require.NoError(t, b.Backup(context.Background(), dst))
	apply(t, b, insertRuns(backupRun("after")))

	c, err := Open(context.Background(), dst, WithRelaxedDurability())
	require.NoError(t, err)
	defer c.Close()
	assert.Equal(t, map[string]bool{"before": true}, runIDs(t, c, "before", "after"))
	require.NoError(t, c.Verify(context.Background()), "the copy's indexes are consistent")
}

func TestBackupNeverOverwritesAndFailsOnAClosedStore(t *testing.T) {
	t.Parallel()
	b := openTemp(t)
	dst := filepath.Join(t.TempDir(), "taken.db")
	require.NoError(t, os.WriteFile(dst, []byte("keep me"), 0o600))
	err := b.Backup(context.Background(), dst)
	require.ErrorIs(t, err, os.ErrExist)
	got, _ := os.ReadFile(dst)
	assert.Equal(t, "keep me", string(got))

	require.NoError(t, b.Close())
	missing := filepath.Join(t.TempDir(), "x.db")
	require.ErrorIs(t, b.Backup(context.Background(), missing), backend.ErrClosed)
	_, statErr := os.Stat(missing)
	assert.ErrorIs(t, statErr, os.ErrNotExist, "nothing written")
}

// A copy that fails a check is never given the destination's name, and
// nothing is left in the folder; the check saw the complete copy, at a
// temporary name, mode 0600.
func TestBackupFailingItsCheckLeavesNothing(t *testing.T) {
	t.Parallel()
	b := openTemp(t)
	apply(t, b, insertRuns(backupRun("r")))
	dir := t.TempDir()
	dst := filepath.Join(dir, "copy")
	refused := errors.New("refused by the check")
	var checked string
	err := b.Backup(context.Background(), dst, func(_ context.Context, path string) error {
		checked = path
		fi, err := os.Stat(path)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
		return refused
	})
	require.ErrorIs(t, err, refused)
	assert.NotEqual(t, dst, checked)
	assert.Equal(t, dir, filepath.Dir(checked))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries)

	require.NoError(t, b.Backup(context.Background(), dst, func(context.Context, string) error { return nil }))
	entries, err = os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	assert.Equal(t, "copy", entries[0].Name())
}
