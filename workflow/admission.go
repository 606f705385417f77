package workflow

import (
	"context"
	"errors"
	"time"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/workflow/internal/state"
)

// PreparePending is the single-winner gate: it commits one prepared attempt
// for a pending activation, in one transaction that moves the activation to
// running, takes its resource leases, creates the attempt with its intent
// and a pending handoff, and appends the events. It returns nil (creating
// nothing) when the activation is not admissible now: already taken, not
// pending, run not running, cancellation requested, retirement pending or
// missing. The run's authority is snapshotted first and must not change
// before the commit.
func (s *Engine) PreparePending(ctx context.Context, key ActivationKey, plan Plan, now time.Time) (*PreparedDispatch, error) {
	k := key
	if err := validateActivationKey(k); err != nil {
		return nil, err
	}
	var (
		snap *backend.Authority
		h    prepareHint
	)
	err := s.view(ctx, func(r backend.ReadTx) error {
		f, err := r.Load(ctx, backend.Lookup{Runs: []string{k.RunID}, Activations: []backend.ActivationKey{k}})
		if err != nil {
			return err
		}
		run, ok := f.Runs[k.RunID]
		if !ok {
			return stateErr(ErrNotFound, "run %q", k.RunID)
		}
		snap = run.Authority
		h = hintFrom(run, f.Activations[k])
		return nil
	})
	if err != nil {
		return nil, err
	}
	p, _, err := s.prepare(ctx, k, plan, authorityCheck{mode: authSnapshot, want: snap, what: "preparation"}, h, now)
	return p, err
}

func checkPlan(plan Plan) ([]byte, error) {
	if plan.SideEffect != ReadOnly && plan.SideEffect != Mutating {
		return nil, invalid("side effect", "must be read_only or mutating")
	}
	return ownerJSON("dispatch intent", plan.Intent)
}

// prepareHint is what discovery already knows about an activation (its
// root run, fan-out group and claims: all immutable), so that prepare can
// read everything it decides on in one Load. A wrong hint costs a second
// Load, never a wrong decision.
type prepareHint struct {
	rootID string
	group  *backend.ActivationKey
	claims []backend.ResourceClaim
}

func hintFrom(run backend.Run, act backend.Activation) prepareHint {
	h := prepareHint{rootID: run.RootID, claims: act.Claims}
	if act.Group != nil {
		c := act.Group.Controller
		h.group = &c
	}
	return h
}

// lookup adds to l what the hint says prepare will need.
func (h prepareHint) lookup(l *backend.Lookup, k backend.ActivationKey) {
	if h.rootID != "" && h.rootID != k.RunID {
		l.Runs = append(l.Runs, h.rootID)
	}
	if h.group != nil {
		l.Groups = append(l.Groups, *h.group)
	}
	for _, c := range h.claims {
		l.Resources = append(l.Resources, backend.ResourceRef{RunID: k.RunID, Resource: c.Resource})
	}
}

// prepare implements PreparePending after the hint was read. It returns, with
// the prepared dispatch, the records it committed (see known).
func (s *Store) prepare(ctx context.Context, k backend.ActivationKey, plan Plan, check authorityCheck, hint prepareHint, now time.Time) (*PreparedDispatch, *known, error) {
	intent, err := checkPlan(plan)
	if err != nil {
		return nil, nil, err
	}
	at, err := toMS("now", now)
	if err != nil {
		return nil, nil, err
	}
	var out *PreparedDispatch
	var kn *known
	err = s.update(ctx, func(tx backend.Tx, w *batch) error {
		// One read of everything prepare decides on, shaped by the hint.
		l := backend.Lookup{Runs: []string{k.RunID}, Activations: []backend.ActivationKey{k}}
		hint.lookup(&l, k)
		g, err := tx.Load(ctx, l)
		if err != nil {
			return err
		}
		var got known
		out, got, err = decidePrepare(ctx, tx, w, &g, prepItem{key: k, effect: plan.SideEffect, intent: intent, check: check, hint: hint}, at)
		kn = nil
		if err == nil {
			kn = &got
		}
		return err
	})
	if errors.Is(err, errNoop) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	return out, kn, nil
}

// prepItem is one activation to prepare: its key, its checked plan, the
// authority check and what discovery knows of it.
type prepItem struct {
	key    backend.ActivationKey
	effect Effect
	intent []byte // canonical
	check  authorityCheck
	hint   prepareHint
}

