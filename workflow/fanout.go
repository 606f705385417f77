package workflow

import (
	"context"
	"encoding/json"
	"time"

	"github.com/wfstore/wfstore/backend"
)

// NewFanOut describes a fan-out group: members of one controller
// activation, admitted at most MaxConcurrency at a time in index order.
type NewFanOut struct {
	// Controller is an existing activation of the run that owns the group.
	Controller ActivationKey
	// Members are the member inputs, by index.
	Members []json.RawMessage
	// MaxConcurrency bounds members pending or running at once.
	MaxConcurrency int64
	// Member node facts, shared by every member.
	Claims         []ResourceClaim
	Effect         Effect
	Reconciliation Reconciliation
	RetryPolicy    *RetryPolicy
}

// MemberKey returns the activation key of member i of the group whose
// controller is c: node "{controller node}::member::{i}", activation id
// derived from the run, the controller activation and i.
func MemberKey(c ActivationKey, i int64) ActivationKey {
	return ActivationKey{RunID: c.RunID, NodeID: FanOutMemberNodeID(c.NodeID, i), ActivationID: FanOutMemberID(c.RunID, c.ActivationID, i)}
}

// AddFanOut materialises a fan-out group: the first MaxConcurrency members
// pending, the rest waiting (promoted in index order as members settle).
// It is idempotent: an identical group returns created=false; a different
// one fails with ErrConflict.
func (s *Store) AddFanOut(ctx context.Context, nf NewFanOut, now time.Time) (created bool, err error) {
	if err := validateActivationKey(nf.Controller); err != nil {
		return false, err
	}
	if len(nf.Members) == 0 || len(nf.Members) > MaxPageLimit {
		return false, invalid("fan-out members", "must number 1..=%d", MaxPageLimit)
	}
	if nf.MaxConcurrency <= 0 {
		return false, invalid("fan-out max concurrency", "must be positive")
	}
	at, err := toMS("now", now)
	if err != nil {
		return false, err
	}
	members := make([]backend.Activation, len(nf.Members))
	for i, in := range nf.Members {
		na := NewActivation{
			Key: MemberKey(nf.Controller, int64(i)), Generation: int64(i), Input: in, Claims: nf.Claims,
			Effect: nf.Effect, Reconciliation: nf.Reconciliation, RetryPolicy: nf.RetryPolicy,
		}
		rec, err := na.record(at)
		if err != nil {
			return false, err
		}
		rec.Group = &backend.GroupMember{Controller: nf.Controller, Index: int64(i)}
		if int64(i) >= nf.MaxConcurrency {
			rec.Status = backend.ActivationWaiting
		}
		members[i] = rec
	}
	group := backend.FanOutGroup{
		Controller: nf.Controller, Size: int64(len(members)), MaxConcurrency: nf.MaxConcurrency,
		Promoted: min(nf.MaxConcurrency, int64(len(members))), CreatedMS: at,
	}
	err = s.update(ctx, func(tx backend.Tx, w *batch) error {
		f, err := tx.Load(ctx, backend.Lookup{
			Runs: []string{nf.Controller.RunID}, Activations: []backend.ActivationKey{nf.Controller},
			Groups: []backend.ActivationKey{nf.Controller},
		})
		if err != nil {
			return err
		}
		run, ok := f.Runs[nf.Controller.RunID]
		if !ok {
			return stateErr(ErrNotFound, "run %q", nf.Controller.RunID)
		}
		if _, ok := f.Activations[nf.Controller]; !ok {
			return stateErr(ErrNotFound, "fan-out controller %v", nf.Controller)
		}
		if old, ok := f.Groups[nf.Controller]; ok {
			if old.Size == group.Size && old.MaxConcurrency == group.MaxConcurrency {
				keys := make([]backend.ActivationKey, len(members))
				for i, m := range members {
					keys[i] = m.Key
				}
				existing, err := tx.Load(ctx, backend.Lookup{Activations: keys})
				if err != nil {
					return err
				}
				same := true
				for _, m := range members {
					if old, ok := existing.Activations[m.Key]; !ok || !sameActivationDefinition(old, m) {
						same = false
						break
					}
				}
				if same {
					return errNoop
				}
			}
			return stateErr(ErrConflict, "fan-out group %v exists with different fields", nf.Controller)
		}
		if err := acceptsWork(run, at); err != nil {
			return err
		}
		for _, m := range members {
			m.Admissible = admissible(run, m, &group)
			w.insert(m)
			typ := "activation_created"
			if m.Status == backend.ActivationWaiting {
				typ = "activation_waiting"
			}
			w.event(&run, typ, map[string]any{
				"run_id": m.Key.RunID, "node_id": m.Key.NodeID, "activation_id": m.Key.ActivationID,
				"member_index": m.Group.Index,
			}, at)
		}
		w.insert(group)
		run.UpdatedMS = at
		w.replace(run)
		created = true
		return nil
	})
	if err == errNoop {
		return false, nil
	}
	return created, err
}

