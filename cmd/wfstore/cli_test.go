package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// buildWfstore builds the command as a user would get it and returns the
// binary's path.
func buildWfstore(t *testing.T) string { return wfstoreBinary(t, "") }

// result is one run of the binary.
type result struct {
	code           int
	stdout, stderr string
}

func runBin(t *testing.T, bin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = t.TempDir()
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	if err != nil {
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee)
	}
	return result{cmd.ProcessState.ExitCode(), so.String(), se.String()}
}

// interrupt starts bin, waits until a line of its stderr contains ready,
// sends sig and returns what the command printed and its exit status.
func interrupt(t *testing.T, bin string, sig syscall.Signal, ready string, args ...string) result {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = t.TempDir()
	var so bytes.Buffer
	cmd.Stdout = &so
	se, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var (
		mu      sync.Mutex
		errText strings.Builder
		seen    = make(chan struct{})
		eof     = make(chan struct{})
	)
	go func() {
		defer close(eof)
		once := sync.Once{}
		sc := bufio.NewScanner(se)
		for sc.Scan() {
			mu.Lock()
			errText.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if strings.Contains(sc.Text(), ready) {
				once.Do(func() { close(seen) })
			}
		}
	}()
	select {
	case <-seen:
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("the command never printed %q", ready)
	}
	time.Sleep(300 * time.Millisecond) // into the work
	require.NoError(t, cmd.Process.Signal(sig))
	done := make(chan error, 1)
	go func() { <-eof; done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		t.Fatal("the command did not stop within a minute of the signal")
	}
	mu.Lock()
	defer mu.Unlock()
	return result{cmd.ProcessState.ExitCode(), so.String(), errText.String()}
}

// lines returns the non-empty lines of s.
func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