// decidePrepare is the whole preparation decision for it.key, on the
// records in g (read by a lookup shaped by it.hint; a lookup the hint
// missed is read now and added). It writes to w and, when it prepares,
// updates g with the records it wrote (the run, its root, the activation
// and the leases), so that the next decision on g in the same transaction
// sees them. It returns the prepared dispatch and the records it wrote (by
// value, valid only with a nil error), or errNoop when the activation is
// not admissible now.
func decidePrepare(ctx context.Context, tx backend.ReadTx, w *batch, g *backend.Found, it prepItem, at int64) (*PreparedDispatch, known, error) {
	k, check := it.key, it.check
	run, ok := g.Runs[k.RunID]
	if !ok {
		return nil, known{}, errNoop
	}
	if err := check.verify(run); err != nil {
		return nil, known{}, err
	}
	act, ok := g.Activations[k]
	if !ok {
		return nil, known{}, errNoop
	}
	if exact := hintFrom(run, act); !exact.covers(it.hint) {
		// The hint missed something: read it now.
		l := backend.Lookup{}
		exact.lookup(&l, k)
		more, err := tx.Load(ctx, l)
		if err != nil {
			return nil, known{}, err
		}
		addMissing(g, more)
	}
	var group *backend.FanOutGroup
	if act.Group != nil {
		if v, ok := g.Groups[act.Group.Controller]; ok {
			group = &v
		}
		if group != nil && group.Retiring {
			return nil, known{}, errNoop
		}
	}
	if !state.Startable(run, act) {
		return nil, known{}, errNoop
	}
	if act.LastAttempt == ^uint32(0) {
		return nil, known{}, stateErr(ErrIneligible, "attempt number would exceed %d", ^uint32(0))
	}
	attempt := act.LastAttempt + 1
	akey := backend.AttemptKey{ActivationKey: k, Attempt: attempt}
	leases, err := acquireLeases(act, akey, g.Resources, at)
	if err != nil {
		return nil, known{}, err
	}
	root := run
	if run.RootID != run.ID {
		r, ok := g.Runs[run.RootID]
		if !ok {
			return nil, known{}, stateErr(ErrNotFound, "root run %q of run %q", run.RootID, run.ID)
		}
		root = r
	}
	if err := enforceAttemptLimits(run, root, attempt, at); err != nil {
		return nil, known{}, err
	}
	// Apply the prepared outcome.
	identity := DispatchIdentity(k.RunID, k.NodeID, k.ActivationID, attempt)
	att := backend.Attempt{
		Key: akey, Identity: identity, Status: backend.AttemptPrepared, SideEffect: backend.Effect(it.effect),
		Intent: it.intent, IntentChecksum: Checksum(it.intent), Handoff: backend.HandoffPending, PreparedMS: at,
	}
	wroteRoot, err := state.PrepareAttempt(w, state.AttemptStart{Run: &run, Root: &root, Act: &act, Att: &att, Leases: leases}, at)
	if err != nil {
		return nil, known{}, err
	}
	if wroteRoot {
		g.Runs[root.ID] = root
	}
	state.Replace(w, run)
	g.Runs[run.ID] = run
	g.Activations[k] = act
	for _, l := range leases {
		ref := backend.ResourceRef{RunID: k.RunID, Resource: l.Key.Resource}
		if g.Resources == nil {
			g.Resources = map[backend.ResourceRef][]backend.Lease{}
		}
		g.Resources[ref] = append(g.Resources[ref], l)
	}
	out := &PreparedDispatch{Activation: toActivation(act), Attempt: attempt, Identity: identity,
		SideEffect: it.effect, Intent: it.intent, PreparedAt: fromMS(at)}
	return out, known{run: run, act: act, att: att}, nil
}

// addMissing adds to g the records of more that g does not hold yet (g's
// own may already carry this transaction's decisions).
func addMissing(g *backend.Found, more backend.Found) {
	for id, r := range more.Runs {
		if _, ok := g.Runs[id]; !ok {
			if g.Runs == nil {
				g.Runs = map[string]backend.Run{}
			}
			g.Runs[id] = r
		}
	}
	for k, v := range more.Groups {
		if _, ok := g.Groups[k]; !ok {
			if g.Groups == nil {
				g.Groups = map[backend.ActivationKey]backend.FanOutGroup{}
			}
			g.Groups[k] = v
		}
	}
	for k, v := range more.Resources {
		if _, ok := g.Resources[k]; !ok {
			if g.Resources == nil {
				g.Resources = map[backend.ResourceRef][]backend.Lease{}
			}
			g.Resources[k] = v
		}
	}
}

// deadlineElapsed reports whether a run's wall-clock deadline (unix ms, 0 =
// none) has passed at at. The deadline is exclusive: at the deadline
// millisecond itself the run no longer accepts work or attempts.
func deadlineElapsed(deadlineMS, at int64) bool {
	return deadlineMS != 0 && at >= deadlineMS
}

