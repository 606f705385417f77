package workflow

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/event"
	"github.com/wfstore/wfstore/workflow/internal/state"
)

// VerifyCheck names one durable invariant Verify checks.
type VerifyCheck string

// The invariants Verify checks. Each Violation names the one it breaks.
const (
	// CheckOneActiveAttempt: an activation has at most one attempt in an
	// active status (prepared, admitted, running, cancelling,
	// sibling_cancelling).
	CheckOneActiveAttempt VerifyCheck = "one_active_attempt"
	// CheckActivationStatus: an activation's status agrees with its
	// attempts: it is running exactly when its latest attempt (number
	// LastAttempt) is active or repair_required, an active attempt is its
	// latest one, and no attempt is numbered above LastAttempt.
	CheckActivationStatus VerifyCheck = "activation_status"
	// CheckReceiptHandoff: an attempt's receipt and handoff agree with its
	// status: a prepared attempt has no receipt, an attempt with a receipt
	// has an admission time, and the handoff is one of the known states.
	CheckReceiptHandoff VerifyCheck = "receipt_handoff"
	// CheckRunCounters: a run's AttemptCount and ActiveCount equal the
	// number of its attempts and of its active attempts; a root run's
	// TreeAttemptCount equals its own AttemptCount plus those of its
	// linked descendants, and its DescendantCount the number of those
	// links; no event has a Seq above LastEventSeq.
	CheckRunCounters VerifyCheck = "run_counters"
	// CheckLeaseHolder: an unreleased lease belongs to an existing attempt
	// that is active or repair_required.
	CheckLeaseHolder VerifyCheck = "lease_holder"
	// CheckRetrySchedule: a retry schedule names an existing activation
	// whose latest attempt is the schedule's failed attempt, and that
	// attempt failed.
	CheckRetrySchedule VerifyCheck = "retry_schedule"
	// CheckAdmissible: an activation flagged admissible is one discovery
	// may return (pending, in a running run without cancellation, not in a
	// retiring fan-out group). Its run's exhaustion may hold: work added
	// to an exhausted run stays flagged until a pass reports it Exhausted.
	CheckAdmissible VerifyCheck = "admissible_flag"
	// CheckBackendIndex: the backend's own index check failed (only for
	// backends that offer one; see BackendVerifier).
	CheckBackendIndex VerifyCheck = "backend_index"
)

// BackendVerifier is implemented by backends that can check their own
// derived structures (indexes) against their records. Verify calls it
// when the backend offers it and reports its error as a CheckBackendIndex
// violation.
type BackendVerifier interface {
	Verify(ctx context.Context) error
}

// Violation is one broken invariant.
type Violation struct {
	Check VerifyCheck `json:"check"`
	// RunID is the run the violation was found in (empty for
	// CheckBackendIndex).
	RunID string `json:"run_id,omitempty"`
	// Subject names the record at fault, for example
	// "attempt n/a#2" or "lease n/a#1 r write".
	Subject string `json:"subject,omitempty"`
	// Detail says what was found and what was expected.
	Detail string `json:"detail"`
}

func (v Violation) String() string {
	s := string(v.Check)
	if v.RunID != "" {
		s += " run " + quoteID(v.RunID)
	}
	if v.Subject != "" {
		s += " " + v.Subject
	}
	return s + ": " + v.Detail
}

func quoteID(s string) string { return fmt.Sprintf("%q", s) }

// VerifyOptions bound a Verify pass.
type VerifyOptions struct {
	// RunID checks only this run when not empty (the backend's own check
	// is skipped then).
	RunID string
	// MaxViolations stops the pass once this many violations were found
	// (0 means 1000); the report then says Truncated.
	MaxViolations int
	// PageSize is how many rows each read returns at most (0 means 500).
	PageSize int
}

// VerifyReport is the outcome of a Verify pass.
type VerifyReport struct {
	// Runs is the number of runs checked.
	Runs int `json:"runs"`
	// Violations lists what was found, run by run in run id order.
	Violations []Violation `json:"violations"`
	// Truncated: the pass stopped on reaching MaxViolations, so runs after
	// the last one reported may not have been checked.
	Truncated bool `json:"truncated"`
}

// OK reports whether the pass found no violation.
func (r VerifyReport) OK() bool { return len(r.Violations) == 0 }

