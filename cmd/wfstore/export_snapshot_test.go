package main

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/sqlite"
)

// writeOnFirstRuns is a Backend whose read transactions run write, once,
// right after their first Runs page: a store changing under an export.
type writeOnFirstRuns struct {
	backend.Backend
	once  sync.Once
	write func() error
	err   error
}

func (b *writeOnFirstRuns) View(ctx context.Context, fn func(backend.ReadTx) error) error {
	return b.Backend.View(ctx, func(r backend.ReadTx) error {
		return fn(&runsHook{ReadTx: r, b: b})
	})
}

type runsHook struct {
	backend.ReadTx
	b *writeOnFirstRuns
}

func (r *runsHook) Runs(ctx context.Context, q backend.RunQuery) ([]backend.Run, error) {
	runs, err := r.ReadTx.Runs(ctx, q)
	r.b.once.Do(func() { r.b.err = r.b.write() })
	return runs, err
}

func TestExportReadsOneSnapshotOfAStoreInUse(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "s.db"))
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	recs := everyKind()
	require.NoError(t, insertRecords(ctx, b, recs))
	// After the runs page is read, another writer adds an activation and
	// an event to a run the export has not reached yet, and a new run.
	late := []record{
		backend.Activation{Key: backend.ActivationKey{RunID: "run-é", NodeID: "z", ActivationID: "late"},
			Status: backend.ActivationPending, Input: []byte(`{}`), Effect: backend.ReadOnly,
			Reconciliation: backend.IdempotentReplay, CreatedMS: 1_700_000_000_100},
		backend.Event{RunID: "run-é", Seq: 3, Type: "late", Payload: []byte(`{}`), CreatedMS: 1_700_000_000_101},
		backend.Run{ID: "late-run", RootID: "late-run", Depth: 1, Status: backend.RunRunning, CreatedMS: 1_700_000_000_102},
	}
	wb := &writeOnFirstRuns{Backend: b, write: func() error { return insertRecords(ctx, b, late) }}
	var got []record
	require.NoError(t, walkStore(ctx, wb, func(rec record) error {
		got = append(got, rec)
		return nil
	}))
	require.NoError(t, wb.err, "the concurrent write committed")
	assert.ElementsMatch(t, recs, got, "the export holds the store as it was when it began, nothing written during it")
	for _, l := range late {
		assert.NotContains(t, got, l)
	}

	// The next export sees the late records.
	got = got[:0]
	require.NoError(t, walkStore(ctx, b, func(rec record) error {
		got = append(got, rec)
		return nil
	}))
	assert.Len(t, got, len(recs)+len(late))
}

// insertRecords inserts recs in one Update.
func insertRecords(ctx context.Context, b backend.Backend, recs []record) error {
	return b.Update(ctx, func(tx backend.Tx) error {
		var c backend.Changes
		for _, r := range recs {
			addInsert(&c, r)
		}
		return tx.Apply(ctx, c)
	})
}
