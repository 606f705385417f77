// Package mutants seeds known bugs into a copy of the source tree, so that
// scripts/mutants.sh can prove the conformance suite catches each of them.
//
// A mutant is a list of textual edits: in one file, replace a snippet that
// occurs exactly once. Mutants of the Store (workflow/) are caught by the
// conformance suite, mutants of the runner (runner/) by the runner's own
// tests, and adapter mutants by their adapter's suite. The library's own code carries no trace of them:
// Overlay writes the mutated files to a scratch directory and returns a file
// for go build/test -overlay, which compiles them in place of the originals.
// A snippet that no longer occurs exactly once is an error, so a mutant
// cannot silently stop applying when the code it targets changes.
//
// The mutants are listed in Catalog. Run them with
//
//	go run ./tools/mutants/run [-pkg ./memstore/] [-only name,name] [-all]
//
// (scripts/mutants.sh does, for CI).
package mutants

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Mutant is one seeded bug.
type Mutant struct {
	// Name identifies the mutant (scripts, reports).
	Name string
	// Bug says, in a line, what the mutated code gets wrong.
	Bug string
	// Suite is the test package (as go test names it, "./sqlite/") whose
	// conformance suite must catch the mutant, for a mutant that only one
	// package's suite can catch: an adapter mutant, or a runner mutant
	// (RunnerSuite, whose tests are the runner package's own). Empty for a
	// mutant of the Store's logic (workflow/), which every backend's suite
	// catches; the runner runs those on the package it is given (default
	// the in-memory reference backend).
	Suite string
	// Tests is the go test -run pattern of the tests of Suite that must
	// catch the mutant; empty means the conformance suite (Conformance).
	Tests string
	// Edits are applied in order.
	Edits []Edit
}

// RunnerSuite is the Suite of a mutant of the runner (runner/): the runner
// package's own tests catch it.
const RunnerSuite = "./runner/"

// Adapter reports whether m is an adapter mutant: one that only its own
// adapter's suite catches, run only when asked for (they need the
// adapter's servers, and some are slow). Store and runner mutants run by
// default.
func (m Mutant) Adapter() bool { return m.Suite != "" && m.Suite != RunnerSuite }

// TestPattern returns the go test -run pattern that must catch m.
func (m Mutant) TestPattern() string {
	if m.Tests == "" {
		return "Conformance"
	}
	return m.Tests
}

// Edit replaces Find, which must occur exactly once in File, with Replace.
type Edit struct {
	// File is relative to the module root, with forward slashes.
	File    string
	Find    string
	Replace string
}

// Lookup returns the mutant of the catalog with this name.
func Lookup(name string) (Mutant, bool) {
	for _, m := range Catalog {
		if m.Name == name {
			return m, true
		}
	}
	return Mutant{}, false
}

// Apply returns the mutated contents of every file m edits, read from the
// module rooted at root, keyed by the file's absolute path.
func (m Mutant) Apply(root string) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, e := range m.Edits {
		path := filepath.Join(root, filepath.FromSlash(e.File))
		src, ok := out[path]
		if !ok {
			b, err := os.ReadFile(path)
			if err != nil {
				return nil, fmt.Errorf("mutant %s: %w", m.Name, err)
			}
			src = b
		}
		n := strings.Count(string(src), e.Find)
		if n != 1 {
			return nil, fmt.Errorf("mutant %s: %s has %d occurrences of %q, want exactly 1", m.Name, e.File, n, e.Find)
		}
		out[path] = []byte(strings.Replace(string(src), e.Find, e.Replace, 1))
	}
	return out, nil
}

// Overlay writes m's mutated files under dir and an overlay description
// for go build -overlay, and returns the description's path.
func (m Mutant) Overlay(root, dir string) (string, error) {
	files, err := m.Apply(root)
	if err != nil {
		return "", err
	}
	var ov struct{ Replace map[string]string }
	ov.Replace = map[string]string{}
	i := 0
	for path, src := range files {
		i++
		dst := filepath.Join(dir, fmt.Sprintf("%s-%d-%s", m.Name, i, filepath.Base(path)))
		if err := os.WriteFile(dst, src, 0o644); err != nil {
			return "", err
		}
		ov.Replace[path] = dst
	}
	b, err := json.Marshal(ov)
	if err != nil {
		return "", err
	}
	desc := filepath.Join(dir, m.Name+".overlay.json")
	return desc, os.WriteFile(desc, b, 0o644)
}

// ModuleRoot returns the root of the module that contains dir (the nearest
// ancestor with a go.mod).
func ModuleRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("mutants: no go.mod above %s", dir)
		}
		dir = parent
	}
}