// Verify checks the store's durable invariants through the backend
// contract, run by run (each run in its own consistent snapshot, in run id
// order), and returns every violation it finds; see the Check constants
// for what is checked. A run's check reads that run's activations,
// attempts, unreleased leases and schedules, its child links (a root) and
// one event; it holds one run's records at a time. Verify writes nothing.
// The error is non-nil only when reading failed (or opts.RunID is not a
// valid id, or names no run); violations are not errors.
func (s *Store) Verify(ctx context.Context, opts VerifyOptions) (VerifyReport, error) {
	var rep VerifyReport
	maxV := opts.MaxViolations
	if maxV <= 0 {
		maxV = 1000
	}
	page := opts.PageSize
	if page <= 0 {
		page = 500
	}
	v := &verifier{page: page}
	if opts.RunID != "" {
		if err := ValidateID("run id", opts.RunID); err != nil {
			return rep, err
		}
		err := s.view(ctx, func(r backend.ReadTx) error {
			run, err := backend.GetRun(ctx, r, opts.RunID)
			if err != nil {
				return notFoundFrom(err, "run %q", opts.RunID)
			}
			return v.run(ctx, r, run)
		})
		rep.Runs = 1
		rep.Violations = v.out
		if len(rep.Violations) > maxV {
			rep.Violations, rep.Truncated = rep.Violations[:maxV], true
		}
		return rep, err
	}
	after := ""
	for {
		var runs []backend.Run
		if err := s.view(ctx, func(r backend.ReadTx) error {
			var err error
			runs, err = r.Runs(ctx, backend.RunQuery{After: after, Limit: page})
			return err
		}); err != nil {
			return rep, err
		}
		for _, listed := range runs {
			after = listed.ID
			if err := s.view(ctx, func(r backend.ReadTx) error {
				// Re-read the run in this snapshot: it may have moved on
				// since the listing.
				run, err := backend.GetRun(ctx, r, listed.ID)
				if err != nil {
					if isNotFound(err) {
						return nil
					}
					return err
				}
				return v.run(ctx, r, run)
			}); err != nil {
				return rep, err
			}
			rep.Runs++
			if len(v.out) >= maxV {
				rep.Violations, rep.Truncated = v.out[:maxV], true
				return rep, nil
			}
		}
		if len(runs) < page {
			break
		}
	}
	if bv, ok := s.b.(BackendVerifier); ok {
		if err := bv.Verify(ctx); err != nil {
			if ctx.Err() != nil || errors.Is(err, backend.ErrClosed) {
				return rep, err // the check did not run to the end
			}
			v.out = append(v.out, Violation{Check: CheckBackendIndex, Detail: err.Error()})
		}
	}
	rep.Violations = v.out
	if len(rep.Violations) > maxV {
		rep.Violations, rep.Truncated = rep.Violations[:maxV], true
	}
	return rep, nil
}

type verifier struct {
	page int
	out  []Violation
}

func (v *verifier) add(c VerifyCheck, run, subject, format string, args ...any) {
	v.out = append(v.out, Violation{Check: c, RunID: run, Subject: subject, Detail: fmt.Sprintf(format, args...)})
}

func actSubject(k backend.ActivationKey) string {
	return fmt.Sprintf("activation %q/%q", k.NodeID, k.ActivationID)
}

func attSubject(k backend.AttemptKey) string {
	return fmt.Sprintf("attempt %q/%q#%d", k.NodeID, k.ActivationID, k.Attempt)
}

