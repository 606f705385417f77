package workflow

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"

	"github.com/wfstore/wfstore/internal/canonical"
)

// JSON limits. Every JSON document the store keeps is checked in its
// canonical form before anything is written: a canonical form longer than
// its byte limit is ErrTooLarge (which also matches ErrInvalidInput), one
// nested deeper than its depth limit is ErrInvalidInput.
//
// Documents the store keeps only in their own record (activation and
// fan-out member inputs, run metadata, observation detail, retry policies)
// may use the whole MaxJSONBytes and MaxJSONDepth. Owner JSON, the
// documents an event also carries (dispatch intents, receipts, succeeded
// outputs, repair outputs and child-run targets), is limited to
// MaxOwnerJSONBytes and MaxOwnerJSONDepth: the event that wraps one adds at
// most MaxEnvelopeBytes and MaxEnvelopeDepth, and an event payload is held
// to MaxJSONBytes and MaxJSONDepth like any other document, so every
// accepted owner document fits in every event that carries it.
const (
	// MaxJSONBytes is the largest canonical JSON document the store keeps:
	// the check is "canonical length > MaxJSONBytes".
	MaxJSONBytes = 1 << 20
	// MaxJSONDepth is the deepest array/object nesting the store keeps
	// (a scalar has depth 0, [] and {} depth 1).
	MaxJSONDepth = 10000
	// MaxEnvelopeBytes bounds what an event adds around the owner document
	// it carries, ids escaped at their worst included: the largest is a
	// child run's target inside the synthetic receipt inside the parent
	// attempt's attempt_admitted payload, under 13 KiB with three 512-byte
	// ids of control characters.
	MaxEnvelopeBytes = 16 << 10
	// MaxEnvelopeDepth is the nesting an event adds around the owner
	// document it carries (a child target: the event object and the
	// synthetic receipt object).
	MaxEnvelopeDepth = 2
	// MaxOwnerJSONBytes is the largest canonical owner document (intent,
	// receipt, output, child target): MaxJSONBytes - MaxEnvelopeBytes.
	MaxOwnerJSONBytes = MaxJSONBytes - MaxEnvelopeBytes
	// MaxOwnerJSONDepth is the deepest nesting of an owner document:
	// MaxJSONDepth - MaxEnvelopeDepth.
	MaxOwnerJSONDepth = MaxJSONDepth - MaxEnvelopeDepth
)

// The parser enforces the same limits (a compile error if they differ).
const (
	_ = uint(MaxJSONBytes-canonical.MaxBytes) + uint(canonical.MaxBytes-MaxJSONBytes)
	_ = uint(MaxJSONDepth-canonical.MaxDepth) + uint(canonical.MaxDepth-MaxJSONDepth)
)

// canonicalJSON returns the canonical form of raw, the form every stored
// JSON document, checksum and byte comparison in the store uses: compact,
// object members sorted bytewise by key, numbers exactly as written (1 and
// 1.0 differ), strings with the fewest escapes. Invalid JSON, invalid
// UTF-8, lone surrogates, duplicate keys and nesting deeper than
// MaxJSONDepth are an *InputError naming field; a canonical form longer
// than MaxJSONBytes also matches ErrTooLarge.
func canonicalJSON(field string, raw []byte) ([]byte, error) {
	return canonicalWithin(field, raw, canonical.Default)
}

// CanonicalJSON returns the canonical form of raw: the form in which the
// store keeps every JSON document and compares receipts and intents (a
// receipt persisted again is the same receipt exactly when the canonical
// forms are equal byte for byte; an Attempt's IntentChecksum is Checksum
// of the intent's canonical form). The form is compact, with object
// members sorted bytewise by key, numbers exactly as written (1 and 1.0
// differ) and strings with the fewest escapes. Invalid JSON, invalid
// UTF-8, duplicate keys, nesting deeper than MaxJSONDepth or a form
// longer than MaxJSONBytes are an *InputError (ErrInvalidInput; an
// oversized one also matches ErrTooLarge).
func CanonicalJSON(raw []byte) ([]byte, error) {
	return canonicalJSON("json", raw)
}

// ownerLimits are the limits of owner JSON (see MaxOwnerJSONBytes).
var ownerLimits = canonical.Limits{Bytes: MaxOwnerJSONBytes, Depth: MaxOwnerJSONDepth}

// ownerJSON is canonicalJSON for owner JSON: a document an event also
// carries, held to MaxOwnerJSONBytes and MaxOwnerJSONDepth.
func ownerJSON(field string, raw []byte) ([]byte, error) {
	if len(raw) == 0 {
		return nil, invalid(field, "is required")
	}
	return canonicalWithin(field, raw, ownerLimits)
}

func canonicalWithin(field string, raw []byte, lim canonical.Limits) ([]byte, error) {
	out, err := canonical.Within(raw, lim)
	if ce, ok := errors.AsType[*canonical.Error](err); ok {
		return nil, &InputError{Field: field, Reason: ce.Reason, Oversized: ce.Oversized, tooDeep: ce.TooDeep}
	}
	return out, err
}

// encodeJSON encodes a document the library builds (an event payload, a
// synthetic receipt, a retry policy) in canonical form. One over
// MaxJSONBytes or MaxJSONDepth, which the owner limits rule out, is an
// *InputError naming field (matching ErrTooLarge or ErrInvalidInput) that
// refuses the write needing it: nothing the library encodes panics.
func encodeJSON(field string, v any) ([]byte, error) {
	out, err := canonical.Marshal(v)
	if ce, ok := errors.AsType[*canonical.Error](err); ok {
		return nil, &InputError{Field: field, Reason: ce.Reason, Oversized: ce.Oversized, tooDeep: ce.TooDeep}
	}
	return out, err
}

// Checksum is the lowercase hex SHA-256 of a canonical document (the
// IntentChecksum of an Attempt).
func Checksum(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	var out [2 * sha256.Size]byte // hex.EncodeToString's buffer, not allocated
	hex.Encode(out[:], sum[:])
	return string(out[:])
}
