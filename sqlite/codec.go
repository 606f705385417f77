package sqlite

import (
	"bytes"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/wfstore/wfstore/backend"
)

// scanner is *sql.Row or *sql.Rows.
type scanner interface {
	Scan(dest ...any) error
}

// errCorrupt reports a stored value this adapter cannot decode.
var errCorrupt = errors.New("sqlite: stored value is corrupt")

// argList appends a record's column values to out, reusing the boxes of
// like, the column values of another record of the same kind (the row's
// image, or the record before it in a many-row insert), where they hold
// the same value. Binding a string or an integer of 256 or more through
// an interface allocates a box; the rows a batch writes mostly share their
// values with their images and with each other (run, status, times), so
// most of their columns need none. A box is never changed once made, so a
// shared one binds exactly what a fresh one would.
type argList struct {
	out  []any
	base int   // the index in out of the record's first column
	like []any // nil, or a column list of the kind
}

func newArgList(out, like []any) argList { return argList{out: out, base: len(out), like: like} }

// prev returns like's value at the next column (nil when there is none).
func (l *argList) prev() any {
	if i := len(l.out) - l.base; i < len(l.like) {
		return l.like[i]
	}
	return nil
}

func (l *argList) str(s string) {
	if p, ok := l.prev().(string); ok && p == s {
		l.out = append(l.out, l.like[len(l.out)-l.base])
		return
	}
	l.out = append(l.out, s)
}

func (l *argList) int(v int64) {
	if p, ok := l.prev().(int64); ok && p == v {
		l.out = append(l.out, l.like[len(l.out)-l.base])
		return
	}
	l.out = append(l.out, v)
}

// text binds canonical JSON as TEXT, nil as NULL. TEXT (rather than
// BLOB) keeps an empty non-nil value distinct from nil on the way back.
func (l *argList) text(b []byte) {
	if b == nil {
		l.out = append(l.out, nil)
		return
	}
	if p, ok := l.prev().(string); ok && p == string(b) {
		l.out = append(l.out, l.like[len(l.out)-l.base])
		return
	}
	l.out = append(l.out, string(b))
}

// value binds v (nil, or a freshly encoded []byte) as it is, or like's box
// of equal bytes.
func (l *argList) value(v any) {
	if b, ok := v.([]byte); ok {
		if p, ok := l.prev().([]byte); ok && bytes.Equal(p, b) {
			l.out = append(l.out, l.like[len(l.out)-l.base])
			return
		}
	}
	l.out = append(l.out, v)
}

func (l *argList) null() { l.out = append(l.out, nil) }

func boolArg(v bool) int64 {
	if v {
		return 1
	}
	return 0
}

// encodeStrings encodes groups of strings as uvarint(count) followed by
// uvarint(len)+bytes per string. It is exact for any bytes (unlike JSON,
// which would rewrite invalid UTF-8).
func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func readString(b []byte) (string, []byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || uint64(len(b)-k) < n {
		return "", nil, errCorrupt
	}
	return string(b[k : k+int(n)]), b[k+int(n):], nil
}

func readCount(b []byte) (int, []byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return 0, nil, errCorrupt
	}
	return int(n), b[k:], nil
}

func claimsArg(c []backend.ResourceClaim) any {
	if c == nil {
		return nil
	}
	b := binary.AppendUvarint(make([]byte, 0, 1+len(c)*16), uint64(len(c)))
	for _, x := range c {
		b = appendString(b, x.Resource)
		b = appendString(b, string(x.Mode))
	}
	return b
}

func decodeClaims(b []byte) ([]backend.ResourceClaim, error) {
	if b == nil {
		return nil, nil
	}
	n, b, err := readCount(b)
	if err != nil {
		return nil, err
	}
	out := make([]backend.ResourceClaim, n)
	for i := range out {
		var r, m string
		if r, b, err = readString(b); err != nil {
			return nil, err
		}
		if m, b, err = readString(b); err != nil {
			return nil, err
		}
		out[i] = backend.ResourceClaim{Resource: r, Mode: backend.LeaseMode(m)}
	}
	if len(b) != 0 {
		return nil, errCorrupt
	}
	return out, nil
}

func predecessorsArg(p []backend.NodeRef) any {
	if p == nil {
		return nil
	}
	b := binary.AppendUvarint(make([]byte, 0, 1+len(p)*16), uint64(len(p)))
	for _, x := range p {
		b = appendString(b, x.NodeID)
		b = appendString(b, x.ActivationID)
	}
	return b
}

