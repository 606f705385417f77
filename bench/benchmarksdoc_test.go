package bench

import (
	"bytes"
	"os"
	"regexp"
	"testing"
)

// maxBenchmarksLines bounds BENCHMARKS.md: it is a reader's guide to
// choosing a backend (current results, the command that reproduces them,
// what bounds each backend, what each mode costs), not a log of runs.
const maxBenchmarksLines = 300

// TestBenchmarksDocStaysAGuide fails when BENCHMARKS.md grows past
// maxBenchmarksLines lines or takes up what a guide should not carry: commit
// hashes and first-person notes.
func TestBenchmarksDocStaysAGuide(t *testing.T) {
	b, err := os.ReadFile("../BENCHMARKS.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Count(b, []byte("\n"))
	if len(b) > 0 && b[len(b)-1] != '\n' {
		lines++
	}
	if lines > maxBenchmarksLines {
		t.Errorf("BENCHMARKS.md has %d lines, at most %d allowed: keep current results, the command, what bounds each backend and what each mode costs", lines, maxBenchmarksLines)
	}
	for _, re := range []*regexp.Regexp{
		regexp.MustCompile(`\b(at|before|after|since|commit) [0-9a-f]{7,40}\b`), // a commit hash
		regexp.MustCompile(`(^|[.!?]\s+|\s)I (did|measured|ran|think|made|found|have|was)\b`),
	} {
		if m := re.Find(b); m != nil {
			t.Errorf("BENCHMARKS.md contains %q (%s)", m, re)
		}
	}
}
