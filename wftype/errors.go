package wftype

import "errors"

// The sentinel errors of package workflow, defined here so that the Store
// and its state core return the same values: workflow.ErrConflict is
// ErrConflict. Package workflow documents when each is returned.
var (
	// ErrInvalidInput: an argument failed validation (id, time, JSON, limit,
	// policy, a nil or typed-nil owner). Nothing was written.
	ErrInvalidInput = errors.New("workflow: invalid input")
	// ErrTooLarge: a JSON document's canonical form exceeds its limit
	// (MaxJSONBytes, or MaxOwnerJSONBytes for owner JSON). As an argument
	// it also matches ErrInvalidInput; as an owner's value the Store could
	// not keep it is an *UnstorableError (see there).
	ErrTooLarge = errors.New("workflow: json too large")
	// ErrNotFound: a named run, activation, attempt or schedule does not exist.
	ErrNotFound = errors.New("workflow: not found")
	// ErrConflict: the request contradicts durable state for the same
	// identity (different intent, receipt, schedule or fields).
	ErrConflict = errors.New("workflow: conflicts with durable state")
	// ErrIneligible: the operation is not allowed in the current durable
	// state (status, cancellation, deadline, retry cap, cycle cap, retirement,
	// downstream activation, policy decision).
	ErrIneligible = errors.New("workflow: not eligible")
	// ErrStaleAuthority: the run's execution authority is missing or differs
	// from the caller's (or from the batch's snapshot).
	ErrStaleAuthority = errors.New("workflow: execution authority is stale or foreign")
	// ErrNodeAllowanceExhausted: the run's node_execution_cap is reached.
	ErrNodeAllowanceExhausted = errors.New("workflow: node execution allowance exhausted")
	// ErrRootAllowanceExhausted: the composition root's tree-wide cap is reached.
	ErrRootAllowanceExhausted = errors.New("workflow: root execution allowance exhausted")
	// ErrConcurrencyCapacity: the run has concurrency_cap active attempts.
	ErrConcurrencyCapacity = errors.New("workflow: concurrency capacity reached")
	// ErrResourceConflict: a declared resource claim is leased incompatibly.
	ErrResourceConflict = errors.New("workflow: resource already leased incompatibly")
	// ErrOwner: the owner's Plan or Dispatch (or a fault hook) failed; the
	// original error is wrapped too.
	ErrOwner = errors.New("workflow: owner call failed")
	// ErrCorrupt: a stored record fails its own integrity check (a dispatch
	// intent that no longer matches its checksum). Nothing is written; the
	// record needs an operator.
	ErrCorrupt = errors.New("workflow: stored record fails its integrity check")
)

// StateError is an error caused by durable state: it wraps one sentinel
// (ErrIneligible, ErrConflict, ErrStaleAuthority, ErrNotFound, the allowance
// and capacity errors) and says what was found.
type StateError struct {
	Kind   error  // the sentinel
	Detail string // human-readable cause, stable enough to log
}

func (e *StateError) Error() string { return e.Kind.Error() + ": " + e.Detail }

// Unwrap returns the sentinel.
func (e *StateError) Unwrap() error { return e.Kind }
