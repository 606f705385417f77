package etcd_test

import (
	"context"
	"fmt"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/wfstore/wfstore/backend"
)

// BenchmarkUpdate measures one Update that loads a run and inserts an
// event: a snapshot read and a commit Txn.
func BenchmarkUpdate(b *testing.B) {
	be, _ := openFresh(b)
	ctx := context.Background()
	if err := be.Update(ctx, func(tx backend.Tx) error {
		return tx.Apply(ctx, backend.Changes{Insert: backend.Inserts{Runs: []backend.Run{{ID: "r"}}}})
	}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		err := be.Update(ctx, func(tx backend.Tx) error {
			if _, err := backend.GetRun(ctx, tx, "r"); err != nil {
				return err
			}
			return tx.Apply(ctx, backend.Changes{Insert: backend.Inserts{Events: []backend.Event{{RunID: "r", Seq: int64(i + 1), Type: "t", CreatedMS: 1}}}})
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkView measures one View with a Load and a scan.
func BenchmarkView(b *testing.B) {
	be, _ := openFresh(b)
	ctx := context.Background()
	for i := range 10 {
		if err := be.Update(ctx, func(tx backend.Tx) error {
			return tx.Apply(ctx, backend.Changes{Insert: backend.Inserts{Runs: []backend.Run{{ID: fmt.Sprint("r", i)}}}})
		}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range b.N {
		err := be.View(ctx, func(r backend.ReadTx) error {
			if _, err := backend.GetRun(ctx, r, "r1"); err != nil {
				return err
			}
			_, err := r.Runs(ctx, backend.RunQuery{Limit: 5})
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBareCommit measures the cluster's ceiling for the adapter: one
// Txn with one Put, as the bench package's bare commits are measured.
func BenchmarkBareCommit(b *testing.B) {
	cli := newClient(b)
	p := newPrefix(b)
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		if _, err := cli.Txn(ctx).Then(clientv3.OpPut(p+"bare", fmt.Sprint(i))).Commit(); err != nil {
			b.Fatal(err)
		}
	}
}
