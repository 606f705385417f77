package bench

import (
	"context"
	"testing"
	"time"

	"github.com/wfstore/wfstore/backend"
)

// History is shaped as a store that admitted its attempts one after
// another: every attempt has its own time, times grow in load order, and
// all of them precede now. (With one shared time, the cross-run indexes
// ordered by (prepared_ms, identity) were filled in identity order, which
// is random, and no real store looks like that.)
func TestHistoryTimesGrowInLoadOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env, err := SQLite().Open(ctx, t.TempDir(), 2)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	now := time.UnixMilli(1_800_000_000_000)
	const n = 250 // three runs, the last one partial
	if _, err := loadHistory(ctx, env, "hist", 0, n, now, nil); err != nil {
		t.Fatal(err)
	}
	var atts []backend.Attempt
	var runs []backend.Run
	err = env.Backend.View(ctx, func(r backend.ReadTx) error {
		var err error
		if atts, err = r.Attempts(ctx, backend.AttemptQuery{Limit: 1000}); err != nil {
			return err
		}
		f, err := r.Load(ctx, backend.Lookup{Runs: []string{"hist-0000000", "hist-0000001", "hist-0000002"}})
		for _, id := range []string{"hist-0000000", "hist-0000001", "hist-0000002"} {
			runs = append(runs, f.Runs[id])
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(atts) != n {
		t.Fatalf("%d attempts, want %d", len(atts), n)
	}
	// Attempts come back in (prepared_ms, identity) order; load order is
	// run, then node.
	for i, a := range atts {
		if want := now.UnixMilli() - int64(n-i); a.PreparedMS != want || a.TerminalMS != want {
			t.Fatalf("attempt %d (%s/%s) prepared at %d, terminal %d, want %d", i, a.Key.RunID, a.Key.NodeID, a.PreparedMS, a.TerminalMS, want)
		}
		if i > 0 && (a.Key.RunID < atts[i-1].Key.RunID || a.Key.RunID == atts[i-1].Key.RunID && a.Key.NodeID <= atts[i-1].Key.NodeID) {
			t.Fatalf("attempt %d out of load order: %v after %v", i, a.Key, atts[i-1].Key)
		}
	}
	for i, r := range runs {
		if r.CreatedMS >= r.UpdatedMS || (i > 0 && r.CreatedMS <= runs[i-1].UpdatedMS) {
			t.Errorf("run %s: created %d, updated %d (previous run updated %d)", r.ID, r.CreatedMS, r.UpdatedMS, runs[max(i-1, 0)].UpdatedMS)
		}
	}
}
