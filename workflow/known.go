package workflow

import (
	"context"
	"errors"

	"github.com/wfstore/wfstore/backend"
)

// known holds the records one admission step committed for its attempt,
// exactly as it wrote them, so that the next step of the same admission
// (handoff after prepare, receipt after handoff) can decide on them without
// reading them again. The next step's transaction expects them unchanged
// (backend.Expect) before anything else: if they are, its decision is the
// one it would have made reading them; if another transaction changed any
// of them, the Backend reports ErrChanged and the step reads and decides
// again. Either way the decision is made by the same code. On Postgres this
// saves the read round trip of the handoff and the receipt transactions.
type known struct {
	run backend.Run
	act backend.Activation
	att backend.Attempt
}

// expected returns every known record, for an Expect.
func (k known) expected() backend.Expected {
	return backend.Expected{
		Runs:        []backend.Run{k.run},
		Activations: []backend.Activation{k.act},
		Attempts:    []backend.Attempt{k.att},
	}
}

// errReread makes a step decided on known records read them instead.
var errReread = errors.New("workflow: decide again on records read now")

// decideKnown runs decide in one Update that first expects records (known
// ones) unchanged, and reports whether it settled the step: false (with a nil
// error) when the records changed or decide refused them, so that the
// caller reads them and decides again. A step whose decision on known
// records fails or writes nothing is always decided again on read records,
// so that every refusal is made on the state as it is.
func (s *Store) decideKnown(ctx context.Context, exp backend.Expected, decide func(tx backend.Tx, w *batch) error) (bool, error) {
	err := s.update(ctx, func(tx backend.Tx, w *batch) error {
		if err := tx.Apply(ctx, backend.Changes{Expect: exp}); err != nil {
			return err
		}
		if err := decide(tx, w); err != nil || w.Empty() {
			return errReread
		}
		return nil
	})
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, errReread), errors.Is(err, backend.ErrChanged):
		return false, nil
	}
	return false, err
}
