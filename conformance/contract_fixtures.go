package conformance

import (
	"fmt"
	"strings"

	"github.com/wfstore/wfstore/backend"
)

// Record factories. full* set every field to a distinct non-zero value
// derived from the key (so a dropped or swapped field shows up); alt*
// change every non-key field of a full record, turning optional fields
// (JSON, Authority, Group, slices) absent, so a Replace that keeps an old
// field shows up.

// js builds a small JSON document that a JSON-aware store would rewrite:
// keys sorted bytewise but not by length, numbers kept as written, an escape.
func js(tag string) []byte {
	return fmt.Appendf(nil, `{"aa":1.0,"b":[1e2,-0,12345678901234567890123456789],"s":"%s \u00e9 é \u0000 \ud834\udd1e"}`, jsonEscape(tag))
}

func jsonEscape(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return r.Replace(s)
}

func akey(run, node, act string) backend.ActivationKey {
	return backend.ActivationKey{RunID: run, NodeID: node, ActivationID: act}
}

func atkey(k backend.ActivationKey, n uint32) backend.AttemptKey {
	return backend.AttemptKey{ActivationKey: k, Attempt: n}
}

func lkey(k backend.AttemptKey, res string, mode backend.LeaseMode) backend.LeaseKey {
	return backend.LeaseKey{AttemptKey: k, Resource: res, Mode: mode}
}

func fullRun(id string) backend.Run {
	return backend.Run{
		ID:                id,
		RootID:            "root-of-" + id,
		ParentID:          "parent-of-" + id,
		Depth:             3,
		Status:            backend.RunPaused,
		Limits:            backend.Limits{NodeExecutionCap: 11, ConcurrencyCap: 12, CycleCap: 13, RetryCap: 14},
		DeadlineMS:        1_700_000_000_001,
		CancelRequestedMS: 1_700_000_000_002,
		Authority: &backend.Authority{
			TargetArtifactID: "artifact-" + id,
			DaemonInstanceID: "daemon-" + id,
			Generation:       7,
			FencingToken:     "token-" + id,
		},
		Metadata:           js("metadata " + id),
		CreatedMS:          1_700_000_000_003,
		UpdatedMS:          1_700_000_000_004,
		LastEventSeq:       21,
		AttemptCount:       22,
		ActiveCount:        23,
		TreeAttemptCount:   24,
		DescendantCount:    25,
		ExhaustionRecorded: true,
	}
}

func altRun(r backend.Run) backend.Run {
	return backend.Run{
		ID:                r.ID,
		RootID:            r.ID,
		ParentID:          "",
		Depth:             1,
		Status:            backend.RunRepairRequired,
		Limits:            backend.Limits{NodeExecutionCap: 101, ConcurrencyCap: 102, CycleCap: 103, RetryCap: 104},
		DeadlineMS:        0,
		CancelRequestedMS: 0,
		Authority:         nil,
		Metadata:          nil,
		CreatedMS:         r.CreatedMS + 1,
		UpdatedMS:         r.UpdatedMS + 1,
		LastEventSeq:      r.LastEventSeq + 1,
		AttemptCount:      r.AttemptCount + 1,
		ActiveCount:       r.ActiveCount + 1,
		TreeAttemptCount:  r.TreeAttemptCount + 1,
		DescendantCount:   r.DescendantCount + 1,
	}
}

func fullLink(child, root string, parent backend.AttemptKey) backend.RunLink {
	return backend.RunLink{
		ChildRunID: child,
		RootRunID:  root,
		Parent:     parent,
		Target:     js("target " + child),
		Depth:      2,
		CreatedMS:  1_700_000_000_010,
	}
}