// enforceAttemptLimits applies the limits in upstream order: run status,
// cancellation, deadline, retry cap, node allowance, root allowance,
// concurrency capacity.
func enforceAttemptLimits(run, root backend.Run, attempt uint32, at int64) error {
	if err := limitsBeforeCapacity(run, root, attempt, at, 0, 0); err != nil {
		return err
	}
	if run.ActiveCount >= run.Limits.ConcurrencyCap {
		return stateErr(ErrConcurrencyCapacity, "run %q has %d active attempts (cap %d)", run.ID, run.ActiveCount, run.Limits.ConcurrencyCap)
	}
	return nil
}

// limitsBeforeCapacity applies every limit that comes before concurrency
// capacity, in order, counting runMore and treeMore attempts beyond the
// run's and the root's durable counters (discovery's planned ones). It
// is what discovery asks before it calls a run full.
func limitsBeforeCapacity(run, root backend.Run, attempt uint32, at, runMore, treeMore int64) error {
	if run.Status != backend.RunRunning {
		return stateErr(ErrIneligible, "workflow run does not accept attempts while %s", run.Status)
	}
	if run.CancelRequestedMS != 0 {
		return stateErr(ErrIneligible, "workflow cancellation has been requested")
	}
	if deadlineElapsed(run.DeadlineMS, at) {
		return stateErr(ErrIneligible, "workflow wall-clock deadline has elapsed")
	}
	if int64(attempt) > run.Limits.RetryCap+1 {
		return stateErr(ErrIneligible, "workflow retry cap exceeded")
	}
	if run.AttemptCount+runMore >= run.Limits.NodeExecutionCap {
		return stateErr(ErrNodeAllowanceExhausted, "run %q has %d of %d attempts", run.ID, run.AttemptCount+runMore, run.Limits.NodeExecutionCap)
	}
	if root.TreeAttemptCount+treeMore >= root.Limits.NodeExecutionCap {
		return stateErr(ErrRootAllowanceExhausted, "root %q has %d of %d attempts", root.ID, root.TreeAttemptCount+treeMore, root.Limits.NodeExecutionCap)
	}
	return nil
}

// park clears the admissible flag of an activation a dispatch rejected for
// a durable reason, so discovery does not return it again.
func (s *Store) park(ctx context.Context, k backend.ActivationKey, now time.Time) error {
	at, err := toMS("now", now)
	if err != nil {
		return err
	}
	err = s.update(ctx, func(tx backend.Tx, w *batch) error {
		act, err := backend.GetActivation(ctx, tx, k)
		if err != nil {
			return notFoundFrom(err, "activation %v", k)
		}
		if err := state.ParkActivation(&act, at); err != nil {
			return err
		}
		state.Replace(w, act)
		return nil
	})
	if errors.Is(err, errNoop) {
		return nil
	}
	return err
}

// recordExhaustion confirms an allowance exhaustion inside a write
// transaction and, the first time for the run, appends the one
// execution_allowance_exhausted event; a later exhaustion (after an
// allowance increase) appends none. Either way it parks the run's pending
// activations. An exhaustion not confirmed (a race) writes nothing.
func (s *Store) recordExhaustion(ctx context.Context, runID string, check authorityCheck, now time.Time) error {
	at, err := toMS("now", now)
	if err != nil {
		return err
	}
	err = s.update(ctx, func(tx backend.Tx, w *batch) error {
		run, err := backend.GetRun(ctx, tx, runID)
		if err != nil {
			return notFoundFrom(err, "run %q", runID)
		}
		if err := check.verify(run); err != nil {
			return err
		}
		root := run
		if run.RootID != run.ID {
			if root, err = backend.GetRun(ctx, tx, run.RootID); err != nil {
				return notFoundFrom(err, "root run %q", run.RootID)
			}
		}
		local := run.AttemptCount >= run.Limits.NodeExecutionCap
		tree := root.TreeAttemptCount >= root.Limits.NodeExecutionCap
		if !local && !tree {
			return errNoop
		}
		event := state.RecordAllowanceExhausted(w, &run, at)
		parked, err := parkPending(ctx, tx, w, run.ID, at)
		if err != nil {
			return err
		}
		if !event && !parked {
			return errNoop
		}
		run.UpdatedMS = at
		state.Replace(w, run)
		return nil
	})
	if errors.Is(err, errNoop) {
		return nil
	}
	return err
}

// covers reports whether a lookup shaped by hint h read everything the
// exact hint e needs.
func (e prepareHint) covers(h prepareHint) bool {
	if e.rootID != h.rootID || (e.group == nil) != (h.group == nil) || (e.group != nil && *e.group != *h.group) {
		return false
	}
	if len(e.claims) != len(h.claims) {
		return false
	}
	for i := range e.claims {
		if e.claims[i].Resource != h.claims[i].Resource {
			return false
		}
	}
	return true
}
