package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/conformance"
	"github.com/wfstore/wfstore/etcd"
	"github.com/wfstore/wfstore/internal/pgscratch"
)

// On etcd, a conform run works under the key prefix
// wfstore-conform/<8 hex digits>/, and each case under that prefix
// followed by 16 hex digits and "/". The run records the process that
// made it under wfstore-conform-runs/<8 hex digits>: a later run on the
// same host deletes the keys of runs whose process is gone (killed
// before it could clean up), never those of running ones.
const (
	etcdScratchRoot = "wfstore-conform/"
	etcdScratchRuns = "wfstore-conform-runs/"
)

// etcdHarness certifies the etcd adapter: each case opens its own Backend
// (its own client) on a fresh prefix of the run's, deleted when the case
// ends. Like the adapter's own suite run, the Backends re-run conflicts
// for up to a minute and wait up to 30 s for a request: the suite proves
// semantics, and its racing cases contend far harder than a deployment.
func etcdHarness(tg conformTarget) (conformance.Harness, error) {
	eps := (&storeFlags{endpoints: tg.server}).endpointList()
	if len(eps) == 0 {
		return conformance.Harness{}, fmt.Errorf("etcd needs endpoints")
	}
	if !strings.HasPrefix(tg.scratch, etcdScratchRoot) {
		return conformance.Harness{}, fmt.Errorf("etcd scratch prefix %q does not begin with %q", tg.scratch, etcdScratchRoot)
	}
	opts := []etcd.Option{etcd.WithBusyTimeout(time.Minute), etcd.WithRequestTimeout(30 * time.Second)}
	if tg.maxTxnOps > 0 {
		opts = append(opts, etcd.WithMaxTxnOps(tg.maxTxnOps))
	}
	return conformance.Harness{Name: "etcd",
		New: func(t testing.TB) string {
			var b [8]byte
			if _, err := rand.Read(b[:]); err != nil {
				t.Fatalf("naming a scratch prefix: %v", err)
			}
			prefix := tg.scratch + hex.EncodeToString(b[:]) + "/"
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				if err := deleteEtcdPrefix(ctx, eps, prefix); err != nil {
					t.Errorf("deleting scratch prefix %s: %v", prefix, err)
				}
			})
			return prefix
		},
		Open: func(ctx context.Context, prefix string) (backend.Backend, error) {
			return etcd.Dial(ctx, eps, append([]etcd.Option{etcd.WithPrefix(prefix)}, opts...)...)
		},
		Verify: func(ctx context.Context, b backend.Backend) error {
			eb, ok := b.(*etcd.Backend)
			if !ok {
				return fmt.Errorf("verify: %T is not a *etcd.Backend", b)
			}
			return eb.Verify(ctx)
		},
	}, nil
}

// newEtcdScratch names a conform run's prefix and records this process as
// its maker, after deleting the prefixes of runs whose process is gone.
func newEtcdScratch(ctx context.Context, eps []string) (string, error) {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	run := hex.EncodeToString(b[:])
	self, err := pgscratch.Self()
	if err != nil {
		return "", err
	}
	cli, err := newEtcdClient(ctx, &storeFlags{endpoints: strings.Join(eps, ",")})
	if err != nil {
		return "", err
	}
	defer cli.Close()
	if _, err := reapEtcdScratch(ctx, cli); err != nil {
		return "", err
	}
	rctx, cancel := context.WithTimeout(ctx, etcd.DefaultRequestTimeout)
	defer cancel()
	if _, err := cli.Put(rctx, etcdScratchRuns+run, self.Comment()); err != nil {
		return "", fmt.Errorf("recording the conform run on etcd %v: %w", eps, err)
	}
	return etcdScratchRoot + run + "/", nil
}

// reapEtcdScratch deletes the scratch keys of conform runs whose process
// this host proves gone, and returns their prefixes.
func reapEtcdScratch(ctx context.Context, cli *clientv3.Client) ([]string, error) {
	rctx, cancel := context.WithTimeout(ctx, etcd.DefaultRequestTimeout)
	resp, err := cli.Get(rctx, etcdScratchRuns, clientv3.WithPrefix())
	cancel()
	if err != nil {
		return nil, fmt.Errorf("reading conform runs: %w", err)
	}
	var reaped []string
	for _, kv := range resp.Kvs {
		p, ok := pgscratch.ParseComment(string(kv.Value))
		if !ok || !p.Gone() {
			continue
		}
		run := strings.TrimPrefix(string(kv.Key), etcdScratchRuns)
		prefix := etcdScratchRoot + run + "/"
		if err := deletePrefixWith(ctx, cli, prefix); err != nil {
			return reaped, err
		}
		dctx, cancel := context.WithTimeout(ctx, etcd.DefaultRequestTimeout)
		_, err := cli.Delete(dctx, string(kv.Key))
		cancel()
		if err != nil {
			return reaped, err
		}
		reaped = append(reaped, prefix)
	}
	return reaped, nil
}

// dropEtcdScratch deletes a conform run's prefix and its record.
func dropEtcdScratch(ctx context.Context, eps []string, prefix string) error {
	run := strings.TrimSuffix(strings.TrimPrefix(prefix, etcdScratchRoot), "/")
	if !strings.HasPrefix(prefix, etcdScratchRoot) || run == "" || strings.Contains(run, "/") {
		return fmt.Errorf("refusing to delete %q: not one conform run's prefix", prefix)
	}
	cli, err := newEtcdClient(ctx, &storeFlags{endpoints: strings.Join(eps, ",")})
	if err != nil {
		return err
	}
	defer cli.Close()
	if err := deletePrefixWith(ctx, cli, prefix); err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, etcd.DefaultRequestTimeout)
	defer cancel()
	_, err = cli.Delete(rctx, etcdScratchRuns+run)
	return err
}

// deleteEtcdPrefix deletes every key under prefix.
func deleteEtcdPrefix(ctx context.Context, eps []string, prefix string) error {
	cli, err := newEtcdClient(ctx, &storeFlags{endpoints: strings.Join(eps, ",")})
	if err != nil {
		return err
	}
	defer cli.Close()
	return deletePrefixWith(ctx, cli, prefix)
}

// deletePrefixWith deletes every key under prefix, 500 at a time: one
// Delete of a case's thousands of keys can outlast the server's request
// timeout on a loaded machine.
func deletePrefixWith(ctx context.Context, cli *clientv3.Client, prefix string) error {
	end := clientv3.GetPrefixRangeEnd(prefix)
	for {
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		resp, err := cli.Get(rctx, prefix, clientv3.WithRange(end), clientv3.WithLimit(500), clientv3.WithKeysOnly())
		if err == nil && len(resp.Kvs) > 0 {
			last := string(resp.Kvs[len(resp.Kvs)-1].Key)
			_, err = cli.Delete(rctx, prefix, clientv3.WithRange(last+"\x00"))
		}
		cancel()
		if err != nil {
			return err
		}
		if len(resp.Kvs) == 0 {
			return nil
		}
	}
}
