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

// Ins returns an Insert write for rec.
func Ins(rec Record) Write { return Write{Op: Insert, Record: rec} }

// Rep returns a Replace write for rec.
func Rep(rec Record) Write { return Write{Op: Replace, Record: rec} }

// Del returns a Delete write for rec (only its key fields matter).
func Del(rec Record) Write { return Write{Op: Delete, Record: rec} }

// Exp returns an Expect write for rec.
func Exp(rec Record) Write { return Write{Op: Expect, Record: rec} }

// CheckExpected implements Expect for an adapter that reads cheaply inside
// its transactions: it loads the record with rec's key through r and
// compares every field (reflect.DeepEqual: nil and empty slices differ, so
// an adapter must return them as they were written, as the contract
// requires anyway). It returns an error wrapping ErrChanged when the
// record is missing or differs, ErrUnsupported for a kind Expect does not
// accept.
func CheckExpected(ctx context.Context, r ReadTx, rec Record) error {
	var stored Record
	var err error
	switch v := rec.(type) {
	case Run:
		stored, err = GetRun(ctx, r, v.ID)
	case Activation:
		stored, err = GetActivation(ctx, r, v.Key)
	case Attempt:
		stored, err = GetAttempt(ctx, r, v.Key)
	default:
		return fmt.Errorf("expect of a %T: %w", rec, ErrUnsupported)
	}
	switch {
	case errors.Is(err, ErrNotFound):
		return fmt.Errorf("expected %s is missing: %w", rec.Kind(), ErrChanged)
	case err != nil:
		return err
	}
	return CompareExpected(stored, rec)
}

// CompareExpected is Expect's comparison, for an adapter that knows the
// stored value of rec's row without reading it: nil when stored equals rec
// in every field (reflect.DeepEqual), an error wrapping ErrChanged
// otherwise.
func CompareExpected(stored, rec Record) error {
	if !reflect.DeepEqual(stored, rec) {
		return fmt.Errorf("expected %s differs from the stored one: %w", rec.Kind(), ErrChanged)
	}
	return nil
}
