// Package etcdcluster starts etcd clusters in this process or lays them
// out for child processes: the etcd adapter's tests and the dev cluster
// that benchmarks run against use it. It is not part of wfstore's API.
package etcdcluster

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// Member is one member of a cluster: its name, data directory, URLs and
// the cluster's initial membership.
type Member struct {
	Name, Dir, PeerURL, ClientURL, InitialCluster string
}

// Options shape a cluster's members.
type Options struct {
	// Fsync makes members fsync their log (durable). Without it what a
	// member wrote survives a killed process but not a lost machine:
	// tests only.
	Fsync bool
	// Fast shortens heartbeats and the election timeout, for tests that
	// kill members.
	Fast bool
	// MaxTxnOps is the members' --max-txn-ops (16384 when zero).
	MaxTxnOps int
	// LogOutput is where members log ("/dev/null" when empty).
	LogOutput string
}

// Layout lays out an n-member cluster in dir on free loopback ports.
func Layout(dir string, n int) ([]Member, error) {
	ports, err := freePorts(2 * n)
	if err != nil {
		return nil, err
	}
	ms := make([]Member, n)
	var initial []string
	for i := range ms {
		ms[i] = Member{
			Name:      fmt.Sprintf("m%d", i),
			Dir:       filepath.Join(dir, fmt.Sprintf("m%d", i)),
			PeerURL:   fmt.Sprintf("http://127.0.0.1:%d", ports[2*i]),
			ClientURL: fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1]),
		}
		initial = append(initial, ms[i].Name+"="+ms[i].PeerURL)
	}
	for i := range ms {
		ms[i].InitialCluster = strings.Join(initial, ",")
	}
	return ms, nil
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

// Config is the embed configuration of member m.
func Config(m Member, o Options) (*embed.Config, error) {
	cfg := embed.NewConfig()
	cfg.Name = m.Name
	cfg.Dir = m.Dir
	peer, err := url.Parse(m.PeerURL)
	if err != nil {
		return nil, err
	}
	client, err := url.Parse(m.ClientURL)
	if err != nil {
		return nil, err
	}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*peer}, []url.URL{*peer}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*client}, []url.URL{*client}
	cfg.InitialCluster = m.InitialCluster
	cfg.InitialClusterToken = "wfstore-dev"
	cfg.ClusterState = embed.ClusterStateFlagNew
	cfg.LogLevel = "error"
	cfg.LogOutputs = []string{"/dev/null"} // StartEtcd returns what matters; Close logs noise
	if o.LogOutput != "" {
		cfg.LogOutputs = []string{o.LogOutput}
	}
	cfg.UnsafeNoFsync = !o.Fsync
	cfg.MaxTxnOps = 16384
	if o.MaxTxnOps > 0 {
		cfg.MaxTxnOps = uint(o.MaxTxnOps)
	}
	cfg.MaxRequestBytes = 32 << 20
	if o.Fast {
		cfg.TickMs, cfg.ElectionMs = 50, 500
	}
	return cfg, nil
}

// Start starts an n-member cluster in dir, in this process, and waits
// until every member is ready. Close each member when done.
func Start(dir string, n int, o Options) ([]*embed.Etcd, error) {
	ms, err := Layout(dir, n)
	if err != nil {
		return nil, err
	}
	members := make([]*embed.Etcd, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, m := range ms {
		wg.Go(func() {
			cfg, err := Config(m, o)
			if err != nil {
				errs[i] = err
				return
			}
			members[i], errs[i] = embed.StartEtcd(cfg)
		})
	}
	wg.Wait()
	closeAll := func() {
		for _, m := range members {
			if m != nil {
				m.Close()
			}
		}
	}
	for i, err := range errs {
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("member %d: %w", i, err)
		}
	}
	for _, m := range members {
		select {
		case <-m.Server.ReadyNotify():
		case <-time.After(30 * time.Second):
			closeAll()
			return nil, fmt.Errorf("member %s not ready after 30s", m.Config().Name)
		}
	}
	return members, nil
}

// Leader returns the client URL of the members' leader, waiting up to
// 10 s for one, or every member's client URL when none is known.
func Leader(members []*embed.Etcd) []string {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for _, e := range members {
			if e.Server.Leader() == e.Server.MemberID() {
				return []string{e.Config().AdvertiseClientUrls[0].String()}
			}
		}
	}
	return Endpoints(members)
}

// Endpoints returns every member's client URL.
func Endpoints(members []*embed.Etcd) []string {
	var all []string
	for _, e := range members {
		all = append(all, e.Config().AdvertiseClientUrls[0].String())
	}
	return all
}
