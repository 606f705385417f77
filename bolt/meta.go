package bolt

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/internal/kvlayout"
)

// This file is the meta bucket: what marks a bbolt file as a wfstore store,
// and its schema version.
//
//	meta/store    "wfstore-bolt"
//	meta/version  uint64 big-endian, SchemaVersion

// SchemaVersion is the store layout version this build reads and writes
// (the sqlite and postgres adapters' constant of the same name means the
// same for their stores). Opening a version 2, 3 or 4 store through a
// writable handle migrates it in one transaction; a store of any other
// version (or an older store on a read-only handle) is refused with a
// *backend.SchemaVersionError and left untouched.
//
// 5: version 4 plus fields at the end of a value: an activation's join
// fields (WaitFor, OpenWaits, Joins) and a fan-out group's FanIn. Values
// written by version 4 end before them and read as no join, awaited by
// none, owner settlement, so the migration rewrites no record.
// 4: version 3 plus two fields at the end of a value: an activation's
// attempt timeout and an attempt's handoff holder token. Values written
// by version 3 end before them and read as 0 and "", so the migration
// rewrites no record, only the version.
// 3: version 2 plus the run status index (ix_run_status).
// 2: a bucket per run in bucket runs, keyed tag | rest; cross-run indexes
// in ix. (1, never shipped: a bucket per kind.)
const SchemaVersion = 5

// oldestMigratableVersion is the oldest version Open migrates; every
// version from it to SchemaVersion-1 is migrated step by step.
const oldestMigratableVersion = 2

var (
	bucketMeta  = []byte("meta")
	metaStore   = []byte("store")
	metaVersion = []byte("version")
	storeMarker = []byte("wfstore-bolt")
)

// storeState is what a look at a bbolt file found.
type storeState int

const (
	stateFresh storeState = iota + 1 // no buckets at all: create the layout
	stateReady                       // a wfstore store of SchemaVersion
	stateOld                         // a wfstore store of an older version Open migrates
)

// inspect classifies the store tx reads without writing anything, and
// returns its schema version (0 for a fresh store). It fails with
// ErrForeignStore for a file with buckets that are not a wfstore layout,
// with a *backend.SchemaVersionError for a version it neither reads nor
// migrates, and with a plain error for a wfstore store that is missing a
// bucket.
func inspect(tx *bbolt.Tx) (storeState, uint64, error) {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		var first []byte
		_ = tx.ForEach(func(name []byte, _ *bbolt.Bucket) error {
			first = append([]byte(nil), name...)
			return errStop
		})
		if first != nil {
			return 0, 0, fmt.Errorf("bolt: file has bucket %q but no wfstore meta bucket: %w", first, backend.ErrForeignStore)
		}
		if k, _ := tx.Cursor().First(); k != nil {
			return 0, 0, fmt.Errorf("bolt: file has top-level keys that are not buckets: %w", backend.ErrForeignStore)
		}
		return stateFresh, 0, nil
	}
	if m := meta.Get(metaStore); !bytes.Equal(m, storeMarker) {
		return 0, 0, fmt.Errorf("bolt: meta bucket's store marker is %q, not %q: %w", m, storeMarker, backend.ErrForeignStore)
	}
	v := meta.Get(metaVersion)
	if len(v) != 8 {
		return 0, 0, fmt.Errorf("bolt: meta version is %d bytes, not 8: %w", len(v), backend.ErrForeignStore)
	}
	found := binary.BigEndian.Uint64(v)
	if found > SchemaVersion || found < oldestMigratableVersion {
		return 0, 0, &backend.SchemaVersionError{Found: int64(found), Supported: SchemaVersion}
	}
	for _, name := range allBuckets() {
		if tx.Bucket(name) == nil {
			return 0, 0, fmt.Errorf("bolt: wfstore store (schema version %d) is missing bucket %q", found, name)
		}
	}
	if found < SchemaVersion {
		return stateOld, found, nil
	}
	return stateReady, found, nil
}

// migrate moves a store of version from to SchemaVersion in tx, step by
// step, then writes the version.
func migrate(tx *bbolt.Tx, from uint64) error {
	if from <= 2 {
		if err := addRunStatusIndex(tx); err != nil {
			return err
		}
	}
	// 3 -> 4 and 4 -> 5 rewrite nothing: a value of the earlier version
	// ends before the fields the next appends and reads them as zero.
	if err := tx.Bucket(bucketMeta).Put(metaVersion, kvlayout.Key(nil).U64(SchemaVersion)); err != nil {
		return fmt.Errorf("bolt: write meta: %w", err)
	}
	return nil
}

// addRunStatusIndex is the 2 -> 3 step: it writes the run status index
// entry of every run.
func addRunStatusIndex(tx *bbolt.Tx) error {
	top, ix := tx.Bucket(bucketRuns), tx.Bucket(bucketIndex)
	ix.FillPercent = fillPercent
	recKey := []byte{layout.Run.Tag}
	return top.ForEachBucket(func(name []byte) error {
		raw := top.Bucket(name).Get(recKey)
		if raw == nil {
			return nil // the run's other records exist, its record does not
		}
		run, err := layout.Run.Decode(raw)
		if err != nil {
			return fmt.Errorf("bolt: migrate run bucket %x: %w", name, err)
		}
		e, _ := layout.RunStatus.Entry(run)
		return ix.Put(layout.RunStatus.Stored(e), []byte{})
	})
}

// create writes the layout into a fresh store, in tx.
func create(tx *bbolt.Tx) error {
	for _, name := range allBuckets() {
		if _, err := tx.CreateBucket(name); err != nil {
			return fmt.Errorf("bolt: create bucket %q: %w", name, err)
		}
	}
	meta := tx.Bucket(bucketMeta)
	if err := meta.Put(metaStore, storeMarker); err != nil {
		return fmt.Errorf("bolt: write meta: %w", err)
	}
	if err := meta.Put(metaVersion, kvlayout.Key(nil).U64(SchemaVersion)); err != nil {
		return fmt.Errorf("bolt: write meta: %w", err)
	}
	return nil
}

// prepare makes db ready: it inspects the store in a read transaction and,
// only when the store is fresh or of an older version it migrates, creates
// or migrates the layout in one Update (checking again inside it, in case
// another Backend over the same handle got there first).
func prepare(db *bbolt.DB) error {
	var state storeState
	var found uint64
	if err := db.View(func(tx *bbolt.Tx) (err error) {
		state, found, err = inspect(tx)
		return err
	}); err != nil {
		return err
	}
	switch {
	case state == stateReady:
		return nil
	case db.IsReadOnly() && state == stateOld:
		return fmt.Errorf("bolt: the store needs a migration and the handle is read-only: %w",
			&backend.SchemaVersionError{Found: int64(found), Supported: SchemaVersion})
	case db.IsReadOnly():
		return fmt.Errorf("bolt: store is empty and the handle is read-only, so it cannot be initialized")
	}
	return db.Update(func(tx *bbolt.Tx) error {
		state, found, err := inspect(tx)
		switch {
		case err != nil || state == stateReady:
			return err
		case state == stateOld:
			return migrate(tx, found)
		}
		return create(tx)
	})
}
