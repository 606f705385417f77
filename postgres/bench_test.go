package postgres_test

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"testing"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/internal/testkit/pgtest"
	"github.com/wfstore/wfstore/postgres"
)

// BenchmarkApplySlices measures one write-only Update (one round trip)
// that expects and replaces n activations and inserts n events, with the
// many-row statements (one per slice, whatever n) and, for comparison, one
// statement per record (see smallSlice). Durability is relaxed so that the commit's WAL flush does
// not drown the statements' cost.
//
//	WFSTORE_POSTGRES_DSN=... go test -run '^$' -bench ApplySlices ./postgres/
func BenchmarkApplySlices(b *testing.B) {
	for _, n := range []int{1, 2, 4, 5, 6, 8, 16, 64} {
		for _, mode := range []string{"many-row", "one-row"} {
			b.Run(fmt.Sprintf("rows=%d/%s", n, mode), func(b *testing.B) {
				opts := []postgres.Option{postgres.WithRelaxedDurability()}
				if mode == "one-row" {
					opts = append(opts, postgres.WithManyRowsFrom(math.MaxInt))
				} else {
					opts = append(opts, postgres.WithManyRowsFrom(2))
				}
				be, _, _ := openFresh(b, opts...)
				acts := make([]backend.Activation, n)
				for i := range acts {
					acts[i] = backend.Activation{
						Key:    backend.ActivationKey{RunID: "run", NodeID: "node", ActivationID: fmt.Sprint("act-", i)},
						Status: backend.ActivationPending, Input: []byte(`{"in":1}`),
						Claims: []backend.ResourceClaim{{Resource: "res", Mode: backend.LeaseRead}},
					}
				}
				apply(b, be, backend.Changes{Insert: backend.Inserts{Runs: runs("run"), Activations: acts}})
				ctx := context.Background()
				seq := int64(0)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					next := make([]backend.Activation, n)
					evs := make([]backend.Event, n)
					for j := range next {
						next[j] = acts[j]
						next[j].Generation++
						seq++
						evs[j] = backend.Event{RunID: "run", Seq: seq, Type: "activation_updated", Payload: []byte(`{"k":1}`)}
					}
					err := be.Update(ctx, func(tx backend.Tx) error {
						return tx.Apply(ctx, backend.Changes{
							Expect:  backend.Expected{Activations: acts},
							Insert:  backend.Inserts{Events: evs},
							Replace: backend.Replaces{Activations: next},
						})
					})
					if err != nil {
						b.Fatal(err)
					}
					acts = next
				}
			})
		}
	}
}

// BenchmarkSignalledCommits measures concurrent write-only Updates (16
// goroutines, one run inserted each, durable commits) without and with
// SignalWork, which adds pg_notify to the commit batch: the server
// serializes the commits of notifying transactions, so this shows what a
// work signal costs a busy store.
//
//	WFSTORE_POSTGRES_DSN=... go test -run '^$' -bench SignalledCommits ./postgres/
func BenchmarkSignalledCommits(b *testing.B) {
	for _, mode := range []string{"plain", "signalled"} {
		b.Run(mode, func(b *testing.B) {
			dsn, schema := pgtest.Schema(b)
			be, err := postgres.Open(ctxT(b), withMaxConns(dsn, 16), postgres.WithSchema(schema))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { be.Close() })
			var n atomic.Int64
			b.SetParallelism(8) // 16 goroutines on 2 cores
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				for pb.Next() {
					id := fmt.Sprint("run-", n.Add(1))
					err := be.Update(ctx, func(tx backend.Tx) error {
						if mode == "signalled" {
							tx.(backend.WorkSignaler).SignalWork()
						}
						return tx.Apply(ctx, insertRuns(id))
					})
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkAttemptReplaces measures the write of a batch handoff step: one
// Update that expects 100 attempts in one Apply and replaces them (same
// Identities, new status) in the next, as the workflow layer does
// ("expected", one many-row UPDATE), against the same Replaces without the
// Expects ("unexpected": the adapter cannot tell that no Identity moves, so
// it writes one UPDATE per attempt). Durability is relaxed so that the
// statements' cost shows.
//
//	WFSTORE_POSTGRES_DSN=... go test -run '^$' -bench AttemptReplaces ./postgres/
func BenchmarkAttemptReplaces(b *testing.B) {
	const n = 100
	for _, mode := range []string{"expected", "unexpected"} {
		b.Run(mode, func(b *testing.B) {
			be, _, _ := openFresh(b, postgres.WithRelaxedDurability())
			atts := make([]backend.Attempt, n)
			for i := range atts {
				k := backend.ActivationKey{RunID: "run", NodeID: "node", ActivationID: fmt.Sprint("act-", i)}
				atts[i] = backend.Attempt{Key: backend.AttemptKey{ActivationKey: k, Attempt: 1}, Identity: fmt.Sprint("ident-", i),
					Status: backend.AttemptPrepared, SideEffect: backend.Mutating, Intent: []byte(`{"i":1}`), IntentChecksum: "sum",
					Handoff: backend.HandoffPending, PreparedMS: int64(i + 1)}
			}
			apply(b, be, backend.Changes{Insert: backend.Inserts{Attempts: atts}})
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				next := make([]backend.Attempt, n)
				for j := range next {
					next[j] = atts[j]
					next[j].AdmittedMS++
				}
				err := be.Update(ctx, func(tx backend.Tx) error {
					if mode == "expected" {
						if err := tx.Apply(ctx, backend.Changes{Expect: backend.Expected{Attempts: atts}}); err != nil {
							return err
						}
					}
					return tx.Apply(ctx, backend.Changes{Replace: backend.Replaces{Attempts: next}})
				})
				if err != nil {
					b.Fatal(err)
				}
				atts = next
			}
		})
	}
}
