package bolt

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/wfstore/wfstore/internal/benchdata"
	"github.com/wfstore/wfstore/workflow"
)

// BenchmarkBatchProbe measures, in one process and interleaved rounds, what
// a batch admission on this adapter costs against the bare durable commit:
// the bare commit (one bbolt Update putting one small key, on a file of its
// own opened with the options Open uses, fsync on), and the Store's batch
// Dispatch (batches of 100) over a freshly seeded store. It only measures
// (WFSTORE_PROBE=N admissions per round, 2000 when unset):
//
//	WFSTORE_PROBE=10000 go test -count=1 -run '^$' -bench BatchProbe -benchtime 1x ./bolt/
//
// Each round also times a hand-written probe (probeHand) of the same writes
// over the same seeded store: what a batch of 100 writes through the Store,
// put by hand into bbolt with no workflow logic, so that store÷probe says
// what the Store adds to bbolt's own cost and probe÷bare what these writes
// can reach at best.
//
// WFSTORE_PROBE_CLUSTERED=1 adds a round of the probe with its identity
// entries keyed by run first, to measure what such a layout would save.
// WFSTORE_PROBE_ONLY=store (or =probe) runs only the Store's (or the
// probe's) rounds, for a profile. The ratios are reported as the
// benchmark's metrics, with the process CPU per admission.
func BenchmarkBatchProbe(b *testing.B) {
	n, _ := strconv.Atoi(os.Getenv("WFSTORE_PROBE"))
	if n <= 0 {
		n = 2000
	}
	for range b.N {
		batchProbe(b, n)
	}
}

func batchProbe(t *testing.B, n int) {
	n = (n + benchdata.PerRun - 1) / benchdata.PerRun * benchdata.PerRun
	ctx := context.Background()
	rounds := 3
	only := os.Getenv("WFSTORE_PROBE_ONLY")
	var bare, store, hand, handClustered [2]time.Duration // wall, process CPU
	clustered := os.Getenv("WFSTORE_PROBE_CLUSTERED") != ""
	storeAllocs = [2]uint64{}
	add := func(acc *[2]time.Duration, d [2]time.Duration) { acc[0] += d[0]; acc[1] += d[1] }
	for r := 0; r < rounds; r++ {
		if only == "" {
			add(&bare, probeBare(t, t.TempDir(), n))
		}
		if only == "" || only == "store" {
			add(&store, probeStore(t, ctx, t.TempDir(), n))
		}
		if only == "" || only == "probe" {
			add(&hand, probeHand(t, ctx, t.TempDir(), n, false))
		}
		if clustered {
			add(&handClustered, probeHand(t, ctx, t.TempDir(), n, true))
		}
	}
	if clustered {
		t.Logf("hand-written probe, identity entries clustered by run: admissions/s %.0f (%.2f× the probe), process CPU %.0f µs/admission",
			float64(n*rounds)/handClustered[0].Seconds(), hand[0].Seconds()/handClustered[0].Seconds(), float64(handClustered[1].Microseconds())/float64(n*rounds))
	}
	rate := func(d [2]time.Duration) float64 { return float64(n*rounds) / d[0].Seconds() }
	cpu := func(d [2]time.Duration) float64 { return float64(d[1].Microseconds()) / float64(n*rounds) }
	if only == "" {
		t.Logf("bare commits/s %.0f, process CPU %.0f µs/commit", rate(bare), cpu(bare))
	}
	if only == "" || only == "store" {
		t.Logf("Store batch admissions/s %.0f (%.2f× bare), process CPU %.0f µs/admission", rate(store), rate(store)/rate(bare), cpu(store))
		t.Logf("Store batch heap allocations per admission: %.0f objects, %.0f bytes",
			float64(storeAllocs[0])/float64(n*rounds), float64(storeAllocs[1])/float64(n*rounds))
		t.ReportMetric(cpu(store), "store-cpu-µs/admission")
		t.ReportMetric(float64(storeAllocs[0])/float64(n*rounds), "store-allocs/admission")
	}
	if only == "" || only == "probe" {
		t.Logf("hand-written probe admissions/s %.0f (%.2f× bare), process CPU %.0f µs/admission", rate(hand), rate(hand)/rate(bare), cpu(hand))
		t.ReportMetric(cpu(hand), "probe-cpu-µs/admission")
	}
	if only == "" {
		t.Logf("Store ÷ probe %.2f", rate(store)/rate(hand))
		t.ReportMetric(rate(store)/rate(bare), "store×bare")
		t.ReportMetric(rate(hand)/rate(bare), "probe×bare")
		t.ReportMetric(rate(store)/rate(hand), "store÷probe")
	}
}

// allocs returns the heap allocations this process has made: objects and
// bytes.
func allocs() [2]uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return [2]uint64{m.Mallocs, m.TotalAlloc}
}

// storeAllocs accumulates the heap allocations (objects, bytes) of the
// Store's rounds.
var storeAllocs [2]uint64

// processCPU is the user and system time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// probeBare times n bare commits on a file of its own with Open's options.
func probeBare(t testing.TB, dir string, n int) [2]time.Duration {
	db, err := bbolt.Open(filepath.Join(dir, "bare.bolt"), 0o600, &bbolt.Options{
		Timeout: DefaultLockTimeout, NoFreelistSync: true, FreelistType: bbolt.FreelistArrayType,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *bbolt.Tx) error { _, err := tx.CreateBucket([]byte("bare")); return err }); err != nil {
		t.Fatal(err)
	}
	payload := make([]byte, 32)
	start, cpu := time.Now(), processCPU()
	for i := 0; i < n; i++ {
		err := db.Update(func(tx *bbolt.Tx) error {
			var k [8]byte
			binary.BigEndian.PutUint64(k[:], uint64(i))
			return tx.Bucket([]byte("bare")).Put(k[:], payload)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return [2]time.Duration{time.Since(start), processCPU() - cpu}
}

// seededProbeStore opens a fresh durable store at path with n pending
// activations seeded (the caller closes it), and a Store over it.
func seededProbeStore(t testing.TB, ctx context.Context, path string, n int) (*Backend, *workflow.Store) {
	b, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	s := workflow.New(b)
	if _, err := benchdata.SeedRuns(ctx, s, b, "probe", n, benchdata.PerRun, nil, time.Now()); err != nil {
		b.Close()
		t.Fatal(err)
	}
	return b, s
}

// probeStore seeds n pending activations into a fresh durable store and
// times the Store admitting all of them in batches of 100.
func probeStore(t testing.TB, ctx context.Context, dir string, n int) [2]time.Duration {
	b, s := seededProbeStore(t, ctx, filepath.Join(dir, "store.bolt"), n)
	defer b.Close()
	start, cpu, mem := time.Now(), processCPU(), allocs()
	defer func() {
		m := allocs()
		storeAllocs[0] += m[0] - mem[0]
		storeAllocs[1] += m[1] - mem[1]
	}()
	if err := benchdata.AdmitBatches(ctx, s, n, 100); err != nil {
		t.Fatal(err)
	}
	return [2]time.Duration{time.Since(start), processCPU() - cpu}
}
