package workflow

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"

	"github.com/wfstore/wfstore/internal/canonical"
	"github.com/wfstore/wfstore/wftype"
)

// Identity derivations. Every hash is the lowercase hex
// SHA-256 of the UTF-8 parts joined with NUL separators, integers in decimal.
// The ids passed in are expected to be valid (ValidateID), so no part
// contains a NUL and the joined form is unambiguous.

// hashHex returns the lowercase hex SHA-256 of b.
func hashHex(b []byte) string {
	sum := sha256.Sum256(b)
	var out [2 * sha256.Size]byte // hex.EncodeToString's buffer, not allocated
	hex.Encode(out[:], sum[:])
	return string(out[:])
}

// DispatchIdentity is the owner's idempotency key for one attempt:
// H(run ␀ node ␀ activation ␀ attempt) (wftype.DispatchIdentity).
func DispatchIdentity(runID, nodeID, activationID string, attempt uint32) string {
	return wftype.DispatchIdentity(runID, nodeID, activationID, attempt)
}

// ActivationIdentity is H(run ␀ node ␀ generation).
func ActivationIdentity(runID, nodeID string, generation int64) string {
	var stack [256]byte
	b := append(stack[:0], runID...)
	b = append(b, 0)
	b = append(b, nodeID...)
	b = append(b, 0)
	b = strconv.AppendInt(b, generation, 10)
	return hashHex(b)
}

// FanOutMemberID is the activation id of member index of a fan-out group:
// H(run ␀ controller_activation ␀ "fan-out" ␀ index).
func FanOutMemberID(runID, controllerActivationID string, index int64) string {
	var stack [256]byte
	b := append(stack[:0], runID...)
	b = append(b, 0)
	b = append(b, controllerActivationID...)
	b = append(b, "\x00fan-out\x00"...)
	b = strconv.AppendInt(b, index, 10)
	return hashHex(b)
}

// FanOutMemberNodeID is the node id of member index: "{controller}::member::{index}".
func FanOutMemberNodeID(controllerNodeID string, index int64) string {
	return controllerNodeID + "::member::" + strconv.FormatInt(index, 10)
}

// ChildRunID is the run id of the child created by one parent attempt for a
// target: "workflow-child:" + H(canonical JSON array [root, parent_run,
// parent_activation, parent_attempt, target]). target is a JSON document; it
// is canonicalised first, so equivalent spellings give the same id. A target
// that is not valid JSON (CreateChildRun rejects one) is hashed
// as given; it cannot collide with any valid target.
func ChildRunID(rootRunID, parentRunID, parentActivationID string, parentAttempt uint32, target []byte) string {
	if c, err := canonicalJSON("child target", target); err == nil {
		target = c
	}
	b := make([]byte, 0, len(rootRunID)+len(parentRunID)+len(parentActivationID)+len(target)+32)
	b = append(b, '[')
	b = canonical.AppendString(b, rootRunID)
	b = append(b, ',')
	b = canonical.AppendString(b, parentRunID)
	b = append(b, ',')
	b = canonical.AppendString(b, parentActivationID)
	b = append(b, ',')
	b = strconv.AppendUint(b, uint64(parentAttempt), 10)
	b = append(b, ',')
	b = append(b, target...)
	b = append(b, ']')
	return "workflow-child:" + hashHex(b)
}
