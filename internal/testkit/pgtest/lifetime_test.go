package pgtest_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/internal/testkit/pgtest"
)

// envChildMode makes TestChildCluster the child of
// TestClusterDiesWithItsTestBinary: it starts the binary's throwaway
// cluster, prints where it is, then ends as the mode says.
const envChildMode = "WFSTORE_PGTEST_CHILD_MODE"

// TestChildCluster is a role, not a test: it runs only in the child binary
// that TestClusterDiesWithItsTestBinary starts.
func TestChildCluster(t *testing.T) {
	mode := os.Getenv(envChildMode)
	if mode == "" {
		t.Skip("the child role of TestClusterDiesWithItsTestBinary")
	}
	c := pgtest.ServerCluster(t)
	require.NotNil(t, c, "the child must start its own cluster")
	fmt.Printf("cluster %d %s\n", c.PID(), c.Root())
	switch mode {
	case "panic":
		panic("a test panics while the binary's cluster runs")
	case "timeout":
		time.Sleep(time.Minute) // the child runs with -test.timeout=1s
	default:
		time.Sleep(time.Minute) // wait for the parent's signal
	}
}

// TestClusterDiesWithItsTestBinary: a test binary that started a throwaway
// cluster leaves no server process and no directory behind, however it
// ends: a panicking test, a test timeout, SIGINT, SIGTERM, SIGKILL.
func TestClusterDiesWithItsTestBinary(t *testing.T) {
	if _, err := pgtest.FindBinaries(); err != nil {
		if pgtest.Required() {
			t.Fatalf("%v (WFSTORE_REQUIRE_POSTGRES=1)", err)
		}
		t.Skipf("SKIP: no local PostgreSQL binaries to start a cluster with: %v", err)
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	for _, tc := range []struct {
		mode string
		sig  syscall.Signal // sent once the cluster runs; 0: none
		// want checks how the child ended and what it said.
		want func(t *testing.T, st *os.ProcessState, out string)
	}{
		{"panic", 0, func(t *testing.T, st *os.ProcessState, out string) {
			require.Equal(t, 2, st.ExitCode(), out)
			require.Contains(t, out, "panic: a test panics")
		}},
		{"timeout", 0, func(t *testing.T, st *os.ProcessState, out string) {
			require.Equal(t, 2, st.ExitCode(), out)
			require.Contains(t, out, "test timed out")
		}},
		{"sigint", syscall.SIGINT, func(t *testing.T, st *os.ProcessState, out string) {
			requireSignaled(t, st, syscall.SIGINT, out)
			require.Contains(t, out, "pgtest: interrupt: the tests were interrupted; stopped and removed 1 throwaway PostgreSQL cluster(s)")
		}},
		{"sigterm", syscall.SIGTERM, func(t *testing.T, st *os.ProcessState, out string) {
			requireSignaled(t, st, syscall.SIGTERM, out)
			require.Contains(t, out, "stopped and removed 1 throwaway PostgreSQL cluster(s)")
		}},
		{"sigkill", syscall.SIGKILL, func(t *testing.T, st *os.ProcessState, out string) {
			requireSignaled(t, st, syscall.SIGKILL, out)
		}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			// The timeout must outlast the cluster's start on a loaded
			// machine: a child that times out before reporting its cluster
			// is run again with a longer one.
			for _, timeout := range []string{"20s", "90s"} {
				if childEnds(t, exe, tc.mode, timeout, tc.sig, tc.want) || tc.mode != "timeout" {
					return
				}
				t.Logf("the child timed out before its cluster ran (-test.timeout=%s); again with a longer timeout", timeout)
			}
			t.Fatal("the child never reported its cluster")
		})
	}
}

