// Command wfstore runs wfstore's demo, benchmarks and conformance suite.
//
//	wfstore demo  [flags]   admit a demo workflow on an embedded SQLite file
//	wfstore bench [flags]   benchmark the backends side by side
//	wfstore conform [flags] run the conformance suite against a live store
//	wfstore backup  [flags] write a consistent copy of a SQLite or bbolt store
//	wfstore migrate status|up [flags] show or apply schema migrations
//	wfstore inspect runs|run|events [flags] read runs, one run, a run's events
//	wfstore verify  [flags] check a store's durable invariants
//	wfstore export  [flags] write a whole store as JSON lines
//	wfstore import  [flags] load an export into an empty store
//
// Run "wfstore <command> -help" for a command's flags.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
)

func main() {
	if isConformChild() {
		conformChild() // the test process of `wfstore conform`; exits
		return
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	var err error
	switch args[0] {
	case "demo":
		err = demo(ctx, args[1:], stdout, stderr)
	case "bench":
		err = bench(ctx, args[1:], stdout, stderr)
	case "conform":
		err = conform(ctx, args[1:], stdout, stderr)
	case "backup":
		err = backupCmd(ctx, args[1:], stdout, stderr)
	case "migrate":
		err = migrateCmd(ctx, args[1:], stdout, stderr)
	case "inspect":
		err = inspectCmd(ctx, args[1:], stdout, stderr)
	case "verify":
		err = verifyCmd(ctx, args[1:], stdout, stderr)
	case "export":
		err = exportCmd(ctx, args[1:], stdout, stderr)
	case "import":
		err = importCmd(ctx, args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return 0
	default:
		fmt.Fprintf(stderr, "wfstore: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	if err == errUsage {
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "wfstore %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

func usage(w io.Writer) {
	fmt.Fprint(w, `wfstore: durable, exactly-once admission of workflow work.

Usage:
  wfstore demo  [flags]   admit a demo workflow on an embedded SQLite file
  wfstore bench [flags]   benchmark the backends side by side
  wfstore conform [flags] run the conformance suite against a live store
  wfstore backup  [flags] write a consistent copy of a SQLite or bbolt store
  wfstore migrate status|up [flags] show or apply schema migrations
  wfstore inspect runs|run|events [flags] read runs, one run, a run's events
  wfstore verify  [flags] check a store's durable invariants
  wfstore export  [flags] write a whole store as JSON lines
  wfstore import  [flags] load an export into an empty store

Run "wfstore <command> -help" for a command's flags.
`)
}
