// Command etcd3 runs a local etcd cluster in one process until it is
// interrupted, for benchmarks and manual tests of the etcd adapter:
//
//	go run ./internal/testkit/etcdcluster/etcd3 -members 3 -dir /tmp/etcd3
//
// It prints the client endpoints (comma-separated, the leader's first) on
// its first line of output; members fsync their log unless -no-fsync is
// given. It stops on SIGINT or SIGTERM, and with -stdin when its standard
// input reaches end of file: a test that starts it with a pipe it never
// writes to stops it by dying, so it never leaves it behind.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/wfstore/wfstore/internal/testkit/etcdcluster"
)

func main() {
	n := flag.Int("members", 3, "number of members")
	dir := flag.String("dir", "", "data directory (a fresh temp dir, removed at exit, when empty)")
	noFsync := flag.Bool("no-fsync", false, "do not fsync the members' logs (not durable)")
	maxOps := flag.Int("max-txn-ops", 16384, "the members' --max-txn-ops")
	stdin := flag.Bool("stdin", false, "also stop when standard input reaches end of file")
	flag.Parse()
	d := *dir
	if d == "" {
		tmp, err := os.MkdirTemp("", "wfstore-etcd3-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer os.RemoveAll(tmp)
		d = tmp
	}
	members, err := etcdcluster.Start(d, *n, etcdcluster.Options{Fsync: !*noFsync, MaxTxnOps: *maxOps})
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcd3:", err)
		os.Exit(1)
	}
	eps := etcdcluster.Leader(members)
	for _, e := range etcdcluster.Endpoints(members) {
		if !slices.Contains(eps, e) {
			eps = append(eps, e)
		}
	}
	fmt.Println(strings.Join(eps, ","))
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	if *stdin {
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin)
			stop <- syscall.SIGTERM
		}()
	}
	<-stop
	for _, m := range members {
		m.Close()
	}
}
