package backend

import (
	"context"
	"errors"
	"fmt"
)

// Swapper is an optional capability of a Tx: a per-row compare-and-set of
// attempts. Where Expect fails the whole Apply when one record differs,
// SwapAttempts decides each row on its own and reports, per row, whether
// this call changed it, so that a caller can go on with the rows it won
// and leave the others, in the same transaction. The workflow layer flips
// the handoff of a batch of prepared attempts with it; an adapter whose Tx
// does not implement Swapper is unaffected: workflow checks for it with a
// type assertion and otherwise expects the attempts unchanged (Expect) and
// decides the whole batch again on records read afresh when one differs.
//
// An adapter that implements it must keep these rules, for each swap of
// swaps in order:
//
//   - When the attempt with Old.Key is stored (as of this point of the
//     transaction: earlier Applies and swaps of it included) and equals
//     Old in every field, compared as Expect compares, it is replaced by
//     New (every field, as a Replace writes it) and the swap reports true.
//   - Otherwise (the attempt is missing or differs in any field) it is
//     left exactly as stored and the swap reports false. A false swap is
//     not an error: the transaction goes on, and commits the true swaps
//     and its other writes when fn returns nil.
//   - The swaps are writes of the enclosing Update: serializable with
//     every other Update, seen by the transaction's later reads and
//     Expects, committed with it and undone by its rollback. Of two
//     concurrent transactions (on any Backend values over the same store)
//     swapping one row from the same Old, at most one commits with true
//     for it.
//
// New must keep Old's Key and Identity, and no key may appear twice in
// one call: CheckSwaps refuses such a call with an error wrapping
// ErrInvalidSwap, before anything is written. A storage error is returned
// as from Apply: fn must then return an error. The result has one entry
// per swap, in order. A call with no swaps does nothing.
type Swapper interface {
	SwapAttempts(ctx context.Context, swaps []AttemptSwap) ([]bool, error)
}

// AttemptSwap is one row of a Swapper call: replace the stored attempt
// Old by New, if it is still Old.
type AttemptSwap struct {
	Old, New Attempt
}

// ErrInvalidSwap: a Swapper call named a key twice, or a swap whose New
// changes its Key or Identity.
var ErrInvalidSwap = errors.New("backend: invalid attempt swap")

// CheckSwaps validates a Swapper call as the contract requires; adapters
// call it before writing anything.
func CheckSwaps(swaps []AttemptSwap) error {
	seen := make(map[AttemptKey]bool, len(swaps))
	for i, s := range swaps {
		if s.New.Key != s.Old.Key || s.New.Identity != s.Old.Identity {
			return fmt.Errorf("swap %d (%+v): New changes the key or identity: %w", i, s.Old.Key, ErrInvalidSwap)
		}
		if seen[s.Old.Key] {
			return fmt.Errorf("swap %d (%+v): key named twice: %w", i, s.Old.Key, ErrInvalidSwap)
		}
		seen[s.Old.Key] = true
	}
	return nil
}
