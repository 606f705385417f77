package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/wfstore/wfstore/etcd"
	"github.com/wfstore/wfstore/internal/redact"
)

// conformConfig is what `wfstore conform` was asked to do.
type conformConfig struct {
	backend   string
	dsn       string
	endpoints string
	maxTxnOps int
	dir       string
	run       string
	json      bool
	relaxed   bool
	parallel  int
	timeout   time.Duration
	// scratch: where this run makes its scratch stores: the prefix of its
	// Postgres schemas' names or of its etcd keys, or the folder of its
	// files.
	scratch string
}

// Environment of the child process that runs the suite (see conformChild).
// The names must not start with WFSTORE_CONFORMANCE_: the suite strips
// those from the environment of its own child processes.
const (
	envConformBackend   = "WFSTORE_CLI_CONFORM_BACKEND"
	envConformDSN       = "WFSTORE_CLI_CONFORM_DSN"
	envConformRelaxed   = "WFSTORE_CLI_CONFORM_RELAXED"
	envConformScratch   = "WFSTORE_CLI_CONFORM_SCRATCH" // postgres: the schema name prefix; etcd: the key prefix
	envConformMaxTxnOps = "WFSTORE_CLI_CONFORM_MAX_TXN_OPS"
)

// target is where the run's cases make their stores.
func (c *conformConfig) target() conformTarget {
	server := c.dsn
	if c.endpoints != "" {
		server = c.endpoints
	}
	return conformTarget{server: server, scratch: c.scratch, relaxed: c.relaxed, maxTxnOps: c.maxTxnOps}
}

func conform(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c conformConfig
	fs := flag.NewFlagSet("conform", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.backend, "backend", "sqlite", "adapter to certify: "+backendNames(conformable))
	fs.StringVar(&c.dsn, "dsn", "", "postgres: connection string of the database to work in (each case gets a scratch schema, dropped afterwards)")
	fs.StringVar(&c.endpoints, "endpoints", "", "etcd: the cluster's client URLs, comma-separated (each case works under a fresh key prefix, deleted afterwards)")
	fs.IntVar(&c.maxTxnOps, "max-txn-ops", etcd.DefaultMaxTxnOps, "etcd: the cluster's --max-txn-ops")
	fs.StringVar(&c.dir, "dir", "", "sqlite, bolt: directory for the scratch store files (default: the system temp dir; removed afterwards)")
	fs.StringVar(&c.run, "run", "", "only cases whose name matches this pattern (e.g. 'contract/' or 'store/admission'); '/' separates tier and case")
	fs.BoolVar(&c.json, "json", false, "print the report as JSON instead of markdown")
	fs.BoolVar(&c.relaxed, "relaxed", false, "open the scratch stores in the adapter's relaxed durability mode (faster; the semantics are the same, only fsync differs)")
	fs.IntVar(&c.parallel, "parallel", 2, "cases run at once")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Minute, "stop the suite after this long")
	fs.Usage = func() {
		fmt.Fprint(stderr, `wfstore conform: run the conformance suite against a live store and print a report.

Every case works on its own scratch store (a temp file, a fresh Postgres
schema or a fresh etcd key prefix) that is removed when the case ends. One run's scratch schemas are
named wfstore_conform_<8 hex digits>_<16 hex digits>, and its files are in
one folder; both are printed on standard error when the run starts. Stopped
by SIGINT or SIGTERM, conform ends the suite, drops what its cases left
(or prints exactly which schemas are left and the SQL that drops them) and
prints the partial report. Each schema's comment names the process that
made it; a later run on the same host drops the schemas of conform
processes that are gone (killed with SIGKILL, say), never those of
running ones or schemas without that comment. The report lists each case with pass, fail or
skip (a skip names the adapter capability that explains it), the adapter's
capabilities and settings. The exit status is 1 when a case failed.

  wfstore conform --backend sqlite
  wfstore conform --backend postgres --dsn 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable'
  wfstore conform --backend bolt --run store/ --json
  wfstore conform --backend etcd --endpoints http://127.0.0.1:2379

On etcd a run works under wfstore-conform/<8 hex digits>/ and records its
process under wfstore-conform-runs/; a later run deletes the keys of runs
whose process is gone, as for Postgres schemas.

Flags:
`)
		fs.PrintDefaults()
	}
	if ok, err := parseFlags(fs, args, stderr); !ok {
		return err
	}
	spec, ok := lookupBackend(c.backend)
	if !ok || !conformable(spec) {
		return errUnknownBackend(c.backend, conformable)
	}
	if c.dsn != "" && spec.loc != byDSN {
		return usageErrorf("--dsn is for --backend %s, not %s", namesWith(byDSN), c.backend)
	}
	if c.endpoints != "" && spec.loc != byEtcd {
		return usageErrorf("--endpoints is for --backend %s, not %s", namesWith(byEtcd), c.backend)
	}
	if c.dir != "" && spec.loc != byFile {
		return usageErrorf("--dir is for the file backends (%s)", namesWith(byFile))
	}
	switch spec.loc {
	case byDSN:
		if c.dsn == "" {
			return usageErrorf("--backend %s needs --dsn", c.backend)
		}
	case byEtcd:
		if c.endpoints == "" {
			return usageErrorf("--backend %s needs --endpoints URL[,URL...]", c.backend)
		}
		if c.relaxed {
			return usageErrorf("--relaxed is for --backend %s: etcd's durability is the cluster's own", backendNames(func(s *backendSpec) bool { return s.loc != byEtcd && conformable(s) }))
		}
		if c.maxTxnOps < 1 {
			return usageErrorf("--max-txn-ops must be at least 1, not %d", c.maxTxnOps)
		}
	}
	if c.parallel < 1 {
		return usageErrorf("--parallel must be at least 1")
	}
	if c.dir != "" {
		if st, err := os.Stat(c.dir); err != nil || !st.IsDir() {
			return fmt.Errorf("--dir %s is not a directory", c.dir)
		}
	}

	started := time.Now()
	cleanup, err := c.makeScratch(ctx, stderr)
	if err != nil {
		return err
	}
	info, caps, err := probeAdapter(ctx, c)
	if err != nil {
		cleanup()
		return redactErr(fmt.Errorf("opening a scratch %s store: %w", c.backend, err), c.dsn)
	}
	p := newProgress(stderr, "conform")
	p.begin("running the suite", "cases done")
	res, childErr := runConformChild(ctx, c, stderr, p)
	p.finish()
	left := cleanup()
	rep := conformReport{
		Backend: c.backend, Adapter: newReportAdapter(info),
		Capabilities: reportCapabilities{MultiInstance: caps.MultiInstance, MultiProcess: caps.MultiProcess}, Durability: durabilityName(c.relaxed),
		Filter: c.run, Go: runtime.Version(), Wfstore: moduleVersion(), Started: started.UTC(),
		Seconds: time.Since(started).Seconds(), Cases: res.cases, Scratch: c.scratch,
	}
	rep.count()
	if ctx.Err() != nil {
		rep.Partial = true
	}
	if c.json {
		err = rep.writeJSON(stdout)
	} else {
		err = rep.writeMarkdown(stdout)
	}
	if err != nil {
		return err
	}
	switch {
	case ctx.Err() != nil:
		return &interruptedError{left: "the partial report (the cases that ended) is on stdout; " + left}
	case rep.Summary.Failed > 0:
		return errConformFailed{n: rep.Summary.Failed}
	case childErr != nil:
		return childErr
	case len(rep.Cases) == 0:
		return fmt.Errorf("no case matched --run %q", c.run)
	}
	return nil
}

