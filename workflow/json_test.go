package workflow

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/event"
	"github.com/wfstore/wfstore/workflow/internal/state"
)

// TestEveryEnvelopeFitsTheOwnerLimits builds every event that carries an
// owner document, with the largest ids (512 bytes of control characters,
// six bytes each escaped; a fan-out member's node id is longer) and the
// largest numbers, around an owner document exactly at both owner limits,
// and requires it to encode: MaxEnvelopeBytes and MaxEnvelopeDepth bound
// every envelope.
func TestEveryEnvelopeFitsTheOwnerLimits(t *testing.T) {
	t.Parallel()
	id := strings.Repeat("\x01", MaxIDBytes)
	node := FanOutMemberNodeID(id, math.MaxInt64)
	k := backend.AttemptKey{ActivationKey: backend.ActivationKey{RunID: id, NodeID: node, ActivationID: id}, Attempt: math.MaxUint32}
	ident := DispatchIdentity(k.RunID, k.NodeID, k.ActivationID, k.Attempt)
	const at = math.MaxInt64
	// wrap builds each event around doc, as the Store would.
	wrap := func(doc []byte) map[string]any {
		receipt, err := encodeJSON("child run receipt", map[string]any{
			"owner": childReceiptOwner, "child_run_id": ChildRunID(id, id, id, math.MaxUint32, doc), "root_run_id": id,
			"depth": int64(math.MaxInt64), "target": json.RawMessage(doc),
		})
		require.NoError(t, err, "the child receipt itself is a document")
		return map[string]any{
			"attempt_prepared":                      state.PreparedPayload(k, backend.Mutating, doc, at),
			"attempt_admitted":                      state.AdmittedPayload(k, ident, doc, at),
			"attempt_cancellation_receipt_recorded": state.ReceiptPayload(event.AttemptCancellationReceiptRecorded, k, ident, doc, at),
			"attempt_succeeded":                     event.AttemptSucceededPayload{DispatchIdentity: ident, Output: doc},
			"attempt_admitted (child run receipt)":  state.AdmittedPayload(k, ident, receipt, at),
		}
	}
	largest := 0
	for name, p := range wrap([]byte(`0`)) {
		enc, err := encodeJSON(name, p)
		require.NoError(t, err, name)
		largest = max(largest, len(enc)-1)
	}
	assert.LessOrEqual(t, largest, MaxEnvelopeBytes, "the largest envelope")
	t.Logf("largest envelope: %d bytes (MaxEnvelopeBytes %d)", largest, MaxEnvelopeBytes)

	atSize := []byte(`"` + strings.Repeat("x", MaxOwnerJSONBytes-2) + `"`)
	atDepth := []byte(strings.Repeat("[", MaxOwnerJSONDepth) + strings.Repeat("]", MaxOwnerJSONDepth))
	for _, doc := range [][]byte{atSize, atDepth} {
		c, err := ownerJSON("owner document", doc)
		require.NoError(t, err, "a document at the owner limits is accepted")
		for name, p := range wrap(c) {
			_, err := encodeJSON(name, p)
			assert.NoError(t, err, "%s around a document at the owner limits", name)
		}
	}
	// One byte, or one level, more is refused before any event is built.
	_, err := ownerJSON("owner document", []byte(`"`+strings.Repeat("x", MaxOwnerJSONBytes-1)+`"`))
	assert.ErrorIs(t, err, ErrTooLarge)
	_, err = ownerJSON("owner document", []byte(strings.Repeat("[", MaxOwnerJSONDepth+1)+strings.Repeat("]", MaxOwnerJSONDepth+1)))
	assert.ErrorIs(t, err, ErrInvalidInput)
	assert.NotErrorIs(t, err, ErrTooLarge)
}
