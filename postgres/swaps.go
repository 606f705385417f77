package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/wfstore/wfstore/backend"
)

var _ backend.Swapper = (*txn)(nil)

// buildSwapSQL returns the statement of SwapAttempts over table t: one
// UPDATE of every swap, reading its parameters as a many-row write does
// (see unnest), each row t's columns (Old) then t's non-key columns again
// (New). A row is updated only where every column holds Old's value (IS
// NOT DISTINCT FROM, as expect compares), and the statement returns the
// ordinal of each row it updated.
func buildSwapSQL(qual func(string) string, t table) string {
	u := swapColumns(t).unnest(2*len(t.cols) - t.nkey)
	var set, where strings.Builder
	for i, c := range t.cols {
		if i < t.nkey {
			and(&where, "x."+c+" = "+u.exprs[i])
			continue
		}
		where.WriteString(" AND x." + c + " IS NOT DISTINCT FROM " + u.exprs[i])
		if set.Len() > 0 {
			set.WriteString(", ")
		}
		set.WriteString(c + " = " + u.exprs[len(t.cols)+i-t.nkey])
	}
	return "UPDATE " + qual(t.name) + " AS x SET " + set.String() + " FROM " + u.from +
		" WHERE " + where.String() + " RETURNING v.ord"
}

// swapTable is tAttempts with New's columns after Old's (see
// buildSwapSQL), for rowArrays.
var swapTable = swapColumns(tAttempts)

// swapColumns returns t with its non-key columns repeated, named new_*.
func swapColumns(t table) table {
	s := table{name: t.name, nkey: t.nkey, cols: slices.Clone(t.cols), types: slices.Clone(t.types)}
	for i := t.nkey; i < len(t.cols); i++ {
		s.cols, s.types = append(s.cols, "new_"+t.cols[i]), append(s.types, t.types[i])
	}
	return s
}

// SwapAttempts implements backend.Swapper in one statement (buildSwapSQL),
// sent in one round trip with the writes Apply deferred before it, so it
// compares with the transaction's own earlier writes. The UPDATE takes
// each matching row's lock: a concurrent transaction swapping the same row
// waits for this one, and then either finds it changed (under SERIALIZABLE,
// a serialization failure, after which Update runs fn again and the swap
// finds New stored) or not at all.
func (t *txn) SwapAttempts(ctx context.Context, swaps []backend.AttemptSwap) ([]bool, error) {
	if t.readOnly {
		return nil, fmt.Errorf("postgres: SwapAttempts in a read-only View")
	}
	if err := backend.CheckSwaps(swaps); err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	out := make([]bool, len(swaps))
	if len(swaps) == 0 {
		return out, nil
	}
	nkey := tAttempts.nkey
	rows := make([][]any, len(swaps))
	for i, s := range swaps {
		rows[i] = append(detach(attemptArgs(s.Old)), detach(attemptArgs(s.New))[nkey:]...)
	}
	args := swapTable.rowArrays(rows)
	err := t.exchange(ctx,
		func(b *pgx.Batch) {
			b.Queue(genericPlans)
			b.Queue(t.b.q.swapAttempts, args...)
			b.Queue(autoPlans)
		},
		func(br pgx.BatchResults) error {
			if _, err := br.Exec(); err != nil {
				return err
			}
			rs, err := br.Query()
			if err != nil {
				return err
			}
			for rs.Next() {
				var ord int64
				if err := rs.Scan(&ord); err != nil {
					rs.Close()
					return err
				}
				out[ord-1] = true
			}
			rs.Close()
			if err := rs.Err(); err != nil {
				return err
			}
			_, err = br.Exec()
			return err
		})
	if err != nil {
		return nil, fmt.Errorf("postgres: swap %d attempts: %w", len(swaps), err)
	}
	t.mu.Lock()
	if t.known == nil {
		t.known = identities{}
	}
	for i, s := range swaps {
		if out[i] {
			t.known[s.New.Key] = s.New.Identity
		}
	}
	t.mu.Unlock()
	return out, nil
}
