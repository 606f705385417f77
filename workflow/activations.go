package workflow

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/workflow/internal/state"
)

// NewActivation describes an activation to add. It carries the per-node
// facts the Store needs without a workflow graph.
type NewActivation struct {
	Key        ActivationKey
	Generation int64
	// Input is the activation's input JSON (required).
	Input json.RawMessage
	// Claims are resource leases every attempt takes atomically at admission.
	Claims []ResourceClaim
	// Effect and Reconciliation classify the node for automatic retry.
	// Effect defaults to ReadOnly and Reconciliation to RepairRequired.
	// Mutating with IdempotentReplay is rejected.
	Effect         Effect
	Reconciliation Reconciliation
	// RetryPolicy, when set, lets a RetryableFailure observation schedule an
	// automatic retry in the same transaction.
	RetryPolicy *RetryPolicy
	// Predecessors name activations of the same run this one follows. A
	// failed predecessor can no longer be retried once this exists.
	Predecessors []NodeRef
	// WaitFor makes the activation a join: it names activations of the
	// same run (at most MaxPageLimit, each existing when the join is
	// added, none twice, not the join itself: ErrInvalidInput, or
	// ErrNotFound for one that does not exist) that must all complete
	// before it may start. Until then it is waiting, and not admissible;
	// the transaction that completes the last of them makes it pending.
	// When one of them is cancelled, or fails with no automatic retry
	// pending, the join is cancelled in the same transaction, with a
	// join_cancelled event naming that activation. Added when all of them
	// have completed, it is pending at once; added when one of them is
	// already cancelled or failed for good, it is created and cancelled
	// in the same transaction. An activation that joins wait for cannot be
	// retried by RetryFailedNode (its automatic retries still run). A
	// waiting join keeps its run open. At most MaxPageLimit joins may
	// wait for one activation (ErrIneligible beyond).
	WaitFor []NodeRef
	// AttemptTimeout bounds how long an admitted attempt of this
	// activation may go without being observed terminal before
	// SettleTimedOut settles it (see there): 0 means none of its own (the
	// engine's default applies), else a whole number of milliseconds from
	// MinAttemptTimeout to MaxAttemptTimeout; anything else is
	// ErrInvalidInput.
	AttemptTimeout time.Duration
}

// prepared validates na and returns the record it describes.
func (na NewActivation) record(at int64) (backend.Activation, error) {
	k := na.Key
	if err := validateActivationKey(k); err != nil {
		return backend.Activation{}, err
	}
	if na.Generation < 0 {
		return backend.Activation{}, invalid("generation", "must not be negative")
	}
	if len(na.Input) == 0 {
		return backend.Activation{}, invalid("activation input", "is required")
	}
	input, err := canonicalJSON("activation input", na.Input)
	if err != nil {
		return backend.Activation{}, err
	}
	effect, recon := backend.Effect(na.Effect), backend.Reconciliation(na.Reconciliation)
	if effect == "" {
		effect = backend.ReadOnly
	}
	if recon == "" {
		recon = backend.RepairRequired
	}
	if effect != backend.ReadOnly && effect != backend.Mutating {
		return backend.Activation{}, invalid("effect", "must be read_only or mutating")
	}
	switch recon {
	case backend.IdempotentReplay, backend.ReceiptStatus, backend.RepairRequired:
	default:
		return backend.Activation{}, invalid("reconciliation", "unknown class %q", recon)
	}
	if effect == backend.Mutating && recon == backend.IdempotentReplay {
		return backend.Activation{}, invalid("reconciliation", "a mutating node may not declare idempotent_replay")
	}
	claims, err := normalizeClaims(na.Claims)
	if err != nil {
		return backend.Activation{}, err
	}
	var policy []byte
	if na.RetryPolicy != nil {
		if err := na.RetryPolicy.Validate(); err != nil {
			return backend.Activation{}, err
		}
		var err error
		if policy, err = encodeJSON("retry policy", na.RetryPolicy); err != nil {
			return backend.Activation{}, err
		}
	}
	if err := validateAttemptTimeout("attempt timeout", na.AttemptTimeout); err != nil {
		return backend.Activation{}, err
	}
	if na.AttemptTimeout%time.Millisecond != 0 {
		return backend.Activation{}, invalid("attempt timeout", "must be a whole number of milliseconds, got %v", na.AttemptTimeout)
	}
	preds := slices.Clone(na.Predecessors) // the record must not share the caller's slice
	for _, p := range preds {
		if err := ValidateID("predecessor node id", p.NodeID); err != nil {
			return backend.Activation{}, err
		}
		if err := ValidateID("predecessor activation id", p.ActivationID); err != nil {
			return backend.Activation{}, err
		}
	}
	waitFor, err := validateWaitFor(k, na.WaitFor)
	if err != nil {
		return backend.Activation{}, err
	}
	return backend.Activation{
		Key: k, Generation: na.Generation, Status: backend.ActivationPending, Input: input,
		Claims: claims, Effect: effect, Reconciliation: recon, RetryPolicy: policy,
		Predecessors: preds, CreatedMS: at, UpdatedMS: at, AttemptTimeoutMS: na.AttemptTimeout.Milliseconds(),
		WaitFor: waitFor,
	}, nil
}

