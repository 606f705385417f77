package workflow

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/event"
	"github.com/wfstore/wfstore/workflow/internal/state"
)

// NewRun describes a run to create.
type NewRun struct {
	ID string
	// Limits: unset fields take the defaults (see DefaultRetryCap for every
	// limit, its default and what RetryCap 0 means).
	Limits RunLimits
	// Deadline: attempts prepared at or after it are rejected. Zero = none.
	Deadline time.Time
	// Authority, when set, fences every owned operation on the run.
	Authority *Authority
	// Metadata is optional caller JSON kept with the run.
	Metadata json.RawMessage
}

func normalizeLimits(r RunLimits) (backend.Limits, error) {
	l := backend.Limits{NodeExecutionCap: r.NodeExecutionCap, ConcurrencyCap: r.ConcurrencyCap, CycleCap: r.CycleCap, RetryCap: DefaultRetryCap}
	if l.NodeExecutionCap == 0 {
		l.NodeExecutionCap = DefaultNodeExecutionCap
	}
	if l.ConcurrencyCap == 0 {
		l.ConcurrencyCap = DefaultConcurrencyCap
	}
	if l.CycleCap == 0 {
		l.CycleCap = DefaultCycleCap
	}
	if r.RetryCap != nil {
		l.RetryCap = int64(*r.RetryCap)
	}
	switch {
	case l.NodeExecutionCap < 0:
		return l, invalid("node execution cap", "must be positive")
	case l.ConcurrencyCap < 0:
		return l, invalid("concurrency cap", "must be positive")
	case l.CycleCap < 0:
		return l, invalid("cycle cap", "must be positive")
	}
	return l, nil
}

func optionalJSON(field string, raw json.RawMessage) ([]byte, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	return canonicalJSON(field, raw)
}

func optionalMS(field string, t time.Time) (int64, error) {
	if t.IsZero() {
		return 0, nil
	}
	return toMS(field, t)
}

// CreateRun creates a running root run. It returns created=false, changing
// nothing, when an identical run exists (same limits, deadline, authority
// and metadata), and an ErrConflict error when a different one does.
func (s *Store) CreateRun(ctx context.Context, nr NewRun, now time.Time) (created bool, err error) {
	if err := ValidateID("run id", nr.ID); err != nil {
		return false, err
	}
	limits, err := normalizeLimits(nr.Limits)
	if err != nil {
		return false, err
	}
	if err := validateAuthority(nr.Authority); err != nil {
		return false, err
	}
	meta, err := optionalJSON("run metadata", nr.Metadata)
	if err != nil {
		return false, err
	}
	deadline, err := optionalMS("deadline", nr.Deadline)
	if err != nil {
		return false, err
	}
	at, err := toMS("now", now)
	if err != nil {
		return false, err
	}
	run := backend.Run{
		ID: nr.ID, RootID: nr.ID, Depth: 1, Status: backend.RunRunning, Limits: limits,
		DeadlineMS: deadline, Authority: copyAuthority(nr.Authority), Metadata: meta,
		CreatedMS: at, UpdatedMS: at,
	}
	err = s.update(ctx, func(tx backend.Tx, w *batch) error {
		f, err := tx.Load(ctx, backend.Lookup{Runs: []string{nr.ID}})
		if err != nil {
			return err
		}
		if old, ok := f.Runs[nr.ID]; ok {
			if sameRunDefinition(old, run) {
				return errNoop
			}
			return stateErr(ErrConflict, "run %q exists with different fields", nr.ID)
		}
		created = true
		state.CreateRun(w, run, event.RunCreatedPayload{RunID: run.ID, Limits: state.LimitsPayload(limits)}, at)
		return nil
	})
	if errors.Is(err, errNoop) {
		return false, nil
	}
	return created, err
}

func copyAuthority(a *backend.Authority) *backend.Authority {
	if a == nil {
		return nil
	}
	c := *a
	return &c
}

func sameRunDefinition(a, b backend.Run) bool {
	return a.RootID == b.RootID && a.ParentID == b.ParentID && a.Limits == b.Limits &&
		a.DeadlineMS == b.DeadlineMS && bytes.Equal(a.Metadata, b.Metadata) &&
		(a.ParentID != "" || sameAuthority(a.Authority, b.Authority))
}

// GetRun returns the run.
func (s *Store) GetRun(ctx context.Context, runID string) (Run, error) {
	if err := ValidateID("run id", runID); err != nil {
		return Run{}, err
	}
	var out backend.Run
	err := s.view(ctx, func(r backend.ReadTx) error {
		run, err := backend.GetRun(ctx, r, runID)
		out = run
		return notFoundFrom(err, "run %q", runID)
	})
	if err != nil {
		return Run{}, err
	}
	return toRun(out), nil
}

// PauseRun moves a running run to paused: no attempt is admitted or handed
// off until ResumeRun. Pausing a paused run is a no-op. authority, when set, must
// be the run's current authority.
func (s *Store) PauseRun(ctx context.Context, runID string, authority *Authority, now time.Time) error {
	auth := copyAuthority(authority)
	return s.setRunGate(ctx, runID, auth, now, true)
}

// ResumeRun moves a paused run back to running. Resuming a running run is a
// no-op; a run with cancellation requested cannot resume (ErrIneligible).
func (s *Store) ResumeRun(ctx context.Context, runID string, authority *Authority, now time.Time) error {
	auth := copyAuthority(authority)
	return s.setRunGate(ctx, runID, auth, now, false)
}

func (s *Store) setRunGate(ctx context.Context, runID string, auth *backend.Authority, now time.Time, pause bool) error {
	at, err := runCallArgs(runID, auth, now)
	if err != nil {
		return err
	}
	err = s.update(ctx, func(tx backend.Tx, w *batch) error {
		run, err := backend.GetRun(ctx, tx, runID)
		if err != nil {
			return notFoundFrom(err, "run %q", runID)
		}
		if err := ownedBy(auth, "run gate").verify(run); err != nil {
			return err
		}
		if err := state.GateRun(w, &run, pause, at); err != nil {
			return err
		}
		if err := reindexRun(ctx, tx, w, run); err != nil {
			return err
		}
		state.Replace(w, run)
		if !pause {
			w.WorkArrives() // its pending activations are admissible again
		}
		return nil
	})
	if errors.Is(err, errNoop) {
		return nil
	}
	return err
}
