package pgtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Binaries are the PostgreSQL programs a throwaway cluster needs.
type Binaries struct {
	Dir    string // directory holding them
	InitDB string
	PGCtl  string
}

// FindBinaries looks for initdb and pg_ctl in the directory named by
// WFSTORE_POSTGRES_BIN when it is set (and only there), else in PATH, then
// in the highest version of /usr/lib/postgresql/*/bin.
func FindBinaries() (Binaries, error) {
	if d := os.Getenv(EnvBinDir); d != "" {
		b := Binaries{Dir: d, InitDB: filepath.Join(d, "initdb"), PGCtl: filepath.Join(d, "pg_ctl")}
		if isExec(b.InitDB) && isExec(b.PGCtl) {
			return b, nil
		}
		return Binaries{}, fmt.Errorf("%w in %s=%s", ErrNoBinaries, EnvBinDir, d)
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		dir := filepath.Dir(p)
		ctl := filepath.Join(dir, "pg_ctl")
		if _, err := os.Stat(ctl); err != nil {
			if ctl, err = exec.LookPath("pg_ctl"); err != nil {
				ctl = ""
			}
		}
		if ctl != "" {
			return Binaries{Dir: dir, InitDB: p, PGCtl: ctl}, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return pgVersion(dirs[i]) > pgVersion(dirs[j]) })
	for _, d := range dirs {
		b := Binaries{Dir: d, InitDB: filepath.Join(d, "initdb"), PGCtl: filepath.Join(d, "pg_ctl")}
		if isExec(b.InitDB) && isExec(b.PGCtl) {
			return b, nil
		}
	}
	return Binaries{}, fmt.Errorf("%w in PATH or /usr/lib/postgresql/*/bin", ErrNoBinaries)
}

func pgVersion(binDir string) float64 {
	v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(binDir)), 64)
	return v
}

func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// Cluster is a throwaway PostgreSQL cluster in a temporary directory.
type Cluster struct {
	bins    Binaries
	root    string // temporary directory (removed by Stop)
	dataDir string
	sockDir string
	port    int
	cred    *syscall.Credential // nil unless we run it as another user
	// RunAs names the OS user running the server.
	RunAs string

	// watchdog stops the cluster and removes root when this process dies
	// without calling Stop; closing watchdogPipe (Stop does) or this
	// process's death ends it.
	watchdog     *exec.Cmd
	watchdogPipe io.WriteCloser

	stopOnce sync.Once
	stopErr  error
}

// DSN returns a connection string for the cluster's "postgres" database
// (TCP on 127.0.0.1).
func (c *Cluster) DSN() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
}

// SocketDSN returns a connection string over the cluster's unix socket.
func (c *Cluster) SocketDSN() string {
	return fmt.Sprintf("postgres://postgres@/postgres?host=%s&port=%d&sslmode=disable", url.QueryEscape(c.sockDir), c.port)
}

// DataDir returns the cluster's data directory.
func (c *Cluster) DataDir() string { return c.dataDir }

// Root returns the temporary directory holding the data directory, the
// socket and the server log; Stop removes it.
func (c *Cluster) Root() string { return c.root }

// PID returns the server's (postmaster's) process id, or 0 when it is not
// running.
func (c *Cluster) PID() int {
	b, err := os.ReadFile(filepath.Join(c.dataDir, "postmaster.pid"))
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, _ := strconv.Atoi(strings.TrimSpace(line))
	return pid
}

// Port returns the TCP port.
func (c *Cluster) Port() int { return c.port }