func fullActivation(k backend.ActivationKey) backend.Activation {
	return backend.Activation{
		Key:              k,
		Generation:       4,
		Status:           backend.ActivationPending,
		Admissible:       true,
		Input:            js("input " + k.NodeID),
		Output:           js("output " + k.NodeID),
		Claims:           []backend.ResourceClaim{{Resource: "res-b " + k.NodeID, Mode: backend.LeaseWrite}, {Resource: "res-a", Mode: backend.LeaseRead}},
		Effect:           backend.Mutating,
		Reconciliation:   backend.ReceiptStatus,
		RetryPolicy:      js("retry " + k.NodeID),
		Predecessors:     []backend.NodeRef{{NodeID: "pred-z", ActivationID: "1"}, {NodeID: "pred-a", ActivationID: "2"}},
		HasSuccessors:    true,
		Group:            &backend.GroupMember{Controller: akey(k.RunID, "controller "+k.NodeID, "c1"), Index: 5},
		LastAttempt:      3,
		CreatedMS:        1_700_000_000_020,
		UpdatedMS:        1_700_000_000_021,
		AttemptTimeoutMS: 90_022,
		WaitFor:          []backend.NodeRef{{NodeID: "wait-z", ActivationID: "3"}, {NodeID: "wait-a", ActivationID: "4"}},
		OpenWaits:        2,
		Joins:            []backend.NodeRef{{NodeID: "join-z", ActivationID: "5"}, {NodeID: "join-a", ActivationID: "6"}},
	}
}

func altActivation(a backend.Activation) backend.Activation {
	return backend.Activation{
		Key:              a.Key,
		Generation:       a.Generation + 1,
		Status:           backend.ActivationCompleted,
		Admissible:       false,
		Input:            js("other input"),
		Output:           nil,
		Claims:           nil,
		Effect:           backend.ReadOnly,
		Reconciliation:   backend.IdempotentReplay,
		RetryPolicy:      nil,
		Predecessors:     nil,
		HasSuccessors:    false,
		Group:            nil,
		LastAttempt:      a.LastAttempt + 1,
		CreatedMS:        a.CreatedMS + 1,
		UpdatedMS:        a.UpdatedMS + 1,
		AttemptTimeoutMS: 0,
		WaitFor:          nil,
		OpenWaits:        0,
		Joins:            nil,
	}
}

func fullGroup(k backend.ActivationKey) backend.FanOutGroup {
	return backend.FanOutGroup{
		Controller:     k,
		Size:           40,
		MaxConcurrency: 41,
		Promoted:       42,
		Settled:        43,
		Retiring:       true,
		RetiredMS:      1_700_000_000_030,
		CreatedMS:      1_700_000_000_031,
		FailFast:       true,
		FanIn:          true,
	}
}

func altGroup(g backend.FanOutGroup) backend.FanOutGroup {
	return backend.FanOutGroup{
		Controller:     g.Controller,
		Size:           g.Size + 1,
		MaxConcurrency: g.MaxConcurrency + 1,
		Promoted:       g.Promoted + 1,
		Settled:        g.Settled + 1,
		Retiring:       false,
		RetiredMS:      0,
		CreatedMS:      g.CreatedMS + 1,
		FailFast:       !g.FailFast,
		FanIn:          !g.FanIn,
	}
}

func fullAttempt(k backend.AttemptKey, identity string) backend.Attempt {
	return backend.Attempt{
		Key:            k,
		Identity:       identity,
		Status:         backend.AttemptSiblingCancelling,
		SideEffect:     backend.Mutating,
		Intent:         js("intent " + identity),
		IntentChecksum: "checksum-" + identity,
		Receipt:        js("receipt " + identity),
		Handoff:        backend.HandoffRecorded,
		Detail:         js("detail " + identity),
		PreparedMS:     1_700_000_000_040,
		AdmittedMS:     1_700_000_000_041,
		TerminalMS:     1_700_000_000_042,
		HandoffToken:   "9f86d081884c7d659a2feaa0c55ad015-" + identity,
	}
}

func altAttempt(a backend.Attempt) backend.Attempt {
	return backend.Attempt{
		Key:            a.Key,
		Identity:       a.Identity,
		Status:         backend.AttemptAdmitted,
		SideEffect:     backend.ReadOnly,
		Intent:         js("other intent"),
		IntentChecksum: "other-checksum",
		Receipt:        nil,
		Handoff:        backend.HandoffPending,
		Detail:         nil,
		PreparedMS:     a.PreparedMS + 1,
		AdmittedMS:     0,
		TerminalMS:     0,
		HandoffToken:   "",
	}
}

func fullLease(k backend.LeaseKey) backend.Lease {
	return backend.Lease{Key: k, AcquiredMS: 1_700_000_000_050, ReleasedMS: 1_700_000_000_051}
}

