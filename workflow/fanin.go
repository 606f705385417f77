package workflow

import (
	"context"
	"encoding/json"
	"fmt"
	"math"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/event"
	"github.com/wfstore/wfstore/workflow/internal/state"
)

// Fan-in: a group created with NewFanOut.FanIn has its controller settled
// by the store, in the transaction that settles the deciding member, and
// its members' outcomes read page by page with FanOutMembers.

// MemberQuery selects a page of a fan-out group's members in index order.
type MemberQuery struct {
	// Controller is the group's controller activation.
	Controller ActivationKey
	// After resumes after a previous page (its Next) or after a member
	// (MemberCursor); empty starts at index 0.
	After Cursor
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

// FanOutMembers returns a page of the members of the group controlled by
// q.Controller in index order, read in one snapshot. It reads the group
// record and the page's members only, whatever the group's size, and
// writes nothing. An unknown group is ErrNotFound; a cursor past the
// group's last member gives an empty last page.
func (s *Store) FanOutMembers(ctx context.Context, q MemberQuery) (Page[MemberOutcome], error) {
	ctl := q.Controller
	if err := validateActivationKey(ctl); err != nil {
		return Page[MemberOutcome]{}, err
	}
	limit, err := pageLimit("fan-out member limit", q.Limit)
	if err != nil {
		return Page[MemberOutcome]{}, err
	}
	from := int64(0)
	var pos memberPos
	if ok, err := decodeCursor(membersCursor, q.After, &pos); err != nil {
		return Page[MemberOutcome]{}, err
	} else if ok {
		if pos.Index < 0 {
			return Page[MemberOutcome]{}, invalid("fan-out member index", "must not be negative")
		}
		from = pos.Index + 1
		if pos.Index == math.MaxInt64 { // past every group
			from = pos.Index
		}
	}
	var page Page[MemberOutcome]
	err = s.view(ctx, func(r backend.ReadTx) error {
		page = Page[MemberOutcome]{}
		f, err := r.Load(ctx, backend.Lookup{Groups: []backend.ActivationKey{ctl}})
		if err != nil {
			return err
		}
		g, ok := f.Groups[ctl]
		if !ok {
			return stateErr(ErrNotFound, "fan-out group %v", ctl)
		}
		var keys []backend.ActivationKey
		for i := from; i < g.Size && len(keys) < limit; i++ {
			keys = append(keys, memberKey(ctl, i))
		}
		if len(keys) == 0 {
			return nil
		}
		if last := from + int64(len(keys)) - 1; last+1 < g.Size {
			page.Next = MemberCursor(last)
		}
		m, err := r.Load(ctx, backend.Lookup{Activations: keys})
		if err != nil {
			return err
		}
		for i, k := range keys {
			act, ok := m.Activations[k]
			if !ok {
				return fmt.Errorf("workflow: fan-out group %v lacks member %d", ctl, from+int64(i))
			}
			o := MemberOutcome{Index: from + int64(i), Key: k, Status: ActivationStatus(act.Status)}
			if act.Status == backend.ActivationCompleted {
				o.Output = rawOut(act.Output)
			}
			page.Items = append(page.Items, o)
		}
		return nil
	})
	if err != nil {
		return Page[MemberOutcome]{}, err
	}
	return page, nil
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
