package bolt

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
)

// openTemp opens a store with relaxed durability in a fresh temp file,
// closed at cleanup.
func openTemp(t testing.TB, opts ...Option) *Backend {
	t.Helper()
	path := filepath.Join(t.TempDir(), "wfstore.db")
	b, err := Open(context.Background(), path, append([]Option{WithRelaxedDurability()}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// apply commits c in one Update.
func apply(t testing.TB, b *Backend, c backend.Changes) {
	t.Helper()
	require.NoError(t, b.Update(context.Background(), func(tx backend.Tx) error {
		return tx.Apply(context.Background(), c)
	}))
}

// applyErr returns the error of applying c in one Update.
func applyErr(b *Backend, c backend.Changes) error {
	return b.Update(context.Background(), func(tx backend.Tx) error {
		return tx.Apply(context.Background(), c)
	})
}

// insertRuns is the Changes that inserts runs.
func insertRuns(runs ...backend.Run) backend.Changes {
	return backend.Changes{Insert: backend.Inserts{Runs: runs}}
}

// replaceRuns is the Changes that replaces runs.
func replaceRuns(runs ...backend.Run) backend.Changes {
	return backend.Changes{Replace: backend.Replaces{Runs: runs}}
}

// view runs fn in a View and fails the test on error.
func view(t testing.TB, b *Backend, fn func(ctx context.Context, r backend.ReadTx)) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, b.View(ctx, func(r backend.ReadTx) error {
		fn(ctx, r)
		return nil
	}))
}

func actKey(run, node, act string) backend.ActivationKey {
	return backend.ActivationKey{RunID: run, NodeID: node, ActivationID: act}
}

func attKey(run, node, act string, n uint32) backend.AttemptKey {
	return backend.AttemptKey{ActivationKey: actKey(run, node, act), Attempt: n}
}

func activation(k backend.ActivationKey, admissible bool) backend.Activation {
	return backend.Activation{
		Key: k, Generation: 1, Status: backend.ActivationPending, Admissible: admissible,
		Input: []byte(`{}`), Effect: backend.Mutating, Reconciliation: backend.RepairRequired,
		CreatedMS: 1000, UpdatedMS: 1000,
	}
}

func attempt(k backend.AttemptKey, identity string, status backend.AttemptStatus, preparedMS int64) backend.Attempt {
	return backend.Attempt{
		Key: k, Identity: identity, Status: status, SideEffect: backend.Mutating,
		Intent: []byte(`{"op":"x"}`), IntentChecksum: "sum", Handoff: backend.HandoffPending,
		PreparedMS: preparedMS,
	}
}

func lease(k backend.AttemptKey, resource string, mode backend.LeaseMode, released int64) backend.Lease {
	return backend.Lease{Key: backend.LeaseKey{AttemptKey: k, Resource: resource, Mode: mode}, AcquiredMS: 10, ReleasedMS: released}
}

func schedule(k backend.ActivationKey, due int64) backend.RetrySchedule {
	return backend.RetrySchedule{Key: k, FailedAttempt: 1, NextAttempt: 2, FailureKind: "transient", BackoffMS: 5, DueMS: due, ScheduledMS: 1}
}

func link(child, root string, created int64) backend.RunLink {
	return backend.RunLink{ChildRunID: child, RootRunID: root, Parent: attKey(root, "n", "a", 1), Target: []byte(`{}`), Depth: 2, CreatedMS: created}
}

// awkwardIDs sort bytewise in this order and include the codec's escape
// and terminator bytes, mixed case and non-ASCII.
var awkwardIDs = []string{
	"\x00", "\x00\x00", "\x00\x01", "\x00\xff", "\x01", "A", "B", "Z", "a", "a\x00", "a\x00\x01", "a\x01", "aa", "b", "z", "\x7f", "é", "ö", "\xff",
}
