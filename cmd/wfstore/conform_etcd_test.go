package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/wfstore/wfstore/internal/pgscratch"
)

// keysUnder lists the keys under prefix on the cluster eps names.
func keysUnder(t *testing.T, eps, prefix string) []string {
	t.Helper()
	cli, err := newEtcdClient(context.Background(), &storeFlags{endpoints: eps})
	require.NoError(t, err)
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	require.NoError(t, err)
	var keys []string
	for _, kv := range resp.Kvs {
		keys = append(keys, string(kv.Key))
	}
	return keys
}

// conform certifies etcd like the other adapters: every case on its own
// key prefix, and nothing of the run left on the cluster afterwards.
func TestConformCertifiesEtcd(t *testing.T) {
	t.Parallel()
	eps := etcdEndpointsOps(t, 8192)
	bin := wfstoreBinary(t, "")
	stdout, stderr, code := runCLI(t, bin, nil, "conform", "--backend", "etcd", "--endpoints", eps,
		"--max-txn-ops", "8192", "--run", "contract/insert", "--json")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	r := decodeReport(t, stdout)
	assert.Equal(t, "etcd", r.Backend)
	assert.Equal(t, "etcd", r.Adapter.Name)
	assert.Equal(t, "durable", r.Durability)
	assert.Regexp(t, `^wfstore-conform/[0-9a-f]{8}/$`, r.Scratch)
	require.NotEmpty(t, r.Cases)
	names := map[string]bool{}
	for _, c := range r.Cases {
		names[c.Name] = true
		assert.Equal(t, resultPass, c.Result, "%s: %s", c.Name, c.Output)
	}
	assert.Equal(t, len(r.Cases), r.Summary.Passed)
	assert.True(t, names["contract/racing_inserts_across_processes_admit_exactly_one"], "cases: %v", names)
	assert.Empty(t, keysUnder(t, eps, r.Scratch), "scratch keys left behind")
	run := strings.TrimSuffix(strings.TrimPrefix(r.Scratch, etcdScratchRoot), "/")
	assert.Empty(t, keysUnder(t, eps, etcdScratchRuns+run), "the run's record left behind")
}

// A conform run deletes the scratch keys of conform runs of this host
// whose process is gone, and keeps those of live processes.
func TestConformDeletesTheScratchKeysOfGoneProcesses(t *testing.T) {
	t.Parallel()
	eps := etcdEndpointsOps(t, 8192)
	dead, err := pgscratch.ExitedProcess()
	require.NoError(t, err)
	self, err := pgscratch.Self()
	require.NoError(t, err)
	cli, err := newEtcdClient(context.Background(), &storeFlags{endpoints: eps})
	require.NoError(t, err)
	defer cli.Close()
	ctx := context.Background()
	runs := map[string]string{"deadbeef": dead.Comment(), "1ive1ive": self.Comment()}
	for run, comment := range runs {
		_, err := cli.Put(ctx, etcdScratchRuns+run, comment)
		require.NoError(t, err)
		_, err = cli.Put(ctx, etcdScratchRoot+run+"/0123456789abcdef/k", "v")
		require.NoError(t, err)
	}
	t.Cleanup(func() {
		for run := range runs {
			_ = dropEtcdScratch(context.Background(), strings.Split(eps, ","), etcdScratchRoot+run+"/")
		}
	})
	bin := wfstoreBinary(t, "")
	_, stderr, code := runCLI(t, bin, nil, "conform", "--backend", "etcd", "--endpoints", eps,
		"--max-txn-ops", "8192", "--run", "contract/insert_twice", "--json")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	assert.Empty(t, keysUnder(t, eps, etcdScratchRoot+"deadbeef/"))
	assert.Empty(t, keysUnder(t, eps, etcdScratchRuns+"deadbeef"))
	assert.Equal(t, []string{etcdScratchRoot + "1ive1ive/0123456789abcdef/k"}, keysUnder(t, eps, etcdScratchRoot+"1ive1ive/"))
	assert.Equal(t, []string{etcdScratchRuns + "1ive1ive"}, keysUnder(t, eps, etcdScratchRuns+"1ive1ive"))
}
