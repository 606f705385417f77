package etcd_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/etcd"
)

// seed writes one attempt, one admissible activation and one unreleased
// lease, so that every kind of index has entries.
func seed(t *testing.T, b *etcd.Backend) {
	t.Helper()
	ak := backend.ActivationKey{RunID: "r", NodeID: "n", ActivationID: "a"}
	tk := backend.AttemptKey{ActivationKey: ak, Attempt: 1}
	require.NoError(t, b.Update(ctxT(t), func(tx backend.Tx) error {
		return tx.Apply(context.Background(), backend.Changes{Insert: backend.Inserts{
			Runs:        []backend.Run{{ID: "r", RootID: "r", Status: backend.RunRunning, CreatedMS: 1}},
			Activations: []backend.Activation{{Key: ak, Status: backend.ActivationPending, Admissible: true, Input: []byte(`{}`), CreatedMS: 1}},
			Attempts: []backend.Attempt{{Key: tk, Identity: "id-1", Status: backend.AttemptAdmitted, Intent: []byte(`{}`), PreparedMS: 5},
				{Key: backend.AttemptKey{ActivationKey: ak, Attempt: 2}, Identity: "id-2", Status: backend.AttemptPrepared, Intent: []byte(`{}`), PreparedMS: 6}},
			Leases: []backend.Lease{{Key: backend.LeaseKey{AttemptKey: tk, Resource: "res", Mode: backend.LeaseWrite}, AcquiredMS: 5}},
		}})
	}))
}

// keysWith returns the stored keys under p whose tag byte is tag.
func keysWith(t *testing.T, p string, tag byte) []string {
	t.Helper()
	resp, err := newClient(t).Get(ctxT(t), p+string([]byte{tag}), withPrefix()...)
	require.NoError(t, err)
	var out []string
	for _, kv := range resp.Kvs {
		out = append(out, string(kv.Key))
	}
	return out
}

func problems(t *testing.T, b *etcd.Backend) []string {
	t.Helper()
	err := b.Verify(ctxT(t))
	if err == nil {
		return nil
	}
	var ve *etcd.VerifyError
	require.True(t, errors.As(err, &ve), "%v", err)
	var out []string
	for _, d := range ve.Discrepancies {
		out = append(out, d.Space+": "+d.Problem)
	}
	return out
}

func TestVerifyAcceptsWhatTheAdapterWrote(t *testing.T) {
	t.Parallel()
	b, _ := openFresh(t)
	seed(t, b)
	assert.Empty(t, problems(t, b))
}

// TestVerifyReportsCorruption damages a store one way at a time and checks
// that Verify names exactly that damage.
func TestVerifyReportsCorruption(t *testing.T) {
	t.Parallel()
	const (
		tagAttempt  = 0x44
		ixPending   = 1
		ixIdentity  = 2
		ixStatus    = 3
		tagActivity = 0x42
	)
	for _, tc := range []struct {
		name    string
		corrupt func(t *testing.T, p string)
		want    []string // substrings, one per discrepancy
	}{
		{"index_entry_missing", func(t *testing.T, p string) {
			del(t, keysWith(t, p, ixPending)[0])
		}, []string{"activation: missing its ix_pending_activation entry"}},
		{"index_entry_without_record", func(t *testing.T, p string) {
			put(t, p+"\x01"+"ghost\x00\x01n\x00\x01a\x00\x01", "")
		}, []string{"ix_pending_activation: names activation", "which does not exist"}},
		{"stale_index_entry", func(t *testing.T, p string) {
			k := keysWith(t, p, ixStatus)[0] // attempt 1, admitted
			del(t, k)
			put(t, strings.Replace(k, "admitted\x00\x01", "running\x00\x01", 1), "")
		}, []string{"attempt: missing its ix_attempt_status entry", "ix_attempt_status: stale"}},
		{"entry_with_a_value", func(t *testing.T, p string) {
			put(t, keysWith(t, p, ixPending)[0], "x")
		}, []string{"ix_pending_activation: entry has a 1-byte value"}},
		{"record_that_does_not_decode", func(t *testing.T, p string) {
			put(t, keysWith(t, p, tagActivity)[0], "garbage")
		}, []string{"activation: value does not decode"}},
		{"duplicate_identity", func(t *testing.T, p string) {
			k := keysWith(t, p, ixIdentity)[1] // id-2's entry, renamed id-1
			del(t, k)
			put(t, strings.Replace(k, "id-2", "id-1", 1), "")
		}, []string{"attempt: missing its ix_attempt_identity entry", "ix_attempt_identity", "is shared by"}},
		{"stray_key", func(t *testing.T, p string) {
			put(t, p+"zzz", "?")
		}, []string{"prefix: key belongs to no record kind"}},
		{"record_under_the_wrong_key", func(t *testing.T, p string) {
			ks := keysWith(t, p, tagAttempt)
			v := get(t, ks[0])
			put(t, ks[1], v)
		}, []string{"attempt: record's key fields give"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, p := openFresh(t)
			seed(t, b)
			require.Empty(t, problems(t, b))
			tc.corrupt(t, p)
			got := problems(t, b)
			require.NotEmpty(t, got, "Verify must notice")
			joined := strings.Join(got, "\n")
			for _, w := range tc.want {
				assert.Contains(t, joined, w)
			}
		})
	}
}

func TestVerifyOnAClosedBackend(t *testing.T) {
	t.Parallel()
	b, _ := openFresh(t)
	require.NoError(t, b.Close())
	assert.ErrorIs(t, b.Verify(ctxT(t)), backend.ErrClosed)
}
