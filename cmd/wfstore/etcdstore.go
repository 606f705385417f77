package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/etcd"
)

// This file is the etcd row's store-opening code: the checks that read a
// prefix's meta keys without writing, and migrate. Import is in
// etcdimport.go, backup in etcdbackup.go.
//
// The meta keys of a store under prefix P are P|'m'|"store" (the marker
// "wfstore-etcd") and P|'m'|"version" (8 bytes, big-endian); the adapter
// refuses a prefix that holds keys but no marker as not a store. An
// import under way replaces the marker with P|'m'|"import" (see
// etcdimport.go), so that no one opens a half-imported store.

const etcdStoreMarker = "wfstore-etcd"

func etcdMetaKey(prefix, name string) string { return prefix + "m" + name }

// errImportUnfinished: an etcd prefix holds an import that was stopped
// before it completed. No command opens it as a store; running the same
// import again finishes it.
var errImportUnfinished = errors.New("an import into this prefix did not finish")

// newEtcdClient connects to the cluster f names.
func newEtcdClient(ctx context.Context, f *storeFlags) (*clientv3.Client, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:          f.endpointList(),
		DialTimeout:        5 * time.Second,
		MaxCallSendMsgSize: 64 << 20,
		MaxCallRecvMsgSize: 64 << 20,
		Logger:             zap.NewNop(),
		Context:            context.WithoutCancel(ctx),
	})
	if err != nil {
		return nil, fmt.Errorf("connecting to etcd %v: %w", f.endpointList(), err)
	}
	return cli, nil
}

// etcdMeta is what one read of a prefix's meta keys found.
type etcdMeta struct {
	store, version []byte // nil when absent
	imp            []byte // the unfinished import's mark, nil when none
	impRev         int64  // its mod revision
	anyKey         []byte // some key under the prefix, nil when it holds none
	rev            int64  // the revision read
}

func prefixEnd(prefix string) string {
	if prefix == "" {
		return "\x00"
	}
	return clientv3.GetPrefixRangeEnd(prefix)
}

func readEtcdMeta(ctx context.Context, cli *clientv3.Client, prefix string) (etcdMeta, error) {
	rctx, cancel := context.WithTimeout(ctx, etcd.DefaultRequestTimeout)
	defer cancel()
	resp, err := cli.Txn(rctx).Then(
		clientv3.OpGet(etcdMetaKey(prefix, "store")),
		clientv3.OpGet(etcdMetaKey(prefix, "version")),
		clientv3.OpGet(etcdMetaKey(prefix, "import")),
		clientv3.OpGet(prefix, clientv3.WithRange(prefixEnd(prefix)), clientv3.WithLimit(1), clientv3.WithKeysOnly()),
	).Commit()
	if err != nil {
		return etcdMeta{}, err
	}
	var m etcdMeta
	m.rev = resp.Header.Revision
	for i, r := range resp.Responses {
		rr := r.GetResponseRange()
		if rr == nil || len(rr.Kvs) == 0 {
			continue
		}
		kv := rr.Kvs[0]
		switch i {
		case 0:
			m.store = kv.Value
		case 1:
			m.version = kv.Value
		case 2:
			m.imp, m.impRev = kv.Value, kv.ModRevision
		case 3:
			m.anyKey = kv.Key
		}
	}
	return m, nil
}

// importMark is the value of an unfinished import's key.
type importMark struct {
	Digest  string    `json:"digest"`  // the stream's digest
	Records int64     `json:"records"` // the stream's record count
	Started time.Time `json:"started"`
}

// unfinishedImport describes the prefix's unfinished import m.
func unfinishedImport(where string, m etcdMeta) error {
	var mk importMark
	detail := "its mark cannot be read"
	if json.Unmarshal(m.imp, &mk) == nil {
		detail = fmt.Sprintf("started %s, a stream of %d records, digest %s", mk.Started.UTC().Format(time.RFC3339), mk.Records, mk.Digest)
	}
	return fmt.Errorf("%w: %s holds a partial import (%s); no command opens it as a store: run the same \"wfstore import\" again to finish it, or delete every key under the prefix (etcdctl del --prefix) to start over",
		errImportUnfinished, where, detail)
}

