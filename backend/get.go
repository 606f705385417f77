package backend

import (
	"context"
	"errors"
	"fmt"
	"reflect"
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
	if !reflect.DeepEqual(stored, want) {
		return fmt.Errorf("expected %s differs from the stored one: %w", kindName(want), ErrChanged)
	}
	return nil
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
