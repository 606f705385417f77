package workflow

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func TestDispatchIdentity(t *testing.T) {
	t.Parallel()
	assert.Equal(t, sha("run-1\x00node-a\x00act-1\x001"), DispatchIdentity("run-1", "node-a", "act-1", 1))
	assert.Equal(t, sha("r\x00n\x00a\x004294967295"), DispatchIdentity("r", "n", "a", math.MaxUint32))
	long := string(make([]byte, 600)) // longer than the stack buffer
	assert.Equal(t, sha(long+"\x00n\x00a\x002"), DispatchIdentity(long, "n", "a", 2))
	assert.NotEqual(t, DispatchIdentity("r", "n", "a", 1), DispatchIdentity("r", "n", "a", 2))
	assert.NotEqual(t, DispatchIdentity("ab", "c", "a", 1), DispatchIdentity("a", "bc", "a", 1))
	assert.Len(t, DispatchIdentity("r", "n", "a", 1), 64)
}

func TestActivationIdentity(t *testing.T) {
	t.Parallel()
	assert.Equal(t, sha("run\x00node\x000"), ActivationIdentity("run", "node", 0))
	assert.Equal(t, sha("run\x00node\x00-7"), ActivationIdentity("run", "node", -7))
	assert.Equal(t, sha("run\x00日本\x009223372036854775807"), ActivationIdentity("run", "日本", math.MaxInt64))
}

func TestFanOutIDs(t *testing.T) {
	t.Parallel()
	assert.Equal(t, sha("run\x00ctrl-act\x00fan-out\x003"), FanOutMemberID("run", "ctrl-act", 3))
	assert.NotEqual(t, FanOutMemberID("run", "ctrl-act", 3), FanOutMemberID("run", "ctrl-act", 4))
	assert.Equal(t, "review::member::0", FanOutMemberNodeID("review", 0))
	assert.Equal(t, "review::member::12", FanOutMemberNodeID("review", 12))
}

func TestChildRunID(t *testing.T) {
	t.Parallel()
	want := "workflow-child:" + sha(`["root","parent","act",2,{"a":[1.0],"b":"x"}]`)
	assert.Equal(t, want, ChildRunID("root", "parent", "act", 2, []byte(` { "b" : "x", "a" : [1.0] } `)))
	// Ids are JSON-escaped canonically.
	assert.Equal(t, "workflow-child:"+sha(`["r\"oot","p\\","a\n",1,null]`),
		ChildRunID("r\"oot", "p\\", "a\n", 1, []byte(`null`)))
	assert.NotEqual(t, ChildRunID("r", "p", "a", 1, []byte(`1`)), ChildRunID("r", "p", "a", 1, []byte(`1.0`)))
	assert.NotEqual(t, ChildRunID("r", "p", "a", 1, []byte(`1`)), ChildRunID("r", "p", "a", 2, []byte(`1`)))
	// An invalid target is hashed as given.
	assert.Equal(t, "workflow-child:"+sha(`["r","p","a",1,{x]`), ChildRunID("r", "p", "a", 1, []byte(`{x`)))
}
