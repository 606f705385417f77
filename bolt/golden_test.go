package bolt

import (
	"context"
	"encoding/hex"
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
// values of testdata/store-v5.golden, which is store-v4.golden with the
// activation's join fields and the group's FanIn appended to their values
// and the new version; store-v4.golden is store-v3.golden (itself
// store-v2.golden, what the adapter wrote before the contract v2 rewrite
// of Apply, plus the run status index entries) with the activation's
// attempt timeout and the attempt's handoff token appended. A change to
// the layout or encoding shows here; it needs a new SchemaVersion.
func TestStoreBytesAreSchemaVersion5(t *testing.T) {
	t.Parallel()
	require.Equal(t, 5, SchemaVersion, "a new schema version needs a new golden file")
	require.Equal(t, readGolden(t, "store-v5.golden"), dumpStore(t, goldenStore(t)))
}

// A version 4 store, rebuilt byte for byte from store-v4.golden, is
// refused by a read-only handle and migrated on Open by writing only the
// new version: its activation reads back as no join, awaited by none, and
// its group as owner settlement; a Replace stores the new fields.
func TestVersionFourStoreMigratesToFiveReadingNoJoinAndNoFanIn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	v4 := readGolden(t, "store-v4.golden")
	path := filepath.Join(t.TempDir(), "v4.db")
	loadDump(t, path, v4)
	require.Equal(t, v4, dumpStore(t, path), "the rebuilt file is the version 4 golden")

	ro, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true})
	require.NoError(t, err)
	_, err = OpenDB(ctx, ro)
	var sv *backend.SchemaVersionError
	require.ErrorAs(t, err, &sv)
	require.Equal(t, backend.SchemaVersionError{Found: 4, Supported: SchemaVersion}, *sv)
	require.NoError(t, ro.Close())
	require.Equal(t, v4, dumpStore(t, path))

	b, err := Open(ctx, path, WithRelaxedDurability())
	require.NoError(t, err)
	require.NoError(t, b.Verify(ctx))
	_, _, act, grp, _, _, _, _ := fullRecords("g-\x00", []byte(`{"a":[1,2]}`))
	full, fullGrp := act, grp
	act.WaitFor, act.OpenWaits, act.Joins, grp.FanIn = nil, 0, nil, false
	view(t, b, func(ctx context.Context, r backend.ReadTx) {
		f, err := r.Load(ctx, backend.Lookup{Activations: []backend.ActivationKey{act.Key}, Groups: []backend.ActivationKey{grp.Controller}})
		require.NoError(t, err)
		require.Equal(t, act, f.Activations[act.Key])
		require.Equal(t, grp, f.Groups[grp.Controller])
	})
	require.NoError(t, b.Close())
	require.Equal(t, withVersion(t, v4, SchemaVersion), dumpStore(t, path), "the migration rewrote only the version")

	b, err = Open(ctx, path, WithRelaxedDurability())
	require.NoError(t, err)
	defer b.Close()
	apply(t, b, backend.Changes{
		Expect:  backend.Expected{Activations: []backend.Activation{act}},
		Replace: backend.Replaces{Activations: []backend.Activation{full}, Groups: []backend.FanOutGroup{fullGrp}},
	})
	view(t, b, func(ctx context.Context, r backend.ReadTx) {
		f, err := r.Load(ctx, backend.Lookup{Activations: []backend.ActivationKey{act.Key}, Groups: []backend.ActivationKey{grp.Controller}})
		require.NoError(t, err)
		require.Equal(t, full, f.Activations[act.Key])
		require.Equal(t, fullGrp, f.Groups[grp.Controller])
	})
	require.NoError(t, b.Verify(ctx))
}

// withVersion returns a dumpStore text with its meta version set to v.
func withVersion(t *testing.T, dump string, v uint64) string {
	t.Helper()
	const key = "  76657273696f6e = " // "version"
	i := strings.Index(dump, key)
	require.GreaterOrEqual(t, i, 0, "the dump has a meta version")
	i += len(key)
	return dump[:i] + fmt.Sprintf("%016x", v) + dump[i+16:]
}

func readGolden(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return string(b)
}

// goldenStore writes the golden records into a fresh store and returns
// its path.
func goldenStore(t *testing.T) string {
	t.Helper()
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
	return path
}

// A version 2 store, rebuilt byte for byte from store-v2.golden, is
// migrated on Open to exactly what version 3 wrote for the same records
// (the step to version 4 rewrites no record), and its indexes verify.
func TestVersionTwoStoreMigratesToTheGoldenVersionThreeAndOnToFour(t *testing.T) {
	t.Parallel()
	v2 := readGolden(t, "store-v2.golden")
	path := filepath.Join(t.TempDir(), "v2.db")
	loadDump(t, path, v2)
	require.Equal(t, v2, dumpStore(t, path), "the rebuilt file is the version 2 golden")

	// A read-only handle cannot migrate: refused, the file untouched.
	ro, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true})
	require.NoError(t, err)
	_, err = OpenDB(context.Background(), ro)
	require.ErrorIs(t, err, backend.ErrSchemaVersion)
	require.NoError(t, ro.Close())
	require.Equal(t, v2, dumpStore(t, path))

	b, err := Open(context.Background(), path, WithRelaxedDurability())
	require.NoError(t, err)
	require.NoError(t, b.Verify(context.Background()))
	var running []backend.Run
	require.NoError(t, b.View(context.Background(), func(r backend.ReadTx) (err error) {
		running, err = r.Runs(context.Background(), backend.RunQuery{Status: backend.RunRepairRequired, Limit: 10})
		return err
	}))
	require.Len(t, running, 1, "the migrated index serves the status scan")
	require.NoError(t, b.Close())
	require.Equal(t, withVersion(t, readGolden(t, "store-v3.golden"), SchemaVersion), dumpStore(t, path))
}

