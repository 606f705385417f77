package backend

import (
	"context"
	"errors"
	"fmt"
)

// Sentinel errors. Adapters wrap them (fmt.Errorf("...: %w", ErrNotFound)).
var (
	// ErrNotFound: a Replace or Delete named a key that does not exist, or a
	// helper such as GetRun found no record.
	ErrNotFound = errors.New("backend: record not found")
	// ErrConflict: an Insert named a primary key (or unique field) that exists.
	ErrConflict = errors.New("backend: record already exists")
	// ErrClosed: the Backend was closed before or during the call.
	ErrClosed = errors.New("backend: store is closed")
	// ErrSchemaVersion: the store was written by a schema version this adapter
	// does not know. Opening such a store writes nothing to it.
	ErrSchemaVersion = errors.New("backend: unsupported schema version")
	// ErrForeignStore: the file or schema is not empty and was not created by
	// wfstore. Opening it writes nothing to it.
	ErrForeignStore = errors.New("backend: not a wfstore store")
	// ErrBusy: the store stayed locked or kept reporting transient
	// serialization conflicts through every re-run the adapter allows. The
	// transaction did not commit.
	ErrBusy = errors.New("backend: store busy, transaction re-runs exhausted")
	// ErrUnsupported: a write named an operation the record kind does not
	// accept (see the package documentation's table).
	ErrUnsupported = errors.New("backend: unsupported operation for record kind")
	// ErrChanged: an Expect write found the record missing or different from
	// the expected one.
	ErrChanged = errors.New("backend: record is not the expected one")
)

// SchemaVersionError reports the version found in a store this adapter
// refuses. It matches ErrSchemaVersion with errors.Is.
type SchemaVersionError struct {
	Found     int64
	Supported int64
}

func (e *SchemaVersionError) Error() string {
	return fmt.Sprintf("backend: store schema version %d is not supported (this build supports %d)", e.Found, e.Supported)
}

// Is reports whether target is ErrSchemaVersion.
func (e *SchemaVersionError) Is(target error) bool { return target == ErrSchemaVersion }

// Capabilities declares what an adapter honours beyond one Backend value used
// from many goroutines, which every adapter must support. The conformance
// suite skips a case only when a capability it needs is false, and says so.
type Capabilities struct {
	// MultiInstance: several separately opened Backend values over one store,
	// in one process, are serializable with each other.
	MultiInstance bool
	// MultiProcess: Backend values opened by different OS processes over one
	// store are serializable with each other.
	MultiProcess bool
}

// Info describes an adapter for reports and benchmarks.
type Info struct {
	// Name is the adapter's short name ("sqlite", "postgres", "bolt").
	Name string
	// Version is the underlying engine or driver version.
	Version string
	// Settings lists durability and isolation settings in force, for example
	// "synchronous": "FULL".
	Settings map[string]string
}

// Backend is one opened store. Every method is safe for concurrent use.
type Backend interface {
	// View runs fn against one consistent snapshot of the store. fn must not
	// retain rtx after it returns. The error fn returns is returned as is.
	View(ctx context.Context, fn func(rtx ReadTx) error) error

	// Update runs fn in a read-write transaction that is serializable with
	// every other Update on the same store (see Capabilities for the scope).
	// If fn returns nil the transaction commits durably (in the adapter's
	// default mode) before Update returns nil; if fn returns an error or
	// panics, nothing it wrote is visible to anyone, the error is returned
	// as is (a panic is re-raised after rollback). The adapter may run fn
	// again after a transient conflict, so fn must have no effects outside
	// tx; it never returns a transient conflict to the caller while re-runs
	// remain and ctx allows, and returns an error wrapping ErrBusy when they
	// run out. When any call on tx fails, fn must return an error: what a
	// failed Apply left behind is unspecified, and an adapter may refuse to
	// commit a transaction in which a storage call failed.
	Update(ctx context.Context, fn func(tx Tx) error) error

	// Capabilities reports what this adapter honours.
	Capabilities() Capabilities

	// Info describes the adapter and its settings.
	Info() Info

	// Close releases the store. Calls after Close fail with ErrClosed (a
	// second Close returns nil or ErrClosed). Close does not close a handle
	// the caller brought.
	Close() error
}

