// Command run proves the tests catch every seeded mutant: for each mutant
// of the catalog it compiles the test binary of its suite with the
// mutant's overlay and runs the tests that must catch it (the conformance
// suite, or a runner mutant's tests); a mutant survives when they pass.
// It exits 1 when any mutant survives and 2 when one cannot be built (or on a usage error); go run reports either as
// exit status 1, so scripts/mutants.sh builds it and runs the binary.
//
//	go run ./tools/mutants/run [-pkg ./memstore/] [-only name,name] [-all] [-j 2]
//
// Mutants of the Store (workflow/) run on -pkg, by default the in-memory
// reference backend. A runner mutant runs the runner package's tests that
// its Tests names. An adapter mutant runs on its own adapter's package,
// and only when -all is given or -only names it.
//
// Each mutant needs its own test binary; up to -j of them are built at a
// time while the suite runs on the ones built before, one at a time.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/wfstore/wfstore/tools/mutants"
)

func main() { os.Exit(run()) }

func run() int {
	pkg := flag.String("pkg", "./memstore/", "test package whose conformance suite must catch the Store mutants")
	only := flag.String("only", "", "comma-separated mutant names (default: every Store mutant)")
	all := flag.Bool("all", false, "also run the adapter mutants, each on its own adapter's package")
	jobs := flag.Int("j", 2, "test binaries built at a time")
	flag.Parse()
	if flag.NArg() > 0 || *jobs < 1 {
		flag.Usage()
		return 2
	}
	root, err := mutants.ModuleRoot(".")
	if err != nil {
		return fatal(err)
	}
	list, err := selectMutants(*only, *all)
	if err != nil {
		return fatal(err)
	}
	dir, err := os.MkdirTemp("", "wfstore-mutants-")
	if err != nil {
		return fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // stops the builds still running when a build fails

	builds := startBuilds(ctx, root, dir, *pkg, list, *jobs)
	var survivors []string
	for i, m := range list {
		b := <-builds[i]
		if b.err != nil {
			os.Stdout.Write(b.out)
			return fatal(fmt.Errorf("mutant %s does not build: %w", m.Name, b.err))
		}
		out, err := runSuite(ctx, b)
		b.done()
		var exit *exec.ExitError
		switch {
		case err == nil:
			fmt.Printf("SURVIVED %-32s %s\n", m.Name, m.Bug)
			survivors = append(survivors, m.Name)
		case errors.As(err, &exit):
			fmt.Printf("caught   %-32s by %s\n", m.Name, caughtBy(out))
		default:
			return fatal(fmt.Errorf("mutant %s: %w", m.Name, err))
		}
	}
	fmt.Printf("%d mutants, %d caught, %d survived\n", len(list), len(list)-len(survivors), len(survivors))
	if len(survivors) > 0 {
		return 1
	}
	return 0
}

// selectMutants returns the mutants named in only (comma-separated), or
// every Store mutant, plus every adapter mutant when all is set.
func selectMutants(only string, all bool) ([]mutants.Mutant, error) {
	var list []mutants.Mutant
	if only == "" {
		for _, m := range mutants.Catalog {
			if !m.Adapter() || all {
				list = append(list, m)
			}
		}
		return list, nil
	}
	for _, n := range strings.Split(only, ",") {
		m, ok := mutants.Lookup(strings.TrimSpace(n))
		if !ok {
			return nil, fmt.Errorf("no mutant named %q", n)
		}
		list = append(list, m)
	}
	return list, nil
}

// build is one mutant's test binary, built for the suite of pkg.
type build struct {
	dir   string // the test package's directory
	pkg   string // test package, relative to the module root
	tests string // the -test.run pattern that must catch the mutant
	bin   string
	out   []byte // go test -c output, when it failed
	err   error
	done  func() // removes the binary and frees its place
}

// startBuilds builds the test binaries of list in order, up to jobs at a
// time and at most jobs+1 not yet run, and returns one channel per mutant
// that receives its build.
func startBuilds(ctx context.Context, root, dir, pkg string, list []mutants.Mutant, jobs int) []chan build {
	out := make([]chan build, len(list))
	for i := range out {
		out[i] = make(chan build, 1)
	}
	places := make(chan struct{}, jobs+1) // built or building, not yet run
	next := make(chan int)
	go func() {
		defer close(next)
		for i := range list {
			select {
			case places <- struct{}{}:
			case <-ctx.Done():
				return
			}
			next <- i
		}
	}()
	for range jobs {
		go func() {
			for i := range next {
				m := list[i]
				b := build{pkg: pkg, tests: m.TestPattern(), done: func() {}}
				if m.Suite != "" {
					b.pkg = m.Suite
				}
				b.dir = filepath.Join(root, filepath.FromSlash(b.pkg))
				b.bin = filepath.Join(dir, m.Name+".test")
				b.done = func() {
					os.Remove(b.bin)
					<-places
				}
				ov, err := m.Overlay(root, dir)
				if err != nil {
					b.err = err
				} else {
					cmd := exec.CommandContext(ctx, "go", "test", "-c", "-vet=off", "-overlay", ov, "-o", b.bin, b.pkg)
					cmd.Dir = root
					b.out, b.err = cmd.CombinedOutput()
				}
				out[i] <- b
			}
		}()
	}
	return out
}

// runSuite runs the tests of b's test binary that must catch the mutant
// (the conformance suite, or a runner mutant's tests) in its package's
// directory, as go test would, and returns its output. The failures are
// expected: rapid is told not to save them under the package's testdata.
func runSuite(ctx context.Context, b build) (string, error) {
	cmd := exec.CommandContext(ctx, b.bin, "-test.run", b.tests, "-test.count=1", "-test.timeout", "10m")
	cmd.Dir = b.dir
	cmd.Env = append(os.Environ(), "RAPID_NOFAILFILE=true")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

var (
	failLine = regexp.MustCompile(`(?m)^\s*--- FAIL: \S+?/((?:store-batch|store|contract)/\S+)`)
	failTest = regexp.MustCompile(`(?m)^\s*--- FAIL: (\S+)`)
)

// caughtBy names up to three failing cases of the suite's output (or, for
// tests outside the conformance suite, up to three failing tests).
func caughtBy(out string) string {
	var names []string
	matches := failLine.FindAllStringSubmatch(out, -1)
	if len(matches) == 0 {
		matches = failTest.FindAllStringSubmatch(out, -1)
	}
	for _, m := range matches {
		names = append(names, m[1])
		if len(names) == 3 {
			break
		}
	}
	if len(names) == 0 {
		return "(suite failed)"
	}
	return strings.Join(names, ", ")
}

func fatal(err error) int {
	fmt.Fprintln(os.Stderr, "mutants:", err)
	return 2
}