func activeLease(k backend.LeaseKey) backend.Lease {
	return backend.Lease{Key: k, AcquiredMS: 1_700_000_000_050}
}

func fullSchedule(k backend.ActivationKey) backend.RetrySchedule {
	return backend.RetrySchedule{
		Key:           k,
		FailedAttempt: 2,
		NextAttempt:   3,
		FailureKind:   "timeout " + k.NodeID,
		BackoffMS:     1500,
		DueMS:         1_700_000_000_060,
		ScheduledMS:   1_700_000_000_061,
	}
}

func altSchedule(s backend.RetrySchedule) backend.RetrySchedule {
	return backend.RetrySchedule{
		Key:           s.Key,
		FailedAttempt: s.FailedAttempt + 1,
		NextAttempt:   s.NextAttempt + 1,
		FailureKind:   "other failure",
		BackoffMS:     s.BackoffMS + 1,
		DueMS:         s.DueMS + 1,
		ScheduledMS:   s.ScheduledMS + 1,
	}
}

func fullEvent(run string, seq int64) backend.Event {
	return backend.Event{
		RunID:     run,
		Seq:       seq,
		Type:      fmt.Sprintf("type-%d", seq),
		Payload:   js(fmt.Sprintf("payload %d", seq)),
		CreatedMS: 1_700_000_000_070 + seq,
	}
}

// fullSet is one record of every kind around one run, every field set.
type fullSet struct {
	Run      backend.Run
	Link     backend.RunLink
	Act      backend.Activation
	Group    backend.FanOutGroup
	Attempt  backend.Attempt
	Lease    backend.Lease // unreleased
	Released backend.Lease // released (every field set)
	Schedule backend.RetrySchedule
	Event    backend.Event
}

// newFullSet builds records whose ids are built from run, node, act, the
// attempt number n and identity.
func newFullSet(run, node, act string, n uint32, identity, resource string) fullSet {
	k := akey(run, node, act)
	ak := atkey(k, n)
	s := fullSet{
		Run:      fullRun(run),
		Link:     fullLink(run, "root "+run, ak),
		Act:      fullActivation(k),
		Group:    fullGroup(k),
		Attempt:  fullAttempt(ak, identity),
		Lease:    activeLease(lkey(ak, resource, backend.LeaseWrite)),
		Released: fullLease(lkey(ak, resource, backend.LeaseRead)),
		Schedule: fullSchedule(k),
		Event:    fullEvent(run, 9),
	}
	s.Link.RootRunID = "root " + run
	return s
}

// changes inserts every record of s.
func (s fullSet) changes() backend.Changes {
	return ins(s.Run, s.Link, s.Act, s.Group, s.Attempt, s.Lease, s.Released, s.Schedule, s.Event)
}

func (s fullSet) lookup() backend.Lookup {
	return backend.Lookup{
		Runs:        []string{s.Run.ID},
		Links:       []string{s.Link.ChildRunID},
		Activations: []backend.ActivationKey{s.Act.Key},
		Groups:      []backend.ActivationKey{s.Group.Controller},
		Attempts:    []backend.AttemptKey{s.Attempt.Key},
		Identities:  []string{s.Attempt.Identity},
		Leases:      []backend.LeaseKey{s.Lease.Key, s.Released.Key},
		Schedules:   []backend.ActivationKey{s.Schedule.Key},
		Resources:   []backend.ResourceRef{{RunID: s.Lease.Key.RunID, Resource: s.Lease.Key.Resource}},
	}
}

