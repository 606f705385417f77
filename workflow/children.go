package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/event"
	"github.com/wfstore/wfstore/workflow/internal/state"
)

// NewChildRun describes a child run started by a prepared parent attempt.
type NewChildRun struct {
	// Parent is the exact parent attempt: prepared, its activation running.
	Parent AttemptKey
	// Target is the exact call target (JSON, required).
	Target json.RawMessage
	// Limits only narrow the parent's: unset fields (zero caps, nil
	// RetryCap) inherit the parent's stored value; a wider value is rejected.
	Limits   RunLimits
	Deadline time.Time
	// Authority, when set, fences the child; when nil it inherits the parent's.
	Authority *Authority
}

// CreateChildRun creates a running child run linked to its composition
// root and its exact parent attempt, and admits the parent attempt with a
// synthetic receipt, in one transaction. It refuses a tree at depth
// MaxRunDepth or with MaxDescendants, and a root whose tree-wide allowance
// is used up. The child's id is derived from the root, the parent and the
// target, so a repeated identical request returns it with created=false.
// The parent attempt stays admitted until its owner reports on it; a
// cancelling parent run finalises only once its child runs are terminal.
func (s *Store) CreateChildRun(ctx context.Context, nc NewChildRun, now time.Time) (childID string, created bool, err error) {
	parentKey, childAuth := nc.Parent, copyAuthority(nc.Authority)
	if err := validateAttemptKey(parentKey); err != nil {
		return "", false, err
	}
	if len(nc.Target) == 0 {
		return "", false, invalid("child target", "is required")
	}
	target, err := ownerJSON("child target", nc.Target)
	if err != nil {
		return "", false, err
	}
	if err := validateAuthority(childAuth); err != nil {
		return "", false, err
	}
	deadline, err := optionalMS("deadline", nc.Deadline)
	if err != nil {
		return "", false, err
	}
	at, err := toMS("now", now)
	if err != nil {
		return "", false, err
	}
	pk := parentKey
	err = s.update(ctx, func(tx backend.Tx, w *batch) error {
		f, err := tx.Load(ctx, backend.Lookup{
			Runs: []string{pk.RunID}, Activations: []backend.ActivationKey{pk.ActivationKey},
			Attempts: []backend.AttemptKey{pk},
		})
		if err != nil {
			return err
		}
		parent, ok := f.Runs[pk.RunID]
		if !ok {
			return stateErr(ErrNotFound, "parent run %q", pk.RunID)
		}
		childID = ChildRunID(parent.RootID, pk.RunID, pk.ActivationID, pk.Attempt, target)
		g, err := tx.Load(ctx, backend.Lookup{Runs: []string{parent.RootID, childID}, Links: []string{childID}})
		if err != nil {
			return err
		}
		if link, ok := g.Links[childID]; ok {
			if link.Parent == pk {
				return errNoop
			}
			return stateErr(ErrConflict, "child run %q exists with a different parent", childID)
		}
		att, ok := f.Attempts[pk]
		act := f.Activations[pk.ActivationKey]
		if !ok || att.Status != backend.AttemptPrepared || act.Status != backend.ActivationRunning {
			return stateErr(ErrIneligible, "child run requires a prepared parent attempt of a running activation")
		}
		if err := acceptsWork(parent, at); err != nil {
			return err
		}
		limits, err := narrowLimits(parent.Limits, nc.Limits)
		if err != nil {
			return err
		}
		root := parent
		if parent.RootID != parent.ID {
			if root, ok = g.Runs[parent.RootID]; !ok {
				return stateErr(ErrNotFound, "root run %q", parent.RootID)
			}
		}
		if root.TreeAttemptCount >= root.Limits.NodeExecutionCap {
			return stateErr(ErrRootAllowanceExhausted, "root node-execution cap reached before child admission")
		}
		if root.DescendantCount >= MaxDescendants {
			return stateErr(ErrIneligible, "composition root %q already has %d descendants", root.ID, MaxDescendants)
		}
		if parent.Depth+1 > MaxRunDepth {
			return stateErr(ErrIneligible, "child run depth %d exceeds %d", parent.Depth+1, MaxRunDepth)
		}
		auth := copyAuthority(childAuth)
		if auth == nil {
			auth = copyAuthority(parent.Authority)
		}
		switch {
		case deadline == 0:
			deadline = parent.DeadlineMS
		case parent.DeadlineMS != 0 && deadline > parent.DeadlineMS:
			return invalid("child deadline", "may only narrow the parent's deadline")
		}
		child := backend.Run{
			ID: childID, RootID: root.ID, ParentID: parent.ID, Depth: parent.Depth + 1,
			Status: backend.RunRunning, Limits: limits, DeadlineMS: deadline, Authority: auth,
			CreatedMS: at, UpdatedMS: at,
		}
		state.CreateRun(w, child, event.RunCreatedPayload{RunID: childID, RootRunID: root.ID, Limits: state.LimitsPayload(limits)}, at)
		state.Insert(w, backend.RunLink{ChildRunID: childID, RootRunID: root.ID, Parent: pk, Target: target, Depth: child.Depth, CreatedMS: at})
		receipt, err := encodeJSON("child run receipt", map[string]any{
			"owner": childReceiptOwner, "child_run_id": childID, "root_run_id": root.ID,
			"depth": child.Depth, "target": json.RawMessage(target),
		})
		if err != nil {
			return err
		}
		att.Receipt = receipt
		if err := state.LinkChildRun(w, &parent, &root, &att, child, at); err != nil {
			return err
		}
		if root.ID != parent.ID {
			state.Replace(w, root)
		}
		parent.UpdatedMS = at
		state.Replace(w, parent)
		created = true
		return nil
	})
	if errors.Is(err, errNoop) {
		return childID, false, nil
	}
	return childID, created, err
}

