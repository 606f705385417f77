// Command cicheck reads `go test -json` output on stdin and enforces CI's
// rules: no failed test, at least one test run, and no skipped test in the
// adapter packages unless the skip names the capability that explains it
// ("capability X=false: ..."). It prints per-package times and a closing
// "N passed, N failed, N skipped" line.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

func main() {
	strict := flag.String("strict", "github.com/wfstore/wfstore/sqlite,github.com/wfstore/wfstore/postgres,github.com/wfstore/wfstore/bolt",
		"comma-separated packages (and their subpackages) where a skip must name a capability")
	flag.Parse()
	os.Exit(check(os.Stdin, os.Stdout, strings.Split(*strict, ",")))
}

// maxFailureOutputs bounds how many failing tests' output check prints.
const maxFailureOutputs = 20

func check(r io.Reader, w io.Writer, strict []string) int {
	type key struct{ pkg, test string }
	output := map[key]*strings.Builder{}
	elapsed := map[string]float64{}
	pkgFailed := map[string]bool{}
	var passed, failed, skipped int
	var problems []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var ev event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			fmt.Fprintln(w, sc.Text()) // build errors and other plain lines
			continue
		}
		k := key{ev.Package, ev.Test}
		switch ev.Action {
		case "output":
			b := output[k]
			if b == nil {
				b = &strings.Builder{}
				output[k] = b
			}
			b.WriteString(ev.Output)
		case "pass", "fail", "skip":
			if ev.Test == "" {
				elapsed[ev.Package] = ev.Elapsed
				if ev.Action == "fail" {
					pkgFailed[ev.Package] = true
				}
				continue
			}
			switch ev.Action {
			case "pass":
				passed++
			case "fail":
				failed++
				problems = append(problems, fmt.Sprintf("FAIL %s %s", ev.Package, ev.Test))
				// What the failing test printed, so that a CI log says why
				// (the first few failures; the rest are listed below).
				if b := output[k]; b != nil && failed <= maxFailureOutputs {
					fmt.Fprintf(w, "--- %s %s, last lines of its output:\n%s", ev.Package, ev.Test, lastLines(b.String(), 40))
				}
			case "skip":
				skipped++
				out := ""
				if b := output[k]; b != nil {
					out = b.String()
				}
				if inStrict(ev.Package, strict) && !strings.Contains(out, "capability ") {
					problems = append(problems, fmt.Sprintf("unexplained skip in %s: %s: %s", ev.Package, ev.Test, strings.TrimSpace(lastLines(out, 3))))
				}
			}
		}
	}
	pkgs := make([]string, 0, len(elapsed))
	for p := range elapsed {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	fmt.Fprintln(w, "per-package time:")
	for _, p := range pkgs {
		state := "ok  "
		if pkgFailed[p] {
			state = "FAIL"
			if !hasFailIn(problems, p) {
				problems = append(problems, "FAIL package "+p)
				if b := output[key{p, ""}]; b != nil {
					fmt.Fprint(w, lastLines(b.String(), 30))
				}
			}
		}
		fmt.Fprintf(w, "  %s %7.1fs  %s\n", state, elapsed[p], p)
	}
	if passed == 0 {
		problems = append(problems, "no test passed: the run executed nothing")
	}
	for _, p := range problems {
		fmt.Fprintln(w, p)
	}
	fmt.Fprintf(w, "%d passed, %d failed, %d skipped\n", passed, failed, skipped)
	if len(problems) > 0 {
		return 1
	}
	return 0
}

func hasFailIn(problems []string, pkg string) bool {
	for _, p := range problems {
		if strings.HasPrefix(p, "FAIL "+pkg+" ") {
			return true
		}
	}
	return false
}

func inStrict(pkg string, strict []string) bool {
	for _, s := range strict {
		if s != "" && (pkg == s || strings.HasPrefix(pkg, s+"/")) {
			return true
		}
	}
	return false
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n") + "\n"
}