// run checks one run inside one snapshot.
func (v *verifier) run(ctx context.Context, r backend.ReadTx, run backend.Run) error {
	id := run.ID
	// Activations, in key order.
	acts := map[backend.ActivationKey]backend.Activation{}
	var order []backend.ActivationKey
	aq := backend.ActivationQuery{RunID: id, Limit: v.page}
	for {
		page, err := r.Activations(ctx, aq)
		if err != nil {
			return err
		}
		for _, a := range page {
			acts[a.Key] = a
			order = append(order, a.Key)
			aq.After = backend.NodeRef{NodeID: a.Key.NodeID, ActivationID: a.Key.ActivationID}
		}
		if len(page) < v.page {
			break
		}
	}
	// Attempts of the run, in prepared order.
	attempts := map[backend.AttemptKey]backend.Attempt{}
	// gated holds, per activation, its live attempts that admission
	// created (a low-level attempt, handoff unknown, bypasses the gate).
	gated := map[backend.ActivationKey][]uint32{}
	var attemptCount, activeCount int64
	tq := backend.AttemptQuery{RunID: id, Limit: v.page}
	for {
		page, err := r.Attempts(ctx, tq)
		if err != nil {
			return err
		}
		for _, a := range page {
			tq.After = backend.AttemptCursor{PreparedMS: a.PreparedMS, Identity: a.Identity}
			attempts[a.Key] = a
			attemptCount++
			if isActive(a.Status) {
				activeCount++
			}
			if a.Handoff != backend.HandoffUnknown && isLive(a.Status) {
				gated[a.Key.ActivationKey] = append(gated[a.Key.ActivationKey], a.Key.Attempt)
			}
			v.attempt(id, a)
			act, ok := acts[a.Key.ActivationKey]
			switch {
			case !ok:
				v.add(CheckActivationStatus, id, attSubject(a.Key), "the attempt's activation does not exist")
			case a.Key.Attempt > act.LastAttempt:
				v.add(CheckActivationStatus, id, attSubject(a.Key), "attempt number %d is above the activation's LastAttempt %d", a.Key.Attempt, act.LastAttempt)
			}
		}
		if len(page) < v.page {
			break
		}
	}
	for _, k := range order {
		if n := len(gated[k]); n > 1 {
			v.add(CheckOneActiveAttempt, id, actSubject(k), "%d live attempts by admission %v", n, gated[k])
		}
	}
	// Activation status against its latest attempt; the admissible flag.
	groups := map[backend.ActivationKey]*backend.FanOutGroup{}
	for _, k := range order {
		act := acts[k]
		latest, hasLatest := attempts[backend.AttemptKey{ActivationKey: k, Attempt: act.LastAttempt}]
		switch {
		case act.Status == backend.ActivationRunning && !hasLatest:
			v.add(CheckActivationStatus, id, actSubject(k), "running, but its latest attempt %d does not exist", act.LastAttempt)
		case act.Status == backend.ActivationRunning && !isLive(latest.Status):
			v.add(CheckActivationStatus, id, actSubject(k), "running, but its latest attempt %d is %s", act.LastAttempt, latest.Status)
		}
		if act.Status != backend.ActivationRunning {
			for _, n := range gated[k] {
				v.add(CheckActivationStatus, id, attSubject(backend.AttemptKey{ActivationKey: k, Attempt: n}),
					"%s by admission, but its activation is %s", attempts[backend.AttemptKey{ActivationKey: k, Attempt: n}].Status, act.Status)
			}
		}
		if act.Admissible {
			var g *backend.FanOutGroup
			if act.Group != nil {
				c := act.Group.Controller
				cached, ok := groups[c]
				if !ok {
					f, err := r.Load(ctx, backend.Lookup{Groups: []backend.ActivationKey{c}})
					if err != nil {
						return err
					}
					if gr, found := f.Groups[c]; found {
						cached = &gr
					}
					groups[c] = cached
				}
				g = cached
			}
			if !state.Arrives(run, act, g) {
				v.add(CheckAdmissible, id, actSubject(k), "flagged admissible, but it is %s in a %s run (cancel requested %t, group retiring %t)",
					act.Status, run.Status, run.CancelRequestedMS != 0, g != nil && g.Retiring)
			}
		}
	}
	// Counters. A pruned run, or one being pruned (its last event is a
	// prune marker), keeps its AttemptCount while its attempts are deleted.
	pruned, err := prunedRun(ctx, r, run)
	if err != nil {
		return err
	}
	if run.AttemptCount != attemptCount && !pruned {
		v.add(CheckRunCounters, id, "AttemptCount", "is %d, the run has %d attempts", run.AttemptCount, attemptCount)
	}
	if run.ActiveCount != activeCount {
		v.add(CheckRunCounters, id, "ActiveCount", "is %d, the run has %d active attempts", run.ActiveCount, activeCount)
	}
	later, err := r.Events(ctx, backend.EventQuery{RunID: id, After: run.LastEventSeq, Limit: 1})
	if err != nil {
		return err
	}
	if len(later) > 0 {
		v.add(CheckRunCounters, id, "LastEventSeq", "is %d, an event has Seq %d", run.LastEventSeq, later[0].Seq)
	}
	if run.RootID == run.ID {
		if err := v.tree(ctx, r, run); err != nil {
			return err
		}
	}
	// Unreleased leases.
	lq := backend.LeaseQuery{RunID: id, Limit: v.page}
	for {
		page, err := r.Leases(ctx, lq)
		if err != nil {
			return err
		}
		for _, l := range page {
			k := l.Key
			lq.After = k
			subject := fmt.Sprintf("lease %q/%q#%d %q %s", k.NodeID, k.ActivationID, k.Attempt, k.Resource, k.Mode)
			att, ok := attempts[k.AttemptKey]
			switch {
			case !ok:
				v.add(CheckLeaseHolder, id, subject, "unreleased, but its attempt does not exist")
			case !isLive(att.Status):
				v.add(CheckLeaseHolder, id, subject, "unreleased, but its attempt is %s", att.Status)
			}
		}
		if len(page) < v.page {
			break
		}
	}
	// Schedules: at most one per activation, so the run's activation count
	// (plus one, to see a schedule of a missing activation) bounds them.
	scheds, err := r.DueSchedules(ctx, backend.ScheduleQuery{RunID: id, DueBy: math.MaxInt64, Limit: len(order) + v.page})
	if err != nil {
		return err
	}
	for _, sc := range scheds {
		subject := fmt.Sprintf("schedule %q/%q", sc.Key.NodeID, sc.Key.ActivationID)
		act, ok := acts[sc.Key]
		if !ok {
			v.add(CheckRetrySchedule, id, subject, "its activation does not exist")
			continue
		}
		att, ok := attempts[backend.AttemptKey{ActivationKey: sc.Key, Attempt: sc.FailedAttempt}]
		switch {
		case !ok:
			v.add(CheckRetrySchedule, id, subject, "its failed attempt %d does not exist", sc.FailedAttempt)
		case sc.FailedAttempt != act.LastAttempt:
			v.add(CheckRetrySchedule, id, subject, "its failed attempt %d is not the latest (%d)", sc.FailedAttempt, act.LastAttempt)
		case att.Status != backend.AttemptFailed:
			v.add(CheckRetrySchedule, id, subject, "its failed attempt %d is %s", sc.FailedAttempt, att.Status)
		}
	}
	return nil
}

