package etcd

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/internal/kvlayout"
)

// This file opens stores: Dial for endpoints, Open for a caller's client,
// their options, and the meta keys.
//
//	prefix | 'm' | "store"    "wfstore-etcd"
//	prefix | 'm' | "version"  uint64 big-endian, SchemaVersion

// SchemaVersion is the store layout version this build reads and writes.
// Open migrates a version 1 or 2 store by rewriting its version key (one
// compare-and-set Txn); a store of any other version is refused with a
// *backend.SchemaVersionError.
//
// 3: version 2 plus fields at the end of a value: an activation's join
// fields (WaitFor, OpenWaits, Joins) and a fan-out group's FanIn. Values
// written by version 2 end before them and read as no join, awaited by
// none, owner settlement, so no record is rewritten.
// 2: version 1 plus two fields at the end of a value: an activation's
// attempt timeout and an attempt's handoff holder token. Values written by
// version 1 end before them and read as 0 and "", so no record is
// rewritten; the new version keeps a build that knows only version 1 from
// opening a store whose values it cannot read.
// 1: the first layout.
const SchemaVersion = 3

// oldestMigratableVersion is the oldest version Open migrates.
const oldestMigratableVersion = 1

// DefaultPrefix is the key prefix of a store when WithPrefix is not given.
const DefaultPrefix = "wfstore/"

// DefaultBusyTimeout is how long Update keeps re-running fn after
// conflicts and transient failures unless WithBusyTimeout says otherwise
// (as for the postgres adapter).
const DefaultBusyTimeout = 10 * time.Second

// DefaultRequestTimeout bounds one request to the cluster unless
// WithRequestTimeout says otherwise. A leader election takes about a
// second with etcd's default timing.
const DefaultRequestTimeout = 5 * time.Second

// DefaultKeepAliveTime and DefaultKeepAliveTimeout are Dial's client
// keepalive unless WithKeepAlive says otherwise: a connection with
// requests in flight that has had no answer for DefaultKeepAliveTime is
// pinged, and dropped when the ping gets no answer within
// DefaultKeepAliveTimeout, so that a connection whose member vanished
// without closing it (a partition that drops packets, a frozen process)
// does not stay open forever. gRPC pings at most every 10 s, and etcd
// members refuse pings more frequent than their --grpc-keepalive-min-time
// (5 s by default). Requests stuck on such a member are bounded sooner by
// the request timeout, and Dial's client then stops sending requests to
// a member that does not answer (see Dial).
const (
	DefaultKeepAliveTime    = 10 * time.Second
	DefaultKeepAliveTimeout = 3 * time.Second
)

// DefaultMaxTxnOps is etcd's default --max-txn-ops: the most operations
// (and, separately, compares) one Txn may hold.
const DefaultMaxTxnOps = 128

var storeMarker = []byte("wfstore-etcd")

// Option configures Dial and Open.
type Option func(*config)

type config struct {
	prefix         string
	busyTimeout    time.Duration
	requestTimeout time.Duration
	maxTxnOps      int
	dialTimeout    time.Duration
	keepAlive      time.Duration
	keepAliveWait  time.Duration
	hooks          hooks
}

// WithPrefix sets the key prefix under which the store lives (default
// DefaultPrefix). Several stores may share a cluster under prefixes none of
// which is a prefix of another.
func WithPrefix(p string) Option { return func(c *config) { c.prefix = p } }

// WithBusyTimeout bounds how long one Update keeps re-running fn after
// conflicts and transient failures, counted from the start of Update, on
// top of its ctx (default DefaultBusyTimeout). Then Update fails with an
// error wrapping backend.ErrBusy. Zero or less means: as long as ctx
// allows.
func WithBusyTimeout(d time.Duration) Option {
	return func(c *config) { c.busyTimeout = max(d, 0) }
}

// WithRequestTimeout bounds each request to the cluster (default
// DefaultRequestTimeout): every read, commit and fence request gets its
// own context.WithTimeout of d (within the caller's ctx), so a member that
// stops answering holds one request at most d. A read that times out runs
// the Update's fn again; a commit request that times out may still have
// been applied, and Update resolves its outcome through the commit marker
// (commit.go), never by guessing: it returns nil only when the marker
// shows the commit, and an error wrapping ErrOutcomeUnknown when even the
// fence got no answer in time.
func WithRequestTimeout(d time.Duration) Option { return func(c *config) { c.requestTimeout = d } }

