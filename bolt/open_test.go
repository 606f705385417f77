package bolt

import (
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/internal/kvlayout"
)

func fileSum(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return sha256.Sum256(b)
}

// rawBolt edits a bbolt file directly.
func rawBolt(t *testing.T, path string, fn func(tx *bbolt.Tx) error) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, db.Update(fn))
	require.NoError(t, db.Close())
}

func TestOpenFreshEmptyAndExisting(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()

	// A path that does not exist, and an empty file, become stores.
	empty := filepath.Join(dir, "empty.db")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	for _, path := range []string{filepath.Join(dir, "new.db"), empty} {
		b, err := Open(ctx, path)
		require.NoError(t, err)
		require.Equal(t, "bolt", b.Info().Name)
		require.True(t, strings.HasPrefix(b.Info().Version, "go.etcd.io/bbolt v1.5.0"), b.Info().Version)
		require.Equal(t, "on", b.Info().Settings["fsync"])
		require.Equal(t, strconv.Itoa(SchemaVersion), b.Info().Settings["schema_version"])
		apply(t, b, insertRuns(backend.Run{ID: "r"}))
		require.NoError(t, b.Close())

		// Reopening finds the store and its data.
		b, err = Open(ctx, path)
		require.NoError(t, err)
		require.True(t, runExists(t, b, "r"))
		require.NoError(t, b.Verify(ctx))
		require.NoError(t, b.Close())
	}
}

func TestOpenRefusesUnknownVersionWithoutWriting(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v3.db")
	b, err := Open(ctx, path)
	require.NoError(t, err)
	require.NoError(t, b.Close())
	rawBolt(t, path, func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(metaVersion, kvlayout.Key(nil).U64(SchemaVersion+1))
	})
	before := fileSum(t, path)

	_, err = Open(ctx, path)
	require.ErrorIs(t, err, backend.ErrSchemaVersion)
	var sv *backend.SchemaVersionError
	require.ErrorAs(t, err, &sv)
	require.Equal(t, backend.SchemaVersionError{Found: SchemaVersion + 1, Supported: SchemaVersion}, *sv)
	require.Equal(t, before, fileSum(t, path), "the file's bytes are unchanged")
}

func TestOpenRefusesForeignFilesWithoutWriting(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	files := map[string]func(path string){
		"text": func(path string) { require.NoError(t, os.WriteFile(path, []byte("hello, not a database\n"), 0o600)) },
		"zeros": func(path string) {
			require.NoError(t, os.WriteFile(path, make([]byte, 64<<10), 0o600))
		},
		"other bbolt app": func(path string) {
			rawBolt(t, path, func(tx *bbolt.Tx) error { _, err := tx.CreateBucket([]byte("users")); return err })
		},
		"meta bucket without marker": func(path string) {
			rawBolt(t, path, func(tx *bbolt.Tx) error {
				m, err := tx.CreateBucket([]byte("meta"))
				if err != nil {
					return err
				}
				return m.Put([]byte("version"), kvlayout.Key(nil).U64(1))
			})
		},
		"top-level key": func(path string) {
			rawBolt(t, path, func(tx *bbolt.Tx) error {
				_, err := tx.CreateBucket([]byte("x"))
				if err != nil {
					return err
				}
				return tx.DeleteBucket([]byte("x"))
			})
		},
	}
	for name, make := range files {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".db")
			make(path)
			before := fileSum(t, path)
			b, err := Open(ctx, path)
			if name == "top-level key" {
				// A bbolt file with no buckets left is empty: it becomes a store.
				require.NoError(t, err)
				require.NoError(t, b.Close())
				return
			}
			require.ErrorIs(t, err, backend.ErrForeignStore, "%v", err)
			require.Equal(t, before, fileSum(t, path))
		})
	}
}

func TestSecondOpenTimesOutWithErrLocked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "locked.db")
	b, err := Open(ctx, path)
	require.NoError(t, err)
	defer b.Close()

	start := time.Now()
	_, err = Open(ctx, path, WithLockTimeout(100*time.Millisecond))
	require.ErrorIs(t, err, ErrLocked)
	require.ErrorIs(t, err, berrors.ErrTimeout)
	require.Less(t, time.Since(start), 2*time.Second)

	// A ctx deadline shorter than the lock timeout wins.
	dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err = Open(dctx, path)
	require.ErrorIs(t, err, ErrLocked)

	// After Close the file opens again.
	require.NoError(t, b.Close())
	b2, err := Open(ctx, path, WithLockTimeout(time.Second))
	require.NoError(t, err)
	require.NoError(t, b2.Close())
}

func TestOpenArguments(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "args.db")
	_, err := Open(ctx, path, WithLockTimeout(0))
	require.Error(t, err)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = Open(cctx, path)
	require.ErrorIs(t, err, context.Canceled)
	_, err = os.Stat(path)
	require.True(t, errors.Is(err, os.ErrNotExist), "a refused Open creates no file")
	_, err = OpenDB(ctx, nil)
	require.Error(t, err)
}

func TestRelaxedDurabilityIsReported(t *testing.T) {
	t.Parallel()
	b := openTemp(t) // WithRelaxedDurability
	require.Contains(t, b.Info().Settings["fsync"], "not safe against power loss")
}