// etcdVersion decodes a version key's value (0 when it is not 8 bytes).
func etcdVersion(v []byte) int64 {
	if len(v) != 8 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(v))
}

// checkEtcdStore refuses, reading only, a prefix that holds no key, holds
// an unfinished import, or a store of an older schema version. A prefix
// holding something else is left to the adapter, which refuses it.
func checkEtcdStore(ctx context.Context, f *storeFlags) error {
	cli, err := newEtcdClient(ctx, f)
	if err != nil {
		return err
	}
	defer cli.Close()
	m, err := readEtcdMeta(ctx, cli, f.prefix)
	if err != nil {
		return fmt.Errorf("%s: %w", f.where(), err)
	}
	switch {
	case m.imp != nil:
		return unfinishedImport(f.where(), m)
	case m.anyKey == nil:
		return fmt.Errorf("%w at %s: the prefix holds no key (check --endpoints and --prefix; this command never creates a store)", errNoStore, f.where())
	case m.store != nil:
		return needsMigration(f.where(), etcdVersion(m.version), etcd.SchemaVersion)
	}
	return nil
}

// openEtcd opens (creating or migrating) the store; a prefix with an
// unfinished import is refused with errImportUnfinished.
func openEtcd(ctx context.Context, f *storeFlags) (backend.Backend, error) {
	cli, err := newEtcdClient(ctx, f)
	if err != nil {
		return nil, err
	}
	m, err := readEtcdMeta(ctx, cli, f.prefix)
	if err == nil && m.imp != nil {
		err = unfinishedImport(f.where(), m)
	}
	_ = cli.Close()
	if err != nil {
		return nil, err
	}
	return etcd.Dial(ctx, f.endpointList(), f.etcdOptions()...)
}

func (f *storeFlags) etcdOptions() []etcd.Option {
	return []etcd.Option{etcd.WithPrefix(f.prefix), etcd.WithMaxTxnOps(f.maxTxnOps)}
}

// migrateEtcd reads the store's version; up opens it, which creates or
// migrates it in one compare-and-set transaction.
func migrateEtcd(ctx context.Context, f *storeFlags, up bool) (before, found, supported int64, err error) {
	supported = etcd.SchemaVersion
	cli, err := newEtcdClient(ctx, f)
	if err != nil {
		return 0, 0, supported, err
	}
	defer cli.Close()
	m, err := readEtcdMeta(ctx, cli, f.prefix)
	switch {
	case err != nil:
		return 0, 0, supported, fmt.Errorf("%s: %w", f.where(), err)
	case m.imp != nil:
		return 0, 0, supported, unfinishedImport(f.where(), m)
	case m.store == nil && m.anyKey != nil:
		return 0, 0, supported, fmt.Errorf("%s holds key %q but no wfstore store marker: %w", f.where(), m.anyKey, backend.ErrForeignStore)
	}
	before = etcdVersion(m.version)
	if before > supported {
		return before, before, supported, &backend.SchemaVersionError{Found: before, Supported: supported}
	}
	if !up || before == supported {
		return before, before, supported, nil
	}
	b, err := etcd.Open(ctx, cli, f.etcdOptions()...)
	if err != nil {
		return before, before, supported, err
	}
	return before, before, supported, b.Close()
}

// removeOwnedPrefix deletes every key under the prefix if the key at markKey
// still has mod revision markRev: the import that wrote it owns the
// prefix.
func removeOwnedPrefix(ctx context.Context, cli *clientv3.Client, prefix, markKey string, markRev int64) (bool, error) {
	rctx, cancel := context.WithTimeout(ctx, etcd.DefaultRequestTimeout)
	defer cancel()
	resp, err := cli.Txn(rctx).If(clientv3.Compare(clientv3.ModRevision(markKey), "=", markRev)).
		Then(clientv3.OpDelete(prefix, clientv3.WithRange(prefixEnd(prefix)))).Commit()
	if err != nil {
		return false, err
	}
	return resp.Succeeded, nil
}
