package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// rootPrefix starts the name of every throwaway cluster's directory in the
// system's temporary directory.
const rootPrefix = "wfstore-pgtest-"

// ownerFile, in a cluster's directory, names the process that started the
// cluster: "<pid> <start time>" (the start time tells a live owner from a
// later process that reuses its pid).
const ownerFile = "owner"

// watchdogScript waits for its standard input (a pipe whose only writer is
// the process owning the cluster) to reach end of file, which happens when
// that process exits however it exits, then stops the server and removes
// the cluster's directory. It ignores the terminal's signals, so that a
// Ctrl-C that kills the test binary does not kill the watchdog with it.
// Arguments: pg_ctl, the data directory, the cluster's directory.
const watchdogScript = `trap '' INT TERM HUP QUIT
while read -r _; do :; done
if [ -f "$2/postmaster.pid" ]; then "$1" -D "$2" -m immediate -w -t 30 stop >/dev/null 2>&1; fi
rm -rf "$3"
`

// startWatchdog starts the cluster's watchdog (as the cluster's user).
func (c *Cluster) startWatchdog() error {
	cmd := exec.Command("/bin/sh", "-c", watchdogScript, "pgtest-watchdog", c.bins.PGCtl, c.dataDir, c.root)
	cmd.Dir = "/"
	cmd.Env = c.env()
	// Stdout and stderr stay unset (/dev/null): a pipe to the go command
	// held open by the watchdog would make it wait for the watchdog.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: c.cred}
	w, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		_ = w.Close()
		return err
	}
	c.watchdog, c.watchdogPipe = cmd, w
	return nil
}

// stopWatchdog ends the watchdog once the cluster is already stopped and
// removed (nothing is left for it to do).
func (c *Cluster) stopWatchdog() {
	if c.watchdog == nil {
		return
	}
	_ = c.watchdog.Process.Kill()
	_ = c.watchdogPipe.Close()
	_ = c.watchdog.Wait()
	c.watchdog, c.watchdogPipe = nil, nil
}

// env is the environment of the PostgreSQL programs the cluster runs.
func (c *Cluster) env() []string {
	env := []string{"PATH=" + c.bins.Dir + ":/usr/bin:/bin", "LC_ALL=C", "LANG=C", "TZ=UTC"}
	if c.cred != nil {
		env = append(env, "HOME="+c.root, "USER=postgres", "LOGNAME=postgres")
	}
	return env
}

// writeOwner records this process as the owner of the cluster in root.
func writeOwner(root string) error {
	pid := os.Getpid()
	return os.WriteFile(filepath.Join(root, ownerFile), []byte(fmt.Sprintf("%d %s\n", pid, procStart(pid))), 0o644)
}

// procStart returns a process's start time as the kernel reports it (Linux),
// or "" where it cannot be read.
func procStart(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); the start time is field 22.
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

// ownerAlive reports whether the process recorded in root's owner file is
// still running. A directory without an owner file is treated as alive: it
// was not made by this code, or is being made right now.
func ownerAlive(root string) bool {
	b, err := os.ReadFile(filepath.Join(root, ownerFile))
	if err != nil {
		return true
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return true
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil || pid <= 0 {
		return true
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false // no such process
	}
	if len(f) > 1 {
		if now := procStart(pid); now != "" && now != f[1] {
			return false // the pid now belongs to another process
		}
	}
	return true
}

// ReapOrphans stops and removes the throwaway clusters whose owning process
// is gone (their watchdog could not act, e.g. after a SIGKILL of the whole
// process group), and returns the directories it removed. Clusters of live
// processes, including other test binaries running now, are left alone.
func ReapOrphans(bins Binaries) []string {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), rootPrefix+"*"))
	var reaped []string
	for _, root := range dirs {
		if ownerAlive(root) {
			continue
		}
		c := &Cluster{bins: bins, root: root, dataDir: filepath.Join(root, "data")}
		if st, err := os.Stat(root); err == nil {
			if sys, ok := st.Sys().(*syscall.Stat_t); ok && os.Geteuid() == 0 && sys.Uid != 0 {
				c.cred = &syscall.Credential{Uid: sys.Uid, Gid: sys.Gid}
			}
		}
		if _, err := os.Stat(filepath.Join(c.dataDir, "postmaster.pid")); err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			out, err := c.run(ctx, bins.PGCtl, "-D", c.dataDir, "-m", "immediate", "-w", "stop")
			cancel()
			if err != nil && c.PID() != 0 && processAlive(c.PID()) {
				fmt.Fprintf(os.Stderr, "pgtest: could not stop the orphaned cluster in %s: %v\n%s", root, err, out)
				continue
			}
		}
		if err := os.RemoveAll(root); err == nil {
			reaped = append(reaped, root)
		}
	}
	return reaped
}

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
