package etcd_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// startExternal starts an n-member cluster in a child process built
// without the race detector (internal/testkit/etcdcluster/etcd3, members without
// fsync), for a test binary built with it: the detector instruments what
// it compiles, and an embedded etcd server slowed down tenfold turned the
// suite's long cases into timeouts, while what it is there to check is
// our code, not etcd's. It returns the client endpoints, the leader's
// first, and a function that stops the cluster. The child also stops when
// this process dies (its standard input closes).
func startExternal(dir string, n int) (endpoints []string, stop func(), err error) {
	bin := filepath.Join(dir, "etcd3")
	build := exec.Command("go", "build", "-o", bin, "github.com/wfstore/wfstore/internal/testkit/etcdcluster/etcd3")
	if out, err := build.CombinedOutput(); err != nil {
		return nil, nil, fmt.Errorf("building etcd3: %w\n%s", err, out)
	}
	cmd := exec.Command(bin, "-dir", filepath.Join(dir, "cluster"), "-members", strconv.Itoa(n), "-no-fsync", "-stdin")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop = func() {
		_ = stdin.Close()
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case l, ok := <-line:
		if !ok || l == "" {
			stop()
			return nil, nil, errors.New("etcd3 exited before printing its endpoints")
		}
		return strings.Split(l, ","), stop, nil
	case <-time.After(2 * time.Minute):
		stop()
		return nil, nil, errors.New("etcd3 printed no endpoints within 2 minutes")
	}
}