func decodePredecessors(b []byte) ([]backend.NodeRef, error) {
	if b == nil {
		return nil, nil
	}
	n, b, err := readCount(b)
	if err != nil {
		return nil, err
	}
	out := make([]backend.NodeRef, n)
	for i := range out {
		var nd, a string
		if nd, b, err = readString(b); err != nil {
			return nil, err
		}
		if a, b, err = readString(b); err != nil {
			return nil, err
		}
		out[i] = backend.NodeRef{NodeID: nd, ActivationID: a}
	}
	if len(b) != 0 {
		return nil, errCorrupt
	}
	return out, nil
}

func runArgs(out []any, r *backend.Run, like []any) []any {
	l := newArgList(out, like)
	l.str(r.ID)
	l.str(r.RootID)
	l.str(r.ParentID)
	l.int(r.Depth)
	l.str(string(r.Status))
	l.int(r.Limits.NodeExecutionCap)
	l.int(r.Limits.ConcurrencyCap)
	l.int(r.Limits.CycleCap)
	l.int(r.Limits.RetryCap)
	l.int(r.DeadlineMS)
	l.int(r.CancelRequestedMS)
	if a := r.Authority; a != nil {
		l.str(a.TargetArtifactID)
		l.str(a.DaemonInstanceID)
		l.int(a.Generation)
		l.str(a.FencingToken)
	} else {
		l.null()
		l.null()
		l.null()
		l.null()
	}
	l.text(r.Metadata)
	l.int(r.CreatedMS)
	l.int(r.UpdatedMS)
	l.int(r.LastEventSeq)
	l.int(r.AttemptCount)
	l.int(r.ActiveCount)
	l.int(r.TreeAttemptCount)
	l.int(r.DescendantCount)
	l.int(boolArg(r.ExhaustionRecorded))
	return l.out
}

// runScan holds what a scan of a run row writes: every destination of
// the Scan in one allocation (each local a Scan writes through an
// interface escapes to the heap, so separate locals were one allocation
// each), and the destination list itself.
type runScan struct {
	r          backend.Run
	status     string
	at, ad, af sql.NullString
	ag         sql.NullInt64
	dest       [24]any
}

func scanRun(s scanner) (backend.Run, error) {
	v := new(runScan)
	r := &v.r
	v.dest = [...]any{
		&r.ID, &r.RootID, &r.ParentID, &r.Depth, &v.status,
		&r.Limits.NodeExecutionCap, &r.Limits.ConcurrencyCap, &r.Limits.CycleCap, &r.Limits.RetryCap,
		&r.DeadlineMS, &r.CancelRequestedMS,
		&v.at, &v.ad, &v.ag, &v.af,
		&r.Metadata, &r.CreatedMS, &r.UpdatedMS, &r.LastEventSeq,
		&r.AttemptCount, &r.ActiveCount, &r.TreeAttemptCount, &r.DescendantCount, &r.ExhaustionRecorded,
	}
	if err := s.Scan(v.dest[:]...); err != nil {
		return *r, err
	}
	r.Status = backend.RunStatus(v.status)
	if v.ag.Valid {
		r.Authority = &backend.Authority{
			TargetArtifactID: v.at.String,
			DaemonInstanceID: v.ad.String,
			Generation:       v.ag.Int64,
			FencingToken:     v.af.String,
		}
	}
	return *r, nil
}

func linkArgs(out []any, k *backend.RunLink, like []any) []any {
	l := newArgList(out, like)
	l.str(k.ChildRunID)
	l.str(k.RootRunID)
	l.str(k.Parent.RunID)
	l.str(k.Parent.NodeID)
	l.str(k.Parent.ActivationID)
	l.int(int64(k.Parent.Attempt))
	l.text(k.Target)
	l.int(k.Depth)
	l.int(k.CreatedMS)
	return l.out
}

func scanLink(s scanner) (backend.RunLink, error) {
	var l backend.RunLink
	var attempt int64
	err := s.Scan(
		&l.ChildRunID, &l.RootRunID, &l.Parent.RunID, &l.Parent.NodeID, &l.Parent.ActivationID,
		&attempt, &l.Target, &l.Depth, &l.CreatedMS,
	)
	if err != nil {
		return l, err
	}
	if l.Parent.Attempt, err = toUint32(attempt); err != nil {
		return l, err
	}
	return l, nil
}

