// Package workflow is wfstore's Store: durable, exactly-once admission of
// workflow activations to external owners, over any backend.Backend.
//
// Every decision lives here; backends only store records. Time is always an
// argument (now time.Time), never read inside the logic. Owners and fault
// hooks are called outside transactions.
//
// # Admission
//
// Dispatch discovers pending activations and, for each, asks the Owner for a
// Plan, commits the attempt's intent (PreparePending, the single-winner
// gate), records the handoff as a 0→1 compare-and-set (only the caller that
// flipped it may call the owner), calls Owner.Dispatch, and commits the
// receipt. After a crash the handoff state tells "provably never
// dispatched" (HandoffPending) from "maybe dispatched" (HandoffRecorded);
// ReconcilePrepared and Redispatch use it.
//
// Each of the three commits is its own transaction. The handoff and the
// receipt decide on the records the step before committed, without reading
// them again: their transaction first expects those records unchanged
// (backend.Expect), so the decision is the one a fresh read would give, and
// when another transaction changed any of them (ErrChanged) the step reads
// them and decides again with the same code. On Postgres this makes the
// handoff and receipt transactions one round trip each.
//
// # Errors
//
// Every error a caller can cause matches one sentinel with errors.Is and
// leaves durable state unchanged. Storage errors are returned wrapped as the
// backend produced them (backend.ErrClosed, backend.ErrBusy, ...).
//
//	condition                                              sentinel                     in a Dispatch summary
//	bad id, time, limit, policy, JSON (invalid, dup keys)   ErrInvalidInput              batch fails before any work
//	canonical JSON > 1 MiB                                  ErrTooLarge (+ErrInvalidInput) batch fails (intent from Plan)
//	run, activation, attempt, schedule missing              ErrNotFound                  -
//	different fields/intent/receipt/schedule for an id      ErrConflict                  batch fails
//	second handoff of one identity                          ErrConflict                  -
//	authority missing, stale, changed mid-batch             ErrStaleAuthority            batch fails
//	run paused/cancelling/not running, deadline, retry cap  ErrIneligible                Rejected (batch goes on)
//	retirement pending, downstream activation, policy       ErrIneligible                - (prepare: not discovered)
//	requeue of a retiring or retired fan-out member         ErrIneligible                -
//	run's node_execution_cap reached                        ErrNodeAllowanceExhausted    Exhausted (+ one event per run)
//	root's tree-wide cap reached                            ErrRootAllowanceExhausted    Exhausted (+ one event per run)
//	concurrency_cap active attempts                         ErrConcurrencyCapacity       Raced
//	resource leased incompatibly                            ErrResourceConflict          Raced
//	already taken by another dispatcher                     (PreparePending returns nil) Raced
//	Owner.Plan/Dispatch, ReceiptLookup or fault hook error  ErrOwner (wraps the cause)   batch fails
//
// # Decisions beyond upstream
//
//   - Discovery scans only admissible activations (Activation.Admissible):
//     paused, cancelling, failed and exhausted runs, retiring fan-out groups
//     and activations rejected for a durable reason do not hold the first
//     places of a scan; a run without concurrency room is skipped after one
//     activation reported raced.
//   - The never-dispatched proof is used: a prepared attempt whose handoff is
//     pending is left prepared by ReconcilePrepared and may be redispatched
//     with the same identity; an ambiguous one asks the owner's ReceiptLookup
//     first. A late receipt admits a repair_required attempt whose handoff
//     was recorded.
//   - Retry consumption accepts a running run as well as a failed one (a
//     sibling's retry may have requeued it); an explicit retry supersedes a
//     pending schedule, so no schedule ever requeues twice.
//   - Repair: after an abandon or a confirmed failure the run goes to failed
//     (so RetryFailedNode applies); after a confirmed success or
//     cancellation it goes back to running.
//   - Fan-out: MaxConcurrency bounds the members pending or running,
//     retried members included (a member requeued into a full group waits
//     and is promoted in index order). A member's terminal failure settles
//     by the group's policy: wait-all (the default, since it never
//     interrupts work an owner holds) fails the run once every member has
//     settled; fail-fast, in the failing transaction, moves the siblings'
//     active attempts to sibling_cancelling, cancels unstarted siblings
//     (and prepared attempts that provably never reached their owner),
//     retires the group and fails the run. A failure with an automatic
//     retry scheduled fails the run as for any activation. Members of a
//     retiring or retired group are not requeued (ErrIneligible).
package workflow
