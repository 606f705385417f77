package bolt

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/wfstore/wfstore/backend"
)

// BenchmarkConcurrentCommits is the bare commit rate of the Backend, fsync
// on (the default mode): each op is one Update inserting one event, from 1
// or 8 goroutines, without and with group commit.
func BenchmarkConcurrentCommits(b *testing.B) {
	for _, mode := range []string{"solo", "group"} {
		for _, writers := range []int{1, 8} {
			b.Run(fmt.Sprintf("%s/writers=%d", mode, writers), func(b *testing.B) {
				var opts []Option
				if mode == "solo" {
					opts = append(opts, WithoutGroupCommit())
				}
				bk, err := Open(context.Background(), filepath.Join(b.TempDir(), "c.db"), opts...)
				if err != nil {
					b.Fatal(err)
				}
				defer bk.Close()
				benchCommits(b, bk, writers)
			})
		}
	}
}

func benchCommits(b *testing.B, bk backend.Backend, writers int) {
	ctx := context.Background()
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for w := range writers {
		wg.Go(func() {
			run := fmt.Sprintf("run-%d", w)
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				ev := backend.Event{RunID: run, Seq: i, Type: "t", Payload: []byte(`{}`), CreatedMS: 1_700_000_000_000 + i}
				if err := bk.Update(ctx, func(tx backend.Tx) error {
					return tx.Apply(ctx, backend.Changes{Insert: backend.Inserts{Events: []backend.Event{ev}}})
				}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
}
