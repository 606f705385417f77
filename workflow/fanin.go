package workflow

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/event"
	"github.com/wfstore/wfstore/workflow/internal/state"
)

// Fan-in: a group created with NewFanOut.FanIn has its controller settled
// by the store, in the transaction that settles the deciding member, and
// its members' outcomes read page by page with FanOutMembers.

// FanOutMemberPage selects a page of a fan-out group's members in index
// order.
type FanOutMemberPage struct {
	// Controller is the group's controller activation.
	Controller ActivationKey
	// From is the first member index of the page: 0 for the first page,
	// the previous page's last Index+1 for the next.
	From int64
	// Limit is 1 to MaxPageLimit; 0 means DefaultPageLimit.
	Limit int
}

// MemberOutcome is one fan-out member as its group's successors read it.
type MemberOutcome struct {
	Index  int64
	Key    ActivationKey
	Status ActivationStatus
	// Output is a completed member's output, nil otherwise.
	Output json.RawMessage
}

// FanOutMembers returns the members of the group controlled by
// p.Controller from index p.From on, at most p.Limit of them in index
// order, read in one snapshot: a page shorter than its limit is the last.
// It reads the group record and the page's members only, whatever the
// group's size, and writes nothing. An unknown group is ErrNotFound; a
// negative From is ErrInvalidInput, one at or past the group's size an
// empty page.
func (s *Store) FanOutMembers(ctx context.Context, p FanOutMemberPage) ([]MemberOutcome, error) {
	ctl := p.Controller
	if err := validateActivationKey(ctl); err != nil {
		return nil, err
	}
	if p.From < 0 {
		return nil, invalid("fan-out member index", "must not be negative")
	}
	limit, err := pageLimit("fan-out member limit", p.Limit)
	if err != nil {
		return nil, err
	}
	var out []MemberOutcome
	err = s.view(ctx, func(r backend.ReadTx) error {
		out = nil
		f, err := r.Load(ctx, backend.Lookup{Groups: []backend.ActivationKey{ctl}})
		if err != nil {
			return err
		}
		g, ok := f.Groups[ctl]
		if !ok {
			return stateErr(ErrNotFound, "fan-out group %v", ctl)
		}
		var keys []backend.ActivationKey
		for i := p.From; i < g.Size && len(keys) < limit; i++ {
			keys = append(keys, memberKey(ctl, i))
		}
		if len(keys) == 0 {
			return nil
		}
		m, err := r.Load(ctx, backend.Lookup{Activations: keys})
		if err != nil {
			return err
		}
		for i, k := range keys {
			act, ok := m.Activations[k]
			if !ok {
				return fmt.Errorf("workflow: fan-out group %v lacks member %d", ctl, p.From+int64(i))
			}
			o := MemberOutcome{Index: p.From + int64(i), Key: k, Status: ActivationStatus(act.Status)}
			if act.Status == backend.ActivationCompleted {
				o.Output = rawOut(act.Output)
			}
			out = append(out, o)
		}
		return nil
	})
	return out, err
}

// decideFanIn settles the waiting controller of fan-in group g once its
// members decide it, in the transaction that settles the deciding member:
// failing, the index of a fail-fast group's member that just failed for
// good, fails it at once; otherwise, once every member has settled and
// none has an automatic retry pending, it completes when every member
// completed, fails when one failed and is cancelled otherwise. A group
// without fan-in, or whose controller has already settled (a fail-fast
// failure, the run's cancellation), is left alone.
func decideFanIn(ctx context.Context, t txn, run *backend.Run, g *backend.FanOutGroup, failing *int64) error {
	tx, w, at := t.Tx, t.W, t.At
	if !g.FanIn || (failing == nil && g.Settled < g.Size) {
		return nil
	}
	members, err := loadMembers(ctx, tx, w, g)
	if err != nil {
		return err
	}
	f, err := tx.Load(ctx, backend.Lookup{Activations: []backend.ActivationKey{g.Controller}})
	if err != nil {
		return err
	}
	ctl, ok := f.Activations[g.Controller]
	if !ok {
		return fmt.Errorf("workflow: fan-in group %v lacks its controller", g.Controller)
	}
	if ctl.Status != backend.ActivationWaiting {
		return nil
	}
	p := event.FanInSettledPayload{
		RunID: ctl.Key.RunID, NodeID: ctl.Key.NodeID, ActivationID: ctl.Key.ActivationID,
		Policy: WaitAll, Members: g.Size, MemberIndex: failing,
	}
	if g.FailFast {
		p.Policy = FailFast
	}
	var failed []backend.ActivationKey
	for _, m := range members {
		switch m.Status {
		case backend.ActivationCompleted:
			p.Completed++
		case backend.ActivationFailed:
			p.Failed++
			failed = append(failed, m.Key)
		case backend.ActivationCancelled:
			p.Cancelled++
		}
	}
	switch {
	case failing != nil:
		p.Status = ActivationFailed
	default:
		// A failed member whose automatic retry is pending may still
		// succeed: the group is decided once it settles again.
		if len(failed) > 0 {
			sf, err := tx.Load(ctx, backend.Lookup{Schedules: failed})
			if err != nil {
				return err
			}
			if len(sf.Schedules) > 0 {
				return nil
			}
		}
		switch {
		case p.Failed > 0:
			p.Status = ActivationFailed
		case p.Completed == g.Size:
			p.Status = ActivationCompleted
		default:
			p.Status = ActivationCancelled
		}
	}
	return state.SettleFanIn(w, run, &ctl, g, p, at)
}

// retryDiscarded re-decides the fan-in group of act once a retry schedule
// of act was discarded without being consumed: a failed member whose
// retry was pending is then failed for good.
func retryDiscarded(ctx context.Context, tx backend.Tx, w *batch, run *backend.Run, act backend.Activation, at int64) error {
	g, ok, err := loadGroup(ctx, tx, act)
	if err != nil || !ok {
		return err
	}
	return decideFanIn(ctx, txn{Tx: tx, W: w, At: at}, run, &g, nil)
}
