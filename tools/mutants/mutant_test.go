package mutants

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every mutant of the catalog still applies to the code as it is: each
// snippet occurs exactly once and changes the file. A Store mutant edits
// workflow/ only (any backend's suite must catch it); an adapter mutant
// edits its own adapter, the package whose suite runs it.
func TestEveryMutantAppliesToTheCurrentTree(t *testing.T) {
	root, err := ModuleRoot(".")
	require.NoError(t, err)
	names := map[string]bool{}
	for _, m := range Catalog {
		t.Run(m.Name, func(t *testing.T) {
			require.False(t, names[m.Name], "mutant names are unique")
			names[m.Name] = true
			require.NotEmpty(t, m.Bug)
			require.NotEmpty(t, m.Edits)
			dir := "workflow/"
			if m.Suite != "" {
				dir = strings.TrimPrefix(m.Suite, "./")
				require.True(t, strings.HasSuffix(dir, "/"), "Suite %q names a package as go test does: ./name/", m.Suite)
			}
			for _, e := range m.Edits {
				assert.True(t, strings.HasPrefix(e.File, dir), "%s edits %s, outside %s", m.Name, e.File, dir)
			}
			files, err := m.Apply(root)
			require.NoError(t, err)
			for path, src := range files {
				orig, err := os.ReadFile(path)
				require.NoError(t, err)
				assert.NotEqual(t, string(orig), string(src))
			}
		})
	}
}

// The library carries no test seams: the mutants live in Catalog only, and
// no non-test file of the module switches on one (as the mutated("name")
// calls under build tag wfmutant once did).
func TestNoMutantSeamInLibraryCode(t *testing.T) {
	root, err := ModuleRoot(".")
	require.NoError(t, err)
	seam := regexp.MustCompile(`(?i)mutated\(|wfmutant|WFSTORE_(ADAPTER_)?MUTANT\b`)
	var found []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(src), "\n") {
			if seam.MatchString(line) {
				rel, _ := filepath.Rel(root, path)
				found = append(found, fmt.Sprintf("%s:%d: %s", filepath.ToSlash(rel), i+1, strings.TrimSpace(line)))
			}
		}
		return nil
	})
	require.NoError(t, err)
	assert.Empty(t, found, "test seams in library code; seed the bug as a Catalog entry instead")
}

func TestAnEditWhoseSnippetIsGoneOrRepeatedIsRefused(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "a.go"), []byte("x := 1\nx := 1\n"), 0o644))
	_, err := Mutant{Name: "twice", Edits: []Edit{{File: "a.go", Find: "x := 1", Replace: "x := 2"}}}.Apply(root)
	require.ErrorContains(t, err, "2 occurrences")
	_, err = Mutant{Name: "gone", Edits: []Edit{{File: "a.go", Find: "y", Replace: "z"}}}.Apply(root)
	require.ErrorContains(t, err, "0 occurrences")
}

func TestOverlayNamesTheMutatedCopyOfEachFile(t *testing.T) {
	root, dir := t.TempDir(), t.TempDir()
	src := filepath.Join(root, "a.go")
	require.NoError(t, os.WriteFile(src, []byte("ok := x != y\n"), 0o644))
	m := Mutant{Name: "m", Bug: "b", Edits: []Edit{
		{File: "a.go", Find: "x != y", Replace: "x == y"},
		{File: "a.go", Find: "ok", Replace: "bad"},
	}}
	desc, err := m.Overlay(root, dir)
	require.NoError(t, err)
	raw, err := os.ReadFile(desc)
	require.NoError(t, err)
	var ov struct{ Replace map[string]string }
	require.NoError(t, json.Unmarshal(raw, &ov))
	require.Len(t, ov.Replace, 1)
	got, err := os.ReadFile(ov.Replace[src])
	require.NoError(t, err)
	require.Equal(t, "bad := x == y\n", string(got))
	require.True(t, strings.HasPrefix(ov.Replace[src], dir))
}
