package bench

import (
	"context"
	"sync/atomic"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
)

// countEtcdKeys is a gRPC client interceptor that adds the keys each
// successful write request put or deleted to bare for requests made under
// bareContext, to n for all others: one per Put, the Deleted count
// of a DeleteRange, and inside a Txn those of the branch that ran
// (Success when the compares held, else Failure), nested Txns included.
// Keys, not records: the etcd adapter keeps a record and its index
// entries as several keys.
func countEtcdKeys(n, bare *atomic.Int64) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if err := invoker(ctx, method, req, reply, cc, opts...); err != nil {
			return err
		}
		c := n
		if ctx.Value(bareKey{}) != nil {
			c = bare
		}
		switch q := req.(type) {
		case *pb.PutRequest:
			c.Add(1)
		case *pb.DeleteRangeRequest:
			if r, ok := reply.(*pb.DeleteRangeResponse); ok {
				c.Add(r.Deleted)
			}
		case *pb.TxnRequest:
			if r, ok := reply.(*pb.TxnResponse); ok {
				c.Add(txnKeys(q, r))
			}
		}
		return nil
	}
}

// txnKeys counts the keys a committed Txn put or deleted.
func txnKeys(q *pb.TxnRequest, r *pb.TxnResponse) int64 {
	ops := q.Failure
	if r.Succeeded {
		ops = q.Success
	}
	var k int64
	for i, op := range ops {
		var res *pb.ResponseOp
		if i < len(r.Responses) {
			res = r.Responses[i]
		}
		switch {
		case op.GetRequestPut() != nil:
			k++
		case op.GetRequestDeleteRange() != nil:
			k += res.GetResponseDeleteRange().GetDeleted()
		case op.GetRequestTxn() != nil && res.GetResponseTxn() != nil:
			k += txnKeys(op.GetRequestTxn(), res.GetResponseTxn())
		}
	}
	return k
}

type bareKey struct{}

// bareContext marks the bare commit's requests, counted apart.
func bareContext(ctx context.Context) context.Context { return context.WithValue(ctx, bareKey{}, true) }