// WithKeepAlive sets Dial's client keepalive (default
// DefaultKeepAliveTime, DefaultKeepAliveTimeout): after d without an
// answer on a connection with requests in flight, the client pings the
// member, and drops the connection when no answer comes within wait; the
// client then sends requests only to the members that answer. gRPC raises
// a d below 10 s to 10 s, and d must not be below the cluster's
// --grpc-keepalive-min-time (5 s by default), or the members close the
// client's connections for pinging too often. d = 0 turns keepalive off. Open uses the caller's client: set its
// DialKeepAliveTime and DialKeepAliveTimeout.
func WithKeepAlive(d, wait time.Duration) Option {
	return func(c *config) { c.keepAlive, c.keepAliveWait = d, wait }
}

// WithMaxTxnOps tells the adapter the cluster's --max-txn-ops (default
// DefaultMaxTxnOps): reads are batched in Txns of at most n gets. A commit
// needs one compare per key and range its transaction read and one
// operation per key it wrote; a transaction too large for the cluster fails
// with etcd's ErrTooManyOps. Run the cluster with --max-txn-ops of a few
// thousand for large prunes and cancellations.
func WithMaxTxnOps(n int) Option { return func(c *config) { c.maxTxnOps = n } }

// WithDialTimeout bounds Dial's first connection (default 5 s).
func WithDialTimeout(d time.Duration) Option { return func(c *config) { c.dialTimeout = d } }

func newConfig(opts []Option) (config, error) {
	c := config{prefix: DefaultPrefix, busyTimeout: DefaultBusyTimeout, requestTimeout: DefaultRequestTimeout,
		maxTxnOps: DefaultMaxTxnOps, dialTimeout: 5 * time.Second,
		keepAlive: DefaultKeepAliveTime, keepAliveWait: DefaultKeepAliveTimeout}
	for _, o := range opts {
		o(&c)
	}
	switch {
	case c.requestTimeout <= 0:
		return c, fmt.Errorf("etcd: request timeout %v is not positive", c.requestTimeout)
	case c.maxTxnOps < 1:
		return c, fmt.Errorf("etcd: max txn ops %d is not positive", c.maxTxnOps)
	case c.keepAlive < 0 || (c.keepAlive > 0 && c.keepAliveWait <= 0):
		return c, fmt.Errorf("etcd: keepalive %v, %v: the time may not be negative, and the timeout must be positive", c.keepAlive, c.keepAliveWait)
	}
	return c, nil
}

// Dial connects to the cluster at endpoints and opens the store (see
// Open). Close closes the connection.
//
// The client Dial makes rides out a member that stops answering: its
// keepalive (WithKeepAlive) drops a dead connection, every request is
// bounded by the request timeout (WithRequestTimeout), and when a request
// times out the Backend asks each endpoint for its status (within the
// request timeout, at most 1 s) and sends requests only to those that
// answer, asking the others again every second and using them again once
// they answer. One frozen member of three then costs the requests in
// flight to it and the probe: a few seconds. (Open leaves the caller's
// client as it is.)
func Dial(ctx context.Context, endpoints []string, opts ...Option) (*Backend, error) {
	c, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("etcd: dial: %w", err)
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:            endpoints,
		DialTimeout:          c.dialTimeout,
		DialKeepAliveTime:    c.keepAlive,
		DialKeepAliveTimeout: c.keepAliveWait,
		MaxCallSendMsgSize:   64 << 20,
		MaxCallRecvMsgSize:   64 << 20,
		Logger:               zap.NewNop(),
		Context:              context.WithoutCancel(ctx),
	})
	if err != nil {
		return nil, fmt.Errorf("etcd: dial %v: %w", endpoints, err)
	}
	b, err := open(ctx, cli, c, true)
	if err != nil {
		_ = cli.Close()
		return nil, err
	}
	b.guard = newEndpointGuard(cli, endpoints, c.requestTimeout)
	return b, nil
}

// Open opens the store under the prefix (WithPrefix) of the cluster cli
// talks to, creating it when no key has the prefix. It first reads, and
// refuses without writing anything a prefix holding keys that are not a
// wfstore store (backend.ErrForeignStore) or a store of another schema
// version (*backend.SchemaVersionError). Concurrent opens of a fresh store
// are safe: the creation is one Txn that applies only if the prefix is
// still empty. Close does not close cli.
func Open(ctx context.Context, cli *clientv3.Client, opts ...Option) (*Backend, error) {
	c, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if cli == nil {
		return nil, errors.New("etcd: Open: nil *clientv3.Client")
	}
	return open(ctx, cli, c, false)
}

