package bolt

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"

	"github.com/wfstore/wfstore/backend"
)

// An Update that writes nothing, durable mode: bbolt's Commit writes a
// meta page and freelist and fsyncs even with no dirty pages; Backend.Update
// rolls such a transaction back instead. Measured on the same machine:
//
//	BenchmarkEmptyUpdate/bbolt-commit     2.6 ms/op   (meta + freelist write, fdatasync)
//	BenchmarkEmptyUpdate/backend-update   1.4 µs/op   (rollback, no I/O)
//	BenchmarkEmptyUpdate/bbolt-rollback   1.3 µs/op
func BenchmarkEmptyUpdate(b *testing.B) {
	ctx := context.Background()
	be, err := Open(ctx, filepath.Join(b.TempDir(), "empty.db"))
	require.NoError(b, err)
	defer be.Close()
	b.Run("bbolt-commit", func(b *testing.B) {
		for b.Loop() {
			if err := be.db.Update(func(*bbolt.Tx) error { return nil }); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("backend-update", func(b *testing.B) {
		for b.Loop() {
			if err := be.Update(ctx, func(backend.Tx) error { return nil }); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("bbolt-rollback", func(b *testing.B) {
		for b.Loop() {
			tx, err := be.db.Begin(true)
			if err != nil {
				b.Fatal(err)
			}
			_ = tx.Rollback()
		}
	})
}