// promoteMembers moves waiting members to pending, in index order, while
// fewer than MaxConcurrency members are unsettled. A retiring group
// promotes nothing.
func promoteMembers(ctx context.Context, tx backend.ReadTx, w *batch, run *backend.Run, g *backend.FanOutGroup, at int64) error {
	for !g.Retiring && g.Promoted < g.Size && g.Promoted-g.Settled < g.MaxConcurrency {
		k := MemberKey(g.Controller, g.Promoted)
		g.Promoted++
		act, err := backend.GetActivation(ctx, tx, k)
		if err != nil {
			return err
		}
		if act.Status != backend.ActivationWaiting {
			continue
		}
		act.Status = backend.ActivationPending
		act.Admissible = admissible(*run, act, g)
		act.UpdatedMS = at
		w.replace(act)
		w.event(run, "fan_out_member_promoted", map[string]any{
			"run_id": k.RunID, "node_id": k.NodeID, "activation_id": k.ActivationID, "member_index": g.Promoted - 1,
		}, at)
	}
	return nil
}

// RetireFanOut records a durable retirement intent on the group: until
// SettleFanOutRetirement, its members get no new attempt, no handoff and no
// receipt-less owner admission. Recording it twice is a no-op.
func (s *Store) RetireFanOut(ctx context.Context, controller ActivationKey, now time.Time) error {
	return s.retire(ctx, controller, now, false)
}

// SettleFanOutRetirement settles a recorded retirement: members that never
// started (waiting or pending) are cancelled and the intent is cleared.
// Members with attempts keep them; they settle through observations.
func (s *Store) SettleFanOutRetirement(ctx context.Context, controller ActivationKey, now time.Time) error {
	return s.retire(ctx, controller, now, true)
}

func (s *Store) retire(ctx context.Context, controller ActivationKey, now time.Time, settle bool) error {
	if err := validateActivationKey(controller); err != nil {
		return err
	}
	at, err := toMS("now", now)
	if err != nil {
		return err
	}
	err = s.update(ctx, func(tx backend.Tx, w *batch) error {
		f, err := tx.Load(ctx, backend.Lookup{Runs: []string{controller.RunID}, Groups: []backend.ActivationKey{controller}})
		if err != nil {
			return err
		}
		run, ok := f.Runs[controller.RunID]
		g, gok := f.Groups[controller]
		if !ok || !gok {
			return stateErr(ErrNotFound, "fan-out group %v", controller)
		}
		if !settle {
			if g.Retiring {
				return errNoop
			}
			g.Retiring = true
			w.replace(g)
			if err := reindexRun(ctx, tx, w, run); err != nil {
				return err
			}
			w.event(&run, "fan_out_retirement_requested", map[string]any{"controller_activation_id": controller.ActivationID}, at)
			w.replace(run)
			return nil
		}
		if !g.Retiring {
			return stateErr(ErrIneligible, "fan-out group %v has no retirement pending", controller)
		}
		for i := int64(0); i < g.Size; i++ {
			act, err := backend.GetActivation(ctx, tx, MemberKey(controller, i))
			if err != nil {
				return err
			}
			if act.Status == backend.ActivationWaiting || act.Status == backend.ActivationPending {
				act.Status = backend.ActivationCancelled
				act.Admissible = false
				act.UpdatedMS = at
				w.replace(act)
				g.Settled++
			}
		}
		g.Retiring = false
		g.Promoted = g.Size
		g.RetiredMS = at
		w.replace(g)
		w.event(&run, "fan_out_retired", map[string]any{"controller_activation_id": controller.ActivationID}, at)
		run.UpdatedMS = at
		w.replace(run)
		return nil
	})
	if err == errNoop {
		return nil
	}
	return err
}
