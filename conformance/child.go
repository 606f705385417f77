package conformance

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wfstore/wfstore/backend"
)

// childRole is work a child process performs on its own Backend, opened by
// the suite over the parent's store. arg is what the parent passed; wait
// blocks until every child started together with this one has opened the
// store (a start barrier; it also returns when ctx ends). The returned bytes
// go back to the parent. A role must not keep b after it returns; the suite
// closes it. The roles are the suite's own; Run performs them in a child.
type childRole func(ctx context.Context, b backend.Backend, arg []byte, wait func()) ([]byte, error)

// Environment variables that make a test binary a conformance child.
const (
	envRole    = "WFSTORE_CONFORMANCE_ROLE"
	envLocator = "WFSTORE_CONFORMANCE_LOCATOR"
	envArg     = "WFSTORE_CONFORMANCE_ARG"
	envBarrier = "WFSTORE_CONFORMANCE_BARRIER"
)

// Marker lines a child prints on stdout.
const (
	readyMarker  = "=== wfstore-conformance-child-ready 9c41e7 ==="
	resultMarker = "=== wfstore-conformance-child-result 9c41e7 ==="
)

const (
	// childTimeout bounds one RunChildren call (and a child's own work).
	childTimeout = 3 * time.Minute
	// barrierPoll is how often a waiting child looks for the barrier file.
	barrierPoll = 2 * time.Millisecond
)

// IsChild reports whether this process is a child process the suite
// started (see Run). A TestMain that starts expensive shared fixtures (a
// database server) may skip them in a child, which only opens the store it
// is given.
func IsChild() bool { return os.Getenv(envRole) != "" }

// testRoles holds roles only this package's own tests define.
var testRoles map[string]childRole

// roles merges the contract tier's roles with the store tier's.
func roles() (map[string]childRole, error) {
	all := make(map[string]childRole)
	for _, m := range []map[string]childRole{contractRoles(), storeRoles(), testRoles} {
		for name, r := range m {
			if _, dup := all[name]; dup {
				return nil, fmt.Errorf("conformance: child role %q is defined twice", name)
			}
			all[name] = r
		}
	}
	return all, nil
}

