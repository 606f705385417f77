package main

// The transitions table: the single source of docs/state-machine.md's
// transition tables and of the diagrams beside it. When a transition is
// added to or removed from workflow/, change it here and run
// `go run ./tools/statediagram`; the tests fail until both are regenerated.

// start names the pseudo-state a record is created from.
const start = "(new)"

// Transition is one status change of one record kind.
type Transition struct {
	From  []string // start for a record being created
	To    string
	Event string   // the event appended in the same transaction; "" when none
	Ops   []string // the operations that cause it, as drawn on the arrow
	Note  string   // markdown: when exactly, in the table only
}

// Machine is the statuses and transitions of one record kind.
type Machine struct {
	Name        string // file and section name: run, activation, attempt, handoff
	Title       string
	States      []string // in column order
	Transitions []Transition
}

var machines = []Machine{
	{
		Name:   "run",
		Title:  "Run status",
		States: []string{start, "running", "paused", "repair_required", "completed", "failed", "cancelled"},
		Transitions: []Transition{
			{From: []string{start}, To: "running", Event: "run_created", Ops: []string{"CreateRun", "CreateChildRun"},
				Note: "A child run is created from a prepared parent attempt, which is admitted in the same transaction."},
			{From: []string{"running"}, To: "paused", Event: "run_paused", Ops: []string{"PauseRun"}},
			{From: []string{"running"}, To: "paused", Event: "attempt_paused", Ops: []string{"ApplyObservation"},
				Note: "The owner reported an attempt paused; its activation is pending again."},
			{From: []string{"paused"}, To: "running", Event: "run_resumed", Ops: []string{"ResumeRun"},
				Note: "Refused once cancellation is requested."},
			{From: []string{"running", "paused"}, To: "completed", Event: "run_completed", Ops: []string{"any settlement"},
				Note: "After every settlement (an observation, a repair, a fan-out member, a discarded retry schedule), once nothing of the run is open: no pending, waiting or running activation, no active or repair_required attempt, no retry schedule, and no activation failed for good."},
			{From: []string{"running", "paused"}, To: "failed", Event: "attempt_failed", Ops: []string{"ApplyObservation", "SettleTimedOut"},
				Note: "An activation failed (a read-only timeout records `attempt_timed_out`). A wait-all fan-out member fails the run only once every member has settled (`fan_out_failed`); a fail-fast member fails it at once (`fan_out_failed`). The run fails even when a retry is scheduled: consuming the retry makes it running again."},
			{From: []string{"running", "paused"}, To: "failed", Event: "", Ops: []string{"any settlement"},
				Note: "The completion check finds nothing open but an activation failed for good (a sibling's retry or a repair had made the run running): the run ends failed, as if that failure had come last. The settlement's own event is the record."},
			{From: []string{"running", "paused", "failed"}, To: "repair_required", Event: "attempt_repair_required",
				Ops:  []string{"ApplyObservation", "SettleTimedOut", "ReconcilePrepared", "Dispatch"},
				Note: "A mutating attempt's outcome became unknown: an `unknown` observation or a timeout (any run status), a recorded handoff with no receipt found at recovery, an owner's cancellation that cannot be confirmed (`SettleOrphanedCancellation`), or an owner value the store cannot keep (receipt or observation, read-only work too; running or paused runs only)."},
			{From: []string{"repair_required"}, To: "running", Event: "attempt_repaired", Ops: []string{"Repair"},
				Note: "Confirm succeeded or confirm cancelled, once no repair_required attempt is left. A late receipt for a repair_required attempt whose handoff was recorded (`attempt_admitted`), or a late settling observation of a timed-out one (`attempt_observed_after_timeout`), does the same."},
			{From: []string{"repair_required"}, To: "failed", Event: "attempt_repaired", Ops: []string{"Repair"},
				Note: "Confirm failed or abandon, once no repair_required attempt is left."},
			{From: []string{"running", "paused", "repair_required"}, To: "cancelled", Event: "run_cancelled",
				Ops:  []string{"RequestCancellation", "any settlement"},
				Note: "Cancellation is requested (`cancellation_requested`, once, never cleared) and the run is quiescent: no active or repair_required attempt and every child run it started ended. It happens in the request's own transaction when nothing is active, otherwise in the transaction that settles the last attempt (`ApplyObservation`, `Repair`, `CancelNeverDispatched`, `SettleCancelledUnobserved`, `SettleOrphanedCancellation`) or ends the last child run. `RequestTreeCancellation` does the same for a whole tree; a failed run of the tree keeps its status and loses its retry schedules."},
			{From: []string{"failed"}, To: "running", Event: "automatic_retry_consumed", Ops: []string{"ConsumeNextDueRetry"},
				Note: "A due retry schedule is consumed: the failed activation is pending again."},
			{From: []string{"failed"}, To: "running", Event: "node_retry_requested", Ops: []string{"RetryFailedNode"},
				Note: "An explicit retry of a failed or abandoned latest attempt, within the retry cap, before any successor exists."},
		},
	},
	{
		Name:   "activation",
		Title:  "Activation status",
		States: []string{start, "waiting", "pending", "running", "completed", "failed", "cancelled"},
		Transitions: []Transition{
			{From: []string{start}, To: "pending", Event: "activation_created", Ops: []string{"AddActivation", "AddFanOut", "ApplyObservation"},
				Note: "`ApplyObservation` adds the successors a `succeeded` observation carries, in its transaction. Fan-out members up to the group's `MaxConcurrency` start pending."},
			{From: []string{start}, To: "waiting", Event: "activation_waiting", Ops: []string{"AddFanOut", "ApplyObservation"},
				Note: "Fan-out members beyond `MaxConcurrency` (a `succeeded` observation's `FanOuts` add groups in its transaction)."},
			{From: []string{"pending"}, To: "waiting", Event: "fan_in_waiting", Ops: []string{"AddFanOut", "ApplyObservation"},
				Note: "The controller of a group created with `FanIn` (pending, no attempt, not a member) waits for its members in the group's transaction; it is never dispatched."},
			{From: []string{"waiting"}, To: "completed", Event: "fan_in_settled", Ops: []string{"member settles"},
				Note: "A fan-in controller, in the transaction that settles its last member, when every member completed. Its output is `{\"members\":N}`; successors page the members' outputs with `FanOutMembers`."},
			{From: []string{"waiting"}, To: "failed", Event: "fan_in_settled", Ops: []string{"member settles"},
				Note: "A fan-in controller: wait-all, once every member settled with one failed for good (no automatic retry pending); fail-fast, in the transaction of the first terminal member failure."},
			{From: []string{"waiting"}, To: "cancelled", Event: "fan_in_settled", Ops: []string{"member settles", "SettleFanOutRetirement"},
				Note: "A fan-in controller whose members all settled, none failed and not all completed (cancelled or retired members). The run's cancellation cancels a waiting controller as any open activation."},
			{From: []string{start}, To: "waiting", Event: "activation_created", Ops: []string{"AddActivation", "ApplyObservation"},
				Note: "A join (`WaitFor`) some of whose activations are not completed; `OpenWaits` counts them. One whose activations have all completed starts pending; one added when one of them is already cancelled (or failed with no retry pending) is cancelled in the same transaction (`join_cancelled`)."},
			{From: []string{"waiting"}, To: "pending", Event: "fan_out_member_promoted", Ops: []string{"member settles"},
				Note: "A member of the group settled (observation, repair, cancellation): waiting members are promoted in index order into the freed places."},
			{From: []string{"waiting"}, To: "pending", Event: "join_released", Ops: []string{"last WaitFor completes"},
				Note: "The transaction that completes the last of a join's `WaitFor` activations (a `succeeded` observation, a repair confirming success) makes it pending and admissible; the event names that activation."},
			{From: []string{"waiting"}, To: "cancelled", Event: "join_cancelled", Ops: []string{"a WaitFor settles"},
				Note: "One of a join's `WaitFor` activations was cancelled, or failed with no automatic retry pending (judged at the end of the transaction, or when a stale schedule is discarded): the join is cancelled in the same transaction, the event naming that activation and its status. That activation can then not be retried by `RetryFailedNode`."},
			{From: []string{"pending"}, To: "running", Event: "attempt_prepared", Ops: []string{"Dispatch"},
				Note: "Admission's first transaction creates the attempt; the activation leaves discovery."},
			{From: []string{"running"}, To: "pending", Event: "attempt_paused", Ops: []string{"ApplyObservation"},
				Note: "A `paused` observation; the run is paused too."},
			{From: []string{"running"}, To: "completed", Event: "attempt_succeeded", Ops: []string{"ApplyObservation", "Repair"},
				Note: "A `succeeded` observation (with output and successors) or a repair confirming success (`attempt_repaired`)."},
			{From: []string{"running"}, To: "failed", Event: "attempt_failed", Ops: []string{"ApplyObservation", "SettleTimedOut", "Repair"},
				Note: "A `failed` or `retryable_failure` observation, a read-only timeout (`attempt_timed_out`), or a repair confirming failure or abandoning (`attempt_repaired`)."},
			{From: []string{"running"}, To: "cancelled", Event: "attempt_cancelled",
				Ops:  []string{"ApplyObservation", "CancelNeverDispatched", "SettleCancelledUnobserved", "Repair"},
				Note: "Its attempt settled as cancelled: a `cancelled` observation, any finished report while the run's cancellation is requested or the attempt is sibling_cancelling, a never-dispatched attempt, an owner that cannot report, `SettleOrphanedCancellation` (read-only), a fail-fast sibling's never-dispatched attempt (`fan_out_member_cancelled`), a repair confirming cancellation, or the run's cancellation finishing."},
			{From: []string{"waiting", "pending"}, To: "cancelled", Event: "cancellation_requested", Ops: []string{"RequestCancellation", "fail-fast"},
				Note: "Unstarted activations of a run whose cancellation is requested, in the request's transaction (no event of their own). A fail-fast member's failure cancels its unstarted siblings (`fan_out_member_cancelled`); `SettleFanOutRetirement` cancels a retired group's unstarted members (`fan_out_retired`)."},
			{From: []string{"failed"}, To: "pending", Event: "automatic_retry_consumed", Ops: []string{"ConsumeNextDueRetry", "RetryFailedNode"},
				Note: "A retry requeues the activation (`node_retry_requested` for the explicit one); the next `Dispatch` creates the next attempt."},
			{From: []string{"failed"}, To: "waiting", Event: "fan_out_member_waiting", Ops: []string{"ConsumeNextDueRetry", "RetryFailedNode"},
				Note: "A retried fan-out member whose group already has `MaxConcurrency` members pending or running waits for a place. Members of a retiring or retired group are not requeued."},
		},
	},
	{
		Name:  "attempt",
		Title: "Attempt status",
		States: []string{start, "prepared", "admitted", "running", "cancelling", "sibling_cancelling",
			"repair_required", "succeeded", "failed", "paused", "cancelled", "abandoned"},
		Transitions: []Transition{
			{From: []string{start}, To: "prepared", Event: "attempt_prepared", Ops: []string{"Dispatch"},
				Note: "Admission's first transaction: limits checked, leases taken (`resource_lease_acquired`), intent committed with handoff pending. `PrepareAttempt` (low level) prepares one without handoff state."},
			{From: []string{"prepared"}, To: "admitted", Event: "attempt_admitted", Ops: []string{"Dispatch", "Redispatch", "ReconcilePrepared"},
				Note: "The owner's receipt is committed (admission's third transaction; `PersistReceipt` at low level; a receipt found by the owner's `ReceiptLookup` at recovery). `CreateChildRun` admits the parent attempt with a synthetic receipt (`child_run_linked` too)."},
			{From: []string{"admitted"}, To: "running", Event: "", Ops: []string{"ApplyObservation"},
				Note: "A `running` observation; `admitted` moves it back. The status changes; no event is appended."},
			{From: []string{"running"}, To: "admitted", Event: "", Ops: []string{"ApplyObservation"},
				Note: "An `admitted` observation. No event is appended."},
			{From: []string{"prepared", "admitted", "running"}, To: "cancelling", Event: "attempt_cancellation_signalled", Ops: []string{"MarkCancellationSignalled"},
				Note: "The run's cancellation is requested and the owner's `Canceller.Cancel` returned. An `admitted` or `running` observation of a child run's parent attempt under cancellation does the same without an event: the parent waits for its child runs."},
			{From: []string{"prepared", "admitted", "running"}, To: "sibling_cancelling", Event: "attempt_sibling_cancelling", Ops: []string{"fail-fast"},
				Note: "A fail-fast fan-out sibling failed for good (`ApplyObservation`, `SettleTimedOut`). A prepared attempt that provably never reached its owner is cancelled instead."},
			{From: []string{"admitted", "running"}, To: "succeeded", Event: "attempt_succeeded", Ops: []string{"ApplyObservation"}},
			{From: []string{"admitted", "running"}, To: "failed", Event: "attempt_failed", Ops: []string{"ApplyObservation", "SettleTimedOut"},
				Note: "`failed` or `retryable_failure` (a retry may be scheduled in the same transaction: `automatic_retry_scheduled` or `automatic_retry_not_scheduled`); a read-only attempt past its timeout (`attempt_timed_out`)."},
			{From: []string{"admitted", "running"}, To: "paused", Event: "attempt_paused", Ops: []string{"ApplyObservation"}},
			{From: []string{"admitted", "running", "cancelling", "sibling_cancelling"}, To: "cancelled", Event: "attempt_cancelled",
				Ops:  []string{"ApplyObservation", "SettleCancelledUnobserved", "SettleOrphanedCancellation"},
				Note: "A `cancelled` observation, or any finished report while the run's cancellation is requested or the attempt is sibling_cancelling (the event records what the owner observed); an owner that cannot report; a read-only attempt whose owner is gone."},
			{From: []string{"prepared"}, To: "cancelled", Event: "attempt_cancelled", Ops: []string{"CancelNeverDispatched", "fail-fast"},
				Note: "Handoff pending and no receipt: provably never dispatched (reason `never_dispatched`). `SettleOrphanedCancellation` settles a read-only one the same way."},
			{From: []string{"prepared", "admitted", "running", "cancelling", "sibling_cancelling"}, To: "repair_required", Event: "attempt_repair_required",
				Ops:  []string{"ApplyObservation", "SettleTimedOut", "ReconcilePrepared", "Dispatch"},
				Note: "Mutating work whose outcome is unknown: an `unknown` observation, a timeout (`attempt_timed_out` too), a recorded handoff with no receipt at recovery (prepared), an owner gone during cancellation (`SettleOrphanedCancellation`). Either effect: an owner's receipt or observation the store cannot keep. Leases are kept."},
			{From: []string{"repair_required"}, To: "admitted", Event: "attempt_admitted", Ops: []string{"PersistReceipt", "ApplyObservation"},
				Note: "A receipt for an attempt whose handoff was recorded proves the owner accepted it. A settling observation of a timed-out attempt (`attempt_observed_after_timeout`) readmits it and settles it in the same transaction."},
			{From: []string{"repair_required"}, To: "succeeded", Event: "attempt_repaired", Ops: []string{"Repair"}, Note: "Confirm succeeded, with output."},
			{From: []string{"repair_required"}, To: "failed", Event: "attempt_repaired", Ops: []string{"Repair"}, Note: "Confirm failed."},
			{From: []string{"repair_required"}, To: "cancelled", Event: "attempt_repaired", Ops: []string{"Repair"}, Note: "Confirm cancelled."},
			{From: []string{"repair_required"}, To: "abandoned", Event: "attempt_repaired", Ops: []string{"Repair"},
				Note: "Abandon: the activation fails; only an explicit `RetryFailedNode` retries it."},
		},
	},
	{
		Name:   "handoff",
		Title:  "Attempt handoff",
		States: []string{start, "unknown", "pending", "recorded"},
		Transitions: []Transition{
			{From: []string{start}, To: "pending", Event: "attempt_prepared", Ops: []string{"Dispatch"},
				Note: "Intent committed; the owner is provably not called yet."},
			{From: []string{start}, To: "unknown", Event: "attempt_prepared", Ops: []string{"PrepareAttempt"},
				Note: "Low-level prepare: no never-dispatched proof, ever. Only read-only work is dispatched from it."},
			{From: []string{"pending"}, To: "recorded", Event: "dispatch_handed_off", Ops: []string{"Dispatch", "Redispatch"},
				Note: "Admission's second transaction; only the caller that flipped it calls the owner. A second flip is `ErrConflict`."},
			{From: []string{"recorded"}, To: "pending", Event: "dispatch_handoff_released", Ops: []string{"Dispatch"},
				Note: "A stopped batch gives back the handoffs it recorded and never offered to the owner (fenced by the holder token)."},
		},
	},
}
