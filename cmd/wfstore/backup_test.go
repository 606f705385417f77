package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/sqlite"
)

// allAttempts reads up to 1000 attempts of the store at path.
func allAttempts(t *testing.T, path string) []backend.Attempt {
	t.Helper()
	ctx := context.Background()
	b, err := sqlite.Open(ctx, path)
	require.NoError(t, err)
	defer b.Close()
	var out []backend.Attempt
	require.NoError(t, b.View(ctx, func(r backend.ReadTx) error {
		out, err = r.Attempts(ctx, backend.AttemptQuery{Limit: 1000})
		return err
	}))
	return out
}

func TestBackupCommandCopiesADemoStore(t *testing.T) {
	t.Parallel()
	bin := wfstoreBinary(t, "")
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src.db"), filepath.Join(dir, "copy.db")
	_, stderr, code := runCLI(t, bin, nil, "demo", "-db", src, "-events", "0")
	require.Equal(t, 0, code, stderr)
	stdout, stderr, code := runCLI(t, bin, nil, "backup", "--db", src, "--to", dst)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "wrote a consistent copy of "+src+" to "+dst)
	want := allAttempts(t, src)
	require.NotEmpty(t, want)
	assert.Equal(t, want, allAttempts(t, dst))

	// A second backup to the same file is refused and leaves it as it was.
	before, err := os.ReadFile(dst)
	require.NoError(t, err)
	_, stderr, code = runCLI(t, bin, nil, "backup", "--db", src, "--to", dst)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "already exists")
	after, err := os.ReadFile(dst)
	require.NoError(t, err)
	assert.Equal(t, before, after)

	_, stderr, code = runCLI(t, bin, nil, "backup", "--backend", "postgres", "--dsn", "postgres://u:secret@h/db")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "pg_dump")
	_, stderr, code = runCLI(t, bin, nil, "backup", "--db", src)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "--to PATH is required")
}
