package backend

import (
	"context"
	"time"
)

// Claimer is an optional capability of a Backend: advisory claims on
// named pieces of work, shared by every Backend value over the same store
// (in any process, as far as Capabilities says the store is shared), so
// that workers of separate processes take disjoint work instead of
// racing for the same records. The workflow layer claims the attempts a
// dispatch pass is about to prepare (and the runs they belong to) and the
// attempts a receipt-backed pass is about to ask the owner about, and
// passes over what another holder claimed.
//
// A claim is a hint, never a guard. No transaction reads claims, and
// none may depend on them: whatever a claim says, the transaction that
// decides (the prepare transaction's single-winner gate, the transaction
// that applies observations) still decides alone. A claim that is lost,
// expired or stolen therefore costs only speed (two workers doing the
// same work, one of which loses at that transaction), never
// exactly-once. An adapter whose Backend does not implement Claimer is
// unaffected: workflow checks for it with a type assertion and otherwise
// lets every worker try everything, the deciding transaction choosing
// between them.
//
// An adapter that implements it must keep these rules:
//
//   - Claim gives holder each key that no other holder holds now (a key
//     never claimed, released, or whose claim has expired) and reports,
//     per key in order, whether holder holds it now. A key holder already
//     holds is kept and its expiry extended. Two concurrent Claims of one
//     key by different holders never both report it held (until the
//     first one's claim expires or is released).
//   - A claim expires ttl after the Claim that took it, by one clock the
//     adapter chooses for all its Backend values (the database server's,
//     say); after that another holder may take it. ttl must be positive.
//   - Release gives back holder's claims on keys; a key another holder
//     holds, or nobody holds, is left as it is.
//   - Claims need not be durable: a crash or restart of the store may
//     forget them all. They are not part of any export.
//   - Claim and Release do not wait for Update transactions, and an
//     Update never waits for them beyond what the store itself needs.
//
// Keys are non-empty strings of at most 512 bytes without NUL; holders
// are non-empty strings of at most 128 bytes without NUL. A Claim or
// Release with no keys does nothing.
type Claimer interface {
	Claim(ctx context.Context, holder string, keys []string, ttl time.Duration) ([]bool, error)
	Release(ctx context.Context, holder string, keys []string) error
}
