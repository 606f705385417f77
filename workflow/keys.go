package workflow

// ActivationKey names an activation: (RunID, NodeID, ActivationID). Keys
// order bytewise field by field.
type ActivationKey struct {
	RunID        string
	NodeID       string
	ActivationID string
}

// AttemptKey names one attempt of an activation. Attempts are numbered
// from 1.
type AttemptKey struct {
	ActivationKey
	Attempt uint32
}

// Identity returns the attempt's dispatch identity, the owner's
// idempotency key (DispatchIdentity of the key's fields).
func (k AttemptKey) Identity() string {
	return DispatchIdentity(k.RunID, k.NodeID, k.ActivationID, k.Attempt)
}

// LeaseKey names a lease: one attempt's claim on one resource in one mode.
type LeaseKey struct {
	AttemptKey
	Resource string
	Mode     LeaseMode
}

// NodeRef names an activation within the same run (a predecessor).
type NodeRef struct {
	NodeID       string
	ActivationID string
}

// AttemptRef names an attempt both ways: by key and by its dispatch
// identity (Key.Identity()).
type AttemptRef struct {
	Key      AttemptKey
	Identity string
}