func open(ctx context.Context, cli *clientv3.Client, c config, owned bool) (*Backend, error) {
	b := &Backend{cli: cli, kv: clientv3.NewKV(cli), owned: owned, prefix: c.prefix, cfg: c, hooks: c.hooks, gate: newGate(c.prefix)}
	b.slots = newSlotPool(c.prefix)
	if err := b.prepare(ctx); err != nil {
		return nil, fmt.Errorf("etcd: open %q: %w", c.prefix, err)
	}
	return b, nil
}

func (b *Backend) metaKey(name string) string { return b.prefix + string([]byte{tagMeta}) + name }

// prefixEndKey is the first key after every key with the store's prefix
// ("" for the empty prefix: the end of the key space).
func (b *Backend) prefixEndKey() string {
	if b.prefix == "" {
		return "\x00"
	}
	return clientv3.GetPrefixRangeEnd(b.prefix)
}

// inspect reads the meta keys: fresh reports an empty prefix; found is the
// schema version of a store it accepts (SchemaVersion, or an older one
// prepare migrates); rev is the revision read.
func (b *Backend) inspect(ctx context.Context) (fresh bool, found uint64, rev int64, err error) {
	rctx, cancel := b.requestCtx(ctx)
	defer cancel()
	resp, err := b.kv.Txn(rctx).Then(
		clientv3.OpGet(b.metaKey("store")),
		clientv3.OpGet(b.metaKey("version")),
		clientv3.OpGet(b.prefix, clientv3.WithRange(b.prefixEndKey()), clientv3.WithLimit(1), clientv3.WithKeysOnly()),
	).Commit()
	if err != nil {
		return false, 0, 0, err
	}
	first := func(i int) []byte {
		rr := resp.Responses[i].GetResponseRange()
		if rr == nil || len(rr.Kvs) == 0 {
			return nil
		}
		if i == 2 {
			return rr.Kvs[0].Key
		}
		return rr.Kvs[0].Value
	}
	store, version, any := first(0), first(1), first(2)
	switch {
	case store == nil && any == nil:
		return true, 0, resp.Header.Revision, nil
	case store == nil:
		return false, 0, 0, fmt.Errorf("prefix holds key %q but no wfstore store marker: %w", any, backend.ErrForeignStore)
	case string(store) != string(storeMarker):
		return false, 0, 0, fmt.Errorf("store marker is %q, not %q: %w", store, storeMarker, backend.ErrForeignStore)
	case len(version) != 8:
		return false, 0, 0, fmt.Errorf("schema version is %d bytes, not 8: %w", len(version), backend.ErrForeignStore)
	}
	found = binary.BigEndian.Uint64(version)
	if found > SchemaVersion || found < oldestMigratableVersion {
		return false, 0, 0, &backend.SchemaVersionError{Found: int64(found), Supported: SchemaVersion}
	}
	return false, found, resp.Header.Revision, nil
}

// prepare inspects the store and creates it when the prefix is empty, in
// one Txn that applies only while it still is, or migrates an older store
// in one Txn that applies only while its version is still the one read.
func (b *Backend) prepare(ctx context.Context) error {
	version := string(kvlayout.Key(nil).U64(SchemaVersion))
	for range 10 {
		if err := ctx.Err(); err != nil {
			return err
		}
		fresh, found, rev, err := b.inspect(ctx)
		if err != nil || (!fresh && found == SchemaVersion) {
			return err
		}
		var ifs []clientv3.Cmp
		var thens []clientv3.Op
		if fresh {
			ifs = []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(b.prefix), "<", rev+1).WithRange(b.prefixEndKey())}
			thens = []clientv3.Op{clientv3.OpPut(b.metaKey("store"), string(storeMarker)), clientv3.OpPut(b.metaKey("version"), version)}
		} else {
			// Every step from found to SchemaVersion only rewrites the
			// version (see SchemaVersion).
			ifs = []clientv3.Cmp{clientv3.Compare(clientv3.Value(b.metaKey("version")), "=", string(kvlayout.Key(nil).U64(found)))}
			thens = []clientv3.Op{clientv3.OpPut(b.metaKey("version"), version)}
		}
		rctx, cancel := b.requestCtx(ctx)
		resp, err := b.kv.Txn(rctx).If(ifs...).Then(thens...).Commit()
		cancel()
		if err != nil {
			continue // unknown outcome: inspect again
		}
		if resp.Succeeded {
			return nil
		}
	}
	return errors.New("could not create or migrate the store: its prefix kept changing")
}
