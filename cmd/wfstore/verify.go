package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/wfstore/wfstore/workflow"
)

// errViolations makes the command exit 1 after it printed the violations.
var errViolations = errors.New("the store violates its invariants")

func verifyCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var sf storeFlags
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sf.register(fs)
	runID := fs.String("run", "", "check only this run (skips the backend's own index check)")
	maxV := fs.Int("max", 1000, "stop after this many violations")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	fs.Usage = func() {
		fmt.Fprint(stderr, `wfstore verify: check a store's durable invariants through the backend contract.

It checks, run by run: at most one live attempt per activation; activation
status against its attempts; receipts and handoff states; the run counters
against the rows; unreleased leases held only by live attempts; retry
schedules naming their activation's latest, failed attempt; the admissible
flag; and the backend's own index check where it has one (bbolt). It writes
nothing, and never creates a store: a path that does not exist, is empty or
is not a regular file, and a Postgres schema that does not exist or is
empty, are refused ("no wfstore store at ..."). Exit status: 0 clean, 1
violations found (listed) or error, 2 usage.

  wfstore verify --db wfstore-demo.db
  wfstore verify --backend bolt --db store.bolt --json
  wfstore verify --backend postgres --dsn 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable'

Flags:
`)
		fs.PrintDefaults()
	}
	if ok, err := parseFlags(fs, args, stderr); !ok {
		return err
	}
	if err := sf.check(); err != nil {
		return err
	}
	b, err := sf.openExisting(ctx)
	if err != nil {
		return err // names the file or the DSN
	}
	defer b.Close()
	p := newProgress(stderr, "verify")
	p.begin("checking "+sf.where(), "")
	rep, err := workflow.New(b).Verify(ctx, workflow.VerifyOptions{RunID: *runID, MaxViolations: *maxV})
	p.finish()
	if err != nil {
		return err
	}
	if *asJSON {
		if rep.Violations == nil {
			rep.Violations = []workflow.Violation{}
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		for _, v := range rep.Violations {
			fmt.Fprintln(stdout, v.String())
		}
		more := ""
		if rep.Truncated {
			more = " (stopped at --max; more may exist)"
		}
		fmt.Fprintf(stdout, "%d runs checked, %d violations%s\n", rep.Runs, len(rep.Violations), more)
	}
	if !rep.OK() {
		return errViolations
	}
	return nil
}
