package main

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/internal/canonical"
	"github.com/wfstore/wfstore/workflow"
)

// The rules import checks every record against before it writes anything:
// what the Store itself guarantees of what it writes. A record breaking
// one is refused with the line and the rule.

var (
	runStatuses = set(backend.RunRunning, backend.RunPaused, backend.RunCompleted, backend.RunFailed,
		backend.RunCancelled, backend.RunRepairRequired)
	activationStatuses = set(backend.ActivationPending, backend.ActivationWaiting, backend.ActivationRunning,
		backend.ActivationCompleted, backend.ActivationFailed, backend.ActivationCancelled)
	attemptStatuses = set(backend.AttemptPrepared, backend.AttemptAdmitted, backend.AttemptRunning,
		backend.AttemptCancelling, backend.AttemptSiblingCancelling, backend.AttemptSucceeded, backend.AttemptFailed,
		backend.AttemptPaused, backend.AttemptCancelled, backend.AttemptRepairRequired, backend.AttemptAbandoned)
	effects          = set(backend.ReadOnly, backend.Mutating)
	reconciliations  = set(backend.IdempotentReplay, backend.ReceiptStatus, backend.RepairRequired)
	handoffs         = set(backend.HandoffUnknown, backend.HandoffPending, backend.HandoffRecorded)
	leaseModes       = set(backend.LeaseRead, backend.LeaseWrite)
	errNotCanonical  = errors.New("is not in canonical form (compact, keys sorted, fewest escapes)")
	errJSONRequired  = errors.New("is required")
	errTimeRequired  = errors.New("must be set: unix milliseconds after 1970-01-01")
	errTimeNegative  = errors.New("must not be negative (0 means unset)")
	errCountNegative = errors.New("must not be negative")
)

func set[T ~string](vs ...T) map[T]bool {
	m := make(map[T]bool, len(vs))
	for _, v := range vs {
		m[v] = true
	}
	return m
}

// checker collects the first rule a record breaks.
type checker struct{ err error }

func (c *checker) fail(field string, err error) {
	if c.err == nil {
		c.err = fmt.Errorf("%s %w", field, err)
	}
}

func (c *checker) failf(format string, args ...any) {
	if c.err == nil {
		c.err = fmt.Errorf(format, args...)
	}
}

func (c *checker) id(field, v string) {
	if c.err == nil {
		if err := workflow.ValidateID(field, v); err != nil {
			c.err = errors.New(strings.TrimPrefix(err.Error(), "workflow: "))
		}
	}
}

func oneOf[T ~string](c *checker, field string, v T, known map[T]bool) {
	if !known[v] {
		c.failf("%s %q is not one the store knows", field, string(v))
	}
}

// json checks a JSON field: canonical, within the size limit; required
// fields must be present.
func (c *checker) json(field string, v []byte, required bool) {
	if v == nil {
		if required {
			c.fail(field, errJSONRequired)
		}
		return
	}
	out, err := canonical.Canonical(v)
	var ce *canonical.Error
	switch {
	case errors.As(err, &ce) && ce.Oversized:
		c.failf("%s is larger than %d bytes", field, workflow.MaxJSONBytes)
	case err != nil:
		c.failf("%s is not valid JSON: %v", field, err)
	case !bytes.Equal(out, v):
		c.fail(field, errNotCanonical)
	}
}

// time checks a time field: required ones are after the unix epoch,
// optional ones 0 (unset) or after it.
func (c *checker) time(field string, ms int64, required bool) {
	switch {
	case required && ms <= 0:
		c.fail(field, errTimeRequired)
	case ms < 0:
		c.fail(field, errTimeNegative)
	}
}

func (c *checker) count(field string, n int64) {
	if n < 0 {
		c.fail(field, errCountNegative)
	}
}

func (c *checker) activationKey(field string, k backend.ActivationKey) {
	c.id(field+".RunID", k.RunID)
	c.id(field+".NodeID", k.NodeID)
	c.id(field+".ActivationID", k.ActivationID)
}

func (c *checker) attemptKey(field string, k backend.AttemptKey) {
	c.activationKey(field, k.ActivationKey)
	if k.Attempt < 1 {
		c.failf("%s.Attempt must be at least 1", field)
	}
}

