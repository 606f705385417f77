package workflow

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"

	"github.com/wfstore/wfstore/internal/canonical"
)

// MaxJSONBytes is the largest canonical JSON document the store accepts
// (intents, receipts, inputs, outputs). The check is "canonical length >
// MaxJSONBytes".
const MaxJSONBytes = 1 << 20

// The parser enforces the same limit (a compile error if they differ).
const _ = uint(MaxJSONBytes-canonical.MaxBytes) + uint(canonical.MaxBytes-MaxJSONBytes)

// canonicalJSON returns the canonical form of raw, the form every stored
// JSON document, checksum and byte comparison in the store uses: compact,
// object members sorted bytewise by key, numbers exactly as written (1 and
// 1.0 differ), strings with the fewest escapes. Invalid JSON, invalid
// UTF-8, lone surrogates, duplicate keys and nesting deeper than 10000 are
// an *InputError naming field; a canonical form longer than MaxJSONBytes
// also matches ErrTooLarge.
func canonicalJSON(field string, raw []byte) ([]byte, error) {
	out, err := canonical.Canonical(raw)
	if ce, ok := errors.AsType[*canonical.Error](err); ok {
		return nil, &InputError{Field: field, Reason: ce.Reason, Oversized: ce.Oversized}
	}
	return out, err
}

// mustCanonical encodes a payload the library builds itself; it panics on
// error, so it is never given caller-supplied JSON.
func mustCanonical(v any) []byte { return canonical.Must(v) }

// Checksum is the lowercase hex SHA-256 of a canonical document (the
// IntentChecksum of an Attempt).
func Checksum(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:])
}
