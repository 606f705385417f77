package sqlite

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/wfstore/wfstore/backend"
)

// newPath returns a fresh file path in the test's temp dir.
func newPath(t testing.TB) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "store.db")
}

// openAt opens a Backend at path with relaxed durability and opts, and
// closes it at cleanup.
func openAt(t testing.TB, path string, opts ...Option) *Backend {
	t.Helper()
	b, err := Open(context.Background(), path, append([]Option{WithRelaxedDurability()}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func newStore(t testing.TB, opts ...Option) *Backend {
	t.Helper()
	return openAt(t, newPath(t), opts...)
}

func update(t testing.TB, b *Backend, c backend.Changes) {
	t.Helper()
	require.NoError(t, b.Update(context.Background(), func(tx backend.Tx) error {
		return tx.Apply(context.Background(), c)
	}))
}

// Shorthands for Changes of one operation on one kind.
func insertRuns(runs ...backend.Run) backend.Changes {
	return backend.Changes{Insert: backend.Inserts{Runs: runs}}
}

func replaceRuns(runs ...backend.Run) backend.Changes {
	return backend.Changes{Replace: backend.Replaces{Runs: runs}}
}

func expectRuns(runs ...backend.Run) backend.Changes {
	return backend.Changes{Expect: backend.Expected{Runs: runs}}
}

func insertAttempts(atts ...backend.Attempt) backend.Changes {
	return backend.Changes{Insert: backend.Inserts{Attempts: atts}}
}

func replaceAttempts(atts ...backend.Attempt) backend.Changes {
	return backend.Changes{Replace: backend.Replaces{Attempts: atts}}
}

func expectAttempts(atts ...backend.Attempt) backend.Changes {
	return backend.Changes{Expect: backend.Expected{Attempts: atts}}
}

func view(t testing.TB, b *Backend, fn func(r backend.ReadTx)) {
	t.Helper()
	require.NoError(t, b.View(context.Background(), func(r backend.ReadTx) error {
		fn(r)
		return nil
	}))
}

// ids used across tests: unicode, maximal length, mixed case.
var (
	uniID  = "rün-日本語-🚀"
	longID = strings.Repeat("é", 256) // 512 bytes
)

func bigJSON(n int) []byte {
	b := make([]byte, 0, n)
	b = append(b, `{"k":"`...)
	for len(b) < n-2 {
		b = append(b, 'x')
	}
	return append(b, `"}`...)
}

func akey(run, node, act string) backend.ActivationKey {
	return backend.ActivationKey{RunID: run, NodeID: node, ActivationID: act}
}

func activation(k backend.ActivationKey, admissible bool) backend.Activation {
	return backend.Activation{
		Key: k, Status: backend.ActivationPending, Admissible: admissible,
		Input: []byte(`{}`), Effect: backend.ReadOnly, Reconciliation: backend.IdempotentReplay,
		CreatedMS: 1, UpdatedMS: 1,
	}
}

func attempt(k backend.ActivationKey, n uint32, identity string, status backend.AttemptStatus, prepared int64) backend.Attempt {
	return backend.Attempt{
		Key: backend.AttemptKey{ActivationKey: k, Attempt: n}, Identity: identity, Status: status,
		SideEffect: backend.Mutating, Intent: []byte(`{"i":1}`), IntentChecksum: "sum",
		Handoff: backend.HandoffPending, PreparedMS: prepared,
	}
}
