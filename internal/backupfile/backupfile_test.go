package backupfile

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The next backup to a destination removes the temporary files of dead
// backups to it, keeps those of running ones and of other destinations, and
// never replaces an existing destination.
func TestCreateRemovesOnlyDeadBackupsTemporaryFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	dst := filepath.Join(dir, "copy.db")
	dead := exec.Command("true")
	require.NoError(t, dead.Run())
	deadPID := strconv.Itoa(dead.Process.Pid)
	livePID := strconv.Itoa(os.Getppid())
	files := map[string]bool{ // name → kept
		".copy.db.wfstore-backup-" + deadPID + "-abc":         false,
		".copy.db.wfstore-backup-" + deadPID + "-abc-journal": false,
		".copy.db.wfstore-backup-" + livePID + "-def":         true,
		".other.db.wfstore-backup-" + deadPID + "-abc":        true,
		"copy.db.keep": true,
	}
	for name := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("partial"), 0o600))
	}
	tmp, f, err := Create(dst)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	fi, err := os.Stat(tmp)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	for name, kept := range files {
		_, err := os.Stat(filepath.Join(dir, name))
		assert.Equal(t, kept, err == nil, name)
	}

	require.NoError(t, Publish(tmp, dst))
	_, err = os.Stat(tmp)
	assert.ErrorIs(t, err, os.ErrNotExist, "the temporary name is gone")
	_, err = os.Stat(dst)
	require.NoError(t, err)

	// An existing destination is refused, before and at publication.
	_, _, err = Create(dst)
	assert.ErrorIs(t, err, os.ErrExist)
	other := filepath.Join(dir, "second")
	tmp2, f2, err := Create(other)
	require.NoError(t, err)
	require.NoError(t, f2.Close())
	require.NoError(t, os.WriteFile(other, []byte("someone else's"), 0o600))
	assert.ErrorIs(t, Publish(tmp2, other), os.ErrExist)
	b, err := os.ReadFile(other)
	require.NoError(t, err)
	assert.Equal(t, "someone else's", string(b))
}
