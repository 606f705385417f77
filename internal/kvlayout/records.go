package kvlayout

import "github.com/wfstore/wfstore/backend"

// This file encodes each record kind: its primary key (an encoded tuple, see
// codec.go) and its value (see value.go). A value holds every field of the
// record, key fields included, so a record decodes on its own and the
// verifier can check that it is stored under its own key.

// Kind tags: the first byte of every value.
const (
	tagRun byte = iota + 1
	tagLink
	tagActivation
	tagGroup
	tagAttempt
	tagLease
	tagSchedule
	tagEvent
)

// Primary keys.

func runKey(id string) Key { return Key(nil).Str(id) }

// appendIDKey appends the key of a record named by one string (a run, a
// link) to dst.
func appendIDKey(dst Key, id string) Key { return growKey(dst, 0, id).Str(id) }

func activationKey(k backend.ActivationKey) Key { return appendActivationKey(nil, k) }

// appendActivationKey appends k's key to dst.
func appendActivationKey(dst Key, k backend.ActivationKey) Key {
	// room for an attempt number too (attemptKey)
	return growKey(dst, 4, k.RunID, k.NodeID, k.ActivationID).Str(k.RunID).Str(k.NodeID).Str(k.ActivationID)
}

func attemptKey(k backend.AttemptKey) Key { return appendAttemptKey(nil, k) }

// appendAttemptKey appends k's key to dst.
func appendAttemptKey(dst Key, k backend.AttemptKey) Key {
	return appendActivationKey(dst, k.ActivationKey).U32(k.Attempt)
}

func leaseKey(k backend.LeaseKey) Key { return appendLeaseKey(nil, k) }

// appendLeaseKey appends k's key to dst.
func appendLeaseKey(dst Key, k backend.LeaseKey) Key {
	return appendActivationKey(dst, k.ActivationKey).U32(k.Attempt).Str(k.Resource).Str(string(k.Mode))
}

func eventKey(k backend.EventKey) Key { return appendEventKey(nil, k) }

// appendEventKey appends k's key to dst.
func appendEventKey(dst Key, k backend.EventKey) Key {
	return growKey(dst, 8, k.RunID).Str(k.RunID).I64(k.Seq)
}

// Shared pieces.

func (w *valueWriter) activationKey(k backend.ActivationKey) {
	w.str(k.RunID)
	w.str(k.NodeID)
	w.str(k.ActivationID)
}

func (r *valueReader) activationKey() backend.ActivationKey {
	return backend.ActivationKey{RunID: r.str(), NodeID: r.str(), ActivationID: r.str()}
}

func (w *valueWriter) attemptKey(k backend.AttemptKey) {
	w.activationKey(k.ActivationKey)
	w.u32(k.Attempt)
}

func (r *valueReader) attemptKey() backend.AttemptKey {
	return backend.AttemptKey{ActivationKey: r.activationKey(), Attempt: r.u32()}
}

// Run.

func encodeRun(v backend.Run) []byte {
	// room for every field: 22 varints and bools, the strings with their
	// lengths (a value that grows past it costs a copy, nothing else)
	size := 160 + len(v.ID) + len(v.RootID) + len(v.ParentID) + len(v.Status) + len(v.Metadata)
	if a := v.Authority; a != nil {
		size += 32 + len(a.TargetArtifactID) + len(a.DaemonInstanceID) + len(a.FencingToken)
	}
	w := valueWriter{b: make([]byte, 0, size)}
	w.b = append(w.b, tagRun)
	w.str(v.ID)
	w.str(v.RootID)
	w.str(v.ParentID)
	w.varint(v.Depth)
	w.str(string(v.Status))
	w.varint(v.Limits.NodeExecutionCap)
	w.varint(v.Limits.ConcurrencyCap)
	w.varint(v.Limits.CycleCap)
	w.varint(v.Limits.RetryCap)
	w.varint(v.DeadlineMS)
	w.varint(v.CancelRequestedMS)
	w.bool(v.Authority != nil)
	if a := v.Authority; a != nil {
		w.str(a.TargetArtifactID)
		w.str(a.DaemonInstanceID)
		w.varint(a.Generation)
		w.str(a.FencingToken)
	}
	w.bytes(v.Metadata)
	w.varint(v.CreatedMS)
	w.varint(v.UpdatedMS)
	w.varint(v.LastEventSeq)
	w.varint(v.AttemptCount)
	w.varint(v.ActiveCount)
	w.varint(v.TreeAttemptCount)
	w.varint(v.DescendantCount)
	w.bool(v.ExhaustionRecorded)
	return w.b
}

