package backend

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
)

// GetRun loads one run; ErrNotFound when it does not exist.
func GetRun(ctx context.Context, r ReadTx, id string) (Run, error) {
	f, err := r.Load(ctx, Lookup{Runs: []string{id}})
	if err != nil {
		return Run{}, err
	}
	v, ok := f.Runs[id]
	if !ok {
		return Run{}, fmt.Errorf("run %q: %w", id, ErrNotFound)
	}
	return v, nil
}

// GetActivation loads one activation; ErrNotFound when it does not exist.
func GetActivation(ctx context.Context, r ReadTx, k ActivationKey) (Activation, error) {
	f, err := r.Load(ctx, Lookup{Activations: []ActivationKey{k}})
	if err != nil {
		return Activation{}, err
	}
	v, ok := f.Activations[k]
	if !ok {
		return Activation{}, fmt.Errorf("activation %v: %w", k, ErrNotFound)
	}
	return v, nil
}

// GetAttempt loads one attempt by key; ErrNotFound when it does not exist.
func GetAttempt(ctx context.Context, r ReadTx, k AttemptKey) (Attempt, error) {
	f, err := r.Load(ctx, Lookup{Attempts: []AttemptKey{k}})
	if err != nil {
		return Attempt{}, err
	}
	v, ok := f.Attempts[k]
	if !ok {
		return Attempt{}, fmt.Errorf("attempt %v: %w", k, ErrNotFound)
	}
	return v, nil
}

// GetAttemptByIdentity loads one attempt by dispatch identity; ErrNotFound
// when none has it.
func GetAttemptByIdentity(ctx context.Context, r ReadTx, identity string) (Attempt, error) {
	f, err := r.Load(ctx, Lookup{Identities: []string{identity}})
	if err != nil {
		return Attempt{}, err
	}
	v, ok := f.Identities[identity]
	if !ok {
		return Attempt{}, fmt.Errorf("attempt with identity %q: %w", identity, ErrNotFound)
	}
	return v, nil
}

// Expectable is the record kinds Expect accepts.
type Expectable interface {
	Run | Activation | Attempt
}

// CheckExpected implements Expect for an adapter that reads cheaply inside
// its transactions: it loads the record with want's key through r and
// compares every field (reflect.DeepEqual: nil and empty slices differ, so
// an adapter must return them as they were written, as the contract
// requires anyway). It returns an error wrapping ErrChanged when the
// record is missing or differs.
func CheckExpected[R Expectable](ctx context.Context, r ReadTx, want R) error {
	var stored any
	var err error
	switch v := any(want).(type) {
	case Run:
		stored, err = GetRun(ctx, r, v.ID)
	case Activation:
		stored, err = GetActivation(ctx, r, v.Key)
	case Attempt:
		stored, err = GetAttempt(ctx, r, v.Key)
	}
	switch {
	case errors.Is(err, ErrNotFound):
		return fmt.Errorf("expected %s is missing: %w", kindName(want), ErrChanged)
	case err != nil:
		return err
	}
	return CompareExpected(stored.(R), want)
}

// CompareExpected is Expect's comparison, for an adapter that knows the
// stored value of want's row without reading it: nil when stored equals
// want in every field (reflect.DeepEqual), an error wrapping ErrChanged
// otherwise.
func CompareExpected[R Expectable](stored, want R) error {
	if !deepEqual(&stored, &want) {
		return fmt.Errorf("expected %s differs from the stored one: %w", kindName(want), ErrChanged)
	}
	return nil
}

// deepEqual is reflect.DeepEqual(*a, *b) for the Expectable kinds,
// written out field by field (no boxing, no reflection): byte slices and
// slices are equal when both are nil or both are not and their elements
// are, pointers when both are nil or their targets are equal.
func deepEqual[R Expectable](a, b *R) bool {
	switch x := any(a).(type) {
	case *Run:
		return equalRun(x, any(b).(*Run))
	case *Activation:
		return equalActivation(x, any(b).(*Activation))
	case *Attempt:
		return equalAttempt(x, any(b).(*Attempt))
	}
	return reflect.DeepEqual(*a, *b)
}

func sameBytes(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

func sameSlice[T comparable](a, b []T) bool { return (a == nil) == (b == nil) && slices.Equal(a, b) }

func samePtr[T comparable](a, b *T) bool { return a == b || (a != nil && b != nil && *a == *b) }

func equalRun(a, b *Run) bool {
	return a.ID == b.ID && a.RootID == b.RootID && a.ParentID == b.ParentID && a.Depth == b.Depth &&
		a.Status == b.Status && a.Limits == b.Limits && a.DeadlineMS == b.DeadlineMS &&
		a.CancelRequestedMS == b.CancelRequestedMS && samePtr(a.Authority, b.Authority) &&
		sameBytes(a.Metadata, b.Metadata) && a.CreatedMS == b.CreatedMS && a.UpdatedMS == b.UpdatedMS &&
		a.LastEventSeq == b.LastEventSeq && a.AttemptCount == b.AttemptCount && a.ActiveCount == b.ActiveCount &&
		a.TreeAttemptCount == b.TreeAttemptCount && a.DescendantCount == b.DescendantCount &&
		a.ExhaustionRecorded == b.ExhaustionRecorded
}

func equalActivation(a, b *Activation) bool {
	return a.Key == b.Key && a.Generation == b.Generation && a.Status == b.Status && a.Admissible == b.Admissible &&
		sameBytes(a.Input, b.Input) && sameBytes(a.Output, b.Output) && sameSlice(a.Claims, b.Claims) &&
		a.Effect == b.Effect && a.Reconciliation == b.Reconciliation && sameBytes(a.RetryPolicy, b.RetryPolicy) &&
		sameSlice(a.Predecessors, b.Predecessors) && a.HasSuccessors == b.HasSuccessors && samePtr(a.Group, b.Group) &&
		a.LastAttempt == b.LastAttempt && a.CreatedMS == b.CreatedMS && a.UpdatedMS == b.UpdatedMS &&
		a.AttemptTimeoutMS == b.AttemptTimeoutMS && sameSlice(a.WaitFor, b.WaitFor) && a.OpenWaits == b.OpenWaits &&
		sameSlice(a.Joins, b.Joins)
}

func equalAttempt(a, b *Attempt) bool {
	return a.Key == b.Key && a.Identity == b.Identity && a.Status == b.Status && a.SideEffect == b.SideEffect &&
		sameBytes(a.Intent, b.Intent) && a.IntentChecksum == b.IntentChecksum && sameBytes(a.Receipt, b.Receipt) &&
		a.Handoff == b.Handoff && sameBytes(a.Detail, b.Detail) && a.PreparedMS == b.PreparedMS &&
		a.AdmittedMS == b.AdmittedMS && a.TerminalMS == b.TerminalMS && a.HandoffToken == b.HandoffToken
}

func kindName(v any) string {
	switch v.(type) {
	case Run:
		return "run"
	case Activation:
		return "activation"
	case Attempt:
		return "attempt"
	}
	return fmt.Sprintf("%T", v)
}