// A version 3 store, rebuilt byte for byte from store-v3.golden, is
// refused by a read-only handle and migrated on Open by writing only the
// new version: every record reads back as version 3 wrote it, with no
// attempt timeout and no handoff token. An Expect of such a record passes
// although its current encoding differs from the stored bytes, and a
// Replace stores the new fields.
func TestVersionThreeStoreMigratesToFourReadingNoTimeoutAndNoToken(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	v3 := readGolden(t, "store-v3.golden")
	path := filepath.Join(t.TempDir(), "v3.db")
	loadDump(t, path, v3)
	require.Equal(t, v3, dumpStore(t, path), "the rebuilt file is the version 3 golden")

	ro, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true})
	require.NoError(t, err)
	_, err = OpenDB(ctx, ro)
	var sv *backend.SchemaVersionError
	require.ErrorAs(t, err, &sv)
	require.Equal(t, backend.SchemaVersionError{Found: 3, Supported: SchemaVersion}, *sv)
	require.NoError(t, ro.Close())
	require.Equal(t, v3, dumpStore(t, path))

	b, err := Open(ctx, path, WithRelaxedDurability())
	require.NoError(t, err)
	require.NoError(t, b.Verify(ctx))
	run, lnk, act, grp, att, ls, sch, ev := fullRecords("g-\x00", []byte(`{"a":[1,2]}`))
	act.AttemptTimeoutMS, att.HandoffToken = 0, ""
	act.WaitFor, act.OpenWaits, act.Joins, grp.FanIn = nil, 0, nil, false
	released := ls
	released.Key.Resource, released.ReleasedMS = "other", 77
	view(t, b, func(ctx context.Context, r backend.ReadTx) {
		f, err := r.Load(ctx, backend.Lookup{
			Runs: []string{run.ID}, Links: []string{lnk.ChildRunID}, Activations: []backend.ActivationKey{act.Key},
			Groups: []backend.ActivationKey{grp.Controller}, Attempts: []backend.AttemptKey{att.Key},
			Identities: []string{att.Identity}, Leases: []backend.LeaseKey{ls.Key, released.Key}, Schedules: []backend.ActivationKey{sch.Key},
		})
		require.NoError(t, err)
		require.Equal(t, run, f.Runs[run.ID])
		require.Equal(t, lnk, f.Links[lnk.ChildRunID])
		require.Equal(t, act, f.Activations[act.Key])
		require.Equal(t, grp, f.Groups[grp.Controller])
		require.Equal(t, att, f.Attempts[att.Key])
		require.Equal(t, att, f.Identities[att.Identity])
		require.Equal(t, ls, f.Leases[ls.Key])
		require.Equal(t, released, f.Leases[released.Key])
		require.Equal(t, sch, f.Schedules[sch.Key])
		evs, err := r.Events(ctx, backend.EventQuery{RunID: ev.RunID, Limit: 10})
		require.NoError(t, err)
		require.Equal(t, []backend.Event{ev}, evs)
	})
	require.NoError(t, b.Close())
	require.Equal(t, withVersion(t, v3, SchemaVersion), dumpStore(t, path), "the migration rewrote only the version")

	b, err = Open(ctx, path, WithRelaxedDurability())
	require.NoError(t, err)
	defer b.Close()
	act2, att2 := act, att
	act2.AttemptTimeoutMS, att2.HandoffToken = 30_000, "00112233445566778899aabbccddeeff"
	act2.WaitFor, act2.OpenWaits, act2.Joins = []backend.NodeRef{{NodeID: "w", ActivationID: "x"}}, 1, []backend.NodeRef{}
	apply(t, b, backend.Changes{
		Expect:  backend.Expected{Activations: []backend.Activation{act}, Attempts: []backend.Attempt{att}},
		Replace: backend.Replaces{Activations: []backend.Activation{act2}, Attempts: []backend.Attempt{att2}},
	})
	view(t, b, func(ctx context.Context, r backend.ReadTx) {
		f, err := r.Load(ctx, backend.Lookup{Activations: []backend.ActivationKey{act.Key}, Attempts: []backend.AttemptKey{att.Key}})
		require.NoError(t, err)
		require.Equal(t, act2, f.Activations[act.Key])
		require.Equal(t, att2, f.Attempts[att.Key])
	})
	require.NoError(t, b.Verify(ctx))
}

// loadDump writes the buckets, keys and values of a dumpStore text into a
// new bbolt file at path.
func loadDump(t *testing.T, path, dump string) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, nil)
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.Update(func(tx *bbolt.Tx) error {
		var stack []*bbolt.Bucket // stack[d] is the bucket at depth d
		for _, line := range strings.Split(strings.TrimSuffix(dump, "\n"), "\n") {
			trimmed := strings.TrimLeft(line, " ")
			depth := (len(line) - len(trimmed)) / 2
			stack = stack[:depth]
			if name, ok := strings.CutSuffix(trimmed, "/"); ok {
				var bk *bbolt.Bucket
				var err error
				if depth == 0 {
					bk, err = tx.CreateBucket([]byte(name))
				} else {
					bk, err = stack[depth-1].CreateBucket(unhex(t, name))
				}
				if err != nil {
					return err
				}
				stack = append(stack, bk)
				continue
			}
			k, v, ok := strings.Cut(trimmed, " = ")
			require.True(t, ok, "dump line %q", line)
			if err := stack[depth-1].Put(unhex(t, k), unhex(t, v)); err != nil {
				return err
			}
		}
		return nil
	}))
}

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	require.NoError(t, err)
	return b
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