func readRun(r valueReader) (backend.Run, error) {
	r.tag(tagRun)
	var v backend.Run
	v.ID = r.str()
	v.RootID = r.str()
	v.ParentID = r.str()
	v.Depth = r.varint()
	v.Status = backend.RunStatus(r.str())
	v.Limits.NodeExecutionCap = r.varint()
	v.Limits.ConcurrencyCap = r.varint()
	v.Limits.CycleCap = r.varint()
	v.Limits.RetryCap = r.varint()
	v.DeadlineMS = r.varint()
	v.CancelRequestedMS = r.varint()
	if r.bool() {
		v.Authority = &backend.Authority{
			TargetArtifactID: r.str(),
			DaemonInstanceID: r.str(),
			Generation:       r.varint(),
			FencingToken:     r.str(),
		}
	}
	v.Metadata = r.bytes()
	v.CreatedMS = r.varint()
	v.UpdatedMS = r.varint()
	v.LastEventSeq = r.varint()
	v.AttemptCount = r.varint()
	v.ActiveCount = r.varint()
	v.TreeAttemptCount = r.varint()
	v.DescendantCount = r.varint()
	v.ExhaustionRecorded = r.bool()
	return v, r.end()
}

// RunLink.

func encodeLink(v backend.RunLink) []byte {
	w := valueWriter{b: []byte{tagLink}}
	w.str(v.ChildRunID)
	w.str(v.RootRunID)
	w.attemptKey(v.Parent)
	w.bytes(v.Target)
	w.varint(v.Depth)
	w.varint(v.CreatedMS)
	return w.b
}

func readLink(r valueReader) (backend.RunLink, error) {
	r.tag(tagLink)
	v := backend.RunLink{
		ChildRunID: r.str(),
		RootRunID:  r.str(),
		Parent:     r.attemptKey(),
		Target:     r.bytes(),
		Depth:      r.varint(),
		CreatedMS:  r.varint(),
	}
	return v, r.end()
}

// Activation.

func encodeActivation(v backend.Activation) []byte {
	w := valueWriter{b: make([]byte, 0, activationSize(&v))}
	w.b = append(w.b, tagActivation)
	w.activationKey(v.Key)
	w.varint(v.Generation)
	w.str(string(v.Status))
	w.bool(v.Admissible)
	w.bytes(v.Input)
	w.bytes(v.Output)
	w.count(len(v.Claims), v.Claims == nil)
	for _, c := range v.Claims {
		w.str(c.Resource)
		w.str(string(c.Mode))
	}
	w.str(string(v.Effect))
	w.str(string(v.Reconciliation))
	w.bytes(v.RetryPolicy)
	w.count(len(v.Predecessors), v.Predecessors == nil)
	for _, p := range v.Predecessors {
		w.str(p.NodeID)
		w.str(p.ActivationID)
	}
	w.bool(v.HasSuccessors)
	w.bool(v.Group != nil)
	if g := v.Group; g != nil {
		w.activationKey(g.Controller)
		w.varint(g.Index)
	}
	w.u32(v.LastAttempt)
	w.varint(v.CreatedMS)
	w.varint(v.UpdatedMS)
	w.varint(v.AttemptTimeoutMS)
	w.nodeRefs(v.WaitFor)
	w.varint(v.OpenWaits)
	w.nodeRefs(v.Joins)
	return w.b
}

// activationSize is room for v's value: its fixed fields (about 80 bytes
// of varints, bools and length prefixes) and its strings and bytes. A
// value that grows past it costs a copy, nothing else.
func activationSize(v *backend.Activation) int {
	n := 128 + len(v.Key.RunID) + len(v.Key.NodeID) + len(v.Key.ActivationID) + len(v.Status) +
		len(v.Input) + len(v.Output) + len(v.Effect) + len(v.Reconciliation) + len(v.RetryPolicy)
	for _, c := range v.Claims {
		n += 8 + len(c.Resource) + len(c.Mode)
	}
	for _, refs := range [][]backend.NodeRef{v.Predecessors, v.WaitFor, v.Joins} {
		for _, p := range refs {
			n += 8 + len(p.NodeID) + len(p.ActivationID)
		}
	}
	if g := v.Group; g != nil {
		n += 24 + len(g.Controller.RunID) + len(g.Controller.NodeID) + len(g.Controller.ActivationID)
	}
	return n
}