// childReceiptOwner marks the synthetic receipt CreateChildRun gives the
// parent attempt.
const childReceiptOwner = "wfstore.workflow-child/v1"

// startedChildRun reports whether att is the exact parent attempt of a
// child run: its receipt is the synthetic child receipt and the link of the
// child it names points back at att. One keyed read, whatever the tree's
// size; a receipt that merely looks like one is not enough.
func startedChildRun(ctx context.Context, tx backend.ReadTx, att backend.Attempt) (bool, error) {
	var rc struct {
		Owner string `json:"owner"`
		Child string `json:"child_run_id"`
	}
	if att.Receipt == nil || json.Unmarshal(att.Receipt, &rc) != nil || rc.Owner != childReceiptOwner || rc.Child == "" {
		return false, nil
	}
	f, err := tx.Load(ctx, backend.Lookup{Links: []string{rc.Child}})
	if err != nil {
		return false, err
	}
	link, ok := f.Links[rc.Child]
	return ok && link.Parent == att.Key, nil
}

// cancellingChildParent applies an Admitted or Running observation of a
// child run's parent attempt while the parent run's cancellation is
// requested: the attempt becomes (or stays) cancelling instead of
// cancelled, so the parent waits for the owner to settle the child. It
// reports false, changing nothing, for any other observation or attempt.
func cancellingChildParent(ctx context.Context, t txn, run *backend.Run, att *backend.Attempt, kind ObservationKind, detail []byte) (bool, error) {
	tx, w, at := t.Tx, t.W, t.At
	if run.CancelRequestedMS == 0 || (kind != ObservedAdmitted && kind != ObservedRunning) {
		return false, nil
	}
	if ok, err := startedChildRun(ctx, tx, *att); err != nil || !ok {
		return false, err
	}
	if att.Status == backend.AttemptCancelling && detail == nil {
		return true, errNoop
	}
	if detail != nil {
		att.Detail = detail
	}
	return true, state.HoldAttemptForChild(w, run, att, at)
}

func narrowLimits(parent backend.Limits, child RunLimits) (backend.Limits, error) {
	pick := func(field string, p, c int64, set bool) (int64, error) {
		if !set {
			return p, nil
		}
		if c < 0 || c > p {
			return 0, invalid(field, "child limits may only narrow the parent's (%d > %d)", c, p)
		}
		return c, nil
	}
	var out backend.Limits
	var err error
	if out.NodeExecutionCap, err = pick("node execution cap", parent.NodeExecutionCap, child.NodeExecutionCap, child.NodeExecutionCap != 0); err != nil {
		return out, err
	}
	if out.ConcurrencyCap, err = pick("concurrency cap", parent.ConcurrencyCap, child.ConcurrencyCap, child.ConcurrencyCap != 0); err != nil {
		return out, err
	}
	if out.CycleCap, err = pick("cycle cap", parent.CycleCap, child.CycleCap, child.CycleCap != 0); err != nil {
		return out, err
	}
	var retry int64
	if child.RetryCap != nil {
		retry = int64(*child.RetryCap)
	}
	if out.RetryCap, err = pick("retry cap", parent.RetryCap, retry, child.RetryCap != nil); err != nil {
		return out, err
	}
	return out, nil
}
