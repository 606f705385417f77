package wftype

// Authority is a run's execution authority, a fencing value: an operation
// that carries one is refused unless it equals the run's current
// authority, field for field. All four fields are set when a run has one;
// a run without one (library mode) holds a nil *Authority.
type Authority struct {
	TargetArtifactID string
	DaemonInstanceID string
	Generation       int64
	FencingToken     string
}

// Limits are a run's stored execution limits, each resolved to a value
// before it is stored.
type Limits struct {
	// NodeExecutionCap bounds the attempts ever created in the run.
	NodeExecutionCap int64
	// ConcurrencyCap bounds the run's attempts in an active status.
	ConcurrencyCap int64
	// CycleCap bounds an activation's generation (it stays below it).
	CycleCap int64
	// RetryCap bounds an activation's retries, explicit and automatic.
	RetryCap int64
}

// ResourceClaim is a declared claim of an activation on a resource: every
// attempt of the activation leases it in Mode at admission.
type ResourceClaim struct {
	Resource string
	Mode     LeaseMode
}
