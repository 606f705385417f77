package bolt

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/wfstore/wfstore/internal/benchdata"
	"github.com/wfstore/wfstore/internal/kvlayout"
	"github.com/wfstore/wfstore/workflow"
)

// probeHand seeds n pending activations into a fresh durable store exactly
// as probeStore does (through the Store), then times hand-written bbolt
// transactions that admit them in batches of 100 with the writes the
// Store's batch admission makes: per batch one read transaction
// (discovery: the pending index and the activations it names) and three
// write transactions, each one commit:
//
//   - prepare: per activation the identity index (a uniqueness seek, then
//     the entry), the attempt status, run status, run prepared and
//     prepared index entries, the attempt (230 bytes), an
//     attempt_prepared event (220 bytes), the pending entry deleted and
//     the activation rewritten (113 bytes); the run record once (70
//     bytes);
//   - handoff: per activation the attempt (263 bytes) and a
//     dispatch_handed_off event (213 bytes); the run once;
//   - receipt: per activation an attempt_admitted event (285 bytes), the
//     status and run status entries moved from prepared to admitted, the
//     attempt (301 bytes); the run once.
//
// Same buckets, keys, value sizes and fill percents as the Store; it reads
// each record it rewrites (as a read-modify-write would) and decodes only
// the pending index's keys. It has no workflow logic, so the Store's time
// over it is the Store's own.
func probeHand(t testing.TB, ctx context.Context, dir string, n int, clustered bool) [2]time.Duration {
	b, _ := seededProbeStore(t, ctx, filepath.Join(dir, "hand.bolt"), n)
	defer b.Close()
	start, cpu := time.Now(), processCPU()
	for admitted := 0; admitted < n; {
		k, err := handBatch(b.db, 100, time.Now().UnixMilli(), clustered)
		if err != nil {
			t.Fatal(err)
		}
		if k == 0 {
			t.Fatalf("probe: admitted %d of %d: nothing pending", admitted, n)
		}
		admitted += k
	}
	return [2]time.Duration{time.Since(start), processCPU() - cpu}
}

// handAct is one activation a hand-written batch admits.
type handAct struct {
	run, node, act string
	runPart        []byte // the run's bucket name
	rest           kvlayout.Key
	identity       string
}

// handFiller is the bytes of every value the probe writes (bbolt does not
// look into values).
var handFiller = bytes.Repeat([]byte{'v'}, 512)

