package workflow

import (
	"context"
	"time"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/workflow/internal/state"
)

// authorityCheck is what a transaction requires of a run's authority.
//   - owned: the current authority must be present and equal to want;
//   - snapshot: the current authority must equal want, nil included (the
//     unowned entry points snapshot it before planning);
//   - none: no check.
type authorityCheck struct {
	mode authMode
	want *backend.Authority
	what string // operation named in the error
}

type authMode uint8

const (
	authNone authMode = iota
	authSnapshot
	authOwned
)

func ownedBy(a *backend.Authority, what string) authorityCheck {
	if a == nil {
		return authorityCheck{mode: authNone, what: what}
	}
	return authorityCheck{mode: authOwned, want: a, what: what}
}

func (c authorityCheck) with(what string) authorityCheck { c.what = what; return c }

func sameAuthority(a, b *backend.Authority) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return equalAuthority(*a, *b)
}

// equalAuthority reports whether a and b are the same authority: equal in
// every field (target artifact, daemon instance, generation and fencing
// token), never in some of them only.
func equalAuthority(a, b backend.Authority) bool {
	return a == b
}

func (c authorityCheck) verify(run backend.Run) error {
	switch c.mode {
	case authSnapshot:
		if !sameAuthority(run.Authority, c.want) {
			return stateErr(ErrStaleAuthority, "%s execution authority changed: run %q", c.what, run.ID)
		}
	case authOwned:
		if run.Authority == nil {
			return stateErr(ErrStaleAuthority, "workflow run has no durable execution authority: %s", run.ID)
		}
		if !equalAuthority(*run.Authority, *c.want) {
			return stateErr(ErrStaleAuthority, "workflow execution authority is stale or foreign: %s", run.ID)
		}
	}
	return nil
}

// runCallArgs validates the arguments most run-level calls share: the run
// id, an optional authority and now, returned as stored milliseconds.
func runCallArgs(runID string, auth *backend.Authority, now time.Time) (int64, error) {
	if err := ValidateID("run id", runID); err != nil {
		return 0, err
	}
	if err := validateAuthority(auth); err != nil {
		return 0, err
	}
	return toMS("now", now)
}

func validateAuthority(a *backend.Authority) error {
	if a == nil {
		return nil
	}
	for _, f := range []struct{ name, v string }{
		{"authority target artifact id", a.TargetArtifactID},
		{"authority daemon instance id", a.DaemonInstanceID},
		{"authority fencing token", a.FencingToken},
	} {
		if err := ValidateID(f.name, f.v); err != nil {
			return err
		}
	}
	if a.Generation <= 0 {
		return invalid("authority generation", "must be positive")
	}
	return nil
}

// Authority returns the run's execution authority, nil when it has none.
func (s *Store) Authority(ctx context.Context, runID string) (*Authority, error) {
	if err := ValidateID("run id", runID); err != nil {
		return nil, err
	}
	var out *Authority
	err := s.view(ctx, func(r backend.ReadTx) error {
		run, err := backend.GetRun(ctx, r, runID)
		if err != nil {
			return notFoundFrom(err, "run %q", runID)
		}
		out = copyAuthority(run.Authority)
		return nil
	})
	return out, err
}

// VerifyAuthority returns nil when a is exactly the run's current
// authority, and an error matching ErrStaleAuthority otherwise (also when
// the run has none or does not exist).
func (s *Store) VerifyAuthority(ctx context.Context, runID string, authority Authority) error {
	a := backend.Authority(authority)
	if err := ValidateID("run id", runID); err != nil {
		return err
	}
	if err := validateAuthority(&a); err != nil {
		return err
	}
	return s.view(ctx, func(r backend.ReadTx) error {
		run, err := backend.GetRun(ctx, r, runID)
		if err != nil {
			if isNotFound(err) {
				return stateErr(ErrStaleAuthority, "workflow run has no durable execution authority: %s", runID)
			}
			return err
		}
		return ownedBy(&a, "verify").verify(run)
	})
}

// AuthorityTransfer asks TransferAuthority to replace RunID's authority
// Expected by Replacement.
type AuthorityTransfer struct {
	RunID       string
	Expected    Authority
	Replacement Authority
}

// TransferAuthority replaces the run's authority by compare-and-swap: the
// current value must equal t.Expected, and t.Replacement must keep the
// target artifact, have generation Expected.Generation+1, and change both the
// daemon instance id and the fencing token. The caller supplies the whole
// replacement; nothing is generated here. The run must be running, paused
// or repair_required. A replayed or lost transfer fails with
// ErrStaleAuthority and changes nothing.
func (s *Store) TransferAuthority(ctx context.Context, t AuthorityTransfer, now time.Time) error {
	runID, expected, replacement := t.RunID, backend.Authority(t.Expected), backend.Authority(t.Replacement)
	if err := ValidateID("run id", runID); err != nil {
		return err
	}
	if err := validateAuthority(&expected); err != nil {
		return err
	}
	if err := validateAuthority(&replacement); err != nil {
		return err
	}
	at, err := toMS("now", now)
	if err != nil {
		return err
	}
	switch {
	case replacement.TargetArtifactID != expected.TargetArtifactID:
		return invalid("replacement authority", "must keep the target artifact")
	case replacement.Generation != expected.Generation+1:
		return invalid("replacement authority", "generation must be expected generation + 1")
	case replacement.DaemonInstanceID == expected.DaemonInstanceID:
		return invalid("replacement authority", "must change the daemon instance id")
	case replacement.FencingToken == expected.FencingToken:
		return invalid("replacement authority", "must change the fencing token")
	}
	return s.update(ctx, func(tx backend.Tx, w *batch) error {
		run, err := backend.GetRun(ctx, tx, runID)
		if err != nil {
			return notFoundFrom(err, "run %q", runID)
		}
		if err := ownedBy(&expected, "transfer").verify(run); err != nil {
			return stateErr(ErrStaleAuthority, "execution authority transfer lost its ownership race: %s", runID)
		}
		if err := state.TransferAuthority(w, &run, expected.Generation, replacement, at); err != nil {
			return err
		}
		state.Replace(w, run)
		return nil
	})
}