// StartCluster creates and starts a throwaway cluster. When the process is
// root it runs initdb and the server as the "postgres" OS user. The cluster
// is registered for StopAll (and so for Main).
//
// The cluster does not outlive this process: besides Stop (and Main, which
// also stops it on SIGINT and SIGTERM), a watchdog process started with it
// stops the server and removes its directory as soon as this process is
// gone, however it ended (a panicking test, a signal, SIGKILL). Clusters
// left behind by processes that died before their watchdog could act are
// reaped the next time a cluster is started.
func StartCluster(ctx context.Context, bins Binaries) (*Cluster, error) {
	ReapOrphans(bins)
	c := &Cluster{bins: bins}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root, initdb refuses root, and there is no \"postgres\" user to run it as: %w", err)
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("postgres user ids: %w", err)
		}
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		c.RunAs = "postgres"
	} else if u, err := user.Current(); err == nil {
		c.RunAs = u.Username
	}
	root, err := os.MkdirTemp("", rootPrefix)
	if err != nil {
		return nil, err
	}
	c.root = root
	c.dataDir = filepath.Join(root, "data")
	c.sockDir = filepath.Join(root, "sock")
	if err := os.Mkdir(c.sockDir, 0o700); err != nil {
		c.cleanup()
		return nil, err
	}
	if c.cred != nil {
		for _, p := range []string{root, c.sockDir} {
			if err := os.Chown(p, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
				c.cleanup()
				return nil, fmt.Errorf("chown %s to postgres: %w", p, err)
			}
		}
	}
	if err := writeOwner(root); err != nil {
		c.cleanup()
		return nil, err
	}
	if err := c.startWatchdog(); err != nil {
		c.cleanup()
		return nil, fmt.Errorf("pgtest: start the cluster's watchdog: %w", err)
	}
	if out, err := c.run(ctx, bins.InitDB, "-D", c.dataDir, "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		c.cleanup()
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	var lastErr error
	for try := 0; try < 5; try++ {
		port, err := freePort()
		if err != nil {
			c.cleanup()
			return nil, err
		}
		c.port = port
		opts := strings.Join([]string{
			"-c listen_addresses=127.0.0.1",
			"-p " + strconv.Itoa(port),
			"-k " + c.sockDir,
			"-c max_connections=300",
			"-c fsync=off", // throwaway: durability of the cluster itself does not matter
			"-c full_page_writes=off",
			"-c shared_buffers=64MB",
		}, " ")
		logFile := filepath.Join(c.root, "server.log")
		out, err := c.run(ctx, bins.PGCtl, "-D", c.dataDir, "-o", opts, "-l", logFile, "-w", "-t", "60", "start")
		if err == nil {
			clusterMu.Lock()
			clusters = append(clusters, c)
			clusterMu.Unlock()
			return c, nil
		}
		log, _ := os.ReadFile(logFile)
		lastErr = fmt.Errorf("pg_ctl start: %w\n%s\n%s", err, out, log)
		if !strings.Contains(string(log), "could not bind") && !strings.Contains(string(log), "already in use") {
			break
		}
	}
	c.cleanup()
	return nil, lastErr
}

// run runs a PostgreSQL program as the cluster's user; output goes to a
// file (never a pipe a daemonized server could keep open).
func (c *Cluster) run(ctx context.Context, prog string, args ...string) (string, error) {
	outPath := filepath.Join(c.root, "cmd.out")
	f, err := os.Create(outPath)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if c.cred != nil {
		_ = f.Chown(int(c.cred.Uid), int(c.cred.Gid))
	}
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Dir = c.root
	cmd.Stdin = nil
	cmd.Stdout = f
	cmd.Stderr = f
	cmd.Env = c.env()
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	err = cmd.Run()
	out, _ := os.ReadFile(outPath)
	return string(out), err
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Stop stops the server (immediate shutdown) and deletes its directory.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if _, err := os.Stat(filepath.Join(c.dataDir, "postmaster.pid")); err == nil {
			if out, err := c.run(ctx, c.bins.PGCtl, "-D", c.dataDir, "-m", "immediate", "-w", "stop"); err != nil {
				c.stopErr = fmt.Errorf("pg_ctl stop: %w\n%s", err, out)
			}
		}
		c.cleanup()
		c.stopWatchdog()
		clusterMu.Lock()
		for i, o := range clusters {
			if o == c {
				clusters = append(clusters[:i], clusters[i+1:]...)
				break
			}
		}
		clusterMu.Unlock()
	})
	return c.stopErr
}

// cleanup removes the cluster's directory (and ends the watchdog, which has
// nothing left to do). The server must be stopped already.
func (c *Cluster) cleanup() {
	if c.root != "" {
		_ = os.RemoveAll(c.root)
	}
	c.stopWatchdog()
}

// Restart stops the server at once, as a crash would (immediate
// shutdown: no checkpoint, clients cut off mid-transaction), and starts
// it again on the same port and data directory. It returns once the
// server accepts connections.
func (c *Cluster) Restart(ctx context.Context) error {
	if out, err := c.run(ctx, c.bins.PGCtl, "-D", c.dataDir, "-l", filepath.Join(c.root, "server.log"), "-m", "immediate", "-w", "-t", "60", "restart"); err != nil {
		log, _ := os.ReadFile(filepath.Join(c.root, "server.log"))
		return fmt.Errorf("pg_ctl restart: %w\n%s\n%s", err, out, log)
	}
	return nil
}
