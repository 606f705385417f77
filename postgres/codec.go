package postgres

import (
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/wfstore/wfstore/backend"
)

// Encoders return a record's column values in table column order; decoders
// scan a row of the same columns. nil []byte and nil slices are stored as
// SQL NULL and read back as nil, so nil and empty survive a round trip.

func runArgs(r backend.Run) []any {
	var target, daemon, token *string
	var gen *int64
	if a := r.Authority; a != nil {
		target, daemon, token, gen = &a.TargetArtifactID, &a.DaemonInstanceID, &a.FencingToken, &a.Generation
	}
	return []any{
		r.ID, r.RootID, r.ParentID, r.Depth, string(r.Status),
		r.Limits.NodeExecutionCap, r.Limits.ConcurrencyCap, r.Limits.CycleCap, r.Limits.RetryCap,
		r.DeadlineMS, r.CancelRequestedMS,
		target, daemon, gen, token,
		r.Metadata, r.CreatedMS, r.UpdatedMS, r.LastEventSeq,
		r.AttemptCount, r.ActiveCount, r.TreeAttemptCount, r.DescendantCount,
		r.ExhaustionRecorded,
	}
}

func scanRun(row pgx.Row) (backend.Run, error) {
	var r backend.Run
	var status string
	var target, daemon, token *string
	var gen *int64
	err := row.Scan(
		&r.ID, &r.RootID, &r.ParentID, &r.Depth, &status,
		&r.Limits.NodeExecutionCap, &r.Limits.ConcurrencyCap, &r.Limits.CycleCap, &r.Limits.RetryCap,
		&r.DeadlineMS, &r.CancelRequestedMS,
		&target, &daemon, &gen, &token,
		&r.Metadata, &r.CreatedMS, &r.UpdatedMS, &r.LastEventSeq,
		&r.AttemptCount, &r.ActiveCount, &r.TreeAttemptCount, &r.DescendantCount,
		&r.ExhaustionRecorded,
	)
	if err != nil {
		return r, err
	}
	r.Status = backend.RunStatus(status)
	if gen != nil {
		if target == nil || daemon == nil || token == nil {
			return r, fmt.Errorf("run %q: partial authority columns", r.ID)
		}
		r.Authority = &backend.Authority{TargetArtifactID: *target, DaemonInstanceID: *daemon, Generation: *gen, FencingToken: *token}
	}
	return r, nil
}

func linkArgs(l backend.RunLink) []any {
	return []any{
		l.ChildRunID, l.RootRunID,
		l.Parent.RunID, l.Parent.NodeID, l.Parent.ActivationID, int64(l.Parent.Attempt),
		l.Target, l.Depth, l.CreatedMS,
	}
}

func scanLink(row pgx.Row) (backend.RunLink, error) {
	var l backend.RunLink
	var attempt int64
	err := row.Scan(
		&l.ChildRunID, &l.RootRunID,
		&l.Parent.RunID, &l.Parent.NodeID, &l.Parent.ActivationID, &attempt,
		&l.Target, &l.Depth, &l.CreatedMS,
	)
	l.Parent.Attempt = uint32(attempt)
	return l, err
}

func activationArgs(a backend.Activation) []any {
	var resources, modes, predNodes, predActs []string
	if a.Claims != nil {
		resources, modes = make([]string, len(a.Claims)), make([]string, len(a.Claims))
		for i, c := range a.Claims {
			resources[i], modes[i] = c.Resource, string(c.Mode)
		}
	}
	if a.Predecessors != nil {
		predNodes, predActs = make([]string, len(a.Predecessors)), make([]string, len(a.Predecessors))
		for i, p := range a.Predecessors {
			predNodes[i], predActs[i] = p.NodeID, p.ActivationID
		}
	}
	var gRun, gNode, gAct *string
	var gIndex *int64
	if g := a.Group; g != nil {
		gRun, gNode, gAct, gIndex = &g.Controller.RunID, &g.Controller.NodeID, &g.Controller.ActivationID, &g.Index
	}
	waitNodes, waitActs := nodeRefColumns(a.WaitFor)
	joinNodes, joinActs := nodeRefColumns(a.Joins)
	return []any{
		a.Key.RunID, a.Key.NodeID, a.Key.ActivationID,
		a.Generation, string(a.Status), a.Admissible, a.Input, a.Output,
		resources, modes, string(a.Effect), string(a.Reconciliation), a.RetryPolicy,
		predNodes, predActs, a.HasSuccessors,
		gRun, gNode, gAct, gIndex,
		int64(a.LastAttempt), a.CreatedMS, a.UpdatedMS, a.AttemptTimeoutMS,
		waitNodes, waitActs, a.OpenWaits, joinNodes, joinActs,
	}
}