// TestCLI runs the built command as a user would and checks its output and
// exit status.
func TestCLI(t *testing.T) {
	bin := buildWfstore(t)

	t.Run("version", func(t *testing.T) {
		r := runBin(t, bin, "version")
		require.Equal(t, 0, r.code, r.stderr)
		require.Empty(t, r.stderr)
		require.Regexp(t, `(?m)^wfstore github\.com/wfstore/wfstore \S+`, r.stdout)
		require.Regexp(t, `(?m)^go\s+go1\.\d+\S* `+runtime.GOOS+`/`+runtime.GOARCH+`$`, r.stdout)
		require.Regexp(t, `(?m)^sqlite\s+modernc\.org/sqlite v\d+\.\d+\.\d+ \(SQLite 3\.\d+\.\d+, store schema \d+\)$`, r.stdout)
		require.Regexp(t, `(?m)^postgres\s+github\.com/jackc/pgx/v5 v\d+\.\d+\.\d+ \(store schema \d+\)$`, r.stdout)
		require.Regexp(t, `(?m)^bolt\s+go\.etcd\.io/bbolt v\d+\.\d+\.\d+$`, r.stdout)
		require.Regexp(t, `(?m)^etcd\s+go\.etcd\.io/etcd/client/v3 v\d+\.\d+\.\d+ \(store schema \d+\)$`, r.stdout)
	})

	t.Run("usage", func(t *testing.T) {
		r := runBin(t, bin)
		require.Equal(t, 2, r.code)
		require.Contains(t, r.stderr, "wfstore version")
		r = runBin(t, bin, "help")
		require.Equal(t, 0, r.code)
		require.Contains(t, r.stdout, "wfstore version")
		r = runBin(t, bin, "frobnicate")
		require.Equal(t, 2, r.code)
		require.Contains(t, r.stderr, `wfstore: unknown command "frobnicate"`)
	})

	t.Run("extra arguments are rejected", func(t *testing.T) {
		for _, args := range [][]string{
			{"version", "now"},
			{"demo", "-db", "x.db", "extra"},
			{"bench", "--backends", "bolt", "extra", "more"},
			{"help", "me"},
		} {
			r := runBin(t, bin, args...)
			require.Equal(t, 2, r.code, "%q: %s", args, r.stderr)
			require.Contains(t, r.stderr, "unexpected arguments", "%q", args)
			require.Empty(t, r.stdout, "%q", args)
		}
		_, err := os.Stat("x.db")
		require.True(t, os.IsNotExist(err))
	})

	t.Run("etcd without endpoints is skipped, saying why", func(t *testing.T) {
		if os.Getenv("WFSTORE_ETCD_ENDPOINTS") != "" {
			t.Skip("WFSTORE_ETCD_ENDPOINTS is set: etcd would be measured")
		}
		r := runBin(t, bin, "bench", "--backends", "etcd")
		require.Equal(t, 1, r.code, r.stderr)
		require.Contains(t, r.stderr, "wfstore bench: etcd skipped: no endpoints (set --etcd or WFSTORE_ETCD_ENDPOINTS)")
		require.Contains(t, r.stderr, "no backend to measure")
	})

	t.Run("an error names the file", func(t *testing.T) {
		r := runBin(t, bin, "demo", "-db", "/nonexistent-wfstore-dir/demo.db")
		require.Equal(t, 1, r.code)
		require.Equal(t, []string{"wfstore demo: sqlite: open /nonexistent-wfstore-dir/demo.db: create: no such file or directory"}, lines(r.stderr))
	})

	t.Run("demo interrupted", func(t *testing.T) {
		dir := t.TempDir()
		db := filepath.Join(dir, "demo.db")
		// The demo prints nothing until it ends: wait for its file, then
		// for it to be into its rounds.
		cmd := exec.Command(bin, "demo", "-db", db, "-activations", "20000", "-dispatchers", "8")
		var so, se bytes.Buffer
		cmd.Stdout, cmd.Stderr = &so, &se
		require.NoError(t, cmd.Start())
		for i := 0; i < 600; i++ {
			if _, err := os.Stat(db); err == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(time.Second)
		require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
		_ = cmd.Wait()
		require.Equal(t, 130, cmd.ProcessState.ExitCode(), "stderr: %s", se.String())
		require.Equal(t, []string{"wfstore demo: interrupted by SIGINT (Ctrl-C); the demo stopped part-way through its run; " + db +
			" is consistent (every change is one transaction) and the next demo adds a new run"}, lines(se.String()))
		require.NotContains(t, se.String(), "context canceled")
		require.NotContains(t, se.String(), "lock")
	})

	benchArgs := func(jsonPath string) []string {
		// -n 3000: the parallel workload must outlast the signal's
		// delivery (400 operations took 0.2 s on a quiet machine, and the
		// signal landed in the next workload).
		return []string{"bench", "--backends", "bolt", "-n", "3000", "--batch-n", "400", "--history", "1000", "--json", jsonPath}
	}
	for _, tc := range []struct {
		sig  syscall.Signal
		code int
		name string
	}{{syscall.SIGINT, 130, "SIGINT (Ctrl-C)"}, {syscall.SIGTERM, 143, "SIGTERM"}} {
		t.Run("bench stopped by "+strings.Fields(tc.name)[0], func(t *testing.T) {
			jsonPath := filepath.Join(t.TempDir(), "rows.json")
			// Interrupt it in the middle of the parallel workload: the
			// ceiling rows (bare, raw, sequential, batch) are measured by then.
			r := interrupt(t, bin, tc.sig, "[bolt] parallel: 3000 operations", benchArgs(jsonPath)...)
			require.Equal(t, tc.code, r.code, "stderr:\n%s", r.stderr)
			errLines := lines(r.stderr)
			last := errLines[len(errLines)-1]
			require.Equal(t, "wfstore bench: interrupted by "+tc.name+"; partial report of 4 measured rows (marked partial) on stdout and in "+jsonPath, last)
			require.Equal(t, "[bolt] stopped after", errLines[len(errLines)-2][:len("[bolt] stopped after")])
			require.NotContains(t, r.stderr, "context canceled")
			require.NotContains(t, r.stderr, "bench: bench:")
			require.NotContains(t, r.stderr, "\r", "no redraws outside a terminal")
			require.Equal(t, 1, strings.Count(r.stderr, ": interrupted by"), r.stderr)
			require.True(t, strings.HasPrefix(r.stdout, "**PARTIAL REPORT**: the run was interrupted by "+tc.name), r.stdout)
			require.Contains(t, r.stdout, "| bolt | sequential |")
			require.NotContains(t, r.stdout, "| bolt | parallel |")

			var rows []map[string]any
			b, err := os.ReadFile(jsonPath)
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(b, &rows))
			require.Len(t, rows, 4)
			for _, row := range rows {
				require.Equal(t, true, row["partial"], "%v", row)
			}
		})
	}

	t.Run("bench progress outside a terminal", func(t *testing.T) {
		r := runBin(t, bin, "bench", "--backends", "bolt", "-n", "200", "--batch-n", "200", "--history", "500")
		require.Equal(t, 0, r.code, r.stderr)
		require.NotContains(t, r.stderr, "\r")
		require.NotContains(t, r.stderr, "\x1b[")
		require.Contains(t, r.stderr, "[bolt] bare+raw+sequential+batch: 800 operations\n")
		require.Contains(t, r.stdout, "| batch (1 dispatcher, batch 100) |")
		require.Contains(t, r.stdout, "river (peer): not measured: not run: it needs the postgres backend")
		require.Contains(t, r.stdout, "bolt — batch ≥ 2× bare commit rate: ")
		require.Regexp(t, `(?m)^\[bolt\] done in \d+s$`, r.stderr)
		require.NotContains(t, r.stdout, "PARTIAL")
	})
}
