package backend

import (
	"context"
	"fmt"
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