// nodeRefColumns splits refs into its node id and activation id array
// columns; nil stays NULL.
func nodeRefColumns(refs []backend.NodeRef) (nodes, acts []string) {
	if refs == nil {
		return nil, nil
	}
	nodes, acts = make([]string, len(refs)), make([]string, len(refs))
	for i, p := range refs {
		nodes[i], acts[i] = p.NodeID, p.ActivationID
	}
	return nodes, acts
}

// nodeRefsFrom joins node id and activation id array columns; NULL stays nil.
func nodeRefsFrom(k backend.ActivationKey, what string, nodes, acts []string) ([]backend.NodeRef, error) {
	if nodes == nil {
		return nil, nil
	}
	if len(acts) != len(nodes) {
		return nil, fmt.Errorf("activation %v: %s columns differ in length", k, what)
	}
	refs := make([]backend.NodeRef, len(nodes))
	for i := range nodes {
		refs[i] = backend.NodeRef{NodeID: nodes[i], ActivationID: acts[i]}
	}
	return refs, nil
}

func scanActivation(row pgx.Row) (backend.Activation, error) {
	var a backend.Activation
	var status, effect, recon string
	var resources, modes, predNodes, predActs []string
	var waitNodes, waitActs, joinNodes, joinActs []string
	var gRun, gNode, gAct *string
	var gIndex *int64
	var last int64
	err := row.Scan(
		&a.Key.RunID, &a.Key.NodeID, &a.Key.ActivationID,
		&a.Generation, &status, &a.Admissible, &a.Input, &a.Output,
		&resources, &modes, &effect, &recon, &a.RetryPolicy,
		&predNodes, &predActs, &a.HasSuccessors,
		&gRun, &gNode, &gAct, &gIndex,
		&last, &a.CreatedMS, &a.UpdatedMS, &a.AttemptTimeoutMS,
		&waitNodes, &waitActs, &a.OpenWaits, &joinNodes, &joinActs,
	)
	if err != nil {
		return a, err
	}
	a.Status, a.Effect, a.Reconciliation = backend.ActivationStatus(status), backend.Effect(effect), backend.Reconciliation(recon)
	a.LastAttempt = uint32(last)
	if resources != nil {
		if len(modes) != len(resources) {
			return a, fmt.Errorf("activation %v: claim columns differ in length", a.Key)
		}
		a.Claims = make([]backend.ResourceClaim, len(resources))
		for i := range resources {
			a.Claims[i] = backend.ResourceClaim{Resource: resources[i], Mode: backend.LeaseMode(modes[i])}
		}
	}
	if predNodes != nil {
		if len(predActs) != len(predNodes) {
			return a, fmt.Errorf("activation %v: predecessor columns differ in length", a.Key)
		}
		a.Predecessors = make([]backend.NodeRef, len(predNodes))
		for i := range predNodes {
			a.Predecessors[i] = backend.NodeRef{NodeID: predNodes[i], ActivationID: predActs[i]}
		}
	}
	if a.WaitFor, err = nodeRefsFrom(a.Key, "wait_for", waitNodes, waitActs); err != nil {
		return a, err
	}
	if a.Joins, err = nodeRefsFrom(a.Key, "join", joinNodes, joinActs); err != nil {
		return a, err
	}
	if gIndex != nil {
		if gRun == nil || gNode == nil || gAct == nil {
			return a, fmt.Errorf("activation %v: partial group columns", a.Key)
		}
		a.Group = &backend.GroupMember{
			Controller: backend.ActivationKey{RunID: *gRun, NodeID: *gNode, ActivationID: *gAct},
			Index:      *gIndex,
		}
	}
	return a, nil
}

