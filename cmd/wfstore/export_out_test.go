package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/sqlite"
)

// sourceStore writes everyKind's records to a new SQLite store and returns
// its path.
func sourceStore(t *testing.T, dir string) string {
	t.Helper()
	ctx := context.Background()
	src := filepath.Join(dir, "src.db")
	b, err := sqlite.Open(ctx, src)
	require.NoError(t, err)
	require.NoError(t, insertRecords(ctx, b, everyKind()))
	require.NoError(t, b.Close())
	return src
}

// dirNames lists the names in dir.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func TestExportNeverDestroysData(t *testing.T) {
	t.Parallel()
	bin := wfstoreBinary(t, "")
	dir := t.TempDir()
	src := sourceStore(t, dir)
	keep := filepath.Join(dir, "keep.jsonl")
	precious := []byte("an earlier export the user wants to keep\n")
	require.NoError(t, os.WriteFile(keep, precious, 0o600))

	t.Run("a mistyped source creates no store and leaves --out alone", func(t *testing.T) {
		for _, be := range []string{"sqlite", "bolt"} {
			typo := filepath.Join(dir, "srcc."+be)
			_, stderr, code := runCLI(t, bin, nil, "export", "--backend", be, "--db", typo, "--out", keep)
			assert.Equal(t, 1, code, "%s: %s", be, stderr)
			assert.Contains(t, stderr, "does not exist", be)
			_, err := os.Stat(typo)
			assert.True(t, os.IsNotExist(err), "%s: no store was created at the mistyped path", be)
			got, err := os.ReadFile(keep)
			require.NoError(t, err)
			assert.Equal(t, precious, got, "%s: --out is untouched", be)
		}
	})

	t.Run("an existing --out is refused without --replace", func(t *testing.T) {
		_, stderr, code := runCLI(t, bin, nil, "export", "--db", src, "--out", keep)
		assert.Equal(t, 1, code, stderr)
		assert.Contains(t, stderr, "--replace")
		got, err := os.ReadFile(keep)
		require.NoError(t, err)
		assert.Equal(t, precious, got)
	})

	t.Run("--replace replaces it atomically, 0600, leaving no temporary file", func(t *testing.T) {
		require.NoError(t, os.Chmod(keep, 0o644))
		before := dirNames(t, dir)
		_, stderr, code := runCLI(t, bin, nil, "export", "--db", src, "--out", keep, "--replace")
		require.Equal(t, 0, code, stderr)
		got, err := os.ReadFile(keep)
		require.NoError(t, err)
		assert.NotEqual(t, precious, got)
		fi, err := os.Stat(keep)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
		assert.Equal(t, before, dirNames(t, dir), "no temporary file is left beside it")
	})

	t.Run("a new --out is created 0600", func(t *testing.T) {
		fresh := filepath.Join(t.TempDir(), "fresh.jsonl")
		_, stderr, code := runCLI(t, bin, nil, "export", "--db", src, "--out", fresh)
		require.Equal(t, 0, code, stderr)
		fi, err := os.Stat(fresh)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	})

	t.Run("--out /dev/null works", func(t *testing.T) {
		_, stderr, code := runCLI(t, bin, nil, "export", "--db", src, "--out", os.DevNull)
		assert.Equal(t, 0, code, stderr)
		assert.Contains(t, stderr, "exported")
	})
}
