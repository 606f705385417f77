package wftype

import "testing"

// A dispatch identity is hashed and hex encoded on the stack: its one
// allocation is the string (measured 2 with hex.EncodeToString's buffer).
func TestDispatchIdentityAllocatesOnlyItsString(t *testing.T) {
	var id string
	if n := testing.AllocsPerRun(50, func() { id = DispatchIdentity("run-1", "node-1", "act-1", 3) }); n != 1 {
		t.Fatalf("%v allocations per identity, want 1", n)
	}
	if len(id) != 64 {
		t.Fatalf("identity %q: want 64 hex digits", id)
	}
}
