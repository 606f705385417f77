package sqlite

import (
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

// jsonArg binds canonical JSON as TEXT; nil binds NULL. TEXT (rather than
// BLOB) keeps an empty non-nil value distinct from nil on the way back.
func jsonArg(b []byte) any {
	if b == nil {
		return nil
	}
	return string(b)
}

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

func runArgs(r *backend.Run) []any {
	var at, ad, af any
	var ag any
	if a := r.Authority; a != nil {
		at, ad, ag, af = a.TargetArtifactID, a.DaemonInstanceID, a.Generation, a.FencingToken
	}
	return []any{
		r.ID, r.RootID, r.ParentID, r.Depth, string(r.Status),
		r.Limits.NodeExecutionCap, r.Limits.ConcurrencyCap, r.Limits.CycleCap, r.Limits.RetryCap,
		r.DeadlineMS, r.CancelRequestedMS,
		at, ad, ag, af,
		jsonArg(r.Metadata), r.CreatedMS, r.UpdatedMS, r.LastEventSeq,
		r.AttemptCount, r.ActiveCount, r.TreeAttemptCount, r.DescendantCount, boolArg(r.ExhaustionRecorded),
	}
}

func scanRun(s scanner) (backend.Run, error) {
	var r backend.Run
	var status string
	var at, ad, af sql.NullString
	var ag sql.NullInt64
	err := s.Scan(
		&r.ID, &r.RootID, &r.ParentID, &r.Depth, &status,
		&r.Limits.NodeExecutionCap, &r.Limits.ConcurrencyCap, &r.Limits.CycleCap, &r.Limits.RetryCap,
		&r.DeadlineMS, &r.CancelRequestedMS,
		&at, &ad, &ag, &af,
		&r.Metadata, &r.CreatedMS, &r.UpdatedMS, &r.LastEventSeq,
		&r.AttemptCount, &r.ActiveCount, &r.TreeAttemptCount, &r.DescendantCount, &r.ExhaustionRecorded,
	)
	if err != nil {
		return r, err
	}
	r.Status = backend.RunStatus(status)
	if ag.Valid {
		r.Authority = &backend.Authority{
			TargetArtifactID: at.String,
			DaemonInstanceID: ad.String,
			Generation:       ag.Int64,
			FencingToken:     af.String,
		}
	}
	return r, nil
}

func linkArgs(l *backend.RunLink) []any {
	return []any{
		l.ChildRunID, l.RootRunID, l.Parent.RunID, l.Parent.NodeID, l.Parent.ActivationID,
		int64(l.Parent.Attempt), jsonArg(l.Target), l.Depth, l.CreatedMS,
	}
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

func activationArgs(a *backend.Activation) []any {
	var gr, gn, ga, gi any
	if g := a.Group; g != nil {
		gr, gn, ga, gi = g.Controller.RunID, g.Controller.NodeID, g.Controller.ActivationID, g.Index
	}
	return []any{
		a.Key.RunID, a.Key.NodeID, a.Key.ActivationID, a.Generation, string(a.Status), boolArg(a.Admissible),
		jsonArg(a.Input), jsonArg(a.Output), claimsArg(a.Claims), string(a.Effect), string(a.Reconciliation),
		jsonArg(a.RetryPolicy), predecessorsArg(a.Predecessors),
		boolArg(a.HasSuccessors), gr, gn, ga, gi,
		int64(a.LastAttempt), a.CreatedMS, a.UpdatedMS, a.AttemptTimeoutMS,
		predecessorsArg(a.WaitFor), a.OpenWaits, predecessorsArg(a.Joins),
	}
}

func scanActivation(s scanner) (backend.Activation, error) {
	var a backend.Activation
	var status, effect, recon string
	var claims, preds, waitFor, joins []byte
	var gr, gn, ga sql.NullString
	var gi sql.NullInt64
	var last int64
	err := s.Scan(
		&a.Key.RunID, &a.Key.NodeID, &a.Key.ActivationID, &a.Generation, &status, &a.Admissible,
		&a.Input, &a.Output, &claims, &effect, &recon, &a.RetryPolicy, &preds,
		&a.HasSuccessors, &gr, &gn, &ga, &gi,
		&last, &a.CreatedMS, &a.UpdatedMS, &a.AttemptTimeoutMS,
		&waitFor, &a.OpenWaits, &joins,
	)
	if err != nil {
		return a, err
	}
	a.Status = backend.ActivationStatus(status)
	a.Effect = backend.Effect(effect)
	a.Reconciliation = backend.Reconciliation(recon)
	if a.Claims, err = decodeClaims(claims); err != nil {
		return a, fmt.Errorf("activation claims: %w", err)
	}
	if a.Predecessors, err = decodePredecessors(preds); err != nil {
		return a, fmt.Errorf("activation predecessors: %w", err)
	}
	if a.WaitFor, err = decodePredecessors(waitFor); err != nil {
		return a, fmt.Errorf("activation wait_for: %w", err)
	}
	if a.Joins, err = decodePredecessors(joins); err != nil {
		return a, fmt.Errorf("activation joins: %w", err)
	}
	if gi.Valid {
		a.Group = &backend.GroupMember{
			Controller: backend.ActivationKey{RunID: gr.String, NodeID: gn.String, ActivationID: ga.String},
			Index:      gi.Int64,
		}
	}
	if a.LastAttempt, err = toUint32(last); err != nil {
		return a, err
	}
	return a, nil
}

func groupArgs(g *backend.FanOutGroup) []any {
	return []any{
		g.Controller.RunID, g.Controller.NodeID, g.Controller.ActivationID,
		g.Size, g.MaxConcurrency, g.Promoted, g.Settled, boolArg(g.Retiring), g.RetiredMS, g.CreatedMS, boolArg(g.FailFast), boolArg(g.FanIn),
	}
}

func scanGroup(s scanner) (backend.FanOutGroup, error) {
	var g backend.FanOutGroup
	err := s.Scan(
		&g.Controller.RunID, &g.Controller.NodeID, &g.Controller.ActivationID,
		&g.Size, &g.MaxConcurrency, &g.Promoted, &g.Settled, &g.Retiring, &g.RetiredMS, &g.CreatedMS, &g.FailFast, &g.FanIn,
	)
	return g, err
}

func attemptArgs(a *backend.Attempt) []any {
	return []any{
		a.Key.RunID, a.Key.NodeID, a.Key.ActivationID, int64(a.Key.Attempt),
		a.Identity, string(a.Status), string(a.SideEffect),
		jsonArg(a.Intent), a.IntentChecksum, jsonArg(a.Receipt), string(a.Handoff), jsonArg(a.Detail),
		a.PreparedMS, a.AdmittedMS, a.TerminalMS, a.HandoffToken,
	}
}

func scanAttempt(s scanner) (backend.Attempt, error) {
	var a backend.Attempt
	var attempt int64
	var status, effect, handoff string
	err := s.Scan(
		&a.Key.RunID, &a.Key.NodeID, &a.Key.ActivationID, &attempt,
		&a.Identity, &status, &effect,
		&a.Intent, &a.IntentChecksum, &a.Receipt, &handoff, &a.Detail,
		&a.PreparedMS, &a.AdmittedMS, &a.TerminalMS, &a.HandoffToken,
	)
	if err != nil {
		return a, err
	}
	a.Status = backend.AttemptStatus(status)
	a.SideEffect = backend.Effect(effect)
	a.Handoff = backend.Handoff(handoff)
	if a.Key.Attempt, err = toUint32(attempt); err != nil {
		return a, err
	}
	return a, nil
}

func leaseArgs(l *backend.Lease) []any {
	k := &l.Key
	return []any{
		k.RunID, k.NodeID, k.ActivationID, int64(k.Attempt), k.Resource, string(k.Mode),
		l.AcquiredMS, l.ReleasedMS,
	}
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

func scheduleArgs(r *backend.RetrySchedule) []any {
	return []any{
		r.Key.RunID, r.Key.NodeID, r.Key.ActivationID,
		int64(r.FailedAttempt), int64(r.NextAttempt), r.FailureKind, r.BackoffMS, r.DueMS, r.ScheduledMS,
	}
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

func eventArgs(e *backend.Event) []any {
	return []any{e.RunID, e.Seq, e.Type, jsonArg(e.Payload), e.CreatedMS}
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
