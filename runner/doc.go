// Package runner runs a workflow.Store for one owner: the user writes the
// owner (Plan and Dispatch, and optionally a ReceiptLookup, a BatchOwner,
// an Observer or a Canceller) and Run is the engine around it.
//
// On start Run recovers what a crash left (ReconcilePrepared, Redispatch
// of attempts that provably never reached the owner, late receipts, the
// receipt-backed pass). Then it loops; each pass consumes the retries that
// are due, dispatches a batch, reaches the work of cancelled runs through
// the owner's Canceller, asks the owner's Observer about admitted work,
// settles attempts past their timeout and reports stuck ones. After an
// idle pass it waits for the next due retry or a backoff, unless work
// arrives first: work added through the same Store wakes it at once, and
// on PostgreSQL so does work any process adds to the same schema.
//
// # Guarantees
//
//   - Nothing is run again blindly. A pass that fails part-way keeps the
//     attempts it planned or handed to its owner and finishes each on a
//     later pass from what the store says; an ambiguous mutation is left
//     for reconciliation (repair_required), never redispatched.
//   - Cancel is called before the signal is recorded
//     (MarkCancellationSignalled), so a runner stopped between the two
//     signals again on its next start; Cancel must be idempotent.
//   - Errors that may heal (busy, serialization, a lost connection, an
//     owner error, one run's authority change in an unowned runner) are
//     logged, counted and backed off from. Run stops only on what cannot
//     heal: a closed or foreign store, invalid options, a corrupt record,
//     or a changed authority of an owned runner (WithRun with an authority).
//   - Cancelling Run's context stops discovery at once; owner calls in
//     flight go on for up to the drain timeout and their receipts are
//     persisted. The returned Summary names what is left for the next start.
//
// # Caveats
//
//   - Start-up reconciliation is meant for a restart. Started while another
//     runner of the same store is admitting, it may mark that runner's
//     ambiguous mutating attempts repair_required; the receipt that runner
//     persists later admits them again.
//   - An owner with neither Canceller nor Observer cannot stop cancelled
//     work: its attempts are settled cancelled unsignalled, with a warning,
//     and their leases released while the work may still run.
//   - Other processes' work wakes a runner at once only on PostgreSQL;
//     elsewhere it is found at the next poll (WithPollInterval).
//
// Options set the logger (WithLogger), OpenTelemetry metrics and spans
// (WithMeterProvider, WithTracerProvider), the clock (WithClock), batch
// and concurrency sizes, timeouts and intervals; each documents its
// default. The repository's docs/runner.md describes every pass in full and
// lists every metric and span with its unit and attributes.
package runner
