package wftype

import (
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestLeaf: the vocabulary imports nothing from this module, so every
// package of it (adapters, the Store, tools) can import it.
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
			if strings.HasPrefix(path, "github.com/wfstore/wfstore") {
				t.Errorf("%s imports %s: wftype must import nothing from this module", e.Name(), path)
			}
		}
	}
}

// TestAttemptStatusClasses: every status is active, settled or
// repair_required, and exactly one of them.
func TestAttemptStatusClasses(t *testing.T) {
	all := []AttemptStatus{AttemptPrepared, AttemptAdmitted, AttemptRunning, AttemptCancelling,
		AttemptSiblingCancelling, AttemptSucceeded, AttemptFailed, AttemptPaused, AttemptCancelled,
		AttemptRepairRequired, AttemptAbandoned}
	active, settled := 0, 0
	for _, s := range all {
		n := 0
		if s.Active() {
			active++
			n++
		}
		if s.Settled() {
			settled++
			n++
		}
		if s == AttemptRepairRequired {
			n++
		}
		if n != 1 {
			t.Errorf("%s is in %d classes, want 1", s, n)
		}
	}
	if active != 5 || settled != 5 {
		t.Errorf("active %d, settled %d; want 5 and 5", active, settled)
	}
	if AttemptStatus("bogus").Active() || AttemptStatus("bogus").Settled() {
		t.Error("an unknown status is neither active nor settled")
	}
}

// TestIdentityIsDispatchIdentity: an attempt key's identity is the
// dispatch identity of its fields, and differs per attempt.
func TestIdentityIsDispatchIdentity(t *testing.T) {
	k := AttemptKey{ActivationKey: ActivationKey{RunID: "r", NodeID: "n", ActivationID: "a"}, Attempt: 1}
	if got, want := k.Identity(), DispatchIdentity("r", "n", "a", 1); got != want {
		t.Fatalf("Identity %s, want %s", got, want)
	}
	if len(k.Identity()) != 64 {
		t.Fatalf("identity %q is not 64 hex digits", k.Identity())
	}
	k2 := k
	k2.Attempt = 2
	if k.Identity() == k2.Identity() {
		t.Fatal("attempts 1 and 2 share an identity")
	}
}