// childEnds runs TestChildCluster in a child binary in mode, signals it
// with sig (if not 0) once its cluster runs, checks its end with want, and
// then that nothing of its cluster remains. It returns false, having
// checked nothing, when a timeout child ended before its cluster ran.
func childEnds(t *testing.T, exe, mode, timeout string, sig syscall.Signal, want func(t *testing.T, st *os.ProcessState, out string)) bool {
	t.Helper()
	args := []string{"-test.run=^TestChildCluster$", "-test.v"}
	if mode == "timeout" {
		args = append(args, "-test.timeout="+timeout)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(withoutEnv(os.Environ(), pgtest.EnvDSN), envChildMode+"="+mode)
	r, w, err := os.Pipe()
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = w, w
	require.NoError(t, cmd.Start())
	w.Close()
	var (
		mu   sync.Mutex
		out  strings.Builder
		info = make(chan [2]string, 1)
		eof  = make(chan struct{})
	)
	go func() {
		defer close(eof)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			line := sc.Text()
			mu.Lock()
			out.WriteString(line + "\n")
			mu.Unlock()
			if f := strings.Fields(line); len(f) == 3 && f[0] == "cluster" {
				info <- [2]string{f[1], f[2]}
			}
		}
	}()
	var pid int
	var root string
	select {
	case i := <-info:
		pid, _ = strconv.Atoi(i[0])
		root = i[1]
	case <-eof:
		_ = cmd.Wait()
		mu.Lock()
		text := out.String()
		mu.Unlock()
		if mode == "timeout" && strings.Contains(text, "test timed out") {
			return false
		}
		t.Fatalf("the child ended before reporting its cluster:\n%s", text)
	case <-time.After(3 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatal("the child did not report its cluster")
	}
	require.NotZero(t, pid, "postmaster pid")
	require.True(t, strings.HasPrefix(filepath.Base(root), "wfstore-pgtest-"), root)
	require.DirExists(t, root)
	require.True(t, alive(pid), "the child's server runs")
	if sig != 0 {
		require.NoError(t, cmd.Process.Signal(sig))
	}
	waitErr := cmd.Wait()
	<-eof
	var exitErr *exec.ExitError
	if waitErr != nil {
		require.True(t, errors.As(waitErr, &exitErr), "%v", waitErr)
	}
	mu.Lock()
	text := out.String()
	mu.Unlock()
	want(t, cmd.ProcessState, text)

	// The watchdog acts as soon as the child is gone; give it time
	// to stop the server.
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if !alive(pid) && len(processesMentioning(root)) == 0 && !exists(root) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.False(t, alive(pid), "the child's postmaster (pid %d) still runs\n%s", pid, text)
	require.Empty(t, processesMentioning(root), "processes of the child's cluster remain")
	require.NoDirExists(t, root, "the child's cluster directory remains")
	return true
}

// TestReapOrphans: a cluster whose owning process is gone, and whose
// watchdog did not act, is stopped and removed by the next ReapOrphans;
// the clusters of live processes are left alone.
func TestReapOrphans(t *testing.T) {
	bins, err := pgtest.FindBinaries()
	if err != nil {
		if pgtest.Required() {
			t.Fatalf("%v (WFSTORE_REQUIRE_POSTGRES=1)", err)
		}
		t.Skipf("SKIP: no local PostgreSQL binaries to start a cluster with: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	live, err := pgtest.StartCluster(ctx, bins)
	require.NoError(t, err)
	t.Cleanup(func() { _ = live.Stop() })
	orphan, err := pgtest.StartCluster(ctx, bins)
	require.NoError(t, err)
	t.Cleanup(func() { _ = orphan.Stop() })
	pid := orphan.PID()
	require.NotZero(t, pid)

	// Make the orphan's owner a process that has exited.
	gone := exec.Command("true")
	require.NoError(t, gone.Run())
	require.NoError(t, os.WriteFile(filepath.Join(orphan.Root(), "owner"), []byte(fmt.Sprintf("%d 1\n", gone.Process.Pid)), 0o644))

	reaped := pgtest.ReapOrphans(bins)
	require.Contains(t, reaped, orphan.Root())
	require.NotContains(t, reaped, live.Root())
	require.NoDirExists(t, orphan.Root())
	require.False(t, alive(pid), "the orphan's server was stopped")
	require.DirExists(t, live.Root())
	require.True(t, alive(live.PID()), "the live cluster still runs")
}

func requireSignaled(t *testing.T, st *os.ProcessState, sig syscall.Signal, out string) {
	t.Helper()
	ws, ok := st.Sys().(syscall.WaitStatus)
	require.True(t, ok)
	require.True(t, ws.Signaled(), "the child should die of %v, got %v\n%s", sig, st, out)
	require.Equal(t, sig, ws.Signal(), out)
}

func withoutEnv(env []string, name string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	// A zombie is dead for our purpose.
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !os.IsNotExist(err)
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// processesMentioning lists the processes whose command line names dir.
func processesMentioning(dir string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		cl := strings.ReplaceAll(string(b), "\x00", " ")
		if strings.Contains(cl, dir) && alive(mustAtoi(e.Name())) {
			out = append(out, e.Name()+": "+cl)
		}
	}
	return out
}

func mustAtoi(s string) int { n, _ := strconv.Atoi(s); return n }

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// TestSkipNotice: without a server, the binary ends by saying on stderr how
// many tests it skipped and how to provide a server (stderr reaches the
// person in -v mode and on failure; the controlling terminal, when there is
// one, in package-list mode).
func TestSkipNotice(t *testing.T) {
	if os.Getenv(envChildMode) != "" {
		t.Skip("not in a child")
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	// -test.v: the child writes nothing to the terminal.
	cmd := exec.Command(exe, "-test.v", "-test.run=^TestSchemaIsFreshAndDropped$")
	cmd.Env = append(withoutEnv(withoutEnv(os.Environ(), pgtest.EnvDSN), pgtest.EnvRequire),
		pgtest.EnvBinDir+"="+t.TempDir(), envChildMode+"=skip")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "github.com/wfstore/wfstore/internal/testkit/pgtest: 2 test(s) SKIPPED: pgtest: NO POSTGRES SERVER: WFSTORE_POSTGRES_DSN is not set and no initdb/pg_ctl found in WFSTORE_POSTGRES_BIN=")
	require.Contains(t, string(out), "set WFSTORE_POSTGRES_DSN=postgres://")

	// Required: the same run fails instead, and says why.
	cmd = exec.Command(exe, "-test.v", "-test.run=^TestSchemaIsFreshAndDropped$")
	cmd.Env = append(cmd.Env[:0:0], withoutEnv(os.Environ(), pgtest.EnvDSN)...)
	cmd.Env = append(cmd.Env, pgtest.EnvRequire+"=1", pgtest.EnvBinDir+"="+t.TempDir(), envChildMode+"=skip")
	out, err = cmd.CombinedOutput()
	require.Error(t, err, "%s", out)
	require.Contains(t, string(out), "WFSTORE_REQUIRE_POSTGRES=1, so this fails instead of skipping")
	require.NotContains(t, string(out), "SKIPPED")
}
