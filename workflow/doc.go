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
// In batch mode (DispatchOptions.BatchSize above 1) a pass shares each of
// the three commits among a batch and stops where one at a time would
// stop. Each handoff write stores a fresh random holder token, and a batch
// that stops releases, fenced by that token, the handoffs it recorded and
// never offered to the owner, so they stay provably never dispatched. A
// crash during a batch's owner calls, before that release, leaves every
// attempt the batch handed off maybe dispatched (a plain Owner may have
// been called for only some of them; a BatchOwner was offered them all):
// the documented cost of batching. See Dispatch, "Batch mode".
//
// Each of the three commits is its own transaction. The handoff and the
// receipt decide on the records the step before committed, without reading
// them again: their transaction first expects those records unchanged
// (backend.Expect), so the decision is the one a fresh read would give, and
// when another transaction changed any of them (ErrChanged) the step reads
// them and decides again with the same code. On Postgres this makes the
// handoff and receipt transactions one round trip each.
//
// # Types and conventions
//
// The Store works on the backend's records and returns its own views of
// them (Run, Activation, Attempt, Lease, RetrySchedule, Event): times are
// time.Time in UTC with the zero time meaning "not set", durations are
// time.Duration, JSON documents are canonical json.RawMessage. Durable
// counters and index flags stay internal; RunSummary and
// AllowanceObservation report what a caller needs of them.
//
// Events are written through one payload struct per EventType (for
// example AttemptAdmittedPayload for EventAttemptAdmitted); Event.Decode
// returns an event's payload as that struct. Payload times and durations
// are stored as milliseconds (UnixMS, Millis).
//
// Calls take context.Context first and now time.Time last. A call with more
// than a few arguments takes a request struct (AllowanceIncrease,
// AuthorityTransfer, RepairRequest, RetryRequest) or an options struct.
//
// Authority: a call that can be made without an execution authority takes
// *Authority, nil meaning "none" (or, where the call says so, "use the
// run's stored authority"); the calls that exist to check or replace one
// (VerifyAuthority, CheckOwnerAdmission, TransferAuthority) take Authority
// values.
//
// Not found: every getter (GetRun, GetActivation, GetAttempt,
// GetRetrySchedule, DispatchIntent, DispatchReceipt, Authority, RunSummary)
// returns an error matching ErrNotFound when what it names does not exist
// (DispatchReceipt also while no receipt is committed). Authority returns
// nil, nil for an existing run without an authority.
//
// # Errors
//
// Every error a caller can cause matches one sentinel with errors.Is and
// leaves durable state unchanged. Storage errors are returned wrapped as the
// backend produced them (backend.ErrClosed, backend.ErrBusy, ...).
//
//	condition                                              sentinel                     in a Dispatch summary
//	bad id, time, limit, policy, JSON (invalid, dup keys)   ErrInvalidInput              batch fails before any work
//	nil or typed-nil Owner / ReceiptLookup, zero time.Time  ErrInvalidInput              batch fails before any work
//	canonical JSON > MaxJSONBytes (owner: MaxOwnerJSONBytes) ErrTooLarge (+ErrInvalidInput) pass stops (a Plan's intent: +ErrOwner)
//	JSON > MaxJSONDepth deep (owner: MaxOwnerJSONDepth)     ErrInvalidInput              pass stops (a Plan's intent: +ErrOwner)
//	owner's receipt/observation the store cannot keep       *UnstorableError: ErrOwner   OwnerFailed (batch) / batch fails; attempt repair_required
//	run, activation, attempt, schedule missing              ErrNotFound                  -
//	different fields/intent/receipt/schedule for an id      ErrConflict                  batch fails
//	second handoff of one identity                          ErrConflict                  Raced (another caller has it)
//	authority missing, stale, changed mid-batch             ErrStaleAuthority            pass stops (Stale names it; both modes)
//	authority changed during Redispatch/ReconcilePrepared   ErrStaleAuthority            - (the pass stops; attempt kept prepared)
//	run paused/cancelling/not running, group retiring,
//	  found by prepare's single-winner gate                 (PreparePending returns nil) Raced (as upstream)
//	  found at handoff (after prepare)                      ErrIneligible                Rejected (batch goes on)
//	retry cap at prepare                                    ErrIneligible                Rejected (batch goes on)
//	Handoff of a mutating attempt without handoff state     ErrIneligible                -
//	now at or after the run's deadline (now >= deadline)    ErrIneligible                Rejected (batch goes on)
//	retirement pending, downstream activation, policy       ErrIneligible                - (not discovered; at handoff: Rejected)
//	requeue of a retiring or retired fan-out member         ErrIneligible                -
//	run's node_execution_cap reached                        ErrNodeAllowanceExhausted    Exhausted (+ one event per run)
//	root's tree-wide cap reached                            ErrRootAllowanceExhausted    Exhausted (+ one event per run)
//	concurrency_cap active attempts (checked last)          ErrConcurrencyCapacity       Raced
//	resource leased incompatibly                            ErrResourceConflict          Raced
//	already taken by another dispatcher                     (PreparePending returns nil) Raced
//	Owner.Plan/Dispatch, ReceiptLookup or fault hook error  ErrOwner (wraps the cause)   pass stops (batch: OwnerFailed, Unoffered)
//	batch release of a handoff a recovery pass took over    ErrConflict                  OwnerFailed (left recorded)
//	Observer error or invalid observation (receipt pass)    ErrOwner (wraps the cause)   - (ReceiptOutcome.Err; others applied)
//	SettleCancelledUnobserved without cancellation/signal   ErrIneligible                -
//	stored intent fails its checksum (DispatchIntent)       ErrCorrupt                   -
//	allowance increase: stored cap is not the expected one  ErrConflict                  -
//	prune of a run that may still change, or of a live tree ErrIneligible                -
//	cancellation of a completed or failed run (one run)     ErrIneligible                -
//	timeout of an attempt not admitted/running, or not due  ErrIneligible                -
//	attempt timeout or stuck age outside its bounds         ErrInvalidInput              -
//
// # JSON limits
//
// Every JSON document is checked in canonical form before anything is
// written. Documents kept only in their own record (inputs, metadata,
// observation detail) may use MaxJSONBytes and MaxJSONDepth. Owner JSON,
// which an event also carries (intents, receipts, outputs, child targets),
// is held to MaxOwnerJSONBytes and MaxOwnerJSONDepth, the document limits
// minus the largest event envelope (MaxEnvelopeBytes, MaxEnvelopeDepth), so
// every accepted document fits every event that carries it and no write
// fails on the event it needs. An owner's value that cannot be stored (a
// receipt, or an Observer's output or detail, that is missing, invalid,
// too large or too deep) settles its attempt as repair_required once, with
// an attempt_repair_required event recording the limits, the size and the
// SHA-256 of the value: see UnstorableError. The same value passed to
// PersistReceipt or ApplyObservation directly is refused, state unchanged.
//
// # Boundaries
//
// Every page or batch limit (Dispatch, ReconcilePrepared, Redispatch,
// ReconcileReceiptBacked, Events, Attempts, ActiveAttempts, ActiveLeases,
// StuckAttempts, TimedOutAttempts)
// takes 0 as DefaultPageLimit and 1 to MaxPageLimit as given; a negative
// limit or one above MaxPageLimit is ErrInvalidInput. Zero caps and a nil
// RetryCap of a run's RunLimits take the defaults (see DefaultRetryCap), and
// those of a child run's RunLimits inherit the parent's; RetryCap(0) is
// stored as 0 (never retry). WorkCounts takes a bound of 0
// (DefaultWorkBound) to MaxWorkBound; another bound is ErrInvalidInput.
//
// A run's wall-clock deadline is exclusive at the millisecond: from the
// deadline millisecond on (now >= deadline) no attempt is prepared (pending
// or low-level), no activation added and no child run created, each
// refused with ErrIneligible; one millisecond earlier they are accepted.
//
// Arguments a call cannot work without are validated before any write and
// any owner call: a nil Owner, an interface holding a nil pointer (a typed
// nil Owner or ReceiptLookup), the zero time.Time for now, and nil or
// empty JSON where JSON is required are ErrInvalidInput. Optional pointers
// (*Authority, a nil ReceiptLookup, a zero Deadline) mean
// "none". New panics on a nil backend: that is a programming error.
//
// # Decisions beyond upstream
//
//   - Discovery scans only admissible activations (an index the store keeps):
//     paused, cancelling, failed and exhausted runs, retiring fan-out groups
//     and activations rejected for a durable reason do not hold the first
//     places of a scan; a run without concurrency room is skipped after one
//     activation reported raced, unless an earlier check (deadline, retry
//     cap, allowance) refuses that activation first.
//   - Discovery is bounded: a pass reads a constant multiple of its limit,
//     and consecutive passes over all runs of one Store resume where the
//     previous one stopped, so full runs delay later work but never hide it.
//   - The never-dispatched proof is used: a prepared attempt whose handoff is
//     pending is left prepared by ReconcilePrepared and may be redispatched
//     with the same identity; an ambiguous one asks the owner's ReceiptLookup
//     first. A late receipt admits a repair_required attempt whose handoff
//     was recorded.
//   - Retry consumption and RetryFailedNode accept a running run as well as
//     a failed one (upstream requires failed): a sibling's retry may have
//     requeued the run, and requiring failed would leave its other failed
//     activations' schedules unconsumable (and the run open) until the run
//     failed again, which it may never do. An explicit retry supersedes a
//     pending schedule, so no schedule ever requeues twice.
//   - RequestCancellation accepts a repair_required run (upstream: running
//     or paused only): the intent stops new admissions at once and the
//     repair that resolves the ambiguous attempt then finalises the run as
//     cancelled, so an operator need not resolve the repair first and then
//     race the run's return to running. A completed or failed run is still
//     refused.
//   - A run found paused or cancelling, or a member's group found retiring,
//     by prepare's single-winner gate is reported Raced, as upstream
//     (prepare returns None): the gate creates nothing and cannot tell this
//     from another dispatcher's win, and such work leaves discovery anyway.
//     Found at handoff, after prepare, it is Rejected and the attempt stays
//     provably never dispatched.
//   - Handoff refuses (ErrIneligible) a mutating attempt without handoff
//     state (low-level prepare), which upstream lets through by updating
//     nothing: with no 0→1 flip, two callers could both call the owner for
//     one mutation. A read-only one is let through unchanged, as upstream.
//   - A failed run with an automatic retry pending is not failed for good:
//     RunSummary.NextRetry names its earliest schedule ("failed, retry due
//     at T"), and wfstore inspect shows it.
//   - Retry visibility and stuck schedules: a RetryableFailure always
//     settles its attempt; when it schedules nothing, ObservationResult's
//     NotScheduled and an automatic_retry_not_scheduled event give the
//     reason (a different schedule for the attempt is kept:
//     schedule_exists). ConsumeNextDueRetry reads and consumes in one
//     transaction, discards due schedules that can never be consumed
//     (automatic_retry_discarded) and passes over those whose attempt has
//     not settled. A schedule consumes only a failed attempt: an abandoned
//     mutation is retried only explicitly. RunLimits.RetryCap(0) means
//     never retry.
//   - Repair: after an abandon or a confirmed failure the run goes to failed
//     (so RetryFailedNode applies); after a confirmed success or
//     cancellation it goes back to running.
//   - Fan-out: MaxConcurrency bounds the members pending or running,
//     retried members included (a member requeued into a full group waits
//     and is promoted in index order). A member's terminal failure settles
//     by the group's policy: wait-all (the default, since it never
//     interrupts work an owner holds) fails the run once every member has
//     settled, and its fan_out_failed names only members failed for good (a
//     member with an automatic retry pending may still succeed); fail-fast, in the failing transaction, moves the siblings'
//     active attempts to sibling_cancelling, cancels unstarted siblings
//     (and prepared attempts that provably never reached their owner),
//     retires the group and fails the run. A failure with an automatic
//     retry scheduled fails the run as for any activation. Members of a
//     retiring or retired group are not requeued (ErrIneligible).
//   - IncreaseAllowance raises one run's node execution cap by a fenced
//     compare-and-set; a child's increase never raises its root's tree-wide
//     allowance. Work an exhaustion took out of discovery is discoverable
//     again once the run has room. The run keeps at most one
//     execution_allowance_exhausted event ever: exhausting a raised cap
//     parks the run's work again (Dispatch reports it Exhausted) and writes
//     no second event. Work added to a run (or a fan-out member created or
//     promoted) while its exhaustion holds enters discovery anyway: the
//     next pass that meets it, over all runs or over that run, reports it
//     Exhausted and parks it, so no blocked work is in no summary list.
//   - ReconcileReceiptBacked also selects sibling_cancelling attempts, and
//     asks the observer about attempts of runs whose cancellation is
//     requested too: the owner's word decides whether the work still runs,
//     and work that finished anyway settles as cancelled with what the
//     owner observed on its event. One attempt's failing or invalid
//     observation is reported for that attempt alone and the others are
//     applied; concurrent passes of one Store ask about different attempts.
//   - A run completes: after every settlement, whatever path made it (an
//     observation of any kind, a repair, a fan-out member or retirement, a
//     discarded retry schedule), a running or paused run with nothing open
//     any more (no pending, waiting or running activation, no active or
//     repair_required attempt, no retry schedule) becomes completed with
//     run_completed in the same transaction, and takes no new work. The
//     final status does not depend on the order of observations: a run
//     whose last open activation its owner reports cancelled completes too,
//     and one with an activation failed for good (left behind while a
//     sibling's retry or a repair made the run running) ends failed instead,
//     as it would had that failure come last.
//     Completion reads nothing while an attempt is active and checks one
//     indexed admissible activation before any scan; the scan that remains
//     (for a run with no admissible work and nothing active) is bounded by
//     the run's activations.
//   - A cancelling run finalises only once the child runs it started are
//     completed, failed or cancelled; a child's settlement finalises its
//     cancelling parent chain in the same transaction. RequestCancellation
//     cancels one run and, as upstream, refuses a failed one;
//     RequestTreeCancellation cancels a root and every linked run in one
//     transaction. It accepts a failed root, and gives every failed run of
//     the tree the intent while keeping it failed and deleting its retry
//     schedules in the same transaction, so nothing in the tree can retry
//     and the failed runs become prunable once their active attempts settle.
//   - Retention: Prune deletes the events, attempts, leases and retry
//     schedules of runs that can never change on their own (completed,
//     cancelled, or failed with no retry schedule and no active attempt)
//     whose whole tree is such, in transactions of bounded size, and keeps
//     the run record and activations with one run_pruned event. A failed
//     run with a schedule or an active attempt is refused: tree-cancel its
//     root to stop its retries, then prune it once its attempts settle.
//     A prune interrupted part-way leaves the run marked
//     (run_prune_started), which Verify accepts and a rerun finishes with
//     the full count.
package workflow