// errConformFailed reports failed cases; the report already lists them.
type errConformFailed struct{ n int }

func (e errConformFailed) Error() string {
	if e.n == 1 {
		return "1 case failed"
	}
	return strconv.Itoa(e.n) + " cases failed"
}

func durabilityName(relaxed bool) string {
	if relaxed {
		return "relaxed"
	}
	return "durable"
}

// childResults is what the child process reported.
type childResults struct {
	cases []conformCase
}

// runConformChild re-executes this binary as the suite's test process and
// collects each case's result from its verbose test output.
func runConformChild(ctx context.Context, c conformConfig, stderr io.Writer, p *progress) (childResults, error) {
	exe, err := os.Executable()
	if err != nil {
		return childResults{}, fmt.Errorf("finding this executable: %w", err)
	}
	pattern := "^TestConformance$"
	if c.run != "" {
		pattern += "/" + c.run
	}
	cmd := exec.CommandContext(ctx, exe,
		"-test.v=test2json", "-test.run="+pattern, "-test.count=1",
		"-test.parallel="+strconv.Itoa(c.parallel), "-test.timeout="+c.timeout.String())
	cmd.Env = append(os.Environ(), envConformBackend+"="+c.backend, envConformDSN+"="+c.target().server)
	if c.relaxed {
		cmd.Env = append(cmd.Env, envConformRelaxed+"=1")
	}
	switch spec, _ := lookupBackend(c.backend); spec.loc {
	case byDSN:
		cmd.Env = append(cmd.Env, envConformScratch+"="+c.scratch)
	case byEtcd:
		cmd.Env = append(cmd.Env, envConformScratch+"="+c.scratch, envConformMaxTxnOps+"="+strconv.Itoa(c.maxTxnOps))
	default:
		cmd.Env = append(cmd.Env, "TMPDIR="+c.scratch)
	}
	// The suite and its own child processes form one process group, which
	// a signal to conform ends as a whole (a Ctrl-C reaches conform only);
	// conform then removes what they left.
	ownProcessGroup(cmd)
	cmd.WaitDelay = 10 * time.Second
	var errBuf bytes.Buffer
	cmd.Stderr = &errBuf
	out, err := cmd.StdoutPipe()
	if err != nil {
		return childResults{}, err
	}
	if err := cmd.Start(); err != nil {
		return childResults{}, fmt.Errorf("starting the suite: %w", err)
	}
	parser := newTestOutputParser("TestConformance")
	parser.onCase = func(conformCase) { p.add(1) }
	readErr := parser.read(out)
	waitErr := cmd.Wait()
	p.finish()
	res := childResults{cases: parser.results()}
	for i := range res.cases {
		res.cases[i].Output = redact.Text(res.cases[i].Output, c.dsn)
	}
	if readErr != nil {
		return res, fmt.Errorf("reading the suite's output: %w", readErr)
	}
	if waitErr != nil && ctx.Err() == nil {
		failed := false
		for _, cs := range res.cases {
			failed = failed || cs.Result == resultFail
		}
		if !failed {
			// The process failed outside any case (build of a harness,
			// a panic, a timeout): show what it said.
			fmt.Fprint(stderr, redact.Text(errBuf.String(), c.dsn))
			if tail := parser.unattributed(); tail != "" {
				fmt.Fprintln(stderr, redact.Text(tail, c.dsn))
			}
			return res, fmt.Errorf("the suite's process failed: %w", waitErr)
		}
	}
	return res, nil
}