// runChild is Run in a child process: perform the role and print its result.
func runChild(t *testing.T, h Harness) {
	t.Helper()
	name := os.Getenv(envRole)
	all, err := roles()
	if err != nil {
		t.Fatal(err)
	}
	role, ok := all[name]
	if !ok {
		t.Fatalf("conformance child: unknown role %q", name)
	}
	arg, err := decodeArg(os.Getenv(envArg))
	if err != nil {
		t.Fatalf("conformance child: decoding %s: %v", envArg, err)
	}
	locator := os.Getenv(envLocator)
	barrier := os.Getenv(envBarrier)
	ctx, cancel := context.WithTimeout(context.Background(), childTimeout)
	defer cancel()

	b, err := h.Open(ctx, locator)
	if err != nil {
		t.Fatalf("conformance child %q: %s: Open(%q): %v", name, h.Name, locator, err)
	}
	if b == nil {
		t.Fatalf("conformance child %q: %s: Open(%q) returned a nil Backend", name, h.Name, locator)
	}
	defer func() {
		if err := b.Close(); err != nil {
			t.Errorf("conformance child %q: Close: %v", name, err)
		}
	}()
	fmt.Fprintln(os.Stdout, readyMarker)
	wait := func() {
		if barrier == "" {
			return
		}
		tick := time.NewTicker(barrierPoll)
		defer tick.Stop()
		for {
			if _, err := os.Stat(barrier); err == nil {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}
	out, err := role(ctx, b, arg, wait)
	if err != nil {
		t.Fatalf("conformance child %q: %v", name, err)
	}
	fmt.Fprintf(os.Stdout, "\n%s\n%s\n", resultMarker, base64.StdEncoding.EncodeToString(out))
}

// childRun is the outcome of one child process.
type childRun struct {
	i      int
	err    error // from Wait
	stdout []byte
	stderr []byte
}

// childEvent is a line-level event from one child, in that child's order.
type childEvent struct {
	i     int
	ready bool      // the ready marker was printed
	done  *childRun // the process has exited
}

// RunChildren starts n child processes, each re-executing this test binary
// as role over the case's store with args[i] (args may be nil for no
// argument). The children start together: each role's wait returns once all
// n have opened the store. RunChildren returns each child's result, in order,
// and fails the test, with the child's output, when a child exits non-zero or
// prints no result. Call it from the test's goroutine.
//
// A child opens its own Backend while the parent's instances stay open, so a
// case that runs children concurrently with the parent's store must call
// RequireMultiProcess first.
func (e *env) RunChildren(role string, n int, args [][]byte) [][]byte {
	e.T.Helper()
	if n <= 0 {
		e.T.Fatalf("conformance: case bug: RunChildren(%q, %d): n must be positive", role, n)
	}
	if args != nil && len(args) != n {
		e.T.Fatalf("conformance: case bug: RunChildren(%q, %d) with %d args", role, n, len(args))
	}
	all, err := roles()
	if err != nil {
		e.T.Fatal(err)
	}
	if _, ok := all[role]; !ok {
		e.T.Fatalf("conformance: case bug: RunChildren: unknown role %q", role)
	}
	top, _, _ := strings.Cut(e.T.Name(), "/")
	barrier := filepath.Join(e.T.TempDir(), "barrier")

	ctx, cancel := context.WithTimeout(e.Ctx, childTimeout)
	defer cancel()
	events := make(chan childEvent, 2*n)
	var wg sync.WaitGroup
	defer wg.Wait()
	started := 0
	for i := range n {
		var arg []byte
		if args != nil {
			arg = args[i]
		}
		cmd := exec.CommandContext(ctx, os.Args[0],
			"-test.run=^"+regexp.QuoteMeta(top)+"$", "-test.count=1")
		cmd.Env = append(childEnviron(),
			envRole+"="+role,
			envLocator+"="+e.Locator,
			envArg+"="+base64.StdEncoding.EncodeToString(arg),
			envBarrier+"="+barrier,
		)
		cmd.WaitDelay = 5 * time.Second
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			cancel()
			e.T.Fatalf("conformance: RunChildren(%q): stdout pipe: %v", role, err)
		}
		if err := cmd.Start(); err != nil {
			cancel()
			e.T.Fatalf("conformance: RunChildren(%q): starting child %d: %v", role, i, err)
		}
		started++
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out bytes.Buffer
			r := bufio.NewReader(stdout)
			for {
				line, err := r.ReadBytes('\n')
				out.Write(line)
				if string(bytes.TrimRight(line, "\r\n")) == readyMarker {
					events <- childEvent{i: i, ready: true}
				}
				if err != nil {
					if err != io.EOF {
						fmt.Fprintf(&out, "\n[conformance: reading stdout: %v]\n", err)
					}
					break
				}
			}
			werr := cmd.Wait()
			events <- childEvent{i: i, done: &childRun{i: i, err: werr, stdout: out.Bytes(), stderr: stderr.Bytes()}}
		}()
	}

	ready := make([]bool, n)
	runs := make([]*childRun, n)
	nready, ndone := 0, 0
	fail := func(format string, a ...any) {
		e.T.Helper()
		cancel()
		for ndone < started {
			ev := <-events
			if ev.done != nil {
				runs[ev.i] = ev.done
				ndone++
			}
		}
		var sb strings.Builder
		fmt.Fprintf(&sb, format, a...)
		for _, r := range runs {
			if r != nil {
				sb.WriteString(describeChild(role, r))
			}
		}
		e.T.Fatal(sb.String())
	}
	for nready < n {
		select {
		case ev := <-events:
			if ev.ready && !ready[ev.i] {
				ready[ev.i] = true
				nready++
			}
			if ev.done != nil {
				runs[ev.i] = ev.done
				ndone++
				if !ready[ev.i] {
					fail("conformance: RunChildren(%q): child %d exited before it was ready", role, ev.i)
				}
			}
		case <-ctx.Done():
			fail("conformance: RunChildren(%q): %d of %d children ready when time ran out (%v)", role, nready, n, ctx.Err())
		}
	}
	if err := os.WriteFile(barrier, nil, 0o644); err != nil {
		fail("conformance: RunChildren(%q): creating the barrier file: %v", role, err)
	}
	for ndone < n {
		select {
		case ev := <-events:
			if ev.done != nil {
				runs[ev.i] = ev.done
				ndone++
			}
		case <-ctx.Done():
			fail("conformance: RunChildren(%q): %d of %d children finished when time ran out (%v)", role, ndone, n, ctx.Err())
		}
	}

	results := make([][]byte, n)
	var bad []int
	for i, r := range runs {
		out, err := childResult(r)
		if err != nil {
			r.err = err
			bad = append(bad, i)
			continue
		}
		results[i] = out
	}
	if len(bad) > 0 {
		sort.Ints(bad)
		var sb strings.Builder
		fmt.Fprintf(&sb, "conformance: RunChildren(%q): %d of %d children failed", role, len(bad), n)
		for _, i := range bad {
			sb.WriteString(describeChild(role, runs[i]))
		}
		e.T.Fatal(sb.String())
	}
	return results
}

// childResult extracts the result a child printed after the result marker.
func childResult(r *childRun) ([]byte, error) {
	if r.err != nil {
		return nil, r.err
	}
	lines := strings.Split(string(r.stdout), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.TrimRight(lines[i], "\r") != resultMarker {
			continue
		}
		if i+1 >= len(lines) {
			return nil, errors.New("result marker without a result line")
		}
		out, err := base64.StdEncoding.DecodeString(strings.TrimRight(lines[i+1], "\r"))
		if err != nil {
			return nil, fmt.Errorf("decoding the result line: %w", err)
		}
		return out, nil
	}
	return nil, errors.New("the child printed no result marker (does this top-level test call conformance.Run first?)")
}

func describeChild(role string, r *childRun) string {
	status := "exit 0"
	if r.err != nil {
		status = r.err.Error()
	}
	return fmt.Sprintf("\n--- child %d (role %q): %s\n--- stdout:\n%s\n--- stderr:\n%s",
		r.i, role, status, clip(r.stdout), clip(r.stderr))
}

// clip keeps the last 16 KiB of a child's output.
func clip(b []byte) string {
	const keep = 16 << 10
	if len(b) > keep {
		return fmt.Sprintf("[... %d bytes elided ...]\n", len(b)-keep) + string(b[len(b)-keep:])
	}
	return string(b)
}

// childEnviron is this process's environment without conformance variables.
func childEnviron() []string {
	var kept []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "WFSTORE_CONFORMANCE_") {
			continue
		}
		kept = append(kept, kv)
	}
	return kept
}

func decodeArg(s string) ([]byte, error) { return base64.StdEncoding.DecodeString(s) }
