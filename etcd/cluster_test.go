package etcd_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/wfstore/wfstore/conformance"
	"github.com/wfstore/wfstore/etcd"
)

// The tests run on an embedded 3-member cluster started by TestMain in
// this process (free loopback ports, a temp dir), or on the cluster at
// WFSTORE_ETCD_ENDPOINTS (comma-separated) when it is set. Each test gets
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

// leaderFirst returns the client URL of the members' leader, waiting up
// to 10 s for one, or every member's when none is known.
func leaderFirst(members []*embed.Etcd) []string {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for _, e := range members {
			if e.Server.Leader() == e.Server.MemberID() {
				return []string{e.Config().AdvertiseClientUrls[0].String()}
			}
		}
	}
	var all []string
	for _, e := range members {
		all = append(all, e.Config().AdvertiseClientUrls[0].String())
	}
	return all
}

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
	members, err := startCluster(dir, clusterSize())
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the embedded etcd cluster:", err)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	for _, e := range members {
		testEndpoints = append(testEndpoints, e.Config().AdvertiseClientUrls[0].String())
	}
	suiteEndpoints = leaderFirst(members)
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

// freePorts returns n free loopback TCP ports.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	ports := make([]int, n)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports, nil
}

// memberSpec is one member of a test cluster.
type memberSpec struct {
	Name, Dir, PeerURL, ClientURL, InitialCluster string
}

// clusterSpecs lays out an n-member cluster in dir on free ports.
func clusterSpecs(dir string, n int) ([]memberSpec, error) {
	ports, err := freePorts(2 * n)
	if err != nil {
		return nil, err
	}
	specs := make([]memberSpec, n)
	var initial []string
	for i := range specs {
		specs[i] = memberSpec{
			Name:      fmt.Sprintf("m%d", i),
			Dir:       filepath.Join(dir, fmt.Sprintf("m%d", i)),
			PeerURL:   fmt.Sprintf("http://127.0.0.1:%d", ports[2*i]),
			ClientURL: fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1]),
		}
		initial = append(initial, specs[i].Name+"="+specs[i].PeerURL)
	}
	for i := range specs {
		specs[i].InitialCluster = strings.Join(initial, ",")
	}
	return specs, nil
}

// memberConfig is the embed configuration of one member. Members run
// without fsync (tests only: what a SIGKILL of a member process leaves is
// still in the page cache), with room for the suite's large transactions.
// fast shortens heartbeats and the election timeout (the leader-kill test:
// a member process is gone, not just slow, so elections may be quick).
func memberConfig(s memberSpec, fast bool) (*embed.Config, error) {
	cfg := embed.NewConfig()
	cfg.Name = s.Name
	cfg.Dir = s.Dir
	peer, err := url.Parse(s.PeerURL)
	if err != nil {
		return nil, err
	}
	client, err := url.Parse(s.ClientURL)
	if err != nil {
		return nil, err
	}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*peer}, []url.URL{*peer}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*client}, []url.URL{*client}
	cfg.InitialCluster = s.InitialCluster
	cfg.InitialClusterToken = "wfstore-test"
	cfg.ClusterState = embed.ClusterStateFlagNew
	cfg.LogLevel = "error"
	cfg.LogOutputs = []string{"/dev/null"} // StartEtcd returns what matters; Close logs noise
	cfg.UnsafeNoFsync = true
	cfg.MaxTxnOps = 16384
	cfg.MaxRequestBytes = 32 << 20
	if fast {
		cfg.TickMs, cfg.ElectionMs = 50, 500
	}
	return cfg, nil
}

// startCluster starts an n-member cluster in this process and waits until
// every member is ready.
func startCluster(dir string, n int) ([]*embed.Etcd, error) {
	specs, err := clusterSpecs(dir, n)
	if err != nil {
		return nil, err
	}
	members := make([]*embed.Etcd, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, s := range specs {
		wg.Go(func() {
			cfg, err := memberConfig(s, false)
			if err != nil {
				errs[i] = err
				return
			}
			members[i], errs[i] = embed.StartEtcd(cfg)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			for _, m := range members {
				if m != nil {
					m.Close()
				}
			}
			return nil, fmt.Errorf("member %d: %w", i, err)
		}
	}
	for _, m := range members {
		select {
		case <-m.Server.ReadyNotify():
		case <-time.After(30 * time.Second):
			for _, m := range members {
				m.Close()
			}
			return nil, fmt.Errorf("member %s not ready after 30s", m.Config().Name)
		}
	}
	return members, nil
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
