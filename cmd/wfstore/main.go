// Command wfstore runs wfstore's demo, benchmarks and conformance suite.
//
//	wfstore demo    [flags]         a short story of admissions on an embedded SQLite file
//	wfstore bench   [flags]         benchmark the backends side by side
//	wfstore conform [flags]         run the conformance suite against a live store
//	wfstore backup  [flags]         write a consistent copy of a SQLite or bbolt store, or an etcd snapshot
//	wfstore migrate status|up [flags]  show or apply schema migrations
//	wfstore inspect runs|run|events [flags]  read runs, one run, a run's events
//	wfstore verify  [flags]         check a store's durable invariants
//	wfstore export  [flags]         write a whole store as JSON lines
//	wfstore import  [flags]         load an export into an empty store
//	wfstore prune   [flags]         delete the history of finished runs
//	wfstore console [flags]         a web console over a store: look, cancel, retry, repair
//	wfstore version                 print the module, Go and adapter versions
//
// Run "wfstore <command> -help" for a command's flags.
//
// Every --json output and the export format name fields in snake_case.
// On a terminal, the long commands (export, import, prune, verify, backup,
// conform) draw a progress line on stderr, cleared before their results;
// off one they print nothing but their results.
//
// Exit status: 0 on success, 1 on an error, 2 on a usage error (the message
// names the valid values), 130 when interrupted by SIGINT (Ctrl-C) and 143
// by SIGTERM; an interrupted command prints one line saying what it left
// behind. A second signal ends the program at once. No message shows a
// password of a --dsn (or of $WFSTORE_POSTGRES_DSN): secrets print as xxxxx.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/wfstore/wfstore/internal/redact"
)

func main() {
	if isConformChild() {
		conformChild() // the test process of `wfstore conform`; exits
		return
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// signalled is the cancellation cause of a command stopped by a signal.
type signalled struct{ sig os.Signal }

func (s signalled) Error() string { return "interrupted by " + signalName(s.sig) }

func signalName(sig os.Signal) string {
	switch sig {
	case syscall.SIGINT:
		return "SIGINT (Ctrl-C)"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return sig.String()
}

// interruptedError is what a command returns when a signal stopped it: what
// it left behind, for the one line the user sees.
type interruptedError struct{ left string }

func (e *interruptedError) Error() string { return e.left }

// readOnly are the commands that never write to a store: interrupted, they
// leave nothing.
var readOnly = map[string]bool{"verify": true, "inspect": true, "version": true}

// errUsage reports a usage error already printed.
var errUsage = errors.New("usage")

func run(args []string, stdout, stderr io.Writer) int {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	finished := make(chan struct{})
	defer close(finished)
	go func() {
		select {
		case sig := <-sigs:
			// The next signal gets the default action: it ends the program.
			signal.Stop(sigs)
			cancel(signalled{sig})
		case <-finished:
			signal.Stop(sigs)
		}
	}()

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
	case "prune":
		err = pruneCmd(ctx, args[1:], stdout, stderr)
	case "console":
		err = consoleCmd(ctx, args[1:], stdout, stderr)
	case "version":
		err = version(ctx, args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		if len(args) > 1 {
			fmt.Fprintf(stderr, "wfstore help: unexpected arguments %q\n", args[1:])
			return 2
		}
		usage(stdout)
		return 0
	default:
		fmt.Fprintf(stderr, "wfstore: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	return exit(ctx, args[0], err, stderr, dsnArgs(args)...)
}

// exit prints err, if any, as one message and returns the exit status. The
// message never shows a secret of the connection strings in dsns.
func exit(ctx context.Context, cmd string, err error, stderr io.Writer, dsns ...string) int {
	var sig signalled
	if errors.As(context.Cause(ctx), &sig) {
		msg := fmt.Sprintf("wfstore %s: %s", cmd, sig.Error())
		var ie *interruptedError
		switch {
		case errors.As(err, &ie):
			msg += "; " + ie.left
		case err == nil:
			msg += " after it had finished"
		case readOnly[cmd]:
			msg += "; nothing was written (it only reads the store)"
		}
		fmt.Fprintln(stderr, redact.Text(msg, dsns...))
		if sig.sig == syscall.SIGTERM {
			return 143
		}
		return 130
	}
	var ue *usageError
	if bad, ok := badDSN(err); ok {
		ue = bad
	}
	switch {
	case err == nil:
		return 0
	case ue != nil:
		fmt.Fprintf(stderr, "wfstore %s: %s (see \"wfstore %s -help\")\n", cmd, redact.Text(ue.msg, dsns...), cmd)
		return 2
	case errors.Is(err, errUsage):
		return 2
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "wfstore %s: %s (see \"wfstore %s -help\")\n", cmd, redact.Text(ue.msg, dsns...), cmd)
		return 2
	}
	fmt.Fprintf(stderr, "wfstore %s: %s\n", cmd, redact.Text(errorText(cmd, err), dsns...))
	return 1
}

// errorText renders err for one command's message: a prefix naming the
// command again is dropped, a segment repeating the one before it
// ("sqlite: sqlite: ...") is dropped, and identical lines of a joined error
// are printed once with a count.
func errorText(cmd string, err error) string {
	var lines []string
	count := map[string]int{}
	for _, line := range strings.Split(err.Error(), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		segs := strings.Split(line, ": ")
		var kept []string
		for i, s := range segs {
			if (i == 0 && (s == cmd || s == "wfstore "+cmd) && len(segs) > 1) || (len(kept) > 0 && kept[len(kept)-1] == s) {
				continue
			}
			kept = append(kept, s)
		}
		line = strings.Join(kept, ": ")
		if count[line] == 0 {
			lines = append(lines, line)
		}
		count[line]++
	}
	for i, l := range lines {
		if n := count[l]; n > 1 {
			lines[i] = fmt.Sprintf("%s (×%d)", l, n)
		}
	}
	return strings.Join(lines, "\n  ")
}

// noArgs rejects positional arguments left after a command's flags.
// parseFlags parses a command's flags and rejects positional arguments. ok
// is false when the command must stop: after -help (err nil: the usage was
// printed and the command succeeds) or on a usage error (errUsage).
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) (ok bool, err error) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return false, nil
		}
		return false, errUsage
	}
	if err := noArgs(fs.Name(), fs.Args(), stderr); err != nil {
		return false, err
	}
	return true, nil
}

func noArgs(cmd string, args []string, stderr io.Writer) error {
	if len(args) > 0 {
		fmt.Fprintf(stderr, "wfstore %s: unexpected arguments %q (see \"wfstore %s -help\")\n", cmd, args, cmd)
		return errUsage
	}
	return nil
}

func usage(w io.Writer) {
	fmt.Fprint(w, `wfstore: durable, exactly-once admission of workflow work.

Usage:
  wfstore demo    [flags]         a short story of admissions on an embedded SQLite file
  wfstore bench   [flags]         benchmark the backends side by side
  wfstore conform [flags]         run the conformance suite against a live store
  wfstore backup  [flags]         write a consistent copy of a SQLite or bbolt store, or an etcd snapshot
  wfstore migrate status|up [flags]  show or apply schema migrations
  wfstore inspect runs|run|events [flags]  read runs, one run, a run's events
  wfstore verify  [flags]         check a store's durable invariants
  wfstore export  [flags]         write a whole store as JSON lines
  wfstore import  [flags]         load an export into an empty store
  wfstore prune   [flags]         delete the history of finished runs
  wfstore console [flags]         a web console over a store: look, cancel, retry, repair
  wfstore version                 print the module, Go and adapter versions

Run "wfstore <command> -help" for a command's flags.
`)
}
