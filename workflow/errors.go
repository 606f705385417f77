package workflow

import (
	"errors"
	"fmt"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/wftype"
	"github.com/wfstore/wfstore/workflow/internal/state"
)

// Sentinel errors. Every error a caller can cause wraps exactly one of these
// (check with errors.Is) and leaves durable state unchanged. Storage errors
// from the backend are wrapped as they are (backend.ErrClosed, ErrBusy, ...).
// The values are package wftype's, which the state core returns too.
var (
	// ErrInvalidInput: an argument failed validation (id, time, JSON, limit,
	// policy, a nil or typed-nil owner). Nothing was written.
	ErrInvalidInput = wftype.ErrInvalidInput
	// ErrTooLarge: a JSON document's canonical form exceeds its limit
	// (MaxJSONBytes, or MaxOwnerJSONBytes for owner JSON). As an argument
	// it also matches ErrInvalidInput; as an owner's value the Store could
	// not keep it is an *UnstorableError (see there).
	ErrTooLarge = wftype.ErrTooLarge
	// ErrNotFound: a named run, activation, attempt or schedule does not exist.
	ErrNotFound = wftype.ErrNotFound
	// ErrConflict: the request contradicts durable state for the same
	// identity (different intent, receipt, schedule or fields).
	ErrConflict = wftype.ErrConflict
	// ErrIneligible: the operation is not allowed in the current durable
	// state (status, cancellation, deadline, retry cap, cycle cap, retirement,
	// downstream activation, policy decision).
	ErrIneligible = wftype.ErrIneligible
	// ErrStaleAuthority: the run's execution authority is missing or differs
	// from the caller's (or from the batch's snapshot).
	ErrStaleAuthority = wftype.ErrStaleAuthority
	// ErrNodeAllowanceExhausted: the run's node_execution_cap is reached.
	ErrNodeAllowanceExhausted = wftype.ErrNodeAllowanceExhausted
	// ErrRootAllowanceExhausted: the composition root's tree-wide cap is reached.
	ErrRootAllowanceExhausted = wftype.ErrRootAllowanceExhausted
	// ErrConcurrencyCapacity: the run has concurrency_cap active attempts.
	ErrConcurrencyCapacity = wftype.ErrConcurrencyCapacity
	// ErrResourceConflict: a declared resource claim is leased incompatibly.
	ErrResourceConflict = wftype.ErrResourceConflict
	// ErrOwner: the owner's Plan or Dispatch (or a fault hook) failed; the
	// original error is wrapped too.
	ErrOwner = wftype.ErrOwner
	// ErrCorrupt: a stored record fails its own integrity check (a dispatch
	// intent that no longer matches its checksum). Nothing is written; the
	// record needs an operator.
	ErrCorrupt = wftype.ErrCorrupt
)

// InputError describes one rejected argument. It matches ErrInvalidInput
// (and ErrTooLarge when Oversized) with errors.Is.
type InputError struct {
	Field     string // which argument, e.g. "run id", "dispatch intent"
	Reason    string
	Oversized bool
	tooDeep   bool // JSON nested deeper than its limit
}

func (e *InputError) Error() string { return fmt.Sprintf("workflow: %s %s", e.Field, e.Reason) }

// Is matches ErrInvalidInput, and ErrTooLarge for oversized JSON.
func (e *InputError) Is(target error) bool {
	return target == ErrInvalidInput || (e.Oversized && target == ErrTooLarge)
}

func invalid(field, format string, args ...any) error {
	return &InputError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// StateError is an error caused by durable state: it wraps one sentinel
// (ErrIneligible, ErrConflict, ErrStaleAuthority, ErrNotFound, the allowance
// and capacity errors) and says what was found. It is package wftype's.
type StateError = wftype.StateError

func stateErr(kind error, format string, args ...any) error {
	return state.Errorf(kind, format, args...)
}

// notFoundFrom converts a backend.ErrNotFound into the workflow sentinel,
// leaving every other error as it is.
func notFoundFrom(err error, format string, args ...any) error {
	if errors.Is(err, backend.ErrNotFound) {
		return stateErr(ErrNotFound, format, args...)
	}
	return err
}

func isNotFound(err error) bool { return errors.Is(err, backend.ErrNotFound) }

func isIneligible(err error) bool { return errors.Is(err, ErrIneligible) }