func groupArgs(g backend.FanOutGroup) []any {
	return []any{
		g.Controller.RunID, g.Controller.NodeID, g.Controller.ActivationID,
		g.Size, g.MaxConcurrency, g.Promoted, g.Settled, g.Retiring, g.RetiredMS, g.CreatedMS, g.FailFast, g.FanIn,
	}
}

func scanGroup(row pgx.Row) (backend.FanOutGroup, error) {
	var g backend.FanOutGroup
	err := row.Scan(
		&g.Controller.RunID, &g.Controller.NodeID, &g.Controller.ActivationID,
		&g.Size, &g.MaxConcurrency, &g.Promoted, &g.Settled, &g.Retiring, &g.RetiredMS, &g.CreatedMS, &g.FailFast, &g.FanIn,
	)
	return g, err
}

func attemptArgs(a backend.Attempt) []any {
	return []any{
		a.Key.RunID, a.Key.NodeID, a.Key.ActivationID, int64(a.Key.Attempt),
		a.Identity, string(a.Status), string(a.SideEffect), a.Intent, a.IntentChecksum, a.Receipt,
		string(a.Handoff), a.Detail, a.PreparedMS, a.AdmittedMS, a.TerminalMS, a.HandoffToken,
	}
}

func scanAttempt(row pgx.Row) (backend.Attempt, error) {
	var a backend.Attempt
	var attempt int64
	var status, effect, handoff string
	err := row.Scan(
		&a.Key.RunID, &a.Key.NodeID, &a.Key.ActivationID, &attempt,
		&a.Identity, &status, &effect, &a.Intent, &a.IntentChecksum, &a.Receipt,
		&handoff, &a.Detail, &a.PreparedMS, &a.AdmittedMS, &a.TerminalMS, &a.HandoffToken,
	)
	a.Key.Attempt = uint32(attempt)
	a.Status, a.SideEffect, a.Handoff = backend.AttemptStatus(status), backend.Effect(effect), backend.Handoff(handoff)
	return a, err
}

func leaseArgs(l backend.Lease) []any {
	return []any{
		l.Key.RunID, l.Key.NodeID, l.Key.ActivationID, int64(l.Key.Attempt), l.Key.Resource, string(l.Key.Mode),
		l.AcquiredMS, l.ReleasedMS,
	}
}

func scanLease(row pgx.Row) (backend.Lease, error) {
	var l backend.Lease
	var attempt int64
	var mode string
	err := row.Scan(
		&l.Key.RunID, &l.Key.NodeID, &l.Key.ActivationID, &attempt, &l.Key.Resource, &mode,
		&l.AcquiredMS, &l.ReleasedMS,
	)
	l.Key.Attempt = uint32(attempt)
	l.Key.Mode = backend.LeaseMode(mode)
	return l, err
}

func scheduleArgs(s backend.RetrySchedule) []any {
	return []any{
		s.Key.RunID, s.Key.NodeID, s.Key.ActivationID,
		int64(s.FailedAttempt), int64(s.NextAttempt), s.FailureKind, s.BackoffMS, s.DueMS, s.ScheduledMS,
	}
}

func scanSchedule(row pgx.Row) (backend.RetrySchedule, error) {
	var s backend.RetrySchedule
	var failed, next int64
	err := row.Scan(
		&s.Key.RunID, &s.Key.NodeID, &s.Key.ActivationID,
		&failed, &next, &s.FailureKind, &s.BackoffMS, &s.DueMS, &s.ScheduledMS,
	)
	s.FailedAttempt, s.NextAttempt = uint32(failed), uint32(next)
	return s, err
}

func eventArgs(e backend.Event) []any {
	return []any{e.RunID, e.Seq, e.Type, e.Payload, e.CreatedMS}
}

func scanEvent(row pgx.Row) (backend.Event, error) {
	var e backend.Event
	err := row.Scan(&e.RunID, &e.Seq, &e.Type, &e.Payload, &e.CreatedMS)
	return e, err
}
