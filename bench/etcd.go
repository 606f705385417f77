package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/wfstore/wfstore/etcd"
	"github.com/wfstore/wfstore/workflow"
)

// Etcd is the etcd adapter over the cluster at endpoints, each store under
// a fresh key prefix that Close deletes. maxTxnOps is the cluster's
// --max-txn-ops (etcd.WithMaxTxnOps): a batch admission of 100 writes
// several hundred keys in one Txn, so the batch workloads need a cluster
// started with a few thousand.
//
// The bare commit goes through the adapter's own client: one Txn with one
// Put under the store's prefix (etcd commits every Txn durably, through
// raft and the members' fsync). The growth workload is not run: its
// history of 100k to 1M attempts would take the cluster past etcd's
// default 2 GB quota of revisions.
func Etcd(endpoints []string, maxTxnOps int) Target {
	return Target{
		Name:       "etcd",
		BareNote:   "one Txn of one Put through the adapter's own client (raft commit, fsync on the members)",
		WritesNote: "rows written: keys put and deleted by successful requests (a Txn's branch that ran), counted by a gRPC interceptor on the client the adapter is given (keys, not records: a record's index entries are keys too); WAL bytes: not measured",
		GrowthNote: "not run on etcd: the history would take the cluster past its default storage quota",
		open: func(ctx context.Context, _ string, _ int) (*Env, error) {
			return openEtcd(ctx, endpoints, maxTxnOps)
		},
	}
}

func openEtcd(ctx context.Context, endpoints []string, maxTxnOps int) (*Env, error) {
	// The client logs every retried request (a member that has not applied
	// a revision yet refuses a read of it, and the adapter reads again);
	// the adapter counts them, the report must not drown in them.
	// Every key the store and the bare commit put or delete is counted
	// (countEtcdKeys), the bare commit's apart by the context it runs in.
	var rows, bareRows atomic.Int64
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Context: ctx, Logger: zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(countEtcdKeys(&rows, &bareRows))}})
	if err != nil {
		return nil, fmt.Errorf("bench: etcd %v: %w", endpoints, err)
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	prefix := fmt.Sprintf("wfbench/%d/%s/", os.Getpid(), hex.EncodeToString(rnd[:]))
	b, err := etcd.Open(ctx, cli, etcd.WithPrefix(prefix), etcd.WithMaxTxnOps(maxTxnOps))
	if err != nil {
		cli.Close()
		return nil, err
	}
	payload := string(make([]byte, 32))
	bare := prefix + "bare/"
	return &Env{
		Backend:  b,
		Store:    workflow.New(b),
		rows:     &rows,
		bareRows: &bareRows,
		bare: func(ctx context.Context, i int64) error {
			_, err := cli.Txn(bareContext(ctx)).Then(clientv3.OpPut(bare+strconv.FormatInt(i, 10), payload)).Commit()
			return err
		},
		close: func() error {
			err := b.Close()
			dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, derr := cli.Delete(dctx, prefix, clientv3.WithPrefix())
			return errors.Join(err, derr, cli.Close())
		},
	}, nil
}