func validateActivationKey(k backend.ActivationKey) error {
	if err := ValidateID("run id", k.RunID); err != nil {
		return err
	}
	if err := ValidateID("node id", k.NodeID); err != nil {
		return err
	}
	return ValidateID("activation id", k.ActivationID)
}

func validateAttemptKey(k backend.AttemptKey) error {
	if err := validateActivationKey(k.ActivationKey); err != nil {
		return err
	}
	if k.Attempt == 0 {
		return invalid("attempt", "must be positive")
	}
	return nil
}

// normalizeClaims validates claims and sorts them by resource key; a
// resource claimed twice keeps the strongest mode.
func normalizeClaims(in []backend.ResourceClaim) ([]backend.ResourceClaim, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := make([]backend.ResourceClaim, 0, len(in))
	for _, c := range in {
		if err := ValidateID("resource key", c.Resource); err != nil {
			return nil, err
		}
		if c.Mode != backend.LeaseRead && c.Mode != backend.LeaseWrite {
			return nil, invalid("lease mode", "must be read or write")
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b backend.ResourceClaim) int { return bytes.Compare([]byte(a.Resource), []byte(b.Resource)) })
	dedup := out[:0]
	for _, c := range out {
		if n := len(dedup); n > 0 && dedup[n-1].Resource == c.Resource {
			if c.Mode == backend.LeaseWrite {
				dedup[n-1].Mode = backend.LeaseWrite
			}
			continue
		}
		dedup = append(dedup, c)
	}
	return dedup, nil
}

// AddActivation adds a pending activation to a running run. The run must
// accept work (running, no cancellation, deadline not passed) and the
// generation must be below the run's cycle cap. Adding an activation that
// exists with identical fields returns created=false and changes nothing;
// with different fields it fails with ErrConflict.
func (s *Store) AddActivation(ctx context.Context, na NewActivation, now time.Time) (created bool, err error) {
	at, err := toMS("now", now)
	if err != nil {
		return false, err
	}
	rec, err := na.record(at)
	if err != nil {
		return false, err
	}
	err = s.update(ctx, func(tx backend.Tx, w *batch) error {
		run, err := backend.GetRun(ctx, tx, rec.Key.RunID)
		if err != nil {
			return notFoundFrom(err, "run %q", rec.Key.RunID)
		}
		c, err := addActivation(ctx, tx, w, &run, rec, at)
		if err != nil {
			return err
		}
		if !c {
			return errNoop
		}
		created = true
		state.Replace(w, run)
		w.WorkArrives()
		return nil
	})
	if errors.Is(err, errNoop) {
		return false, nil
	}
	return created, err
}

