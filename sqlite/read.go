package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/wfstore/wfstore/backend"
)

// get reads at most one row; ok is false when there is none.
func get[T any](ctx context.Context, t *readTx, id stmtID, what string, scan func(scanner) (T, error), args ...any) (v T, ok bool, err error) {
	s, err := t.stmt(ctx, id)
	if err != nil {
		return v, false, err
	}
	return get1(ctx, t, s, what, scan, args)
}

// get1 is get through the statement s.
func get1[T any](ctx context.Context, t *readTx, s *sql.Stmt, what string, scan func(scanner) (T, error), args []any) (v T, ok bool, err error) {
	v, err = scan(s.QueryRowContext(ctx, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return v, false, nil
	}
	if err != nil {
		return v, false, t.fail(fmt.Errorf("sqlite: load %s: %w", what, err))
	}
	return v, true, nil
}

// list runs a scan and collects its rows.
func list[T any](ctx context.Context, t *readTx, id stmtID, what string, capHint int, scan func(scanner) (T, error), args ...any) ([]T, error) {
	s, err := t.stmt(ctx, id)
	if err != nil {
		return nil, err
	}
	rows, err := s.QueryContext(ctx, args...)
	if err != nil {
		return nil, t.fail(fmt.Errorf("sqlite: %s: %w", what, err))
	}
	defer rows.Close()
	out := make([]T, 0, min(capHint, 64))
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, t.fail(fmt.Errorf("sqlite: %s: %w", what, err))
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, t.fail(fmt.Errorf("sqlite: %s: %w", what, err))
	}
	return out, nil
}

func (t *readTx) ready(ctx context.Context) error {
	if t.done {
		return errTxDone
	}
	if err := ctx.Err(); err != nil {
		return t.fail(err)
	}
	return nil
}

// Load implements backend.ReadTx. Each requested kind gets a (possibly
// empty) map; a resource with no unreleased lease is absent from
// Found.Resources.
func (t *readTx) Load(ctx context.Context, l backend.Lookup) (backend.Found, error) {
	var f backend.Found
	if err := t.ready(ctx); err != nil {
		return f, err
	}
	if len(l.Runs) > 0 {
		f.Runs = make(map[string]backend.Run, len(l.Runs))
		if err := loadKeys(ctx, t, runK, sRunGet, "run", scanRun, l.Runs, func(id string, v backend.Run) {
			f.Runs[id] = v
			remember(t, runK, id, v)
		}); err != nil {
			return backend.Found{}, err
		}
	}
	if len(l.Links) > 0 {
		f.Links = make(map[string]backend.RunLink, len(l.Links))
		for _, id := range l.Links {
			v, ok, err := get(ctx, t, sLinkGet, "run link", scanLink, id)
			if err != nil {
				return backend.Found{}, err
			}
			if ok {
				f.Links[id] = v
			}
		}
	}
	if len(l.Activations) > 0 {
		f.Activations = make(map[backend.ActivationKey]backend.Activation, len(l.Activations))
		if err := loadKeys(ctx, t, activationK, sActGet, "activation", scanActivation, l.Activations, func(k backend.ActivationKey, v backend.Activation) {
			f.Activations[k] = v
			remember(t, activationK, k, v)
		}); err != nil {
			return backend.Found{}, err
		}
	}
	if len(l.Groups) > 0 {
		f.Groups = make(map[backend.ActivationKey]backend.FanOutGroup, len(l.Groups))
		for _, k := range l.Groups {
			v, ok, err := get(ctx, t, sGroupGet, "fan-out group", scanGroup, k.RunID, k.NodeID, k.ActivationID)
			if err != nil {
				return backend.Found{}, err
			}
			if ok {
				f.Groups[k] = v
				remember(t, groupK, k, v)
			}
		}
	}
	if len(l.Attempts) > 0 {
		f.Attempts = make(map[backend.AttemptKey]backend.Attempt, len(l.Attempts))
		if err := loadKeys(ctx, t, attemptK, sAttGet, "attempt", scanAttempt, l.Attempts, func(k backend.AttemptKey, v backend.Attempt) {
			f.Attempts[k] = v
			remember(t, attemptK, k, v)
		}); err != nil {
			return backend.Found{}, err
		}
	}
	if len(l.Identities) > 0 {
		f.Identities = make(map[string]backend.Attempt, len(l.Identities))
		for _, id := range l.Identities {
			v, ok, err := get(ctx, t, sAttByIdentity, "attempt by identity", scanAttempt, id)
			if err != nil {
				return backend.Found{}, err
			}
			if ok {
				f.Identities[id] = v
				remember(t, attemptK, v.Key, v)
			}
		}
	}
	if len(l.Leases) > 0 {
		f.Leases = make(map[backend.LeaseKey]backend.Lease, len(l.Leases))
		for _, k := range l.Leases {
			v, ok, err := get(ctx, t, sLeaseGet, "lease", scanLease,
				k.RunID, k.NodeID, k.ActivationID, int64(k.Attempt), k.Resource, string(k.Mode))
			if err != nil {
				return backend.Found{}, err
			}
			if ok {
				f.Leases[k] = v
				remember(t, leaseK, k, v)
			}
		}
	}
	if len(l.Schedules) > 0 {
		f.Schedules = make(map[backend.ActivationKey]backend.RetrySchedule, len(l.Schedules))
		for _, k := range l.Schedules {
			v, ok, err := get(ctx, t, sSchedGet, "retry schedule", scanSchedule, k.RunID, k.NodeID, k.ActivationID)
			if err != nil {
				return backend.Found{}, err
			}
			if ok {
				f.Schedules[k] = v
				remember(t, scheduleK, k, v)
			}
		}
	}
	if len(l.Resources) > 0 {
		f.Resources = make(map[backend.ResourceRef][]backend.Lease, len(l.Resources))
		for _, r := range l.Resources {
			if _, dup := f.Resources[r]; dup {
				continue
			}
			v, err := list(ctx, t, sLeasesByResource, "leases on resource", 4, scanLease, r.RunID, r.Resource)
			if err != nil {
				return backend.Found{}, err
			}
			if len(v) > 0 {
				f.Resources[r] = v
			}
		}
	}
	return f, nil
}

