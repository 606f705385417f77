package kvlayout

import (
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/wfstore/wfstore/backend"
)

// roundTrips checks that every record of R that rapid draws decodes from
// its encoding as itself, nil and empty slices included, and that the
// encoding is a function of the record (equal records, equal bytes).
func roundTrips[K comparable, R any](t *testing.T, tb *Table[K, R]) {
	t.Run(tb.Name, func(t *testing.T) {
		t.Parallel()
		rapid.Check(t, func(t *rapid.T) {
			rec := rapid.Make[R]().Draw(t, "record")
			v := tb.Encode(rec)
			got, err := tb.Decode(v)
			require.NoError(t, err)
			require.Equal(t, rec, got)
			require.Equal(t, v, tb.Encode(got))
			require.Equal(t, []byte(tb.PK(rec)), []byte(tb.PK(got)))
		})
	})
}

func TestValueRoundTripEveryKind(t *testing.T) {
	t.Parallel()
	l := New(Config{Name: "test"})
	roundTrips(t, l.Run)
	roundTrips(t, l.Link)
	roundTrips(t, l.Activation)
	roundTrips(t, l.FanOutGroup)
	roundTrips(t, l.Attempt)
	roundTrips(t, l.Lease)
	roundTrips(t, l.Schedule)
	roundTrips(t, l.Event)
}

// Every value decodes only as its own kind, and damage is an error that
// names the layout. (A value cut exactly before the fields a later version
// appended is a value of the earlier layout, so the truncated attempt here
// has a handoff token for the cut to land in.)
func TestValueDecodeRejectsDamage(t *testing.T) {
	t.Parallel()
	l := New(Config{Name: "test"})
	att := backend.Attempt{Key: backend.AttemptKey{ActivationKey: backend.ActivationKey{RunID: "r", NodeID: "n", ActivationID: "a"}, Attempt: 1},
		Identity: "i", Intent: []byte(`{}`), HandoffToken: "0f1e2d3c4b5a69788796a5b4c3d2e1f0"}
	act := backend.Activation{Key: att.Key.ActivationKey, Input: []byte(`{}`), Claims: []backend.ResourceClaim{{Resource: "x"}}}
	v := l.Attempt.Encode(att)
	_, err := l.Activation.Decode(v)
	require.ErrorIs(t, err, ErrMalformedValue)
	require.EqualError(t, err, "test: malformed record value: kind tag is not 0x03")
	_, err = l.Attempt.Decode(v[:len(v)-1])
	require.ErrorIs(t, err, ErrMalformedValue)
	_, err = l.Attempt.Decode(append(v, 0))
	require.ErrorIs(t, err, ErrMalformedValue)
	got, err := l.Activation.Decode(l.Activation.Encode(act))
	require.NoError(t, err)
	require.Equal(t, act, got)
}

func TestGroupWrittenBeforeTheFanOutPolicyDecodesAsWaitAll(t *testing.T) {
	t.Parallel()
	g := backend.FanOutGroup{
		Controller: backend.ActivationKey{RunID: "r", NodeID: "ctl", ActivationID: "c"},
		Size:       3, MaxConcurrency: 2, Promoted: 2, Settled: 1, RetiredMS: 5, CreatedMS: 4,
	}
	old := encodeGroup(g)
	old = old[:len(old)-2] // the earlier layout ended at CreatedMS (FailFast and FanIn are a byte each)
	got, err := decodeGroup(old)
	require.NoError(t, err)
	require.Equal(t, g, got)
	g.FailFast = true
	got, err = decodeGroup(encodeGroup(g))
	require.NoError(t, err)
	require.Equal(t, g, got)
}

// Values written by schema version 3 (bolt) or 1 (etcd) end before the
// activation's attempt timeout and the attempt's handoff token: they read
// back as 0 and "", every other field intact, and the current encoding of
// the same record with those fields set reads back exactly.
func TestRecordsWrittenBeforeTheTimeoutAndTokenDecodeAsZero(t *testing.T) {
	t.Parallel()
	key := backend.ActivationKey{RunID: "r", NodeID: "n", ActivationID: "a"}
	act := backend.Activation{Key: key, Generation: 2, Status: backend.ActivationRunning, Input: []byte(`{}`),
		Effect: backend.Mutating, Reconciliation: backend.ReceiptStatus, LastAttempt: 1, CreatedMS: 5, UpdatedMS: 6}
	old := encodeActivation(act)
	old = old[:len(old)-4] // the earlier layout ended at UpdatedMS; 0 and each nil or 0 join field are one byte
	got, err := decodeActivation(old)
	require.NoError(t, err)
	require.Equal(t, act, got)
	act.AttemptTimeoutMS = 30_000
	got, err = decodeActivation(encodeActivation(act))
	require.NoError(t, err)
	require.Equal(t, act, got)

	att := backend.Attempt{Key: backend.AttemptKey{ActivationKey: key, Attempt: 1}, Identity: "i",
		Status: backend.AttemptAdmitted, SideEffect: backend.Mutating, Intent: []byte(`{}`), IntentChecksum: "c",
		Handoff: backend.HandoffRecorded, PreparedMS: 7, AdmittedMS: 8}
	oldAtt := encodeAttempt(att)
	oldAtt = oldAtt[:len(oldAtt)-1] // the earlier layout ended at TerminalMS; "" is one length byte
	gotAtt, err := decodeAttempt(oldAtt)
	require.NoError(t, err)
	require.Equal(t, att, gotAtt)
	att.HandoffToken = "5d41402abc4b2a76b9719d911017c592"
	gotAtt, err = decodeAttempt(encodeAttempt(att))
	require.NoError(t, err)
	require.Equal(t, att, gotAtt)
}

// Values written before joins and store-driven fan-in end after the
// activation's attempt timeout and the group's policy: they read back as
// no join, awaited by none, and owner settlement; the current encoding of
// the same records with those fields set reads back exactly.
func TestRecordsWrittenBeforeJoinsAndFanInDecodeAsZero(t *testing.T) {
	t.Parallel()
	key := backend.ActivationKey{RunID: "r", NodeID: "n", ActivationID: "a"}
	act := backend.Activation{Key: key, Status: backend.ActivationWaiting, Input: []byte(`{}`),
		Effect: backend.ReadOnly, Reconciliation: backend.RepairRequired, CreatedMS: 5, UpdatedMS: 6, AttemptTimeoutMS: 7}
	old := encodeActivation(act)
	old = old[:len(old)-3] // nil WaitFor, 0 OpenWaits, nil Joins: one byte each
	got, err := decodeActivation(old)
	require.NoError(t, err)
	require.Equal(t, act, got)
	act.WaitFor = []backend.NodeRef{{NodeID: "p", ActivationID: "1"}, {NodeID: "q", ActivationID: "2"}}
	act.OpenWaits, act.Joins = 2, []backend.NodeRef{{NodeID: "j", ActivationID: "3"}}
	got, err = decodeActivation(encodeActivation(act))
	require.NoError(t, err)
	require.Equal(t, act, got)

	g := backend.FanOutGroup{Controller: key, Size: 2, MaxConcurrency: 1, CreatedMS: 4, FailFast: true}
	oldG := encodeGroup(g)
	gotG, err := decodeGroup(oldG[:len(oldG)-1])
	require.NoError(t, err)
	require.Equal(t, g, gotG)
	g.FanIn = true
	gotG, err = decodeGroup(encodeGroup(g))
	require.NoError(t, err)
	require.Equal(t, g, gotG)
}