// ReadTx reads one consistent snapshot. Inside Update it also sees the
// transaction's own earlier writes. Every scan with Limit <= 0 returns no
// rows.
type ReadTx interface {
	// Load reads every record named by l. Keys that do not exist are absent
	// from the result's maps; that is not an error. Found.Resources holds, for
	// each named ResourceRef, every unreleased lease on that resource in that
	// run, in LeaseKey order (a resource without one may be absent or map
	// to an empty slice).
	Load(ctx context.Context, l Lookup) (Found, error)

	// PendingActivations returns admissible activations (Activation.Admissible)
	// in the order and bounds of q.
	PendingActivations(ctx context.Context, q PendingQuery) ([]Activation, error)

	// Activations returns a run's activations of any status in key order.
	Activations(ctx context.Context, q ActivationQuery) ([]Activation, error)

	// Attempts returns attempts in the order and bounds of q.
	Attempts(ctx context.Context, q AttemptQuery) ([]Attempt, error)

	// CountAttempts returns the number of the run's attempts (any status),
	// reading at most limit of them: the result is min(count, limit).
	// limit 0 returns 0.
	CountAttempts(ctx context.Context, runID string, limit int) (int, error)

	// ChildRuns returns links whose RootRunID is q.RootRunID, ordered by
	// (CreatedMS, ChildRunID).
	ChildRuns(ctx context.Context, q ChildRunQuery) ([]RunLink, error)

	// DueSchedules returns a run's retry schedules with DueMS <= q.DueBy,
	// ordered by (DueMS, NodeID, ActivationID).
	DueSchedules(ctx context.Context, q ScheduleQuery) ([]RetrySchedule, error)

	// Events returns a run's events with Seq > q.AfterSeq in Seq order.
	Events(ctx context.Context, q EventQuery) ([]Event, error)

	// ActiveLeases returns a run's unreleased leases in LeaseKey order
	// (with q.IncludeReleased, its released leases as well).
	ActiveLeases(ctx context.Context, q LeaseQuery) ([]Lease, error)

	// Runs returns at most q.Limit runs with id > q.After (bytewise), in id
	// order, restricted to q.Status when it is set. It is the only way to
	// enumerate the runs of a store (operator listings, verification,
	// export); a caller pages by passing the last id returned as After.
	Runs(ctx context.Context, q RunQuery) ([]Run, error)
}

// Tx is a read-write transaction.
type Tx interface {
	ReadTx
	// Apply applies writes in order. Later reads in the same transaction see
	// them. On the first failing write Apply returns its error (ErrConflict,
	// ErrNotFound, ErrChanged, ErrUnsupported, or a storage error); the
	// caller is expected to return an error from fn, which rolls the whole
	// transaction back.
	//
	// An adapter that pays per round trip may defer writes: send them with
	// the next read, or with the commit when fn returns nil. A deferred write
	// that fails then fails that read, or Update itself (with the same error
	// kinds, and nothing committed), instead of Apply. The workflow layer
	// ends every transaction with one Apply, so deferral saves a round trip
	// per transaction.
	Apply(ctx context.Context, writes ...Write) error
}

// Op is a write operation.
type Op uint8

// Write operations. See the package documentation for which record kinds
// accept which.
const (
	// Insert creates a record; ErrConflict if its key exists.
	Insert Op = iota + 1
	// Replace overwrites every field of an existing record; ErrNotFound if
	// its key does not exist, ErrConflict if it would give an Attempt the
	// Identity of another attempt. Key fields identify the record.
	Replace
	// Delete removes a record named by its key fields; ErrNotFound if absent.
	Delete
	// Expect writes nothing: it fails with ErrChanged unless a record with
	// the key of the given one is stored (as of this point of the
	// transaction) and equals it in every field, byte slices and lists
	// compared exactly (nil differs from empty). A transaction can so decide
	// on records an earlier transaction read or wrote, without reading them
	// again: if they are unchanged when it commits, its decision is the one
	// it would have made reading them, and the serializability of Update
	// covers the check. An adapter that pays per round trip defers it like
	// any write, so an Update of Expects and writes alone costs it one round
	// trip.
	Expect
)

func (o Op) String() string {
	switch o {
	case Insert:
		return "insert"
	case Replace:
		return "replace"
	case Delete:
		return "delete"
	case Expect:
		return "expect"
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}

// Write is one operation on one record. Record is a value of one of the
// record types (Run, RunLink, Activation, FanOutGroup, Attempt, Lease,
// RetrySchedule, Event), not a pointer.
type Write struct {
	Op     Op
	Record Record
}

// Record is implemented by the record types of this package only.
type Record interface {
	// Kind names the record kind ("run", "attempt", ...).
	Kind() string
}
