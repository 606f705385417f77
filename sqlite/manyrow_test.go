package sqlite

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/wfstore/wfstore/backend"
)

// manyAttempts returns n attempts of one run, identities id-0 ...
func manyAttempts(n int) []backend.Attempt {
	out := make([]backend.Attempt, n)
	for i := range out {
		out[i] = attempt(akey("r", "n", fmt.Sprint("a", i)), 1, fmt.Sprint("id-", i), backend.AttemptPrepared, int64(i+1))
	}
	return out
}

func storedAttempts(t *testing.T, b *Backend, want []backend.Attempt) {
	t.Helper()
	view(t, b, func(r backend.ReadTx) {
		got, err := r.Attempts(context.Background(), backend.AttemptQuery{RunID: "r", Limit: 1000})
		require.NoError(t, err)
		byKey := map[backend.AttemptKey]backend.Attempt{}
		for _, a := range got {
			byKey[a.Key] = a
		}
		require.Len(t, got, len(want))
		for _, w := range want {
			require.Equal(t, w, byKey[w.Key])
		}
	})
}

// A slice long enough for many-row statements (chunks of 64, 32, 4 and
// the last one by one) stores exactly its records, and a Replace slice
// whose records change different column sets (grouped by set) leaves
// every record as given.
func TestManyRowInsertAndReplaceStoreEveryRecord(t *testing.T) {
	t.Parallel()
	b := newStore(t)
	atts := manyAttempts(101)
	update(t, b, insertAttempts(atts...))
	storedAttempts(t, b, atts)

	next := make([]backend.Attempt, len(atts))
	for i, a := range atts {
		a.Status = backend.AttemptAdmitted
		a.AdmittedMS = int64(1000 + i)
		switch i % 3 {
		case 1:
			a.Handoff = backend.HandoffRecorded
		case 2:
			a.Receipt = []byte(fmt.Sprintf(`{"r":%d}`, i))
		}
		next[i] = a
	}
	// The Expect gives the transaction an image of every row, so the
	// Replace writes only the columns that differ.
	require.NoError(t, b.Update(context.Background(), func(tx backend.Tx) error {
		return tx.Apply(context.Background(), backend.Changes{
			Expect: backend.Expected{Attempts: atts}, Replace: backend.Replaces{Attempts: next}})
	}))
	storedAttempts(t, b, next)
}

// A duplicate inside a many-row Insert slice, or a record whose key is
// stored, fails the slice with ErrConflict and nothing of it is stored.
func TestManyRowInsertConflictStoresNothing(t *testing.T) {
	t.Parallel()
	b := newStore(t)
	atts := manyAttempts(40)
	dup := append([]backend.Attempt{}, atts...)
	dup[30] = atts[3]
	err := applyErr(b, insertAttempts(dup...))
	require.ErrorIs(t, err, backend.ErrConflict)
	require.ErrorContains(t, err, "Insert.Attempts[")
	storedAttempts(t, b, nil)

	update(t, b, insertAttempts(atts[20]))
	err = applyErr(b, insertAttempts(atts...))
	require.ErrorIs(t, err, backend.ErrConflict)
	storedAttempts(t, b, atts[20:21])

	// The same identity under another key conflicts too.
	other := append([]backend.Attempt{}, atts[:10]...)
	other[9].Identity = atts[20].Identity
	err = applyErr(b, insertAttempts(other...))
	require.ErrorIs(t, err, backend.ErrConflict)
	storedAttempts(t, b, atts[20:21])
}

// Identities moving between the records of one long Replace slice give
// the outcome of writing the slice in order: taking an identity another
// record gives up later in the slice conflicts, taking it after that
// record gave it up does not.
func TestManyRowReplaceMovingIdentitiesFollowsSliceOrder(t *testing.T) {
	t.Parallel()
	b := newStore(t)
	atts := manyAttempts(20)
	update(t, b, insertAttempts(atts...))
	moved := func(first, second int) []backend.Attempt {
		next := make([]backend.Attempt, len(atts))
		for i, a := range atts {
			a.Status = backend.AttemptAdmitted
			next[i] = a
		}
		// record first takes record second's identity, and second takes a new one.
		next[first].Identity = atts[second].Identity
		next[second].Identity = "fresh"
		return next
	}
	apply := func(next []backend.Attempt) error {
		return b.Update(context.Background(), func(tx backend.Tx) error {
			return tx.Apply(context.Background(), backend.Changes{
				Expect: backend.Expected{Attempts: atts}, Replace: backend.Replaces{Attempts: next}})
		})
	}
	// 5 takes id-12 before 12 gives it up: a conflict.
	require.ErrorIs(t, apply(moved(5, 12)), backend.ErrConflict)
	storedAttempts(t, b, atts)
	// 15 takes id-2 after 2 gave it up.
	next := moved(15, 2)
	require.NoError(t, apply(next))
	storedAttempts(t, b, next)
}

