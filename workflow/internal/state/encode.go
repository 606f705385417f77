package state

import (
	"encoding/json"
	"strconv"

	"github.com/wfstore/wfstore/event"
	"github.com/wfstore/wfstore/internal/canonical"
)

// encodePayload returns the canonical JSON of an event payload, the bytes
// canonical.Marshal returns for it. The payloads every admission appends
// (attempt_prepared, dispatch_handed_off, attempt_admitted and their
// siblings of the same shape) are written directly in canonical form:
// members in bytewise key order, strings with canonical escapes, numbers
// in decimal and embedded documents canonicalized in place. Whatever such
// a payload holds that direct writing does not cover (a string that is
// not valid UTF-8, an embedded document that is not valid or not within
// the limits, a document past canonical.MaxBytes), and every other
// payload, goes through canonical.Marshal, so the bytes and the errors are
// those of canonical.Marshal.
func encodePayload(v any) ([]byte, error) {
	if b, ok := encodeDirect(v); ok {
		return b, nil
	}
	return canonical.Marshal(v)
}

// encodeDirect writes the payloads encodePayload writes directly; ok is
// false for anything else.
func encodeDirect(v any) (b []byte, ok bool) {
	var o objWriter
	switch p := v.(type) {
	case event.AttemptPreparedPayload:
		o.begin(96 + len(p.RunID) + len(p.NodeID) + len(p.ActivationID) + len(p.Intent))
		o.str("activation_id", p.ActivationID)
		o.num("attempt", int64(p.Attempt))
		o.raw("intent", p.Intent)
		o.str("node_id", p.NodeID)
		o.num("prepared_at_ms", int64(p.PreparedAt))
		o.str("run_id", p.RunID)
		o.str("side_effect", string(p.SideEffect))
	case event.DispatchHandedOffPayload:
		o.handoff(p.AttemptNames, p.DispatchIdentity)
	case event.DispatchHandoffReleasedPayload:
		o.handoff(p.AttemptNames, p.DispatchIdentity)
	case event.AttemptAdmittedPayload:
		o.receipt(p)
	case event.AttemptCancellationReceiptRecordedPayload:
		o.receipt(event.AttemptAdmittedPayload(p))
	default:
		return nil, false
	}
	return o.end()
}

// objWriter writes one canonical JSON object whose members are given in
// bytewise key order with keys that need no escaping. Once a member cannot
// be written directly, it stops writing and end reports false.
type objWriter struct {
	b      []byte
	n      int // members written
	failed bool
}

func (o *objWriter) begin(size int) {
	o.b = make([]byte, 0, size)
	o.b = append(o.b, '{')
}

func (o *objWriter) key(k string) {
	if o.n > 0 {
		o.b = append(o.b, ',')
	}
	o.n++
	o.b = append(o.b, '"')
	o.b = append(o.b, k...)
	o.b = append(o.b, '"', ':')
}

func (o *objWriter) str(k, v string) {
	if o.failed {
		return
	}
	o.key(k)
	var ok bool
	o.b, ok = canonical.AppendValidString(o.b, v)
	o.failed = !ok
}

func (o *objWriter) num(k string, v int64) {
	if o.failed {
		return
	}
	o.key(k)
	o.b = strconv.AppendInt(o.b, v, 10)
}

// raw writes an embedded document, canonicalized within the depth left
// under the object.
func (o *objWriter) raw(k string, v json.RawMessage) {
	if o.failed {
		return
	}
	o.key(k)
	if v == nil { // as json.RawMessage encodes nil
		o.b = append(o.b, "null"...)
		return
	}
	var err error
	o.b, err = canonical.AppendWithin(o.b, v, canonical.Limits{Bytes: canonical.MaxBytes, Depth: canonical.MaxDepth - 1})
	o.failed = err != nil
}

func (o *objWriter) end() ([]byte, bool) {
	if o.failed {
		return nil, false
	}
	o.b = append(o.b, '}')
	if len(o.b) > canonical.MaxBytes {
		return nil, false
	}
	return o.b, true
}

func (o *objWriter) handoff(n event.AttemptNames, identity string) {
	o.begin(96 + len(n.RunID) + len(n.NodeID) + len(n.ActivationID) + len(identity))
	o.str("activation_id", n.ActivationID)
	o.num("attempt", int64(n.Attempt))
	o.str("dispatch_identity", identity)
	o.str("node_id", n.NodeID)
	o.str("run_id", n.RunID)
}

func (o *objWriter) receipt(p event.AttemptAdmittedPayload) {
	o.begin(128 + len(p.RunID) + len(p.NodeID) + len(p.ActivationID) + len(p.DispatchIdentity) + len(p.Receipt))
	o.str("activation_id", p.ActivationID)
	o.num("admitted_at_ms", int64(p.AdmittedAt))
	o.num("attempt", int64(p.Attempt))
	o.str("dispatch_identity", p.DispatchIdentity)
	o.str("node_id", p.NodeID)
	o.raw("receipt", p.Receipt)
	o.str("run_id", p.RunID)
}
