package workflow

import "github.com/wfstore/wfstore/wftype"

// ActivationKey names an activation: (RunID, NodeID, ActivationID). Keys
// order bytewise field by field.
type ActivationKey = wftype.ActivationKey

// AttemptKey names one attempt of an activation. Attempts are numbered
// from 1; its Identity method returns the attempt's dispatch identity.
type AttemptKey = wftype.AttemptKey

// LeaseKey names a lease: one attempt's claim on one resource in one mode.
type LeaseKey = wftype.LeaseKey

// NodeRef names an activation within the same run (a predecessor).
type NodeRef = wftype.NodeRef

// AttemptRef names an attempt both ways: by key and by its dispatch
// identity (Key.Identity()).
type AttemptRef struct {
	Key      AttemptKey
	Identity string
}
