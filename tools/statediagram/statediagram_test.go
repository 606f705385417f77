package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const docsDir = "../../docs"

// TestCheckedInFilesAreGenerated fails when a diagram or a transition table
// in docs/ differs from what the table in transitions.go generates: run
// `go run ./tools/statediagram` and commit the result.
func TestCheckedInFilesAreGenerated(t *testing.T) {
	for _, m := range machines {
		got, err := os.ReadFile(svgPath(docsDir, m))
		if err != nil {
			t.Fatalf("%v (run go run ./tools/statediagram)", err)
		}
		if !bytes.Equal(got, m.svg()) {
			t.Errorf("%s is stale: run go run ./tools/statediagram", svgPath(docsDir, m))
		}
	}
	doc, err := os.ReadFile(filepath.Join(docsDir, mdName))
	if err != nil {
		t.Fatal(err)
	}
	want, err := withTables(string(doc))
	if err != nil {
		t.Fatal(err)
	}
	if want != string(doc) {
		t.Errorf("the transition tables of docs/%s are stale: run go run ./tools/statediagram", mdName)
	}
	for _, m := range machines {
		if !strings.Contains(string(doc), filepath.Base(svgPath(docsDir, m))) {
			t.Errorf("docs/%s does not show %s", mdName, filepath.Base(svgPath(docsDir, m)))
		}
	}
}

// TestLabelsDoNotOverlap checks the layout: no label covers another label
// or a state box, and everything lies inside the picture.
func TestLabelsDoNotOverlap(t *testing.T) {
	for _, m := range machines {
		l := m.layout()
		canvas := rect{0, 0, l.width, l.height}
		inside := func(r rect) bool {
			return r.x >= canvas.x && r.y >= canvas.y && r.x+r.w <= canvas.w && r.y+r.h <= canvas.h
		}
		for i, a := range l.labels {
			if !inside(a) {
				t.Errorf("%s: label %q lies outside the picture", m.Name, m.Transitions[i].label())
			}
			for j := i + 1; j < len(l.labels); j++ {
				if a.overlaps(l.labels[j]) {
					t.Errorf("%s: labels %q and %q overlap", m.Name, m.Transitions[i].label(), m.Transitions[j].label())
				}
			}
			for k, b := range l.boxes {
				if a.overlaps(b) {
					t.Errorf("%s: label %q covers state %s", m.Name, m.Transitions[i].label(), m.States[k])
				}
			}
		}
		for k, b := range l.boxes {
			if !inside(b) {
				t.Errorf("%s: state %s lies outside the picture", m.Name, m.States[k])
			}
			if k > 0 && l.boxes[k-1].overlaps(b) {
				t.Errorf("%s: states %s and %s overlap", m.Name, m.States[k-1], m.States[k])
			}
		}
	}
}

// TestTableIsWellFormed checks the transitions table itself: every state is
// reached, every transition names known states, and no transition is
// listed twice.
func TestTableIsWellFormed(t *testing.T) {
	for _, m := range machines {
		reached := map[string]bool{start: true}
		seen := map[string]bool{}
		for _, tr := range m.Transitions {
			if len(tr.From) == 0 || len(tr.Ops) == 0 {
				t.Errorf("%s: transition to %s has no source or no operation", m.Name, tr.To)
			}
			for _, f := range tr.From {
				m.index(f) // panics on an unknown state
				if f == tr.To {
					t.Errorf("%s: %s → %s is no status change", m.Name, f, tr.To)
				}
				k := f + "→" + tr.To + "/" + tr.Event + "/" + strings.Join(tr.Ops, ",")
				if seen[k] {
					t.Errorf("%s: %s listed twice", m.Name, k)
				}
				seen[k] = true
			}
			m.index(tr.To)
			reached[tr.To] = true
		}
		for _, st := range m.States {
			if !reached[st] {
				t.Errorf("%s: state %s is never reached", m.Name, st)
			}
		}
	}
}

// TestNamesExistInCode fails when a status or event named in the table no
// longer appears as a string literal in the module's Go code (a renamed
// event, a removed status), or an operation no longer exists as a method
// (on any type, so a call moved to another API still counts): the table
// must follow the code.
func TestNamesExistInCode(t *testing.T) {
	var src strings.Builder
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "statediagram" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != "../.." {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			src.Write(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	code := src.String()
	for _, m := range machines {
		for _, st := range m.States {
			if st != start && !strings.Contains(code, `"`+st+`"`) {
				t.Errorf("%s: status %q appears nowhere in the code", m.Name, st)
			}
		}
		for _, tr := range m.Transitions {
			if tr.Event != "" && !strings.Contains(code, `"`+tr.Event+`"`) {
				t.Errorf("%s: event %q appears nowhere in the code", m.Name, tr.Event)
			}
			for _, op := range tr.Ops {
				if strings.ContainsAny(op, " -") { // a description, not a call
					continue
				}
				if !strings.Contains(code, ") "+op+"(") {
					t.Errorf("%s: operation %s is no method in the code", m.Name, op)
				}
			}
		}
	}
}