// A many-row Replace of a missing key fails with ErrNotFound.
func TestManyRowReplaceMissingNotFound(t *testing.T) {
	t.Parallel()
	b := newStore(t)
	atts := manyAttempts(12)
	update(t, b, insertAttempts(atts[:11]...))
	err := applyErr(b, replaceAttempts(atts...))
	require.ErrorIs(t, err, backend.ErrNotFound)
}

// Every many-row UPDATE probes the primary key for each of its rows: its
// plan searches the table by its primary key (or, for a rowid table, the
// key's automatic index) and never scans it.
func TestManyRowUpdatesSearchThePrimaryKey(t *testing.T) {
	t.Parallel()
	ctx, conn := explainConn(t)
	for _, tb := range []*table{&runsT, &activationsT, &groupsT, &attemptsT, &leasesT, &schedulesT} {
		q := tb.updateMany(0b101, 64)
		joined := strings.Join(queryPlan(t, ctx, conn, q, strings.Count(q, "?")), "\n")
		require.Regexp(t, "SEARCH "+tb.name+" USING (PRIMARY KEY|(COVERING )?INDEX sqlite_autoindex_)", joined, tb.name)
		require.NotContains(t, joined, "SCAN "+tb.name, "%s:\n%s", tb.name, joined)
	}
}

// A Load of many keys on the writer reads them with many-row SELECTs
// (chunks of 64, 32, 4 and the last ones by one) and finds exactly what
// one SELECT per key finds (a View): every stored row once, missing keys
// absent, a key asked twice found once.
func TestManyRowLoadFindsEveryKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := newStore(t)
	atts := manyAttempts(101)
	update(t, b, insertAttempts(atts...))
	var keys []backend.AttemptKey
	want := map[backend.AttemptKey]backend.Attempt{}
	for i, a := range atts {
		keys = append(keys, a.Key)
		if i%10 == 0 {
			keys = append(keys, a.Key, backend.AttemptKey{ActivationKey: akey("r", "n", fmt.Sprint("missing", i)), Attempt: 1})
		}
		want[a.Key] = a
	}
	var fromView backend.Found
	view(t, b, func(r backend.ReadTx) {
		var err error
		fromView, err = r.Load(ctx, backend.Lookup{Attempts: keys})
		require.NoError(t, err)
	})
	require.Equal(t, want, fromView.Attempts)
	require.NoError(t, b.Update(ctx, func(tx backend.Tx) error {
		f, err := tx.Load(ctx, backend.Lookup{Attempts: keys})
		require.NoError(t, err)
		require.Equal(t, want, f.Attempts)
		return nil
	}))
	_, ok := b.w.many[manyKey{sAttGet, 0, 64}]
	require.True(t, ok, "the writer's Load prepared a 64-key SELECT")
}

// A long SwapAttempts writes the swaps it won together, with many-row
// UPDATEs of the columns they change, and keeps every per-row result: a
// swap whose Old differs from the stored row reports false and leaves the
// row as it was, and every other row ends as its New, whether the
// transaction had an image of the rows or read them.
func TestManyRowSwapsWriteTheWonRowsTogether(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := newStore(t)
	atts := manyAttempts(101)
	update(t, b, insertAttempts(atts...))
	swaps := make([]backend.AttemptSwap, len(atts))
	want := make([]backend.Attempt, len(atts))
	wantWon := make([]bool, len(atts))
	for i, a := range atts {
		n := a
		n.Handoff, n.HandoffToken = backend.HandoffRecorded, fmt.Sprint("tok-", i)
		old := a
		if i%10 == 3 { // a stale Old: the swap loses
			old.Status = backend.AttemptAdmitted
		}
		swaps[i] = backend.AttemptSwap{Old: old, New: n}
		want[i], wantWon[i] = n, i%10 != 3
		if !wantWon[i] {
			want[i] = a
		}
	}
	for _, images := range []bool{true, false} {
		b := b
		if !images {
			b = newStore(t)
			update(t, b, insertAttempts(atts...))
		}
		require.NoError(t, b.Update(ctx, func(tx backend.Tx) error {
			if images { // the Expect leaves an image of every row
				if err := tx.Apply(ctx, expectAttempts(atts...)); err != nil {
					return err
				}
			}
			won, err := tx.(backend.Swapper).SwapAttempts(ctx, swaps)
			require.NoError(t, err)
			require.Equal(t, wantWon, won)
			return nil
		}))
		storedAttempts(t, b, want)
		mask := uint64(1)<<(10-attemptsT.nkey) | 1<<(15-attemptsT.nkey) // handoff, handoff_token
		require.Equal(t, "handoff", attemptsT.cols[10])
		require.Equal(t, "handoff_token", attemptsT.cols[15])
		_, ok := b.w.writes[manyKey{sAttRep, mask, 64}]
		require.True(t, ok, "the swaps prepared a 64-row UPDATE of handoff and handoff_token")
	}
}