func activationArgs(out []any, a *backend.Activation, like []any) []any {
	l := newArgList(out, like)
	l.str(a.Key.RunID)
	l.str(a.Key.NodeID)
	l.str(a.Key.ActivationID)
	l.int(a.Generation)
	l.str(string(a.Status))
	l.int(boolArg(a.Admissible))
	l.text(a.Input)
	l.text(a.Output)
	l.value(claimsArg(a.Claims))
	l.str(string(a.Effect))
	l.str(string(a.Reconciliation))
	l.text(a.RetryPolicy)
	l.value(predecessorsArg(a.Predecessors))
	l.int(boolArg(a.HasSuccessors))
	if g := a.Group; g != nil {
		l.str(g.Controller.RunID)
		l.str(g.Controller.NodeID)
		l.str(g.Controller.ActivationID)
		l.int(g.Index)
	} else {
		l.null()
		l.null()
		l.null()
		l.null()
	}
	l.int(int64(a.LastAttempt))
	l.int(a.CreatedMS)
	l.int(a.UpdatedMS)
	l.int(a.AttemptTimeoutMS)
	l.value(predecessorsArg(a.WaitFor))
	l.int(a.OpenWaits)
	l.value(predecessorsArg(a.Joins))
	return l.out
}

// activationScan holds what a scan of an activation row writes, in one
// allocation (see runScan).
type activationScan struct {
	a                             backend.Activation
	status, effect, recon         string
	claims, preds, waitFor, joins []byte
	gr, gn, ga                    sql.NullString
	gi                            sql.NullInt64
	last                          int64
	dest                          [25]any
}

func scanActivation(s scanner) (backend.Activation, error) {
	v := new(activationScan)
	a := &v.a
	v.dest = [...]any{
		&a.Key.RunID, &a.Key.NodeID, &a.Key.ActivationID, &a.Generation, &v.status, &a.Admissible,
		&a.Input, &a.Output, &v.claims, &v.effect, &v.recon, &a.RetryPolicy, &v.preds,
		&a.HasSuccessors, &v.gr, &v.gn, &v.ga, &v.gi,
		&v.last, &a.CreatedMS, &a.UpdatedMS, &a.AttemptTimeoutMS,
		&v.waitFor, &a.OpenWaits, &v.joins,
	}
	err := s.Scan(v.dest[:]...)
	if err != nil {
		return *a, err
	}
	a.Status = backend.ActivationStatus(v.status)
	a.Effect = backend.Effect(v.effect)
	a.Reconciliation = backend.Reconciliation(v.recon)
	if a.Claims, err = decodeClaims(v.claims); err != nil {
		return *a, fmt.Errorf("activation claims: %w", err)
	}
	if a.Predecessors, err = decodePredecessors(v.preds); err != nil {
		return *a, fmt.Errorf("activation predecessors: %w", err)
	}
	if a.WaitFor, err = decodePredecessors(v.waitFor); err != nil {
		return *a, fmt.Errorf("activation wait_for: %w", err)
	}
	if a.Joins, err = decodePredecessors(v.joins); err != nil {
		return *a, fmt.Errorf("activation joins: %w", err)
	}
	if v.gi.Valid {
		a.Group = &backend.GroupMember{
			Controller: backend.ActivationKey{RunID: v.gr.String, NodeID: v.gn.String, ActivationID: v.ga.String},
			Index:      v.gi.Int64,
		}
	}
	if a.LastAttempt, err = toUint32(v.last); err != nil {
		return *a, err
	}
	return *a, nil
}

func groupArgs(out []any, g *backend.FanOutGroup, like []any) []any {
	l := newArgList(out, like)
	l.str(g.Controller.RunID)
	l.str(g.Controller.NodeID)
	l.str(g.Controller.ActivationID)
	l.int(g.Size)
	l.int(g.MaxConcurrency)
	l.int(g.Promoted)
	l.int(g.Settled)
	l.int(boolArg(g.Retiring))
	l.int(g.RetiredMS)
	l.int(g.CreatedMS)
	l.int(boolArg(g.FailFast))
	l.int(boolArg(g.FanIn))
	return l.out
}

func scanGroup(s scanner) (backend.FanOutGroup, error) {
	var g backend.FanOutGroup
	err := s.Scan(
		&g.Controller.RunID, &g.Controller.NodeID, &g.Controller.ActivationID,
		&g.Size, &g.MaxConcurrency, &g.Promoted, &g.Settled, &g.Retiring, &g.RetiredMS, &g.CreatedMS, &g.FailFast, &g.FanIn,
	)
	return g, err
}

