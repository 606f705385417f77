package etcd_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/wfstore/wfstore/conformance"
	"github.com/wfstore/wfstore/etcd"
	"github.com/wfstore/wfstore/internal/testkit/etcdcluster"
)

// The tests run on an embedded 3-member cluster started by TestMain in
// this process (free loopback ports, a temp dir; in a child process built
// without the race detector when this binary has it, see startExternal),
// or on the cluster at WFSTORE_ETCD_ENDPOINTS (comma-separated) when it is
// set. Each test gets
// a fresh key prefix, deleted at its end.

const envEndpoints = "WFSTORE_ETCD_ENDPOINTS"

// testEndpoints are the client URLs of the cluster the tests use.
var testEndpoints []string

// suiteEndpoints are the endpoints the conformance suite's Backends dial:
// on the embedded cluster, only the member that led it when it started. A
// client spreads its requests over its endpoints, and a follower forwards
// each write and linearizable read to the leader, a hop that costs the
// suite's long sequential cases more than a 2-core CI machine gives them;
// the members still replicate every commit. (Failover across endpoints is
// what the leader-kill test exercises.)
var suiteEndpoints []string

// childMain, when set by a test file's init, runs instead of the tests in
// a child process it recognises (returning its exit code and true).
var childMains []func() (int, bool)

func TestMain(m *testing.M) {
	flag.Parse()
	for _, cm := range childMains {
		if code, ok := cm(); ok {
			os.Exit(code)
		}
	}
	if conformance.IsChild() {
		os.Exit(m.Run()) // a conformance child gets its endpoints in the locator
	}
	// The cases wait on the cluster's round trips, not on the CPU: run more
	// of them at once than GOMAXPROCS unless -test.parallel says otherwise.
	if f := flag.Lookup("test.parallel"); f != nil && !flagSet("test.parallel") {
		_ = f.Value.Set("8")
	}
	if env := os.Getenv(envEndpoints); env != "" {
		testEndpoints = strings.Split(env, ",")
		suiteEndpoints = testEndpoints
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "wfstore-etcd-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if raceBuild {
		eps, stop, err := startExternal(dir, clusterSize())
		if err != nil {
			fmt.Fprintln(os.Stderr, "starting the etcd cluster:", err)
			_ = os.RemoveAll(dir)
			os.Exit(1)
		}
		testEndpoints, suiteEndpoints = eps, eps[:1]
		code := m.Run()
		stop()
		_ = os.RemoveAll(dir)
		os.Exit(code)
	}
	members, err := etcdcluster.Start(dir, clusterSize(), etcdcluster.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the embedded etcd cluster:", err)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	testEndpoints = etcdcluster.Endpoints(members)
	suiteEndpoints = etcdcluster.Leader(members)
	code := m.Run()
	for _, e := range members {
		e.Close()
	}
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// flagSet reports whether the command line set the named flag.
func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// newPrefix returns a fresh key prefix, whose keys are deleted when t
// ends.
func newPrefix(t testing.TB) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	p := "wfstore-test/" + hex.EncodeToString(b[:]) + "/"
	t.Cleanup(func() {
		cli := newClient(t)
		// A case that wrote thousands of keys deletes them in pages: one
		// Delete of all of them can outlast the server's request timeout
		// on a loaded machine.
		var err error
		for try := 0; try < 5; try++ {
			if err = deletePrefix(cli, p); err == nil {
				return
			}
			time.Sleep(time.Duration(try+1) * 200 * time.Millisecond)
		}
		t.Errorf("deleting test prefix %q: %v", p, err)
	})
	return p
}

// deletePrefix deletes every key with prefix p, 500 at a time.
func deletePrefix(cli *clientv3.Client, p string) error {
	end := clientv3.GetPrefixRangeEnd(p)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		resp, err := cli.Get(ctx, p, clientv3.WithRange(end), clientv3.WithLimit(500), clientv3.WithKeysOnly())
		if err == nil && len(resp.Kvs) > 0 {
			last := string(resp.Kvs[len(resp.Kvs)-1].Key)
			_, err = cli.Delete(ctx, p, clientv3.WithRange(last+"\x00"))
		}
		cancel()
		if err != nil || len(resp.Kvs) == 0 {
			return err
		}
	}
}

// newClient returns a client of the test cluster, closed when t ends.
func newClient(t testing.TB) *clientv3.Client {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: testEndpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
		MaxCallSendMsgSize: 64 << 20, MaxCallRecvMsgSize: 64 << 20,
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// locator names a store on the test cluster: endpoints|prefix.
func locator(prefix string) string { return strings.Join(testEndpoints, ",") + "|" + prefix }

// suiteLocator names a store for the conformance suite (suiteEndpoints).
func suiteLocator(prefix string) string { return strings.Join(suiteEndpoints, ",") + "|" + prefix }

// openLocator opens the store a locator names.
func openLocator(ctx context.Context, loc string, opts ...etcd.Option) (*etcd.Backend, error) {
	eps, prefix, ok := strings.Cut(loc, "|")
	if !ok {
		return nil, fmt.Errorf("bad locator %q", loc)
	}
	return etcd.Dial(ctx, strings.Split(eps, ","), append([]etcd.Option{etcd.WithPrefix(prefix)}, opts...)...)
}

// ctxT returns a context bounded for one test.
func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// openFresh opens a Backend over a fresh prefix, closed at cleanup.
func openFresh(t testing.TB, opts ...etcd.Option) (*etcd.Backend, string) {
	t.Helper()
	p := newPrefix(t)
	b, err := openLocator(ctxT(t), locator(p), opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	return b, p
}

// clusterSize is the number of members of the embedded cluster: 3, or
// WFSTORE_ETCD_MEMBERS.
func clusterSize() int {
	var n int
	if _, err := fmt.Sscan(os.Getenv("WFSTORE_ETCD_MEMBERS"), &n); err == nil && n > 0 {
		return n
	}
	return 3
}

// Raw access to the test cluster, for corruption tests.

func withPrefix() []clientv3.OpOption { return []clientv3.OpOption{clientv3.WithPrefix()} }

func put(t *testing.T, k, v string) {
	t.Helper()
	_, err := newClient(t).Put(ctxT(t), k, v)
	require.NoError(t, err)
}

func del(t *testing.T, k string) {
	t.Helper()
	resp, err := newClient(t).Delete(ctxT(t), k)
	require.NoError(t, err)
	require.Equal(t, int64(1), resp.Deleted, "deleted %q", k)
}

func get(t *testing.T, k string) string {
	t.Helper()
	resp, err := newClient(t).Get(ctxT(t), k)
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1, "key %q", k)
	return string(resp.Kvs[0].Value)
}
