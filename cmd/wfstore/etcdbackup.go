package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/proto"

	"github.com/wfstore/wfstore/etcd"
	"github.com/wfstore/wfstore/internal/backupfile"
)

// errBadSnapshot: an etcd snapshot file failed its checks.
var errBadSnapshot = errors.New("not a complete etcd snapshot holding the store")

// backupEtcd writes the cluster's snapshot (clientv3 Maintenance.Snapshot:
// one member's whole database at one revision, consistent, taken while
// the cluster keeps working) to the new file to, all or nothing like the
// file backends' backups: into a temporary file beside it, fsynced,
// checked (the snapshot's SHA-256 trailer, then its database read-only:
// the store's marker and schema version under --prefix, and no
// unfinished import), and only then given the name to. The snapshot holds
// every key of the cluster, not only the store's; restore it with
// "etcdutl snapshot restore".
func backupEtcd(ctx context.Context, f *storeFlags, to string) (backupResult, error) {
	if err := checkEtcdStore(ctx, f); err != nil {
		return backupResult{}, err
	}
	abs, err := filepath.Abs(to)
	if err != nil {
		return backupResult{}, err
	}
	tmp, file, err := backupfile.Create(abs)
	if err != nil {
		return backupResult{}, err
	}
	published := false
	defer func() {
		if !published {
			backupfile.Remove(tmp)
		}
	}()
	err = func() error {
		defer file.Close()
		cli, err := newEtcdClient(ctx, f)
		if err != nil {
			return err
		}
		defer cli.Close()
		rc, err := cli.Snapshot(ctx)
		if err != nil {
			return fmt.Errorf("%s: snapshot: %w", f.where(), err)
		}
		defer rc.Close()
		if _, err := io.Copy(file, rc); err != nil {
			return fmt.Errorf("%s: snapshot: %w", f.where(), err)
		}
		if err := file.Sync(); err != nil {
			return err
		}
		return file.Close()
	}()
	if err != nil {
		return backupResult{}, err
	}
	sum, err := checkEtcdSnapshot(tmp, f.prefix)
	if err != nil {
		return backupResult{}, fmt.Errorf("the copy failed its checks, nothing was written to %s: %w", to, err)
	}
	if err := backupfile.Publish(tmp, abs); err != nil {
		return backupResult{}, err
	}
	published = true
	return backupResult{summary: sum.String()}, nil
}

// snapshotSummary is what checkEtcdSnapshot found.
type snapshotSummary struct {
	keys    int   // keys under the prefix
	version int64 // the store's schema version
	rev     int64 // the newest revision in the snapshot
}

func (s snapshotSummary) String() string {
	return fmt.Sprintf("an etcd snapshot of the whole cluster at revision %d, its SHA-256 checked; the store holds %d keys at schema version %d; restore it with etcdutl snapshot restore",
		s.rev, s.keys, s.version)
}

// checkEtcdSnapshot checks the snapshot file at path: its trailing
// SHA-256 of the database before it, then the database, read-only: the
// newest value of every key under prefix (etcd's "key" bucket maps
// revisions to key-values) must hold the store's marker, its schema
// version, and no unfinished import.
func checkEtcdSnapshot(path, prefix string) (snapshotSummary, error) {
	var sum snapshotSummary
	fh, err := os.Open(path)
	if err != nil {
		return sum, err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return sum, err
	}
	if fi.Size()%512 != sha256.Size {
		return sum, fmt.Errorf("%w: %d bytes, not a database followed by its SHA-256", errBadSnapshot, fi.Size())
	}
	h := sha256.New()
	if _, err := io.CopyN(h, fh, fi.Size()-sha256.Size); err != nil {
		return sum, err
	}
	want := make([]byte, sha256.Size)
	if _, err := io.ReadFull(fh, want); err != nil {
		return sum, err
	}
	if !bytes.Equal(h.Sum(nil), want) {
		return sum, fmt.Errorf("%w: the SHA-256 does not match the database", errBadSnapshot)
	}
	db, err := bbolt.Open(path, 0, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return sum, fmt.Errorf("%w: %v", errBadSnapshot, err)
	}
	defer db.Close()
	latest := map[string][]byte{}
	err = db.View(func(tx *bbolt.Tx) error {
		bk := tx.Bucket([]byte("key"))
		if bk == nil {
			return fmt.Errorf("%w: no key bucket", errBadSnapshot)
		}
		// Keys are revisions (8 bytes main, '_', 8 bytes sub, and 't'
		// for a deletion), in revision order.
		return bk.ForEach(func(k, v []byte) error {
			var kv mvccpb.KeyValue
			if err := proto.Unmarshal(v, &kv); err != nil {
				return fmt.Errorf("%w: revision %x: %v", errBadSnapshot, k, err)
			}
			sum.rev = max(sum.rev, kv.ModRevision)
			if !strings.HasPrefix(string(kv.Key), prefix) {
				return nil
			}
			if len(k) > 17 && k[17] == 't' {
				delete(latest, string(kv.Key))
			} else {
				latest[string(kv.Key)] = kv.Value
			}
			return nil
		})
	})
	if err != nil {
		return sum, err
	}
	if _, ok := latest[etcdMetaKey(prefix, "import")]; ok {
		return sum, fmt.Errorf("%w: the prefix holds an unfinished import", errBadSnapshot)
	}
	if string(latest[etcdMetaKey(prefix, "store")]) != etcdStoreMarker {
		return sum, fmt.Errorf("%w: no store marker under prefix %q", errBadSnapshot, prefix)
	}
	sum.version = etcdVersion(latest[etcdMetaKey(prefix, "version")])
	if sum.version != etcd.SchemaVersion {
		return sum, fmt.Errorf("%w: schema version %d, not %d", errBadSnapshot, sum.version, etcd.SchemaVersion)
	}
	sum.keys = len(latest)
	return sum, nil
}