// AdmissibleActivations implements backend.ReadTx on the partial index of
// admissible activations.
func (t *readTx) AdmissibleActivations(ctx context.Context, q backend.AdmissibleQuery) ([]backend.Activation, error) {
	if err := t.ready(ctx); err != nil {
		return nil, err
	}
	if q.Limit <= 0 {
		return []backend.Activation{}, nil
	}
	const what = "admissible activations"
	lim := int64(q.Limit)
	a := q.After
	zero := a == (backend.ActivationKey{})
	if q.RunID == "" {
		switch {
		case zero:
			return list(ctx, t, sAdmAll, what, q.Limit, scanActivation, lim)
		case q.AfterRun:
			return list(ctx, t, sAdmAfterRun, what, q.Limit, scanActivation, a.RunID, lim)
		default:
			return list(ctx, t, sAdmAfterKey, what, q.Limit, scanActivation, a.RunID, a.NodeID, a.ActivationID, lim)
		}
	}
	switch {
	case zero || a.RunID < q.RunID:
		return list(ctx, t, sAdmRun, what, q.Limit, scanActivation, q.RunID, lim)
	case a.RunID > q.RunID || q.AfterRun:
		return []backend.Activation{}, nil
	default:
		return list(ctx, t, sAdmRunAfter, what, q.Limit, scanActivation, q.RunID, a.NodeID, a.ActivationID, lim)
	}
}

// Activations implements backend.ReadTx.
func (t *readTx) Activations(ctx context.Context, q backend.ActivationQuery) ([]backend.Activation, error) {
	if err := t.ready(ctx); err != nil {
		return nil, err
	}
	if q.Limit <= 0 {
		return []backend.Activation{}, nil
	}
	if q.After == (backend.NodeRef{}) {
		return list(ctx, t, sActsRun, "activations", q.Limit, scanActivation, q.RunID, int64(q.Limit))
	}
	return list(ctx, t, sActsRunAfter, "activations", q.Limit, scanActivation,
		q.RunID, q.After.NodeID, q.After.ActivationID, int64(q.Limit))
}

// Attempts implements backend.ReadTx.
func (t *readTx) Attempts(ctx context.Context, q backend.AttemptQuery) ([]backend.Attempt, error) {
	if err := t.ready(ctx); err != nil {
		return nil, err
	}
	if q.Limit <= 0 {
		return []backend.Attempt{}, nil
	}
	v := 0
	args := make([]any, 0, 5)
	if q.RunID != "" {
		v |= attRun
		args = append(args, q.RunID)
	}
	if q.Status != "" {
		v |= attStatus
		args = append(args, string(q.Status))
	}
	if q.After != (backend.AttemptCursor{}) {
		v |= attAfter
		args = append(args, q.After.PreparedMS, q.After.Identity)
	}
	args = append(args, int64(q.Limit))
	base := sAttScan
	if q.Descending {
		base = sAttScanDesc
	}
	return list(ctx, t, base+stmtID(v), "attempts", q.Limit, scanAttempt, args...)
}

