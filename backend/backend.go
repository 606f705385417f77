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
	// ErrChanged: an Expect write found the record missing or different from
	// the expected one.
	ErrChanged = errors.New("backend: record is not the expected one")
	// ErrOutcomeUnknown: the commit of an Update was sent and its answer
	// lost (the connection dropped, the cluster did not answer, ctx ended
	// during COMMIT), and the adapter could not learn whether it applied:
	// the transaction may or may not have committed. A caller must not run
	// it again blindly; it re-reads what the transaction would have
	// written and decides from that.
	ErrOutcomeUnknown = errors.New("backend: commit outcome unknown")
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

// Info describes an adapter for reports and benchmarks. Its JSON names
// are snake_case, as every report wfstore writes.
type Info struct {
	// Name is the adapter's short name ("sqlite", "postgres", "bolt").
	Name string `json:"name"`
	// Version is the underlying engine or driver version.
	Version string `json:"version"`
	// Settings lists durability and isolation settings in force, for example
	// "synchronous": "FULL".
	Settings map[string]string `json:"settings"`
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
	//
	// Group commit. An adapter over a single-writer store may run the fns
	// of concurrent Updates on one Backend one after another in one
	// physical transaction and commit them together. What it may do: fns
	// share a commit (and its fsync); fn may run on another goroutine than
	// its caller's (its error, or its panic re-raised in the caller's
	// goroutine, still goes to its own caller only); fn may be run again,
	// as after a transient conflict, when another fn of its group failed
	// after writing. What it must keep: each fn's writes commit or roll
	// back as a unit; a failing fn's writes (error or panic) never reach
	// the store and no other fn sees them; every other fn's writes commit
	// exactly once; Update returns nil only after the commit containing
	// fn's writes is durable; a fn's reads see the writes of the fns merged
	// before it in the same commit, which are serialized before it (so the
	// history stays serializable), and never part of another fn's writes;
	// ctx is honoured while the call waits for the writer. fn must not call
	// runtime.Goexit (t.FailNow): it may run on another caller's goroutine.
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
// transaction's own earlier writes.
//
// Every scan takes a query with the same two bounds: After, the position
// of the last row of the previous page in the scan's order (its zero value
// starts at the beginning), and Limit, the most rows returned (Limit <= 0
// returns no rows). A caller pages by passing the position of the last row
// it got as the next After. No record sits at a zero position: record times
// are after the unix epoch and event sequence numbers start at 1.
type ReadTx interface {
	// Load reads every record named by l. Keys that do not exist are absent
	// from the result's maps; that is not an error. Found.Resources holds, for
	// each named ResourceRef, every unreleased lease on that resource in that
	// run, in LeaseKey order (a resource without one may be absent or map
	// to an empty slice).
	Load(ctx context.Context, l Lookup) (Found, error)

	// AdmissibleActivations returns the activations in the admissible index
	// (Activation.Admissible) in the order and bounds of q.
	AdmissibleActivations(ctx context.Context, q AdmissibleQuery) ([]Activation, error)

	// Activations returns a run's activations of any status in key order.
	Activations(ctx context.Context, q ActivationQuery) ([]Activation, error)

	// Attempts returns attempts in the order and bounds of q.
	Attempts(ctx context.Context, q AttemptQuery) ([]Attempt, error)

	// CountAttempts returns the number of q.RunID's attempts (any status),
	// reading at most q.Limit of them: the result is min(count, q.Limit),
	// and 0 when q.Limit <= 0.
	CountAttempts(ctx context.Context, q AttemptCountQuery) (int, error)

	// ChildRuns returns links whose RootRunID is q.RootRunID, ordered by
	// (CreatedMS, ChildRunID).
	ChildRuns(ctx context.Context, q ChildRunQuery) ([]RunLink, error)

	// DueSchedules returns a run's retry schedules with DueMS <= q.DueBy,
	// ordered by (DueMS, NodeID, ActivationID).
	DueSchedules(ctx context.Context, q ScheduleQuery) ([]RetrySchedule, error)

	// Events returns a run's events in Seq order.
	Events(ctx context.Context, q EventQuery) ([]Event, error)

	// Leases returns a run's unreleased leases in LeaseKey order (with
	// q.IncludeReleased, its released leases as well).
	Leases(ctx context.Context, q LeaseQuery) ([]Lease, error)

	// Runs returns runs in id order (bytewise), restricted to q.Status when
	// it is set. It is the only way to enumerate the runs of a store
	// (operator listings, verification, export).
	Runs(ctx context.Context, q RunQuery) ([]Run, error)
}

// Tx is a read-write transaction.
type Tx interface {
	ReadTx
	// Apply applies c in the order Changes documents. Later reads in the
	// same transaction see its writes. On the first failing operation
	// Apply returns its error (ErrConflict, ErrNotFound, ErrChanged, or a
	// storage error); the caller is expected to return an error from fn,
	// which rolls the whole transaction back.
	//
	// An adapter that pays per round trip may defer writes: send them with
	// the next read, or with the commit when fn returns nil. A deferred
	// write that fails then fails that read, or Update itself (with the
	// same error kinds, and nothing committed), instead of Apply. The
	// workflow layer ends every transaction with one Apply, so deferral
	// saves a round trip per transaction.
	Apply(ctx context.Context, c Changes) error
}
