// Command etcd3 runs a local etcd cluster in one process until it is
// interrupted, for benchmarks and manual tests of the etcd adapter:
//
//	go run ./internal/etcdcluster/etcd3 -members 3 -dir /tmp/etcd3
//
// It prints the client endpoints (comma-separated) on its first line of
// output; members fsync their log unless -no-fsync is given.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/wfstore/wfstore/internal/etcdcluster"
)

func main() {
	n := flag.Int("members", 3, "number of members")
	dir := flag.String("dir", "", "data directory (a fresh temp dir, removed at exit, when empty)")
	noFsync := flag.Bool("no-fsync", false, "do not fsync the members' logs (not durable)")
	maxOps := flag.Int("max-txn-ops", 16384, "the members' --max-txn-ops")
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
	fmt.Println(strings.Join(etcdcluster.Endpoints(members), ","))
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	for _, m := range members {
		m.Close()
	}
}