// checkFullSet loads every record of s through Load and through the scan that
// returns it, and compares each with what was written.
func (e *env) checkFullSet(b backend.Backend, what string, s fullSet) {
	e.T.Helper()
	f := e.load(b, s.lookup())
	e.equal(what+": Load Runs", map[string]backend.Run{s.Run.ID: s.Run}, f.Runs)
	e.equal(what+": Load Links", map[string]backend.RunLink{s.Link.ChildRunID: s.Link}, f.Links)
	e.equal(what+": Load Activations", map[backend.ActivationKey]backend.Activation{s.Act.Key: s.Act}, f.Activations)
	e.equal(what+": Load Groups", map[backend.ActivationKey]backend.FanOutGroup{s.Group.Controller: s.Group}, f.Groups)
	e.equal(what+": Load Attempts", map[backend.AttemptKey]backend.Attempt{s.Attempt.Key: s.Attempt}, f.Attempts)
	e.equal(what+": Load Identities", map[string]backend.Attempt{s.Attempt.Identity: s.Attempt}, f.Identities)
	e.equal(what+": Load Leases", map[backend.LeaseKey]backend.Lease{s.Lease.Key: s.Lease, s.Released.Key: s.Released}, f.Leases)
	e.equal(what+": Load Schedules", map[backend.ActivationKey]backend.RetrySchedule{s.Schedule.Key: s.Schedule}, f.Schedules)
	ref := backend.ResourceRef{RunID: s.Lease.Key.RunID, Resource: s.Lease.Key.Resource}
	e.equal(what+": Load Resources", map[backend.ResourceRef][]backend.Lease{ref: {s.Lease}}, f.Resources)

	run := s.Run.ID
	e.view(b, func(rtx backend.ReadTx) error {
		ctx := e.Ctx
		if s.Act.Admissible {
			got, err := rtx.AdmissibleActivations(ctx, backend.AdmissibleQuery{RunID: s.Act.Key.RunID, Limit: 10})
			if err != nil {
				return fmt.Errorf("scan AdmissibleActivations: %w", err)
			}
			e.equal(what+": AdmissibleActivations(run)", []backend.Activation{s.Act}, got)
			got, err = rtx.AdmissibleActivations(ctx, backend.AdmissibleQuery{Limit: 1000})
			if err != nil {
				return fmt.Errorf("scan AdmissibleActivations: %w", err)
			}
			e.equal(what+": AdmissibleActivations(global)", []backend.Activation{s.Act}, pick(got, func(a backend.Activation) bool { return a.Key == s.Act.Key }))
		}
		acts, err := rtx.Activations(ctx, backend.ActivationQuery{RunID: s.Act.Key.RunID, Limit: 10})
		if err != nil {
			return fmt.Errorf("scan Activations: %w", err)
		}
		e.equal(what+": Activations", []backend.Activation{s.Act}, acts)
		atts, err := rtx.Attempts(ctx, backend.AttemptQuery{RunID: s.Attempt.Key.RunID, Limit: 10})
		if err != nil {
			return fmt.Errorf("scan Attempts: %w", err)
		}
		e.equal(what+": Attempts(run)", []backend.Attempt{s.Attempt}, atts)
		atts, err = rtx.Attempts(ctx, backend.AttemptQuery{Status: s.Attempt.Status, Limit: 1000})
		if err != nil {
			return fmt.Errorf("scan Attempts: %w", err)
		}
		e.equal(what+": Attempts(status)", []backend.Attempt{s.Attempt}, pick(atts, func(a backend.Attempt) bool { return a.Key == s.Attempt.Key }))
		links, err := rtx.ChildRuns(ctx, backend.ChildRunQuery{RootRunID: s.Link.RootRunID, Limit: 10})
		if err != nil {
			return fmt.Errorf("scan ChildRuns: %w", err)
		}
		e.equal(what+": ChildRuns", []backend.RunLink{s.Link}, links)
		scheds, err := rtx.DueSchedules(ctx, backend.ScheduleQuery{RunID: s.Schedule.Key.RunID, DueBy: s.Schedule.DueMS, Limit: 10})
		if err != nil {
			return fmt.Errorf("scan DueSchedules: %w", err)
		}
		e.equal(what+": DueSchedules", []backend.RetrySchedule{s.Schedule}, scheds)
		evs, err := rtx.Events(ctx, backend.EventQuery{RunID: run, Limit: 10})
		if err != nil {
			return fmt.Errorf("scan Events: %w", err)
		}
		e.equal(what+": Events", []backend.Event{s.Event}, evs)
		leases, err := rtx.Leases(ctx, backend.LeaseQuery{RunID: s.Lease.Key.RunID, Limit: 10})
		if err != nil {
			return fmt.Errorf("scan Leases: %w", err)
		}
		e.equal(what+": Leases", []backend.Lease{s.Lease}, leases)
		return nil
	})
}

// pick returns the elements of xs that keep reports true for.
func pick[T any](xs []T, keep func(T) bool) []T {
	var out []T
	for _, x := range xs {
		if keep(x) {
			out = append(out, x)
		}
	}
	return out
}
