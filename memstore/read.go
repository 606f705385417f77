package memstore

import (
	"cmp"
	"context"
	"errors"
	"slices"

	"github.com/wfstore/wfstore/backend"
)

var errFinished = errors.New("memstore: transaction used after its function returned")

// reader is a ReadTx over one state.
type reader struct {
	b    *Backend
	st   *state
	done bool
}

func (r *reader) check(ctx context.Context) error {
	if r.done {
		return errFinished
	}
	return r.b.check(ctx)
}

func cmpActivationKey(a, b backend.ActivationKey) int {
	return cmp.Or(cmp.Compare(a.RunID, b.RunID), cmp.Compare(a.NodeID, b.NodeID), cmp.Compare(a.ActivationID, b.ActivationID))
}

func cmpAttemptKey(a, b backend.AttemptKey) int {
	return cmp.Or(cmpActivationKey(a.ActivationKey, b.ActivationKey), cmp.Compare(a.Attempt, b.Attempt))
}

func cmpLeaseKey(a, b backend.LeaseKey) int {
	return cmp.Or(cmpAttemptKey(a.AttemptKey, b.AttemptKey), cmp.Compare(a.Resource, b.Resource), cmp.Compare(a.Mode, b.Mode))
}

// bounded returns at most limit elements of xs (none for limit <= 0).
func bounded[T any](xs []T, limit int) []T {
	if limit <= 0 {
		return nil
	}
	if len(xs) > limit {
		xs = xs[:limit]
	}
	return xs
}

func (r *reader) Load(ctx context.Context, l backend.Lookup) (backend.Found, error) {
	if err := r.check(ctx); err != nil {
		return backend.Found{}, err
	}
	s := r.st
	f := backend.Found{
		Runs:        map[string]backend.Run{},
		Links:       map[string]backend.RunLink{},
		Activations: map[backend.ActivationKey]backend.Activation{},
		Groups:      map[backend.ActivationKey]backend.FanOutGroup{},
		Attempts:    map[backend.AttemptKey]backend.Attempt{},
		Identities:  map[string]backend.Attempt{},
		Leases:      map[backend.LeaseKey]backend.Lease{},
		Schedules:   map[backend.ActivationKey]backend.RetrySchedule{},
		Resources:   map[backend.ResourceRef][]backend.Lease{},
	}
	for _, id := range l.Runs {
		if v, ok := s.runs.m[id]; ok {
			f.Runs[id] = copyRun(v)
		}
	}
	for _, id := range l.Links {
		if v, ok := s.links.m[id]; ok {
			f.Links[id] = copyLink(v)
		}
	}
	for _, k := range l.Activations {
		if v, ok := s.acts.m[k]; ok {
			f.Activations[k] = copyActivation(v)
		}
	}
	for _, k := range l.Groups {
		if v, ok := s.groups.m[k]; ok {
			f.Groups[k] = v
		}
	}
	for _, k := range l.Attempts {
		if v, ok := s.attempts.m[k]; ok {
			f.Attempts[k] = copyAttempt(v)
		}
	}
	for _, id := range l.Identities {
		if k, ok := s.identities.m[id]; ok {
			f.Identities[id] = copyAttempt(s.attempts.m[k])
		}
	}
	for _, k := range l.Leases {
		if v, ok := s.leases.m[k]; ok {
			f.Leases[k] = v
		}
	}
	for _, k := range l.Schedules {
		if v, ok := s.schedules.m[k]; ok {
			f.Schedules[k] = v
		}
	}
	for _, ref := range l.Resources {
		var ls []backend.Lease
		for k, v := range s.leases.m {
			if k.RunID == ref.RunID && k.Resource == ref.Resource && v.ReleasedMS == 0 {
				ls = append(ls, v)
			}
		}
		if len(ls) > 0 {
			slices.SortFunc(ls, func(a, b backend.Lease) int { return cmpLeaseKey(a.Key, b.Key) })
			f.Resources[ref] = ls
		}
	}
	return f, nil
}

func (r *reader) AdmissibleActivations(ctx context.Context, q backend.AdmissibleQuery) ([]backend.Activation, error) {
	if err := r.check(ctx); err != nil {
		return nil, err
	}
	var out []backend.Activation
	for k, a := range r.st.acts.m {
		if !a.Admissible || (q.RunID != "" && k.RunID != q.RunID) {
			continue
		}
		if q.AfterRun {
			if k.RunID <= q.After.RunID {
				continue
			}
		} else if cmpActivationKey(k, q.After) <= 0 {
			continue
		}
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b backend.Activation) int { return cmpActivationKey(a.Key, b.Key) })
	out = bounded(out, q.Limit)
	for i := range out {
		out[i] = copyActivation(out[i])
	}
	return out, nil
}

