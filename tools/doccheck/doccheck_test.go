package doccheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// moduleRoot is the directory holding go.mod, two levels up.
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no go.mod in %s", root)
	}
	return root
}

// TestPackageDocsAreShort is the check itself, over the whole module.
func TestPackageDocsAreShort(t *testing.T) {
	root := moduleRoot(t)
	if err := Check(root); err != nil {
		t.Fatal(err)
	}
	counts, err := Counts(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"workflow", "backend", "sqlite", "postgres", "bolt", "etcd", "memstore", "runner", "conformance"} {
		found := false
		for _, c := range counts {
			if c.Dir == dir {
				found = true
				if c.Lines == 0 {
					t.Errorf("package %s has no package doc", dir)
				}
			}
		}
		if !found {
			t.Errorf("package %s was not examined", dir)
		}
	}
}

// TestCheckCountsLines proves the check fails on a long doc and counts a
// doc spread over several files, ignoring test files and build tags.
func TestCheckCountsLines(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	doc := func(n int) string {
		return strings.Repeat("// A line.\n", n)
	}
	write("go.mod", "module x\n")
	write("ok/doc.go", doc(MaxLines)+"package ok\n")
	write("ok/other.go", "//go:build linux\n\npackage ok\n")
	write("ok/ok_test.go", doc(100)+"package ok\n")
	write("split/a.go", doc(40)+"package split\n")
	write("split/b.go", doc(21)+"package split\n")
	write("long/doc.go", doc(MaxLines+1)+"package long\n")
	write("testdata/ignored.go", doc(100)+"package ignored\n")
	counts, err := Counts(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, c := range counts {
		got[c.Dir] = c.Lines
	}
	want := map[string]int{"ok": MaxLines, "split": 61, "long": MaxLines + 1}
	for d, n := range want {
		if got[d] != n {
			t.Errorf("%s: counted %d lines, want %d", d, got[d], n)
		}
	}
	if _, ok := got["testdata"]; ok {
		t.Error("testdata was examined")
	}
	err = Check(dir)
	if err == nil || !strings.Contains(err.Error(), "long: 61 lines") || !strings.Contains(err.Error(), "split: 61 lines") || strings.Contains(err.Error(), "ok:") {
		t.Fatalf("Check = %v, want long and split named and ok not", err)
	}
}
