// Package doccheck keeps package documentation short: every package's doc
// comment (the comment above the package clause, over all of its non-test
// files) must fit in MaxLines lines. Details that do not fit belong in
// docs/ or in comments at the code they describe.
//
// Its test runs the check over the whole module, so `go test ./...` fails
// when a package doc grows past the limit.
package doccheck

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
)

// MaxLines is the most lines a package doc comment may have.
const MaxLines = 60

// Count is the length of one package's doc comment.
type Count struct {
	Dir   string // the package directory, relative to the root
	Lines int
}

// Counts returns the doc comment length of every package under root, in
// directory order. It skips testdata, vendor and hidden directories and
// _test.go files, as the go tool does.
func Counts(root string) ([]Count, error) {
	lines := map[string]int{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		dir, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		if _, ok := lines[dir]; !ok {
			lines[dir] = 0
		}
		if f.Doc != nil {
			lines[dir] += len(strings.Split(strings.TrimRight(f.Doc.Text(), "\n"), "\n"))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]Count, 0, len(lines))
	for dir, n := range lines {
		out = append(out, Count{Dir: filepath.ToSlash(dir), Lines: n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Dir < out[j].Dir })
	return out, nil
}

// Check returns an error naming every package under root whose doc comment
// is longer than MaxLines lines.
func Check(root string) error {
	counts, err := Counts(root)
	if err != nil {
		return err
	}
	var long []string
	for _, c := range counts {
		if c.Lines > MaxLines {
			long = append(long, fmt.Sprintf("%s: %d lines", c.Dir, c.Lines))
		}
	}
	if len(long) > 0 {
		return fmt.Errorf("package docs longer than %d lines (move details to docs/ or to the code they describe):\n\t%s",
			MaxLines, strings.Join(long, "\n\t"))
	}
	return nil
}
