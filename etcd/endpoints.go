package etcd

import (
	"context"
	"slices"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// This file keeps a Dial-owned client's requests off members that stop
// answering.
//
// The client spreads its requests over every endpoint, and a member that
// freezes (a stopped process, a partition that drops packets) keeps its
// connection open: every request sent to it waits for the request timeout,
// and an Update or a View that sends several requests almost always sends
// one there, so one frozen member of three stops nearly all work. gRPC's
// keepalive cannot ping more often than every 10 s. So when a request
// times out, the guard asks every member for its status, each within the
// probe timeout, and points the client at the members that answered;
// while any member is left out it asks again every probeInterval and
// points the client back at it once it answers. It never leaves the client
// without an endpoint: when no member answers it changes nothing.

// probeInterval is how often the guard asks the members it left out.
const probeInterval = time.Second

// maxProbeTimeout bounds one status request of the guard.
const maxProbeTimeout = time.Second

type endpointGuard struct {
	cli     *clientv3.Client
	all     []string
	timeout time.Duration
	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}

	mu      sync.Mutex
	current []string // the endpoints the client uses
}

// newEndpointGuard starts a guard for cli over endpoints (nil for a single
// endpoint: there is nothing to choose).
func newEndpointGuard(cli *clientv3.Client, endpoints []string, requestTimeout time.Duration) *endpointGuard {
	if len(endpoints) < 2 {
		return nil
	}
	g := &endpointGuard{
		cli: cli, all: slices.Clone(endpoints), timeout: min(requestTimeout, maxProbeTimeout),
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		current: slices.Clone(endpoints),
	}
	go g.run()
	return g
}

// suspect reports a request that got no answer in time.
func (g *endpointGuard) suspect() {
	if g == nil {
		return
	}
	select {
	case g.kick <- struct{}{}:
	default:
	}
}

// close stops the guard and waits for it.
func (g *endpointGuard) close() {
	if g == nil {
		return
	}
	close(g.stop)
	<-g.done
}

func (g *endpointGuard) run() {
	defer close(g.done)
	t := time.NewTicker(probeInterval)
	defer t.Stop()
	for {
		select {
		case <-g.stop:
			return
		case <-g.kick:
		case <-t.C:
			g.mu.Lock()
			all := len(g.current) == len(g.all)
			g.mu.Unlock()
			if all {
				continue
			}
		}
		g.check()
	}
}

// check asks every member for its status and points the client at those
// that answered, when that changes anything and at least one did.
func (g *endpointGuard) check() {
	ok := make([]bool, len(g.all))
	var wg sync.WaitGroup
	for i, ep := range g.all {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), g.timeout)
			defer cancel()
			go func() {
				select {
				case <-g.stop:
					cancel()
				case <-ctx.Done():
				}
			}()
			_, err := g.cli.Status(ctx, ep)
			ok[i] = err == nil
		})
	}
	wg.Wait()
	var answered []string
	for i, ep := range g.all {
		if ok[i] {
			answered = append(answered, ep)
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(answered) == 0 || slices.Equal(answered, g.current) {
		return
	}
	g.current = answered
	g.cli.SetEndpoints(answered...)
}
