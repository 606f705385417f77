package event

import (
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/internal/canonical"
	"github.com/wfstore/wfstore/wftype"
)

// Every event type decodes into the payload struct that names it, and the
// payload struct encodes to the same canonical bytes after a round trip.
func TestEventDecodeRoundTrip(t *testing.T) {
	t.Parallel()
	require.Len(t, decoders, 46)
	for typ, dec := range decoders {
		zero, err := dec([]byte(`{}`))
		require.NoError(t, err, typ)
		assert.Equal(t, typ, zero.Type(), "the decoder of %s returns its payload", typ)
		raw := mustCanonical(zero)
		p, err := Event{Type: typ, Payload: raw}.Decode()
		require.NoError(t, err, typ)
		assert.Equal(t, string(raw), string(mustCanonical(p)), typ)
	}
	_, err := Event{RunID: "r", Seq: 1, Type: "no_such_event", Payload: []byte(`{}`)}.Decode()
	assert.ErrorContains(t, err, "unknown event type")
	_, err = Event{RunID: "r", Seq: 1, Type: RunCreated, Payload: []byte(`[]`)}.Decode()
	assert.Error(t, err)
}

// The typed payloads keep the bytes the map literals they replaced wrote.
func TestEventPayloadBytes(t *testing.T) {
	t.Parallel()
	gen, idx := int64(0), int64(2)
	for _, c := range []struct {
		p    Payload
		want string
	}{
		{ActivationCreatedPayload{RunID: "r", NodeID: "n", ActivationID: "a", Generation: &gen}, `{"activation_id":"a","generation":0,"node_id":"n","run_id":"r"}`},
		{ActivationCreatedPayload{RunID: "r", NodeID: "n", ActivationID: "a", MemberIndex: &idx}, `{"activation_id":"a","member_index":2,"node_id":"n","run_id":"r"}`},
		{CancellationRequestedPayload{RunID: "r"}, `{"run_id":"r"}`},
		{FanInWaitingPayload{RunID: "r", NodeID: "n", ActivationID: "a", Members: 3, Policy: wftype.WaitAll}, `{"activation_id":"a","members":3,"node_id":"n","policy":"wait_all","run_id":"r"}`},
		{FanInSettledPayload{RunID: "r", NodeID: "n", ActivationID: "a", Status: wftype.ActivationFailed, Policy: wftype.FailFast, Members: 3, Completed: 1, Failed: 1, MemberIndex: &idx},
			`{"activation_id":"a","cancelled":0,"completed":1,"failed":1,"member_index":2,"members":3,"node_id":"n","policy":"fail_fast","run_id":"r","status":"failed"}`},
		{JoinReleasedPayload{RunID: "r", NodeID: "j", ActivationID: "a", PredecessorNodeID: "p", PredecessorActivationID: "b"},
			`{"activation_id":"a","node_id":"j","predecessor_activation_id":"b","predecessor_node_id":"p","run_id":"r"}`},
		{JoinCancelledPayload{RunID: "r", NodeID: "j", ActivationID: "a", PredecessorNodeID: "p", PredecessorActivationID: "b", PredecessorStatus: wftype.ActivationFailed},
			`{"activation_id":"a","node_id":"j","predecessor_activation_id":"b","predecessor_node_id":"p","predecessor_status":"failed","run_id":"r"}`},
		{CancellationRequestedPayload{RunID: "r", RootRunID: "root", Tree: true}, `{"root_run_id":"root","run_id":"r","tree":true}`},
		{AttemptCancelledPayload{AttemptNames: AttemptNames{RunID: "r", NodeID: "n", ActivationID: "a", Attempt: 2}, DispatchIdentity: "i"},
			`{"activation_id":"a","attempt":2,"dispatch_identity":"i","node_id":"n","run_id":"r"}`},
		{AutomaticRetryNotScheduledPayload{RunID: "r", NodeID: "n", ActivationID: "a", DispatchIdentity: "i", FailedAttempt: 1, Reason: wftype.RefusedNoPolicy},
			`{"activation_id":"a","dispatch_identity":"i","failed_attempt":1,"node_id":"n","reason":"no_policy","run_id":"r"}`},
		{FanOutFailedPayload{ControllerActivationID: "c", FailedMembers: []int64{1, 3}, Policy: wftype.WaitAll}, `{"controller_activation_id":"c","failed_members":[1,3],"policy":"wait_all"}`},
		{RunPrunedPayload{RunID: "r", Deleted: wftype.PruneCounts{Events: 1, Attempts: 2, Leases: 3, Schedules: 4}}, `{"deleted":{"attempts":2,"events":1,"leases":3,"schedules":4},"run_id":"r"}`},
		{RunPruneStartedPayload{RunID: "r", Deleting: wftype.PruneCounts{Events: 1, Attempts: 2, Leases: 3, Schedules: 4}}, `{"deleting":{"attempts":2,"events":1,"leases":3,"schedules":4},"run_id":"r"}`},
		{ExecutionAllowanceExhaustedPayload{Version: 1}, `{"additional_work_admitted":false,"version":1}`},
	} {
		assert.Equal(t, c.want, string(mustCanonical(c.p)), "%T", c.p)
	}
}

// An attempt event stored before payloads named their attempt decodes,
// with the names empty.
func TestAttemptEventWithoutNamesDecodes(t *testing.T) {
	t.Parallel()
	p, err := Event{RunID: "r", Seq: 3, Type: AttemptFailed, Payload: []byte(`{"dispatch_identity":"i","retryable":true}`)}.Decode()
	require.NoError(t, err)
	assert.Equal(t, AttemptFailedPayload{DispatchIdentity: "i", Retryable: true}, p)
}

func mustCanonical(v any) []byte {
	b, err := canonical.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// TestLeaf: package event imports only package wftype from this module, so
// an adapter, a tool or an engine can decode events without the Store.
func TestLeaf(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, e.Name(), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(path, "github.com/wfstore/wfstore") && path != "github.com/wfstore/wfstore/wftype" {
				t.Errorf("%s imports %s: package event may import only wftype from this module", e.Name(), path)
			}
		}
	}
}