// checkRecord returns the first rule rec breaks, nil if none.
func checkRecord(rec record) error {
	c := &checker{}
	switch r := rec.(type) {
	case backend.Run:
		c.id("ID", r.ID)
		c.id("RootID", r.RootID)
		oneOf(c, "Status", r.Status, runStatuses)
		if r.RootID == r.ID {
			if r.ParentID != "" || r.Depth != 1 {
				c.failf("a root run (RootID = ID) has no ParentID and Depth 1, not %q and %d", r.ParentID, r.Depth)
			}
		} else {
			c.id("ParentID", r.ParentID)
			if r.Depth < 2 {
				c.failf("a child run has Depth 2 or more, not %d", r.Depth)
			}
		}
		c.count("Limits.NodeExecutionCap", r.Limits.NodeExecutionCap)
		c.count("Limits.ConcurrencyCap", r.Limits.ConcurrencyCap)
		c.count("Limits.CycleCap", r.Limits.CycleCap)
		c.count("Limits.RetryCap", r.Limits.RetryCap)
		c.time("DeadlineMS", r.DeadlineMS, false)
		c.time("CancelRequestedMS", r.CancelRequestedMS, false)
		if a := r.Authority; a != nil {
			c.id("Authority.TargetArtifactID", a.TargetArtifactID)
			c.id("Authority.DaemonInstanceID", a.DaemonInstanceID)
			c.id("Authority.FencingToken", a.FencingToken)
			c.count("Authority.Generation", a.Generation)
		}
		c.json("Metadata", r.Metadata, false)
		c.time("CreatedMS", r.CreatedMS, true)
		c.time("UpdatedMS", r.UpdatedMS, false)
		c.count("LastEventSeq", r.LastEventSeq)
		c.count("AttemptCount", r.AttemptCount)
		c.count("ActiveCount", r.ActiveCount)
		c.count("TreeAttemptCount", r.TreeAttemptCount)
		c.count("DescendantCount", r.DescendantCount)
	case backend.RunLink:
		c.id("ChildRunID", r.ChildRunID)
		c.id("RootRunID", r.RootRunID)
		c.attemptKey("Parent", r.Parent)
		c.json("Target", r.Target, false)
		if r.Depth < 2 {
			c.failf("Depth of a link must be 2 or more, not %d", r.Depth)
		}
		c.time("CreatedMS", r.CreatedMS, true)
	case backend.Activation:
		c.activationKey("Key", r.Key)
		c.count("Generation", r.Generation)
		oneOf(c, "Status", r.Status, activationStatuses)
		c.json("Input", r.Input, true)
		c.json("Output", r.Output, false)
		for i, cl := range r.Claims {
			c.id(fmt.Sprintf("Claims[%d].Resource", i), cl.Resource)
			oneOf(c, fmt.Sprintf("Claims[%d].Mode", i), cl.Mode, leaseModes)
		}
		oneOf(c, "Effect", r.Effect, effects)
		oneOf(c, "Reconciliation", r.Reconciliation, reconciliations)
		c.json("RetryPolicy", r.RetryPolicy, false)
		for i, p := range r.Predecessors {
			c.id(fmt.Sprintf("Predecessors[%d].NodeID", i), p.NodeID)
			c.id(fmt.Sprintf("Predecessors[%d].ActivationID", i), p.ActivationID)
		}
		for i, p := range r.WaitFor {
			c.id(fmt.Sprintf("WaitFor[%d].NodeID", i), p.NodeID)
			c.id(fmt.Sprintf("WaitFor[%d].ActivationID", i), p.ActivationID)
		}
		c.count("OpenWaits", r.OpenWaits)
		if r.OpenWaits > int64(len(r.WaitFor)) {
			c.failf("OpenWaits %d exceeds the %d activations WaitFor names", r.OpenWaits, len(r.WaitFor))
		}
		for i, p := range r.Joins {
			c.id(fmt.Sprintf("Joins[%d].NodeID", i), p.NodeID)
			c.id(fmt.Sprintf("Joins[%d].ActivationID", i), p.ActivationID)
		}
		if g := r.Group; g != nil {
			c.activationKey("Group.Controller", g.Controller)
			if g.Controller.RunID != r.Key.RunID {
				c.failf("Group.Controller is in run %q, not the activation's run", g.Controller.RunID)
			}
			c.count("Group.Index", g.Index)
		}
		c.count("AttemptTimeoutMS", r.AttemptTimeoutMS)
		c.time("CreatedMS", r.CreatedMS, true)
		c.time("UpdatedMS", r.UpdatedMS, false)
	case backend.FanOutGroup:
		c.activationKey("Controller", r.Controller)
		c.count("Size", r.Size)
		c.count("MaxConcurrency", r.MaxConcurrency)
		c.count("Promoted", r.Promoted)
		c.count("Settled", r.Settled)
		c.time("RetiredMS", r.RetiredMS, false)
		c.time("CreatedMS", r.CreatedMS, true)
	case backend.Attempt:
		c.attemptKey("Key", r.Key)
		c.id("Identity", r.Identity)
		oneOf(c, "Status", r.Status, attemptStatuses)
		oneOf(c, "SideEffect", r.SideEffect, effects)
		c.json("Intent", r.Intent, true)
		if c.err == nil && r.IntentChecksum != workflow.Checksum(r.Intent) {
			c.failf("IntentChecksum is not the SHA-256 of Intent")
		}
		c.json("Receipt", r.Receipt, false)
		oneOf(c, "Handoff", r.Handoff, handoffs)
		c.json("Detail", r.Detail, false)
		c.time("PreparedMS", r.PreparedMS, true)
		c.time("AdmittedMS", r.AdmittedMS, false)
		c.time("TerminalMS", r.TerminalMS, false)
		if r.HandoffToken != "" {
			c.id("HandoffToken", r.HandoffToken)
			if r.Handoff != backend.HandoffRecorded {
				c.failf("HandoffToken is set on an attempt whose handoff is %q, not recorded", r.Handoff)
			}
		}
	case backend.Lease:
		c.attemptKey("Key", r.Key.AttemptKey)
		c.id("Key.Resource", r.Key.Resource)
		oneOf(c, "Key.Mode", r.Key.Mode, leaseModes)
		c.time("AcquiredMS", r.AcquiredMS, true)
		c.time("ReleasedMS", r.ReleasedMS, false)
	case backend.RetrySchedule:
		c.activationKey("Key", r.Key)
		if r.FailedAttempt < 1 || r.NextAttempt <= r.FailedAttempt {
			c.failf("FailedAttempt (%d) must be at least 1 and NextAttempt (%d) above it", r.FailedAttempt, r.NextAttempt)
		}
		c.id("FailureKind", r.FailureKind)
		c.count("BackoffMS", r.BackoffMS)
		c.time("DueMS", r.DueMS, true)
		c.time("ScheduledMS", r.ScheduledMS, true)
	case backend.Event:
		c.id("RunID", r.RunID)
		if r.Seq < 1 {
			c.failf("Seq must be at least 1, not %d", r.Seq)
		}
		c.id("Type", r.Type)
		c.json("Payload", r.Payload, true)
		c.time("CreatedMS", r.CreatedMS, true)
	default:
		return fmt.Errorf("%T is not a backend record", rec)
	}
	return c.err
}

// runRefs lists the runs rec names: the ones that must be in the stream.
func runRefs(rec record) []string {
	switch r := rec.(type) {
	case backend.Run:
		if r.ParentID != "" {
			return []string{r.RootID, r.ParentID}
		}
		return []string{r.RootID}
	case backend.RunLink:
		return []string{r.ChildRunID, r.RootRunID, r.Parent.RunID}
	case backend.Activation:
		return []string{r.Key.RunID}
	case backend.FanOutGroup:
		return []string{r.Controller.RunID}
	case backend.Attempt:
		return []string{r.Key.RunID}
	case backend.Lease:
		return []string{r.Key.RunID}
	case backend.RetrySchedule:
		return []string{r.Key.RunID}
	case backend.Event:
		return []string{r.RunID}
	}
	return nil
}
