package bolt

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"

	"github.com/wfstore/wfstore/backend"
)

// The bytes on disk are SchemaVersion's: a store holding one record of
// every kind (and a released lease) has exactly the buckets, keys and
// values of testdata/store-v2.golden, which the adapter wrote before the
// contract v2 rewrite of Apply. A change to the layout or encoding shows
// here; it needs a new SchemaVersion.
func TestStoreBytesAreSchemaVersion2(t *testing.T) {
	t.Parallel()
	require.Equal(t, 2, SchemaVersion, "a new schema version needs a new golden file")
	path := filepath.Join(t.TempDir(), "g.db")
	b, err := Open(context.Background(), path, WithRelaxedDurability())
	require.NoError(t, err)
	run, lnk, act, grp, att, ls, sch, ev := fullRecords("g-\x00", []byte(`{"a":[1,2]}`))
	released := ls
	released.Key.Resource, released.ReleasedMS = "other", 77
	apply(t, b, backend.Changes{Insert: backend.Inserts{
		Runs: []backend.Run{run}, Links: []backend.RunLink{lnk}, Activations: []backend.Activation{act},
		Groups: []backend.FanOutGroup{grp}, Attempts: []backend.Attempt{att}, Leases: []backend.Lease{ls, released},
		Schedules: []backend.RetrySchedule{sch}, Events: []backend.Event{ev},
	}})
	require.NoError(t, b.Close())
	want, err := os.ReadFile(filepath.Join("testdata", "store-v2.golden"))
	require.NoError(t, err)
	require.Equal(t, string(want), dumpStore(t, path))
}

// dumpStore renders every bucket, nested bucket, key and value of a bbolt
// file in key order, one line each, values in hex: the bytes on disk a
// format test compares.
func dumpStore(t *testing.T, path string) string {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true})
	require.NoError(t, err)
	defer db.Close()
	var b strings.Builder
	var walk func(prefix string, bk *bbolt.Bucket)
	walk = func(prefix string, bk *bbolt.Bucket) {
		c := bk.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if v == nil {
				fmt.Fprintf(&b, "%s%x/\n", prefix, k)
				walk(prefix+"  ", bk.Bucket(k))
				continue
			}
			fmt.Fprintf(&b, "%s%x = %x\n", prefix, k, v)
		}
	}
	require.NoError(t, db.View(func(tx *bbolt.Tx) error {
		return tx.ForEach(func(name []byte, bk *bbolt.Bucket) error {
			fmt.Fprintf(&b, "%s/\n", name)
			walk("  ", bk)
			return nil
		})
	}))
	return b.String()
}
