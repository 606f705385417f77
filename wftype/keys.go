package wftype

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

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

// DispatchIdentity is the owner's idempotency key for one attempt: the
// lowercase hex SHA-256 of run ␀ node ␀ activation ␀ attempt, the attempt
// in decimal. The ids are expected to be valid (no NUL byte), so the
// joined form is unambiguous.
func DispatchIdentity(runID, nodeID, activationID string, attempt uint32) string {
	var stack [256]byte
	b := append(stack[:0], runID...)
	b = append(b, 0)
	b = append(b, nodeID...)
	b = append(b, 0)
	b = append(b, activationID...)
	b = append(b, 0)
	b = strconv.AppendUint(b, uint64(attempt), 10)
	sum := sha256.Sum256(b)
	var out [2 * sha256.Size]byte // hex.EncodeToString's buffer, not allocated
	hex.Encode(out[:], sum[:])
	return string(out[:])
}