// handBatch admits up to max pending activations of one run, by hand.
//
// clustered keys the identity entries by run first (run | identity | key)
// instead of by identity: the measure of what a layout whose identity
// entries cluster would save on these writes (no such layout exists).
func handBatch(db *bbolt.DB, max int, at int64, clustered bool) (int, error) {
	var acts []handAct
	err := db.View(func(tx *bbolt.Tx) error {
		ix, runs := tx.Bucket(bucketIndex), tx.Bucket(bucketRuns)
		c := ix.Cursor()
		pend := layout.Pending.Tag
		for k, _ := c.Seek([]byte{pend}); k != nil && k[0] == pend && len(acts) < max; k, _ = c.Next() {
			r := kvlayout.ReadKey(k[1:])
			a := handAct{run: r.Str(), node: r.Str(), act: r.Str()}
			if len(acts) > 0 && a.run != acts[0].run {
				break // one run per batch
			}
			a.runPart = kvlayout.Key(nil).Str(a.run)
			a.rest = kvlayout.Key(nil).Str(a.node).Str(a.act)
			rb := runs.Bucket(a.runPart)
			if rb.Get(append([]byte{layout.Activation.Tag}, a.rest...)) == nil {
				return errStop
			}
			if len(acts) == 0 && rb.Get([]byte{layout.Run.Tag}) == nil {
				return errStop
			}
			a.identity = workflow.DispatchIdentity(a.run, a.node, a.act, 1)
			acts = append(acts, a)
		}
		return nil
	})
	if err != nil || len(acts) == 0 {
		return 0, err
	}
	runPart := acts[0].runPart
	// update runs fn on the run's bucket and the index bucket with the
	// Store's fill percents, rereading and rewriting the run record.
	update := func(fn func(rb, ix *bbolt.Bucket, seq *int64) error) error {
		return db.Update(func(tx *bbolt.Tx) error {
			runs, ix := tx.Bucket(bucketRuns), tx.Bucket(bucketIndex)
			runs.FillPercent, ix.FillPercent = fillPercent, indexFillPercent
			rb := runs.Bucket(runPart)
			rb.FillPercent = fillPercent
			if rb.Get([]byte{layout.Run.Tag}) == nil {
				return errStop
			}
			// The run's last event sequence: its last event key.
			c := rb.Cursor()
			k, _ := c.Seek([]byte{layout.Event.Tag + 1})
			if k == nil {
				k, _ = c.Last()
			} else {
				k, _ = c.Prev()
			}
			var seq int64
			if k != nil && k[0] == layout.Event.Tag {
				seq = kvlayout.ReadKey(k[1:]).I64()
			}
			if err := fn(rb, ix, &seq); err != nil {
				return err
			}
			return rb.Put([]byte{layout.Run.Tag}, handFiller[:70])
		})
	}
	event := func(rb *bbolt.Bucket, seq *int64, size int) error {
		*seq++
		return rb.Put(kvlayout.Key{layout.Event.Tag}.I64(*seq), handFiller[:size])
	}
	attemptKey := func(a *handAct) []byte {
		return append(append([]byte{layout.Attempt.Tag}, a.rest...), 0, 0, 0, 1)
	}
	// statusKeys returns a's flat attempt status entry and its run status
	// entry (in the run's bucket) for status.
	statusKeys := func(a *handAct, status string) (flat, inRun []byte) {
		tail := kvlayout.Key(nil).I64(at).Str(a.identity)
		pk := kvlayout.Key(nil).Str(a.node).Str(a.act).U32(1)
		flat = append(kvlayout.Key{layout.AttemptStatus.Tag}.Str(status), tail...)
		flat = append(kvlayout.Key(flat).Str(a.run), pk...)
		inRun = append(append(kvlayout.Key{layout.AttemptRunStatus.Tag}.Str(status), tail...), pk...)
		return flat, inRun
	}
	// prepare
	err = update(func(rb, ix *bbolt.Bucket, seq *int64) error {
		c := ix.Cursor()
		for i := range acts {
			a := &acts[i]
			ak := append([]byte{layout.Activation.Tag}, a.rest...)
			if rb.Get(ak) == nil || rb.Get(attemptKey(a)) != nil {
				return errStop
			}
			idp := kvlayout.Key{layout.AttemptIdentity.Tag}.Str(a.identity)
			if clustered {
				// What a layout whose identity entries sort by run
				// would write: one batch's entries on a few leaves.
				idp = kvlayout.Key{layout.AttemptIdentity.Tag}.Str(a.run).Str(a.identity)
			}
			if k, _ := c.Seek(idp); k != nil && bytes.HasPrefix(k, idp) {
				return errStop // taken
			}
			pk := kvlayout.Key(nil).Str(a.run).Str(a.node).Str(a.act).U32(1)
			if err := ix.Put(append(idp, pk...), nil); err != nil {
				return err
			}
			flat, inRun := statusKeys(a, "prepared")
			if err := ix.Put(flat, nil); err != nil {
				return err
			}
			if err := rb.Put(inRun, nil); err != nil {
				return err
			}
			runPrep := append(kvlayout.Key{layout.AttemptRun.Tag}.I64(at).Str(a.identity), a.rest...)
			if err := rb.Put(kvlayout.Key(runPrep).U32(1), nil); err != nil {
				return err
			}
			prep := append(kvlayout.Key{layout.AttemptPrepared.Tag}.I64(at).Str(a.identity), pk...)
			if err := ix.Put(prep, nil); err != nil {
				return err
			}
			if err := rb.Put(attemptKey(a), handFiller[:230]); err != nil {
				return err
			}
			if err := event(rb, seq, 220); err != nil {
				return err
			}
			pend := append(kvlayout.Key{layout.Pending.Tag}.Str(a.run), a.rest...)
			if err := ix.Delete(pend); err != nil {
				return err
			}
			if err := rb.Put(ak, handFiller[:113]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	// handoff
	err = update(func(rb, _ *bbolt.Bucket, seq *int64) error {
		for i := range acts {
			a := &acts[i]
			if rb.Get(append([]byte{layout.Activation.Tag}, a.rest...)) == nil || rb.Get(attemptKey(a)) == nil {
				return errStop
			}
			if err := rb.Put(attemptKey(a), handFiller[:263]); err != nil {
				return err
			}
			if err := event(rb, seq, 213); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	// receipt
	err = update(func(rb, ix *bbolt.Bucket, seq *int64) error {
		for i := range acts {
			a := &acts[i]
			if rb.Get(attemptKey(a)) == nil {
				return errStop
			}
			if err := event(rb, seq, 285); err != nil {
				return err
			}
			oldFlat, oldRun := statusKeys(a, "prepared")
			newFlat, newRun := statusKeys(a, "admitted")
			if err := ix.Delete(oldFlat); err != nil {
				return err
			}
			if err := ix.Put(newFlat, nil); err != nil {
				return err
			}
			if err := rb.Delete(oldRun); err != nil {
				return err
			}
			if err := rb.Put(newRun, nil); err != nil {
				return err
			}
			if err := rb.Put(attemptKey(a), handFiller[:301]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return len(acts), nil
}

// TestProbeHandWritesStoreKeys checks the hand-written probe against the
// Store: after two batches admitted at the same time, both files hold the
// same keys in every bucket, and values of the same sizes.
func TestProbeHandWritesStoreKeys(t *testing.T) {
	ctx := context.Background()
	now := time.UnixMilli(1_800_000_000_000)
	open := func(name string) *Backend {
		b, err := Open(ctx, filepath.Join(t.TempDir(), name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		if _, err := benchdata.SeedRuns(ctx, workflow.New(b), b, "probe", 300, benchdata.PerRun, nil, now); err != nil {
			t.Fatal(err)
		}
		return b
	}
	store, hand := open("store.bolt"), open("hand.bolt")
	s := workflow.New(store)
	for range 2 {
		sum, err := s.Dispatch(ctx, benchdata.Owner{}, workflow.DispatchOptions{Limit: 100, BatchSize: 100}, now)
		if err != nil || len(sum.Admitted) != 100 {
			t.Fatalf("Store admitted %d: %v", len(sum.Admitted), err)
		}
		if k, err := handBatch(hand.db, 100, now.UnixMilli(), false); err != nil || k != 100 {
			t.Fatalf("probe admitted %d: %v", k, err)
		}
	}
	dump := func(b *Backend) map[string]int {
		out := map[string]int{}
		err := b.db.View(func(tx *bbolt.Tx) error {
			var walk func(prefix string, bk *bbolt.Bucket) error
			walk = func(prefix string, bk *bbolt.Bucket) error {
				return bk.ForEach(func(k, v []byte) error {
					if v == nil {
						return walk(prefix+string(k)+"/", bk.Bucket(k))
					}
					out[prefix+string(k)] = len(v)
					return nil
				})
			}
			for _, name := range [][]byte{bucketRuns, bucketIndex} {
				if err := walk(string(name)+"/", tx.Bucket(name)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	want, got := dump(store), dump(hand)
	for k, n := range want {
		m, ok := got[k]
		switch {
		case !ok:
			t.Errorf("probe lacks key %q", k)
		case n != m:
			t.Errorf("key %q: Store's value %d bytes, probe's %d", k, n, m)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("probe has extra key %q", k)
		}
	}
}
