package etcd_test

import (
	"context"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/etcd"
)

// A version 1 store, whose activation and attempt values end before the
// attempt timeout and the handoff token, is migrated by Open (only its
// version key changes): the records read back with no timeout set and no
// token, an Expect of them passes, and a Replace stores both fields.
func TestVersionOneStoreMigratesToTheAttemptTimeoutAndHandoffToken(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	b, p := openFresh(t)
	key := backend.ActivationKey{RunID: "r", NodeID: "n", ActivationID: "a"}
	act := backend.Activation{Key: key, Generation: 2, Status: backend.ActivationRunning, Input: []byte(`{"i":1}`),
		Effect: backend.Mutating, Reconciliation: backend.ReceiptStatus, LastAttempt: 1, CreatedMS: 5, UpdatedMS: 6}
	att := backend.Attempt{Key: backend.AttemptKey{ActivationKey: key, Attempt: 1}, Identity: "ident-1",
		Status: backend.AttemptAdmitted, SideEffect: backend.Mutating, Intent: []byte(`{}`), IntentChecksum: "sum",
		Handoff: backend.HandoffRecorded, PreparedMS: 7, AdmittedMS: 8}
	require.NoError(t, b.Update(ctx, func(tx backend.Tx) error {
		return tx.Apply(ctx, backend.Changes{Insert: backend.Inserts{
			Runs:        []backend.Run{{ID: "r", RootID: "r", Depth: 1, Status: backend.RunRunning}},
			Activations: []backend.Activation{act}, Attempts: []backend.Attempt{att}}})
	}))
	require.NoError(t, b.Close())

	// Make the store what version 1 wrote: each value shorter by the
	// fields appended since (a zero timeout and an empty token are one
	// byte each, and so is each of the activation's three empty join
	// fields), version 1.
	cli := newClient(t)
	resp, err := cli.Get(ctx, p, withPrefix()...)
	require.NoError(t, err)
	cut := 0
	for _, kv := range resp.Kvs {
		switch kv.Key[len(p)] {
		case 0x42: // activation
			put(t, string(kv.Key), string(kv.Value[:len(kv.Value)-4]))
			cut++
		case 0x44: // attempt
			put(t, string(kv.Key), string(kv.Value[:len(kv.Value)-1]))
			cut++
		}
	}
	require.Equal(t, 2, cut)
	put(t, p+"mversion", string(binary.BigEndian.AppendUint64(nil, 1)))

	b, err = openLocator(ctx, locator(p))
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	require.Equal(t, uint64(etcd.SchemaVersion), binary.BigEndian.Uint64([]byte(get(t, p+"mversion"))))
	load := func() backend.Found {
		var f backend.Found
		require.NoError(t, b.View(ctx, func(r backend.ReadTx) (err error) {
			f, err = r.Load(context.Background(), backend.Lookup{Activations: []backend.ActivationKey{key},
				Attempts: []backend.AttemptKey{att.Key}, Identities: []string{att.Identity}})
			return err
		}))
		return f
	}
	f := load()
	require.Equal(t, act, f.Activations[key], "a version 1 activation reads with no attempt timeout")
	require.Equal(t, att, f.Attempts[att.Key], "a version 1 attempt reads with no handoff token")
	require.Equal(t, att, f.Identities[att.Identity])

	act2, att2 := act, att
	act2.AttemptTimeoutMS, att2.HandoffToken = 45_000, "ffeeddccbbaa99887766554433221100"
	require.NoError(t, b.Update(ctx, func(tx backend.Tx) error {
		return tx.Apply(ctx, backend.Changes{
			Expect:  backend.Expected{Activations: []backend.Activation{act}, Attempts: []backend.Attempt{att}},
			Replace: backend.Replaces{Activations: []backend.Activation{act2}, Attempts: []backend.Attempt{att2}},
		})
	}))
	f = load()
	require.Equal(t, act2, f.Activations[key])
	require.Equal(t, att2, f.Attempts[att.Key])
	require.NoError(t, b.Verify(ctx))
}

// A version 2 store, whose activation and group values end before the
// join fields and FanIn, is migrated by Open (only its version key
// changes): the records read back as no join, awaited by none, and owner
// settlement, an Expect of them passes, and a Replace stores the fields.
func TestVersionTwoStoreMigratesToJoinsAndFanIn(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	b, p := openFresh(t)
	key := backend.ActivationKey{RunID: "r", NodeID: "n", ActivationID: "a"}
	act := backend.Activation{Key: key, Status: backend.ActivationPending, Input: []byte(`{"i":1}`),
		Effect: backend.ReadOnly, Reconciliation: backend.RepairRequired, CreatedMS: 5, UpdatedMS: 6, AttemptTimeoutMS: 9}
	grp := backend.FanOutGroup{Controller: key, Size: 2, MaxConcurrency: 1, CreatedMS: 5, FailFast: true}
	require.NoError(t, b.Update(ctx, func(tx backend.Tx) error {
		return tx.Apply(ctx, backend.Changes{Insert: backend.Inserts{
			Runs:        []backend.Run{{ID: "r", RootID: "r", Depth: 1, Status: backend.RunRunning}},
			Activations: []backend.Activation{act}, Groups: []backend.FanOutGroup{grp}}})
	}))
	require.NoError(t, b.Close())

	// Make the store what version 2 wrote: the activation three bytes
	// shorter (nil WaitFor, 0 OpenWaits, nil Joins), the group one (FanIn).
	cli := newClient(t)
	resp, err := cli.Get(ctx, p, withPrefix()...)
	require.NoError(t, err)
	cut := 0
	for _, kv := range resp.Kvs {
		var n int
		switch kv.Key[len(p)] {
		case 0x42: // activation
			n = 3
		case 0x43: // group
			n = 1
		default:
			continue
		}
		put(t, string(kv.Key), string(kv.Value[:len(kv.Value)-n]))
		cut++
	}
	require.Equal(t, 2, cut)
	put(t, p+"mversion", string(binary.BigEndian.AppendUint64(nil, 2)))

	b, err = openLocator(ctx, locator(p))
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	require.Equal(t, uint64(etcd.SchemaVersion), binary.BigEndian.Uint64([]byte(get(t, p+"mversion"))))
	load := func() backend.Found {
		var f backend.Found
		require.NoError(t, b.View(ctx, func(r backend.ReadTx) (err error) {
			f, err = r.Load(context.Background(), backend.Lookup{Activations: []backend.ActivationKey{key}, Groups: []backend.ActivationKey{key}})
			return err
		}))
		return f
	}
	f := load()
	require.Equal(t, act, f.Activations[key])
	require.Equal(t, grp, f.Groups[key])

	act2, grp2 := act, grp
	act2.Status, act2.WaitFor, act2.OpenWaits = backend.ActivationWaiting, []backend.NodeRef{{NodeID: "p", ActivationID: "1"}}, 1
	act2.Joins, grp2.FanIn = []backend.NodeRef{{NodeID: "j", ActivationID: "2"}}, true
	require.NoError(t, b.Update(ctx, func(tx backend.Tx) error {
		return tx.Apply(ctx, backend.Changes{
			Expect:  backend.Expected{Activations: []backend.Activation{act}},
			Replace: backend.Replaces{Activations: []backend.Activation{act2}, Groups: []backend.FanOutGroup{grp2}},
		})
	}))
	f = load()
	require.Equal(t, act2, f.Activations[key])
	require.Equal(t, grp2, f.Groups[key])
	require.NoError(t, b.Verify(ctx))
}
