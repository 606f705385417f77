package etcd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/wfstore/wfstore/backend"
)

// This file is the advisory claims (backend.Claimer): one key per claimed
// key, prefix | 'c' | claim key, whose value is the claim's expiry (20
// decimal digits of Unix nanoseconds, so that etcd's bytewise value order
// is the time order), a NUL and the holder. No Update reads this space,
// so claims never conflict with transactions.
//
// Claim sends, per key, a nested Txn that puts the claim if the key is
// absent (CreateRevision 0), else if its value sorts before now's stamp
// (expired), else reads it; so a key is taken by exactly one of
// concurrent claimers, whichever etcd applies first. A key the holder
// already holds is extended in a second round trip, by a put compared on
// the ModRevision read in the first. Release reads the keys and deletes
// those of the holder, each compared on the ModRevision read. Both send
// one Txn per maxTxnOps-2 keys (each nested Txn counts against the
// cluster's --max-txn-ops on every level).
//
// Expiry is by the wall clocks of the machines running the Backends
// (keep them synchronized, as NTP does): a skew only moves when a claim
// lapses, which costs speed, never exactly-once. The keys are attached to
// a lease of the Backend's that outlives every claim put under it by at
// least a second, so a claim nobody releases disappears a little after it
// expires, even when its process died; Close revokes it.

var _ backend.Claimer = (*Backend)(nil)

const (
	maxClaimKeyBytes    = 512
	maxClaimHolderBytes = 128
)

// claimKey returns the etcd key of claim key k.
func (b *Backend) claimKey(k string) string { return b.prefix + string([]byte{tagClaim}) + k }

// claimStamp is t as a claim value's expiry prefix.
func claimStamp(t time.Time) string { return fmt.Sprintf("%020d", t.UnixNano()) }

// claimHolder returns the holder a claim value names.
func claimHolder(v []byte) string {
	i := bytes.IndexByte(v, 0)
	if i < 0 {
		return ""
	}
	return string(v[i+1:])
}

// claimLease is the lease a Backend attaches its claims to: granted for
// twice the longest claim ttl plus two seconds, and reused while it
// outlives a new claim by a second.
type claimLease struct {
	mu    sync.Mutex
	id    clientv3.LeaseID // 0: none
	until time.Time        // when it expires at the earliest
}

// claimLeaseFor returns a lease that lasts at least a second past exp.
func (b *Backend) claimLeaseFor(ctx context.Context, exp time.Time, ttl time.Duration) (clientv3.LeaseID, error) {
	l := &b.claimLease
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.id != 0 && !l.until.Before(exp.Add(time.Second)) {
		return l.id, nil
	}
	secs := int64((2*ttl+time.Second-1)/time.Second) + 2
	sent := time.Now()
	rctx, cancel := b.requestCtx(ctx)
	g, err := b.cli.Grant(rctx, secs)
	cancel()
	if err != nil {
		return 0, err
	}
	l.id, l.until = g.ID, sent.Add(time.Duration(g.TTL)*time.Second)
	return g.ID, nil
}

// dropClaimLease forgets lease id (etcd no longer knows it).
func (b *Backend) dropClaimLease(id clientv3.LeaseID) {
	l := &b.claimLease
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.id == id {
		l.id = 0
	}
}

// closeClaimLease revokes the claim lease, releasing every claim put
// under it (Close).
func (b *Backend) closeClaimLease() {
	l := &b.claimLease
	l.mu.Lock()
	id := l.id
	l.id = 0
	l.mu.Unlock()
	if id == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.cfg.requestTimeout)
	defer cancel()
	_, _ = b.cli.Revoke(ctx, id)
}

// claimChunk is how many keys one claim Txn carries: etcd counts a nested
// Txn's operations against what its parent left of --max-txn-ops.
func (b *Backend) claimChunk() int { return max(b.cfg.maxTxnOps-2, 1) }