func attemptArgs(out []any, a *backend.Attempt, like []any) []any {
	l := newArgList(out, like)
	l.str(a.Key.RunID)
	l.str(a.Key.NodeID)
	l.str(a.Key.ActivationID)
	l.int(int64(a.Key.Attempt))
	l.str(a.Identity)
	l.str(string(a.Status))
	l.str(string(a.SideEffect))
	l.text(a.Intent)
	l.str(a.IntentChecksum)
	l.text(a.Receipt)
	l.str(string(a.Handoff))
	l.text(a.Detail)
	l.int(a.PreparedMS)
	l.int(a.AdmittedMS)
	l.int(a.TerminalMS)
	l.str(a.HandoffToken)
	return l.out
}

// attemptScan holds what a scan of an attempt row writes, in one
// allocation (see runScan).
type attemptScan struct {
	a                       backend.Attempt
	attempt                 int64
	status, effect, handoff string
	dest                    [16]any
}

func scanAttempt(s scanner) (backend.Attempt, error) {
	v := new(attemptScan)
	a := &v.a
	v.dest = [...]any{
		&a.Key.RunID, &a.Key.NodeID, &a.Key.ActivationID, &v.attempt,
		&a.Identity, &v.status, &v.effect,
		&a.Intent, &a.IntentChecksum, &a.Receipt, &v.handoff, &a.Detail,
		&a.PreparedMS, &a.AdmittedMS, &a.TerminalMS, &a.HandoffToken,
	}
	err := s.Scan(v.dest[:]...)
	if err != nil {
		return *a, err
	}
	a.Status = backend.AttemptStatus(v.status)
	a.SideEffect = backend.Effect(v.effect)
	a.Handoff = backend.Handoff(v.handoff)
	if a.Key.Attempt, err = toUint32(v.attempt); err != nil {
		return *a, err
	}
	return *a, nil
}

func leaseArgs(out []any, ls *backend.Lease, like []any) []any {
	l := newArgList(out, like)
	k := &ls.Key
	l.str(k.RunID)
	l.str(k.NodeID)
	l.str(k.ActivationID)
	l.int(int64(k.Attempt))
	l.str(k.Resource)
	l.str(string(k.Mode))
	l.int(ls.AcquiredMS)
	l.int(ls.ReleasedMS)
	return l.out
}

func scanLease(s scanner) (backend.Lease, error) {
	var l backend.Lease
	var attempt int64
	var mode string
	k := &l.Key
	err := s.Scan(&k.RunID, &k.NodeID, &k.ActivationID, &attempt, &k.Resource, &mode, &l.AcquiredMS, &l.ReleasedMS)
	if err != nil {
		return l, err
	}
	k.Mode = backend.LeaseMode(mode)
	if k.Attempt, err = toUint32(attempt); err != nil {
		return l, err
	}
	return l, nil
}

func scheduleArgs(out []any, r *backend.RetrySchedule, like []any) []any {
	l := newArgList(out, like)
	l.str(r.Key.RunID)
	l.str(r.Key.NodeID)
	l.str(r.Key.ActivationID)
	l.int(int64(r.FailedAttempt))
	l.int(int64(r.NextAttempt))
	l.str(r.FailureKind)
	l.int(r.BackoffMS)
	l.int(r.DueMS)
	l.int(r.ScheduledMS)
	return l.out
}

func scanSchedule(s scanner) (backend.RetrySchedule, error) {
	var r backend.RetrySchedule
	var failed, next int64
	err := s.Scan(
		&r.Key.RunID, &r.Key.NodeID, &r.Key.ActivationID,
		&failed, &next, &r.FailureKind, &r.BackoffMS, &r.DueMS, &r.ScheduledMS,
	)
	if err != nil {
		return r, err
	}
	if r.FailedAttempt, err = toUint32(failed); err != nil {
		return r, err
	}
	if r.NextAttempt, err = toUint32(next); err != nil {
		return r, err
	}
	return r, nil
}

func eventArgs(out []any, e *backend.Event, like []any) []any {
	l := newArgList(out, like)
	l.str(e.RunID)
	l.int(e.Seq)
	l.str(e.Type)
	l.text(e.Payload)
	l.int(e.CreatedMS)
	return l.out
}

func scanEvent(s scanner) (backend.Event, error) {
	var e backend.Event
	err := s.Scan(&e.RunID, &e.Seq, &e.Type, &e.Payload, &e.CreatedMS)
	return e, err
}

func toUint32(v int64) (uint32, error) {
	if v < 0 || v > 1<<32-1 {
		return 0, fmt.Errorf("attempt number %d: %w", v, errCorrupt)
	}
	return uint32(v), nil
}
