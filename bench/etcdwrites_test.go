package bench

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/wfstore/wfstore/internal/testkit/etcdcluster"
)

// startEtcd starts a one-member embedded cluster for the test.
func startEtcd(t *testing.T) []string {
	t.Helper()
	if testing.Short() {
		t.Skip("starts an etcd cluster")
	}
	members, err := etcdcluster.Start(t.TempDir(), 1, etcdcluster.Options{})
	require.NoError(t, err)
	t.Cleanup(func() {
		for _, m := range members {
			m.Close()
		}
	})
	return etcdcluster.Endpoints(members)
}

// TestEtcdKeysWrittenIsExactOnAHandComputedCase writes a known set of keys
// through a client with the counting interceptor: 1 Put + a Txn whose
// Success branch ran (2 puts, a delete of 1 existing key, a nested Txn's
// put) + a Txn whose Failure branch ran (1 put) + a DeleteRange of 2 keys
// = 1 + 4 + 1 + 2 = 8; the branches that did not run, a delete of nothing
// and reads add 0. Requests under bareContext are counted apart.
func TestEtcdKeysWrittenIsExactOnAHandComputedCase(t *testing.T) {
	eps := startEtcd(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var n, bare atomic.Int64
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(countEtcdKeys(&n, &bare))}})
	require.NoError(t, err)
	defer cli.Close()

	_, err = cli.Put(ctx, "k/a", "1")
	require.NoError(t, err)
	r, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.Version("k/a"), ">", 0)).
		Then(clientv3.OpPut("k/b", "1"), clientv3.OpPut("k/c", "1"), clientv3.OpDelete("k/a"),
			clientv3.OpTxn(nil, []clientv3.Op{clientv3.OpPut("k/d", "1")}, nil), clientv3.OpGet("k/b")).
		Else(clientv3.OpPut("k/x", "1"), clientv3.OpPut("k/y", "1")).Commit()
	require.NoError(t, err)
	require.True(t, r.Succeeded)
	r, err = cli.Txn(ctx).If(clientv3.Compare(clientv3.Version("k/a"), ">", 0)).
		Then(clientv3.OpPut("k/x", "1"), clientv3.OpPut("k/y", "1")).
		Else(clientv3.OpPut("k/e", "1")).Commit()
	require.NoError(t, err)
	require.False(t, r.Succeeded)
	_, err = cli.Delete(ctx, "k/b", clientv3.WithRange("k/d"))
	require.NoError(t, err)
	_, err = cli.Delete(ctx, "k/none")
	require.NoError(t, err)
	_, err = cli.Get(ctx, "k/", clientv3.WithPrefix())
	require.NoError(t, err)
	require.Equal(t, int64(8), n.Load())
	require.Zero(t, bare.Load())

	_, err = cli.Put(bareContext(ctx), "k/bare", "1")
	require.NoError(t, err)
	require.Equal(t, int64(1), bare.Load())
	require.Equal(t, int64(8), n.Load())
}

// TestEtcdRowsPerAdmission runs a tiny bench on etcd: every measured row
// reports keys written per operation; the bare commit writes exactly one.
func TestEtcdRowsPerAdmission(t *testing.T) {
	eps := startEtcd(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Config{Targets: []Target{Etcd(eps, 16384)}, N: 20, BatchN: 100, Workers: 2, Rounds: 2,
		Workloads: []string{WBare, WRaw, WSequential, WBatch}, Dir: t.TempDir()})
	require.NoError(t, err)
	require.Len(t, rep.Results, 4)
	for _, x := range rep.Results {
		require.NotNil(t, x.RowsPerOp, x.Workload)
		require.Positive(t, *x.RowsPerOp, x.Workload)
		t.Logf("%s: %.2f keys/op", x.Workload, *x.RowsPerOp)
	}
	require.Equal(t, 1.0, *rep.find("etcd", WBare).RowsPerOp)
	require.GreaterOrEqual(t, *rep.find("etcd", WRaw).RowsPerOp, 10.0)
}