// attempt checks one attempt's receipt and handoff.
func (v *verifier) attempt(run string, a backend.Attempt) {
	switch a.Handoff {
	case backend.HandoffUnknown, backend.HandoffPending, backend.HandoffRecorded:
	default:
		v.add(CheckReceiptHandoff, run, attSubject(a.Key), "unknown handoff state %q", a.Handoff)
	}
	if a.Handoff != backend.HandoffRecorded && a.HandoffToken != "" {
		// Only a recorded handoff has a holder; a release clears it.
		v.add(CheckReceiptHandoff, run, attSubject(a.Key), "handoff %s, but it carries a holder token", a.Handoff)
	}
	if a.Receipt == nil {
		return
	}
	if a.Status == backend.AttemptPrepared {
		v.add(CheckReceiptHandoff, run, attSubject(a.Key), "prepared, but it has a receipt")
	} else if a.AdmittedMS == 0 {
		v.add(CheckReceiptHandoff, run, attSubject(a.Key), "%s with a receipt, but no admission time", a.Status)
	}
}

// tree checks a root run's tree counters against its links.
func (v *verifier) tree(ctx context.Context, r backend.ReadTx, root backend.Run) error {
	tree := root.AttemptCount
	var links int64
	q := backend.ChildRunQuery{RootRunID: root.ID, Limit: v.page}
	for {
		page, err := r.ChildRuns(ctx, q)
		if err != nil {
			return err
		}
		ids := make([]string, 0, len(page))
		for _, l := range page {
			q.After = backend.ChildRunCursor{CreatedMS: l.CreatedMS, ChildRunID: l.ChildRunID}
			ids = append(ids, l.ChildRunID)
		}
		links += int64(len(page))
		if len(ids) > 0 {
			f, err := r.Load(ctx, backend.Lookup{Runs: ids})
			if err != nil {
				return err
			}
			for _, cid := range ids {
				if c, ok := f.Runs[cid]; ok {
					tree += c.AttemptCount
				}
			}
		}
		if len(page) < v.page {
			break
		}
	}
	if root.TreeAttemptCount != tree {
		v.add(CheckRunCounters, root.ID, "TreeAttemptCount", "is %d, the tree's runs record %d attempts", root.TreeAttemptCount, tree)
	}
	if root.DescendantCount != links {
		v.add(CheckRunCounters, root.ID, "DescendantCount", "is %d, the root has %d linked child runs", root.DescendantCount, links)
	}
	return nil
}

// isLive reports whether an attempt still holds its activation: active, or
// repair_required (its outcome unknown until repaired).
func isLive(s backend.AttemptStatus) bool { return isActive(s) || s == backend.AttemptRepairRequired }

// prunedRun reports whether run was pruned, or is being pruned: its last
// event is the run_pruned marker Prune leaves, or the run_prune_started
// marker of a prune not finished yet.
func prunedRun(ctx context.Context, r backend.ReadTx, run backend.Run) (bool, error) {
	if run.LastEventSeq == 0 {
		return false, nil
	}
	last, err := r.Events(ctx, backend.EventQuery{RunID: run.ID, After: run.LastEventSeq - 1, Limit: 1})
	if err != nil {
		return false, err
	}
	return len(last) == 1 && last[0].Seq == run.LastEventSeq && (last[0].Type == string(event.RunPruned) || last[0].Type == string(event.RunPruneStarted)), nil
}