// Claim implements backend.Claimer: one Txn per claimChunk keys, and one
// more per chunk of keys holder already held (their extension).
func (b *Backend) Claim(ctx context.Context, holder string, keys []string, ttl time.Duration) ([]bool, error) {
	if err := checkClaim(holder, keys); err != nil {
		return nil, err
	}
	if ttl <= 0 {
		return nil, fmt.Errorf("etcd: claim ttl %v is not positive", ttl)
	}
	out := make([]bool, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	if err := b.enter(ctx, "claim"); err != nil {
		return nil, err
	}
	defer b.inflight.Done()
	uniq := slices.Clone(keys)
	slices.Sort(uniq)
	uniq = slices.Compact(uniq)
	held := make(map[string]bool, len(uniq))
	mine := map[string]int64{} // keys holder holds already: ModRevision
	for chunk := range slices.Chunk(uniq, b.claimChunk()) {
		err := b.withClaimLease(ctx, ttl, func(lease clientv3.LeaseID, now time.Time) error {
			val := claimStamp(now.Add(ttl)) + "\x00" + holder
			nowS := claimStamp(now)
			ops := make([]clientv3.Op, len(chunk))
			for i, k := range chunk {
				ek := b.claimKey(k)
				put := clientv3.OpPut(ek, val, clientv3.WithLease(lease))
				ops[i] = clientv3.OpTxn(
					[]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(ek), "=", 0)},
					[]clientv3.Op{put},
					[]clientv3.Op{clientv3.OpTxn(
						[]clientv3.Cmp{clientv3.Compare(clientv3.Value(ek), "<", nowS)},
						[]clientv3.Op{put},
						[]clientv3.Op{clientv3.OpGet(ek)})})
			}
			resp, err := b.claimTxn(ctx, ops)
			if err != nil {
				return err
			}
			for i, r := range resp.Responses {
				outer := r.GetResponseTxn()
				if outer.GetSucceeded() {
					held[chunk[i]] = true
					continue
				}
				inner := outer.GetResponses()[0].GetResponseTxn()
				if inner.GetSucceeded() {
					held[chunk[i]] = true
					continue
				}
				if kvs := inner.GetResponses()[0].GetResponseRange().GetKvs(); len(kvs) > 0 && claimHolder(kvs[0].Value) == holder {
					mine[chunk[i]] = kvs[0].ModRevision
				}
			}
			return nil
		})
		if err != nil {
			return nil, claimErr(ctx, "claim", err)
		}
	}
	if len(mine) > 0 {
		ext := make([]string, 0, len(mine))
		for k := range mine {
			ext = append(ext, k)
		}
		slices.Sort(ext)
		for chunk := range slices.Chunk(ext, b.claimChunk()) {
			err := b.withClaimLease(ctx, ttl, func(lease clientv3.LeaseID, now time.Time) error {
				val := claimStamp(now.Add(ttl)) + "\x00" + holder
				ops := make([]clientv3.Op, len(chunk))
				for i, k := range chunk {
					ek := b.claimKey(k)
					ops[i] = clientv3.OpTxn(
						[]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(ek), "=", mine[k])},
						[]clientv3.Op{clientv3.OpPut(ek, val, clientv3.WithLease(lease))}, nil)
				}
				resp, err := b.claimTxn(ctx, ops)
				if err != nil {
					return err
				}
				for i, r := range resp.Responses {
					held[chunk[i]] = r.GetResponseTxn().GetSucceeded()
				}
				return nil
			})
			if err != nil {
				return nil, claimErr(ctx, "claim", err)
			}
		}
	}
	for i, k := range keys {
		out[i] = held[k]
	}
	return out, nil
}

// withClaimLease runs send with a claim lease that outlives a claim of
// ttl from now, granting a new one and sending again once when etcd no
// longer knows the lease.
func (b *Backend) withClaimLease(ctx context.Context, ttl time.Duration, send func(clientv3.LeaseID, time.Time) error) error {
	for try := 0; ; try++ {
		now := time.Now()
		lease, err := b.claimLeaseFor(ctx, now.Add(ttl), ttl)
		if err != nil {
			return err
		}
		err = send(lease, now)
		if try == 0 && (errors.Is(err, rpctypes.ErrLeaseNotFound) || rpctypes.ErrorDesc(err) == rpctypes.ErrorDesc(rpctypes.ErrLeaseNotFound)) {
			b.dropClaimLease(lease)
			continue
		}
		return err
	}
}

// claimTxn sends ops in one Txn without compares.
func (b *Backend) claimTxn(ctx context.Context, ops []clientv3.Op) (*clientv3.TxnResponse, error) {
	rctx, cancel := b.requestCtx(ctx)
	defer cancel()
	return b.kv.Txn(rctx).Then(ops...).Commit()
}

// Release implements backend.Claimer: one read-only Txn per maxTxnOps
// keys, then one Txn per claimChunk of holder's keys, deleting each only
// if it is unchanged since that read.
func (b *Backend) Release(ctx context.Context, holder string, keys []string) error {
	if err := checkClaim(holder, keys); err != nil {
		return err
	}
	if len(keys) == 0 {
		return nil
	}
	if err := b.enter(ctx, "release"); err != nil {
		return err
	}
	defer b.inflight.Done()
	uniq := slices.Clone(keys)
	slices.Sort(uniq)
	uniq = slices.Compact(uniq)
	type found struct {
		key string
		mod int64
	}
	var mine []found
	for chunk := range slices.Chunk(uniq, max(b.cfg.maxTxnOps, 1)) {
		ops := make([]clientv3.Op, len(chunk))
		for i, k := range chunk {
			ops[i] = clientv3.OpGet(b.claimKey(k))
		}
		resp, err := b.claimTxn(ctx, ops)
		if err != nil {
			return claimErr(ctx, "release", err)
		}
		for _, r := range resp.Responses {
			if kvs := r.GetResponseRange().GetKvs(); len(kvs) > 0 && claimHolder(kvs[0].Value) == holder {
				mine = append(mine, found{key: string(kvs[0].Key), mod: kvs[0].ModRevision})
			}
		}
	}
	for chunk := range slices.Chunk(mine, b.claimChunk()) {
		ops := make([]clientv3.Op, len(chunk))
		for i, f := range chunk {
			ops[i] = clientv3.OpTxn(
				[]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(f.key), "=", f.mod)},
				[]clientv3.Op{clientv3.OpDelete(f.key)}, nil)
		}
		if _, err := b.claimTxn(ctx, ops); err != nil {
			return claimErr(ctx, "release", err)
		}
	}
	return nil
}

func checkClaim(holder string, keys []string) error {
	if holder == "" || len(holder) > maxClaimHolderBytes || strings.IndexByte(holder, 0) >= 0 {
		return errors.New("etcd: claim holder must be 1 to 128 bytes without NUL")
	}
	for _, k := range keys {
		if k == "" || len(k) > maxClaimKeyBytes || strings.IndexByte(k, 0) >= 0 {
			return errors.New("etcd: claim key must be 1 to 512 bytes without NUL")
		}
	}
	return nil
}

func claimErr(ctx context.Context, op string, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("etcd: %s: %w", op, cerr)
	}
	return fmt.Errorf("etcd: %s: %w", op, err)
}
