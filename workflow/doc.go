// Package workflow is wfstore's Store: durable, exactly-once admission of
// workflow activations to external owners, over any backend.Backend.
//
// A Store (New) keeps runs, their activations (one node of one run each)
// and the attempts made at them. The caller supplies an Owner, the code
// that does the work: Dispatch asks it for a Plan, commits the attempt's
// intent, records the handoff, calls Owner.Dispatch and commits the
// receipt, each step in its own transaction; ApplyObservation later records
// what the owner observed (succeeded, failed, paused, cancelled, unknown).
// The runner package drives this loop. In the repository, docs/concepts.md
// introduces the terms, docs/state-machine.md lists every transition, and
// each transition is one function of workflow/internal/state.
//
// # Guarantees
//
//   - Admission exactly once: however many dispatchers race, one attempt
//     per activation is prepared, and its intent is durable before the
//     owner is called.
//   - A provable handoff: after a crash, an attempt whose handoff is
//     pending was provably never dispatched and is redispatched with the
//     same identity (Engine.Redispatch); one whose handoff is recorded may have
//     been, and a mutating one is never retried blindly (Engine.ReconcilePrepared
//     makes it repair_required, resolved by Repair).
//   - Bounded execution: attempt allowances per run and per composition
//     tree, a concurrency cap, resource leases and a run deadline are
//     checked in the transaction that prepares an attempt; an execution
//     Authority fences stale engines (ErrStaleAuthority).
//   - Retry only where it is safe: a RetryPolicy (DecideRetry) decides
//     which failures may be retried; a schedule is durable and consumed
//     once (Engine.ConsumeNextDueRetry).
//   - Every change appends its event in the same transaction (Events,
//     event.Event.Decode), and a run completes in the transaction that settles
//     its last open work.
//
// # Conventions
//
// Calls take context.Context first and now time.Time last: the logic never
// reads a clock. Times are stored as unix milliseconds, JSON documents in
// canonical form within MaxJSONBytes (MaxOwnerJSONBytes for what an owner
// returns). Every error a caller can cause matches one sentinel with
// errors.Is (ErrInvalidInput, ErrNotFound, ErrConflict, ErrIneligible,
// ErrStaleAuthority, ErrNodeAllowanceExhausted, ...) and leaves durable
// state unchanged; storage errors are returned as the backend produced
// them. Every listing takes a query with an After Cursor and a Limit (0 is
// DefaultPageLimit, at most MaxPageLimit) and returns a Page whose Next is
// empty at the end. The repository's docs/errors.md has the full table.
//
// # Caveats
//
//   - Owners are called outside transactions. A read-only attempt may be
//     dispatched again with the same identity after a crash, so an owner
//     uses the dispatch identity as its idempotency key.
//   - In batch mode (DispatchOptions.BatchSize above 1) a crash during the
//     owner calls leaves every attempt of the batch maybe dispatched.
//   - An owner's receipt or output the store cannot keep (invalid, too
//     large) settles its attempt as repair_required, once (UnstorableError).
//   - New panics on a nil backend.
package workflow
