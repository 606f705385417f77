package kvlayout

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
)

// oneRecord is a Store holding one record, whose own calls allocate
// nothing: Apply's allocations are what AllocsPerRun counts over it.
type oneRecord struct {
	space *Space
	key   []byte
	value []byte
}

func (s *oneRecord) Get(_ context.Context, sp *Space, sk []byte) ([]byte, error) {
	if sp == s.space && bytes.Equal(sk, s.key) {
		return s.value, nil
	}
	return nil, nil
}

func (s *oneRecord) Keys(context.Context, *Space, []byte, []byte, int) ([][]byte, error) {
	return nil, nil
}

func (s *oneRecord) Put(sp *Space, sk, value []byte) error {
	if sp == s.space && bytes.Equal(sk, s.key) {
		s.value = value
	}
	return nil
}

func (s *oneRecord) Delete(*Space, []byte) error { return nil }

// An operation builds its keys (its record's primary and stored keys,
// its index entries', the uniqueness check's) in one buffer of its Apply,
// not one allocation each: a Store copies what it keeps of a key.
func TestApplyBuildsStoredKeysInOneBuffer(t *testing.T) {
	l := grouped()
	old := benchAttempt()
	next := old
	next.Status, next.Receipt = backend.AttemptRunning, []byte(`{"receipt":"r-2"}`)
	next.Identity = old.Identity + "-2" // moves the unique identity entry: a uniqueness check
	s := &oneRecord{space: &l.Attempt.Space, key: l.Attempt.Stored(l.Attempt.PK(old)), value: l.Attempt.encode(old)}
	allocs, last := alternateReplaces(t, l, s, next, old)
	// Each Replace moves the status, run status and identity entries
	// (3 deletes, 3 puts) and checks the identity's uniqueness: with its
	// primary key and each stored key allocated, and the unique prefix
	// decoded and encoded again, measured 30; from one buffer, 4 (the
	// value, and per Apply its applier's buffers).
	require.LessOrEqual(t, allocs, 4.0, "allocations per Replace")
	require.Equal(t, l.Attempt.encode(last), s.value, "the last Replace's record is stored")
}

// A run's and an activation's value is encoded into one buffer made big
// enough up front: one allocation, not one per growth.
func TestEncodeAllocatesTheValueOnce(t *testing.T) {
	act := backend.Activation{
		Key:    backend.ActivationKey{RunID: "run-0123456789", NodeID: "node-charge-card", ActivationID: "activation-0001"},
		Status: backend.ActivationPending, Admissible: true, Input: []byte(`{"input":"bench","n":1}`),
		Claims:       []backend.ResourceClaim{{Resource: "card:42", Mode: backend.LeaseWrite}},
		Predecessors: []backend.NodeRef{{NodeID: "node-a", ActivationID: "act-a"}},
		Effect:       backend.Mutating, Reconciliation: backend.RepairRequired,
		RetryPolicy: []byte(`{"max_attempts":3}`), CreatedMS: 1_700_000_000_000, UpdatedMS: 1_700_000_000_000,
		Group: &backend.GroupMember{Controller: backend.ActivationKey{RunID: "run-0123456789", NodeID: "fan", ActivationID: "out"}, Index: 7},
	}
	run := backend.Run{ID: "run-0123456789", RootID: "run-0123456789", Depth: 1, Status: backend.RunRunning,
		Limits:    backend.Limits{NodeExecutionCap: 100_000, ConcurrencyCap: 100_000, CycleCap: 100, RetryCap: 3},
		CreatedMS: 1_700_000_000_000, UpdatedMS: 1_700_000_000_000, LastEventSeq: 1_000_000, AttemptCount: 1_000}
	// Measured before: 7 for the activation, 6 for the run.
	require.Equal(t, 1.0, testing.AllocsPerRun(50, func() { _ = encodeActivation(act) }), "activation")
	require.Equal(t, 1.0, testing.AllocsPerRun(50, func() { _ = encodeRun(run) }), "run")
	// and the value reads back as written
	got, err := decodeActivation(encodeActivation(act))
	require.NoError(t, err)
	require.Equal(t, act, got)
}