func (w *valueWriter) nodeRefs(refs []backend.NodeRef) {
	w.count(len(refs), refs == nil)
	for _, p := range refs {
		w.str(p.NodeID)
		w.str(p.ActivationID)
	}
}

func (r *valueReader) nodeRefs() []backend.NodeRef {
	n, isNil := r.count()
	if isNil {
		return nil
	}
	refs := make([]backend.NodeRef, n)
	for i := range refs {
		refs[i] = backend.NodeRef{NodeID: r.str(), ActivationID: r.str()}
	}
	return refs
}

func decodeActivation(b []byte) (backend.Activation, error) { return readActivation(valueReader{b: b}) }

func readActivation(r valueReader) (backend.Activation, error) {
	r.tag(tagActivation)
	var v backend.Activation
	v.Key = r.activationKey()
	v.Generation = r.varint()
	v.Status = backend.ActivationStatus(r.str())
	v.Admissible = r.bool()
	v.Input = r.bytes()
	v.Output = r.bytes()
	if n, isNil := r.count(); !isNil {
		v.Claims = make([]backend.ResourceClaim, n)
		for i := range v.Claims {
			v.Claims[i] = backend.ResourceClaim{Resource: r.str(), Mode: backend.LeaseMode(r.str())}
		}
	}
	v.Effect = backend.Effect(r.str())
	v.Reconciliation = backend.Reconciliation(r.str())
	v.RetryPolicy = r.bytes()
	if n, isNil := r.count(); !isNil {
		v.Predecessors = make([]backend.NodeRef, n)
		for i := range v.Predecessors {
			v.Predecessors[i] = backend.NodeRef{NodeID: r.str(), ActivationID: r.str()}
		}
	}
	v.HasSuccessors = r.bool()
	if r.bool() {
		v.Group = &backend.GroupMember{Controller: r.activationKey(), Index: r.varint()}
	}
	v.LastAttempt = r.u32()
	v.CreatedMS = r.varint()
	v.UpdatedMS = r.varint()
	if len(r.b) > 0 {
		// Activations written before the attempt timeout existed end
		// here and read as having none set.
		v.AttemptTimeoutMS = r.varint()
	}
	if len(r.b) > 0 {
		// Activations written before joins existed end here and read as
		// no join, awaited by none.
		v.WaitFor = r.nodeRefs()
		v.OpenWaits = r.varint()
		v.Joins = r.nodeRefs()
	}
	return v, r.end()
}

// FanOutGroup.

func encodeGroup(v backend.FanOutGroup) []byte {
	w := valueWriter{b: []byte{tagGroup}}
	w.activationKey(v.Controller)
	w.varint(v.Size)
	w.varint(v.MaxConcurrency)
	w.varint(v.Promoted)
	w.varint(v.Settled)
	w.bool(v.Retiring)
	w.varint(v.RetiredMS)
	w.varint(v.CreatedMS)
	w.bool(v.FailFast)
	w.bool(v.FanIn)
	return w.b
}

func decodeGroup(b []byte) (backend.FanOutGroup, error) { return readGroup(valueReader{b: b}) }

func readGroup(r valueReader) (backend.FanOutGroup, error) {
	r.tag(tagGroup)
	v := backend.FanOutGroup{
		Controller:     r.activationKey(),
		Size:           r.varint(),
		MaxConcurrency: r.varint(),
		Promoted:       r.varint(),
		Settled:        r.varint(),
		Retiring:       r.bool(),
		RetiredMS:      r.varint(),
		CreatedMS:      r.varint(),
	}
	if len(r.b) > 0 {
		// Groups written before the settlement policy existed end here
		// and read as wait-all.
		v.FailFast = r.bool()
	}
	if len(r.b) > 0 {
		// Groups written before store-driven fan-in existed end here and
		// read as owner settlement.
		v.FanIn = r.bool()
	}
	return v, r.end()
}

// Attempt.