func (r *reader) Activations(ctx context.Context, q backend.ActivationQuery) ([]backend.Activation, error) {
	if err := r.check(ctx); err != nil {
		return nil, err
	}
	after := backend.ActivationKey{RunID: q.RunID, NodeID: q.After.NodeID, ActivationID: q.After.ActivationID}
	var out []backend.Activation
	for k, a := range r.st.acts.m {
		if k.RunID == q.RunID && cmpActivationKey(k, after) > 0 {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(a, b backend.Activation) int { return cmpActivationKey(a.Key, b.Key) })
	out = bounded(out, q.Limit)
	for i := range out {
		out[i] = copyActivation(out[i])
	}
	return out, nil
}

func cmpAttemptPos(a, b backend.AttemptCursor) int {
	return cmp.Or(cmp.Compare(a.PreparedMS, b.PreparedMS), cmp.Compare(a.Identity, b.Identity))
}

func (r *reader) Attempts(ctx context.Context, q backend.AttemptQuery) ([]backend.Attempt, error) {
	if err := r.check(ctx); err != nil {
		return nil, err
	}
	var out []backend.Attempt
	for k, a := range r.st.attempts.m {
		if q.RunID != "" && k.RunID != q.RunID {
			continue
		}
		if q.Status != "" && a.Status != q.Status {
			continue
		}
		if q.After != (backend.AttemptCursor{}) {
			c := cmpAttemptPos(backend.AttemptCursor{PreparedMS: a.PreparedMS, Identity: a.Identity}, q.After)
			if (!q.Descending && c <= 0) || (q.Descending && c >= 0) {
				continue
			}
		}
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b backend.Attempt) int {
		c := cmpAttemptPos(backend.AttemptCursor{PreparedMS: a.PreparedMS, Identity: a.Identity},
			backend.AttemptCursor{PreparedMS: b.PreparedMS, Identity: b.Identity})
		if q.Descending {
			return -c
		}
		return c
	})
	out = bounded(out, q.Limit)
	for i := range out {
		out[i] = copyAttempt(out[i])
	}
	return out, nil
}

func (r *reader) CountAttempts(ctx context.Context, q backend.AttemptCountQuery) (int, error) {
	if err := r.check(ctx); err != nil {
		return 0, err
	}
	n := 0
	for k := range r.st.attempts.m {
		if n >= q.Limit {
			break
		}
		if k.RunID == q.RunID {
			n++
		}
	}
	return n, nil
}

func (r *reader) ChildRuns(ctx context.Context, q backend.ChildRunQuery) ([]backend.RunLink, error) {
	if err := r.check(ctx); err != nil {
		return nil, err
	}
	after := func(l backend.RunLink) bool {
		return q.After == (backend.ChildRunCursor{}) ||
			cmp.Or(cmp.Compare(l.CreatedMS, q.After.CreatedMS), cmp.Compare(l.ChildRunID, q.After.ChildRunID)) > 0
	}
	var out []backend.RunLink
	for _, l := range r.st.links.m {
		if l.RootRunID == q.RootRunID && after(l) {
			out = append(out, l)
		}
	}
	slices.SortFunc(out, func(a, b backend.RunLink) int {
		return cmp.Or(cmp.Compare(a.CreatedMS, b.CreatedMS), cmp.Compare(a.ChildRunID, b.ChildRunID))
	})
	out = bounded(out, q.Limit)
	for i := range out {
		out[i] = copyLink(out[i])
	}
	return out, nil
}

func (r *reader) DueSchedules(ctx context.Context, q backend.ScheduleQuery) ([]backend.RetrySchedule, error) {
	if err := r.check(ctx); err != nil {
		return nil, err
	}
	var out []backend.RetrySchedule
	for k, s := range r.st.schedules.m {
		if k.RunID == q.RunID && s.DueMS <= q.DueBy {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b backend.RetrySchedule) int {
		return cmp.Or(cmp.Compare(a.DueMS, b.DueMS), cmp.Compare(a.Key.NodeID, b.Key.NodeID), cmp.Compare(a.Key.ActivationID, b.Key.ActivationID))
	})
	return bounded(out, q.Limit), nil
}

func (r *reader) Events(ctx context.Context, q backend.EventQuery) ([]backend.Event, error) {
	if err := r.check(ctx); err != nil {
		return nil, err
	}
	var out []backend.Event
	for k, ev := range r.st.events.m {
		if k.RunID == q.RunID && (q.After == 0 || k.Seq > q.After) {
			out = append(out, ev)
		}
	}
	slices.SortFunc(out, func(a, b backend.Event) int { return cmp.Compare(a.Seq, b.Seq) })
	out = bounded(out, q.Limit)
	for i := range out {
		out[i] = copyEvent(out[i])
	}
	return out, nil
}

func (r *reader) Leases(ctx context.Context, q backend.LeaseQuery) ([]backend.Lease, error) {
	if err := r.check(ctx); err != nil {
		return nil, err
	}
	var out []backend.Lease
	for k, l := range r.st.leases.m {
		if k.RunID != q.RunID || (l.ReleasedMS != 0 && !q.IncludeReleased) {
			continue
		}
		if q.After != (backend.LeaseKey{}) && cmpLeaseKey(k, q.After) <= 0 {
			continue
		}
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b backend.Lease) int { return cmpLeaseKey(a.Key, b.Key) })
	return bounded(out, q.Limit), nil
}

func (r *reader) Runs(ctx context.Context, q backend.RunQuery) ([]backend.Run, error) {
	if err := r.check(ctx); err != nil {
		return nil, err
	}
	var out []backend.Run
	for id, run := range r.st.runs.m {
		if id <= q.After || (q.Status != "" && run.Status != q.Status) {
			continue
		}
		out = append(out, run)
	}
	slices.SortFunc(out, func(a, b backend.Run) int { return cmp.Compare(a.ID, b.ID) })
	out = bounded(out, q.Limit)
	for i := range out {
		out[i] = copyRun(out[i])
	}
	return out, nil
}
