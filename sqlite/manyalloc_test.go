package sqlite

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/wfstore/wfstore/backend"
)

// allocated returns the bytes and the heap objects the process has
// allocated so far.
func allocated() (bytes, objects uint64) {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc, m.Mallocs
}

// A many-row write binds its arguments without a per-statement copy of
// them: replacing 64 imaged attempts in one column (one UPDATE of 64 rows,
// 5 values each) allocates well under one 40-byte bound value per
// argument on top of the argument list itself.
func TestManyRowWriteBindsWithoutCopyingItsArguments(t *testing.T) {
	b := newStore(t)
	ctx := context.Background()
	atts := manyAttempts(64)
	update(t, b, insertAttempts(atts...))
	require.NoError(t, b.Update(ctx, func(tx backend.Tx) error {
		// Load them, so that the replaces below have images and change
		// one column.
		l := backend.Lookup{}
		for _, a := range atts {
			l.Attempts = append(l.Attempts, a.Key)
		}
		_, err := tx.Load(ctx, l)
		require.NoError(t, err)
		const rounds = 5
		worst := ^uint64(0) // the least of the rounds after the first, which prepares the statement
		for r := 0; r < rounds; r++ {
			next := make([]backend.Attempt, len(atts))
			for i, a := range atts {
				a.AdmittedMS = int64(1000*(r+1) + i)
				next[i] = a
			}
			c := backend.Changes{Replace: backend.Replaces{Attempts: next}}
			before, _ := allocated()
			require.NoError(t, tx.Apply(ctx, c))
			if r > 0 {
				after, _ := allocated()
				worst = min(worst, after-before)
			}
		}
		// What the Replace itself needs: each record's column list (16
		// boxes), its image, the statement's argument list (64×5 values).
		perArg := float64(worst) / float64(64*5)
		t.Logf("%d bytes per Replace of 64 attempts (%.0f per bound value)", worst, perArg)
		require.Less(t, worst, uint64(64*5*40+64*16*16+64*400), "bytes allocated by one many-row Replace")
		return nil
	}))
}

// A many-row Replace of rows the transaction read builds the column
// values of their images sharing one row's boxes with the next (the run,
// the status, the effect, the input the rows have in common), as the
// records' own values share them with their images: replacing 64 loaded
// activations in their status allocates a few objects per row, not one
// per column.
func TestManyRowReplaceOfLoadedRowsSharesTheirImagesValues(t *testing.T) {
	b := newStore(t)
	ctx := context.Background()
	acts := make([]backend.Activation, 64)
	l := backend.Lookup{}
	for i := range acts {
		acts[i] = activation(akey("r", "n", fmt.Sprint("a", i)), true)
		acts[i].Group = &backend.GroupMember{Controller: akey("r", "fan", "out"), Index: int64(i)}
		l.Activations = append(l.Activations, acts[i].Key)
	}
	update(t, b, backend.Changes{Insert: backend.Inserts{Activations: acts}})
	var best uint64 = ^uint64(0)
	for r := 0; r < 3; r++ {
		require.NoError(t, b.Update(ctx, func(tx backend.Tx) error {
			f, err := tx.Load(ctx, l) // images without column values
			require.NoError(t, err)
			next := make([]backend.Activation, 0, len(acts))
			for _, k := range l.Activations {
				a := f.Activations[k]
				a.Status = backend.ActivationStatus(fmt.Sprint("s", r))
				next = append(next, a)
			}
			_, before := allocated()
			require.NoError(t, tx.Apply(ctx, backend.Changes{Replace: backend.Replaces{Activations: next}}))
			_, after := allocated()
			best = min(best, after-before)
			return nil
		}))
	}
	t.Logf("%d objects allocated by a Replace of 64 loaded activations", best)
	require.Less(t, best, uint64(64*6), "objects allocated by a Replace of 64 loaded activations")
}
