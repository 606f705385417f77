package backend

// Lookup names records to read in one ReadTx.Load call.
type Lookup struct {
	Runs        []string
	Links       []string // by ChildRunID
	Activations []ActivationKey
	Groups      []ActivationKey // by controller key
	Attempts    []AttemptKey
	Identities  []string // attempts by dispatch identity
	Leases      []LeaseKey
	Schedules   []ActivationKey
	// Resources asks for every unreleased lease on each resource.
	Resources []ResourceRef
}

// Found holds the records a Lookup found. Absent keys are absent from the maps.
type Found struct {
	Runs        map[string]Run
	Links       map[string]RunLink
	Activations map[ActivationKey]Activation
	Groups      map[ActivationKey]FanOutGroup
	Attempts    map[AttemptKey]Attempt
	Identities  map[string]Attempt
	Leases      map[LeaseKey]Lease
	Schedules   map[ActivationKey]RetrySchedule
	Resources   map[ResourceRef][]Lease
}

// AdmissibleQuery scans the admissible index in activation key order
// (RunID, NodeID, ActivationID), bytewise.
type AdmissibleQuery struct {
	// RunID restricts the scan to one run when not empty.
	RunID string
	// After resumes strictly after this key; the zero key starts at the
	// beginning.
	After ActivationKey
	// AfterRun, when true, resumes after every activation of After.RunID
	// (After's NodeID and ActivationID are ignored).
	AfterRun bool
	Limit    int
}

// ActivationQuery scans one run's activations of any status in key order.
type ActivationQuery struct {
	RunID string
	// After resumes strictly after this (NodeID, ActivationID); the zero
	// value starts at the beginning.
	After NodeRef
	Limit int
}

// AttemptCursor is a position in attempt order (PreparedMS, Identity).
// Its zero value is before every attempt (every attempt has PreparedMS >
// 0).
type AttemptCursor struct {
	PreparedMS int64
	Identity   string
}

// AttemptQuery scans attempts ordered by (PreparedMS, Identity), ascending
// unless Descending.
type AttemptQuery struct {
	// RunID restricts to one run when not empty.
	RunID string
	// Status restricts to one status when not empty.
	Status AttemptStatus
	// After resumes strictly after this position in the scan's order (so,
	// when Descending, strictly before it in ascending order); the zero
	// value starts at the beginning of that order.
	After AttemptCursor
	// Descending returns the same rows in descending (PreparedMS, Identity)
	// order: the reverse of the ascending scan with the same filters.
	Descending bool
	Limit      int
}

// AttemptCountQuery counts one run's attempts, reading at most Limit.
type AttemptCountQuery struct {
	RunID string
	Limit int
}

// ChildRunCursor is a position in child-run order (CreatedMS, ChildRunID).
type ChildRunCursor struct {
	CreatedMS  int64
	ChildRunID string
}

// ChildRunQuery scans links of one root ordered by (CreatedMS, ChildRunID).
type ChildRunQuery struct {
	RootRunID string
	// After resumes strictly after this position; the zero value starts at
	// the beginning.
	After ChildRunCursor
	Limit int
}

// ScheduleQuery scans one run's retry schedules with DueMS <= DueBy,
// ordered by (DueMS, NodeID, ActivationID).
type ScheduleQuery struct {
	RunID string
	DueBy int64 // inclusive
	Limit int
}

// EventQuery scans one run's events in Seq order.
type EventQuery struct {
	RunID string
	// After resumes strictly after this Seq; 0 starts at the beginning.
	After int64
	Limit int
}

// LeaseQuery scans one run's leases in LeaseKey order (run, node,
// activation, attempt, resource, mode).
type LeaseQuery struct {
	RunID string
	// After resumes strictly after this key; the zero key starts at the
	// beginning.
	After LeaseKey
	// IncludeReleased returns released leases too, in the same order, so
	// that every lease of a run can be enumerated (export, verify).
	IncludeReleased bool
	Limit           int
}

// RunQuery scans runs in run id order, bytewise.
type RunQuery struct {
	// Status restricts the scan to runs in this status when not empty.
	// An adapter should read only the runs it returns (an index on
	// status and id); one that has no such index may read the runs of
	// other statuses it passes over and must say so. The scan serves
	// operator listings and maintenance, never the admission path.
	Status RunStatus
	// After resumes strictly after this run id; empty starts at the
	// beginning.
	After string
	Limit int
}