// CountAttempts implements backend.ReadTx, reading at most q.Limit index
// entries.
func (t *readTx) CountAttempts(ctx context.Context, q backend.AttemptCountQuery) (int, error) {
	if err := t.ready(ctx); err != nil {
		return 0, err
	}
	if q.Limit <= 0 {
		return 0, nil
	}
	s, err := t.stmt(ctx, sCountAttempts)
	if err != nil {
		return 0, err
	}
	var n int64
	if err := s.QueryRowContext(ctx, q.RunID, int64(q.Limit)).Scan(&n); err != nil {
		return 0, t.fail(fmt.Errorf("sqlite: count attempts: %w", err))
	}
	return int(n), nil
}

// ChildRuns implements backend.ReadTx.
func (t *readTx) ChildRuns(ctx context.Context, q backend.ChildRunQuery) ([]backend.RunLink, error) {
	if err := t.ready(ctx); err != nil {
		return nil, err
	}
	if q.Limit <= 0 {
		return []backend.RunLink{}, nil
	}
	if q.After == (backend.ChildRunCursor{}) {
		return list(ctx, t, sChildren, "child runs", q.Limit, scanLink, q.RootRunID, int64(q.Limit))
	}
	return list(ctx, t, sChildrenAfter, "child runs", q.Limit, scanLink,
		q.RootRunID, q.After.CreatedMS, q.After.ChildRunID, int64(q.Limit))
}

// DueSchedules implements backend.ReadTx.
func (t *readTx) DueSchedules(ctx context.Context, q backend.ScheduleQuery) ([]backend.RetrySchedule, error) {
	if err := t.ready(ctx); err != nil {
		return nil, err
	}
	if q.Limit <= 0 {
		return []backend.RetrySchedule{}, nil
	}
	return list(ctx, t, sDue, "due schedules", q.Limit, scanSchedule, q.RunID, q.DueBy, int64(q.Limit))
}

// Events implements backend.ReadTx.
func (t *readTx) Events(ctx context.Context, q backend.EventQuery) ([]backend.Event, error) {
	if err := t.ready(ctx); err != nil {
		return nil, err
	}
	if q.Limit <= 0 {
		return []backend.Event{}, nil
	}
	if q.After == 0 {
		return list(ctx, t, sEvents, "events", q.Limit, scanEvent, q.RunID, int64(q.Limit))
	}
	return list(ctx, t, sEventsAfter, "events", q.Limit, scanEvent, q.RunID, q.After, int64(q.Limit))
}

// Leases implements backend.ReadTx, on the partial index of unreleased
// leases unless q.IncludeReleased.
func (t *readTx) Leases(ctx context.Context, q backend.LeaseQuery) ([]backend.Lease, error) {
	if err := t.ready(ctx); err != nil {
		return nil, err
	}
	if q.Limit <= 0 {
		return []backend.Lease{}, nil
	}
	a := q.After
	first, after := sActiveLeases, sActiveLeasesAfter
	if q.IncludeReleased {
		first, after = sAllLeases, sAllLeasesAfter
	}
	switch {
	case a == (backend.LeaseKey{}) || a.RunID < q.RunID:
		return list(ctx, t, first, "leases", q.Limit, scanLease, q.RunID, int64(q.Limit))
	case a.RunID > q.RunID:
		return []backend.Lease{}, nil
	default:
		return list(ctx, t, after, "leases", q.Limit, scanLease,
			q.RunID, a.NodeID, a.ActivationID, int64(a.Attempt), a.Resource, string(a.Mode), int64(q.Limit))
	}
}

// Runs implements backend.ReadTx.
func (t *readTx) Runs(ctx context.Context, q backend.RunQuery) ([]backend.Run, error) {
	if err := t.ready(ctx); err != nil {
		return nil, err
	}
	if q.Limit <= 0 {
		return []backend.Run{}, nil
	}
	v, args := stmtID(0), make([]any, 0, 3)
	if q.After != "" {
		v |= runsAfter
		args = append(args, q.After)
	}
	if q.Status != "" {
		v |= runsStatus
		args = append(args, string(q.Status))
	}
	return list(ctx, t, sRuns+v, "runs", q.Limit, scanRun, append(args, int64(q.Limit))...)
}