// addActivation inserts rec into run inside a transaction (used by
// AddActivation and by Succeeded observations carrying successors). The
// caller replaces run afterwards.
func addActivation(ctx context.Context, tx backend.Tx, w *batch, run *backend.Run, rec backend.Activation, at int64) (bool, error) {
	keys := append([]backend.ActivationKey{rec.Key}, refKeys(rec.Key.RunID, rec.Predecessors)...)
	waits := refKeys(rec.Key.RunID, rec.WaitFor)
	lookup := slices.Clone(keys)
	for _, k := range waits {
		if !slices.Contains(lookup, k) {
			lookup = append(lookup, k)
		}
	}
	f, err := tx.Load(ctx, backend.Lookup{Activations: lookup})
	if err != nil {
		return false, err
	}
	if old, ok := f.Activations[rec.Key]; ok {
		if sameActivationDefinition(old, rec) {
			return false, nil
		}
		return false, stateErr(ErrConflict, "activation %v exists with different fields", rec.Key)
	}
	if err := acceptsWork(*run, at); err != nil {
		return false, err
	}
	if rec.Generation >= run.Limits.CycleCap {
		return false, stateErr(ErrIneligible, "activation generation %d reaches the run's cycle cap %d", rec.Generation, run.Limits.CycleCap)
	}
	changed := map[backend.ActivationKey]backend.Activation{}
	for _, k := range keys[1:] {
		pred, ok := f.Activations[k]
		if !ok {
			return false, stateErr(ErrNotFound, "predecessor activation %v", k)
		}
		if !pred.HasSuccessors {
			pred.HasSuccessors = true
			pred.UpdatedMS = at
			changed[k] = pred
		}
	}
	preds := make([]backend.Activation, 0, len(waits))
	for _, k := range waits {
		pred, ok := f.Activations[k]
		if !ok {
			return false, stateErr(ErrNotFound, "wait for activation %v", k)
		}
		if c, ok := changed[k]; ok {
			pred = c
		}
		if len(pred.Joins) >= MaxPageLimit {
			return false, stateErr(ErrIneligible, "activation %v already has %d joins waiting for it", k, len(pred.Joins))
		}
		pred.Joins = append(slices.Clone(pred.Joins), backend.NodeRef{NodeID: rec.Key.NodeID, ActivationID: rec.Key.ActivationID})
		pred.UpdatedMS = at
		changed[k] = pred
		preds = append(preds, pred)
	}
	for _, k := range keys[1:] {
		if pred, ok := changed[k]; ok {
			state.Replace(w, pred)
			delete(changed, k)
		}
	}
	open, settled := waitsOpen(preds)
	for _, pred := range preds {
		if _, ok := changed[pred.Key]; ok {
			state.Replace(w, pred)
			delete(changed, pred.Key)
		}
	}
	if err := state.CreateActivation(w, run, rec, open, at); err != nil {
		return false, err
	}
	for _, pred := range settled {
		// Settled before the join existed: the transaction's end judges
		// it as it would have judged its settlement.
		w.Waits = append(w.Waits, waitSettled{Pred: pred.Key, At: at})
	}
	return true, nil
}

// acceptsWork reports whether a run may take new activations.
func acceptsWork(run backend.Run, at int64) error {
	if run.Status != backend.RunRunning {
		return stateErr(ErrIneligible, "workflow run does not accept work while %s", run.Status)
	}
	if run.CancelRequestedMS != 0 {
		return stateErr(ErrIneligible, "workflow cancellation has been requested")
	}
	if deadlineElapsed(run.DeadlineMS, at) {
		return stateErr(ErrIneligible, "workflow wall-clock deadline has elapsed")
	}
	return nil
}

func sameActivationDefinition(a, b backend.Activation) bool {
	return a.Generation == b.Generation && bytes.Equal(a.Input, b.Input) &&
		slices.Equal(a.Claims, b.Claims) && a.Effect == b.Effect &&
		a.Reconciliation == b.Reconciliation && bytes.Equal(a.RetryPolicy, b.RetryPolicy) &&
		slices.Equal(a.Predecessors, b.Predecessors) && slices.Equal(a.WaitFor, b.WaitFor) && (a.Group == nil) == (b.Group == nil) &&
		a.AttemptTimeoutMS == b.AttemptTimeoutMS
}

// GetActivation returns the activation.
func (s *Store) GetActivation(ctx context.Context, key ActivationKey) (Activation, error) {
	k := key
	if err := validateActivationKey(k); err != nil {
		return Activation{}, err
	}
	var out backend.Activation
	err := s.view(ctx, func(r backend.ReadTx) error {
		a, err := backend.GetActivation(ctx, r, k)
		out = a
		return notFoundFrom(err, "activation %v", k)
	})
	if err != nil {
		return Activation{}, err
	}
	return toActivation(out), nil
}