func encodeAttempt(v backend.Attempt) []byte {
	size := 64 + len(v.Key.RunID) + len(v.Key.NodeID) + len(v.Key.ActivationID) + len(v.Identity) +
		len(v.Intent) + len(v.IntentChecksum) + len(v.Receipt) + len(v.Detail) + len(v.HandoffToken)
	w := valueWriter{b: make([]byte, 0, size)}
	w.b = append(w.b, tagAttempt)
	w.attemptKey(v.Key)
	w.str(v.Identity)
	w.str(string(v.Status))
	w.str(string(v.SideEffect))
	w.bytes(v.Intent)
	w.str(v.IntentChecksum)
	w.bytes(v.Receipt)
	w.str(string(v.Handoff))
	w.bytes(v.Detail)
	w.varint(v.PreparedMS)
	w.varint(v.AdmittedMS)
	w.varint(v.TerminalMS)
	w.str(v.HandoffToken)
	return w.b
}

func decodeAttempt(b []byte) (backend.Attempt, error) { return readAttempt(valueReader{b: b}) }

func readAttempt(r valueReader) (backend.Attempt, error) {
	r.tag(tagAttempt)
	v := backend.Attempt{
		Key:            r.attemptKey(),
		Identity:       r.str(),
		Status:         backend.AttemptStatus(r.str()),
		SideEffect:     backend.Effect(r.str()),
		Intent:         r.bytes(),
		IntentChecksum: r.str(),
		Receipt:        r.bytes(),
		Handoff:        backend.Handoff(r.str()),
		Detail:         r.bytes(),
		PreparedMS:     r.varint(),
		AdmittedMS:     r.varint(),
		TerminalMS:     r.varint(),
	}
	if len(r.b) > 0 {
		// Attempts written before the handoff holder token existed end
		// here and read as having none.
		v.HandoffToken = r.str()
	}
	return v, r.end()
}

// Lease.

func encodeLease(v backend.Lease) []byte {
	w := valueWriter{b: []byte{tagLease}}
	w.attemptKey(v.Key.AttemptKey)
	w.str(v.Key.Resource)
	w.str(string(v.Key.Mode))
	w.varint(v.AcquiredMS)
	w.varint(v.ReleasedMS)
	return w.b
}

func readLease(r valueReader) (backend.Lease, error) {
	r.tag(tagLease)
	v := backend.Lease{
		Key: backend.LeaseKey{
			AttemptKey: r.attemptKey(),
			Resource:   r.str(),
			Mode:       backend.LeaseMode(r.str()),
		},
		AcquiredMS: r.varint(),
		ReleasedMS: r.varint(),
	}
	return v, r.end()
}

// RetrySchedule.

func encodeSchedule(v backend.RetrySchedule) []byte {
	w := valueWriter{b: []byte{tagSchedule}}
	w.activationKey(v.Key)
	w.u32(v.FailedAttempt)
	w.u32(v.NextAttempt)
	w.str(v.FailureKind)
	w.varint(v.BackoffMS)
	w.varint(v.DueMS)
	w.varint(v.ScheduledMS)
	return w.b
}

func readSchedule(r valueReader) (backend.RetrySchedule, error) {
	r.tag(tagSchedule)
	v := backend.RetrySchedule{
		Key:           r.activationKey(),
		FailedAttempt: r.u32(),
		NextAttempt:   r.u32(),
		FailureKind:   r.str(),
		BackoffMS:     r.varint(),
		DueMS:         r.varint(),
		ScheduledMS:   r.varint(),
	}
	return v, r.end()
}

// Event.

func encodeEvent(v backend.Event) []byte {
	w := valueWriter{b: make([]byte, 0, 32+len(v.RunID)+len(v.Type)+len(v.Payload))}
	w.b = append(w.b, tagEvent)
	w.str(v.RunID)
	w.varint(v.Seq)
	w.str(v.Type)
	w.bytes(v.Payload)
	w.varint(v.CreatedMS)
	return w.b
}

func readEvent(r valueReader) (backend.Event, error) {
	r.tag(tagEvent)
	v := backend.Event{
		RunID:     r.str(),
		Seq:       r.varint(),
		Type:      r.str(),
		Payload:   r.bytes(),
		CreatedMS: r.varint(),
	}
	return v, r.end()
}