// isConformChild reports whether this process is the suite's test process
// (or one of the suite's own child processes, which inherit the variable).
func isConformChild() bool { return os.Getenv(envConformBackend) != "" }

// makeScratch chooses where this run's scratch stores go (c.scratch),
// says so on stderr, and returns the function that removes whatever is
// left there once the suite has ended, which returns one sentence saying
// what it did or what is left.
func (c *conformConfig) makeScratch(ctx context.Context, stderr io.Writer) (cleanup func() string, err error) {
	spec, _ := lookupBackend(c.backend)
	if spec.loc == byEtcd {
		eps := (&storeFlags{endpoints: c.endpoints}).endpointList()
		if c.scratch, err = newEtcdScratch(ctx, eps); err != nil {
			return nil, err
		}
		fmt.Fprintf(stderr, "wfstore conform: scratch keys under %s on etcd %s\n", c.scratch, strings.Join(eps, ","))
		return func() string {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := dropEtcdScratch(ctx, eps, c.scratch); err != nil {
				return fmt.Sprintf("scratch keys may be left under %s (%v); delete them with: etcdctl del --prefix %s", c.scratch, err, c.scratch)
			}
			return "no scratch key is left (deleted the keys under " + c.scratch + ")"
		}, nil
	}
	if spec.loc == byDSN {
		if c.scratch, err = newScratchPrefix(); err != nil {
			return nil, err
		}
		fmt.Fprintf(stderr, "wfstore conform: scratch schemas %s* on %s\n", c.scratch, redactDSN(c.dsn))
		return func() string {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			dropped, left, err := dropScratchSchemas(ctx, c.dsn, c.scratch)
			if err == nil {
				return fmt.Sprintf("no scratch schema is left (dropped the %d the stopped cases left, named %s*)", len(dropped), c.scratch)
			}
			if len(left) == 0 {
				return fmt.Sprintf("scratch schemas named %s* may be left (%v); drop each with DROP SCHEMA <name> CASCADE", c.scratch, redactErr(err, c.dsn))
			}
			var sql []string
			for _, s := range left {
				sql = append(sql, "DROP SCHEMA "+quoteIdent(s)+" CASCADE;")
			}
			return fmt.Sprintf("scratch schemas left on %s: %s; drop them with: %s", redactDSN(c.dsn), strings.Join(left, ", "), strings.Join(sql, " "))
		}, nil
	}
	if c.scratch, err = os.MkdirTemp(c.dir, "wfstore-conform-"); err != nil {
		return nil, fmt.Errorf("making the scratch folder: %w", err)
	}
	fmt.Fprintf(stderr, "wfstore conform: scratch files under %s\n", c.scratch)
	return func() string {
		if err := os.RemoveAll(c.scratch); err != nil {
			return fmt.Sprintf("scratch files are left under %s (%v); remove them with: rm -rf %s", c.scratch, err, c.scratch)
		}
		return "no scratch file is left (removed " + c.scratch + ")"
	}, nil
}

// quoteIdent quotes a Postgres identifier.
func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
