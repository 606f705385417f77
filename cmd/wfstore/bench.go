package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	wfbench "github.com/wfstore/wfstore/bench"
)

// bench runs the benchmark workloads (package bench) on the chosen backends
// and prints a markdown table; --out adds report.md and SVG and PNG charts, --json
// one object per backend and workload.
func bench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("wfstore bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	backends := fs.String("backends", "sqlite,bolt,postgres", "comma-separated backends to measure: "+backendNames(nil))
	quick := fs.Bool("quick", false, "smaller sizes: N=2000, 10000 per batch-mode workload, 100k historical attempts")
	n := fs.Int("n", 0, "admissions per workload (default 2000 with --quick, 10000 without)")
	workers := fs.Int("workers", 8, "dispatchers in the parallel and racing workloads")
	batchN := fs.Int("batch-n", 0, "admissions per batch-mode workload (default 5×n: 10000 with --quick)")
	river := fs.String("river", "on", "on: drain the same backlog with River (compiled in) after postgres, in a schema of its own on the same database; off: never")
	history := fs.Int("history", 0, "historical attempts of the growth workload (default 100000 with --quick, 1000000 without)")
	dsn := fs.String("dsn", "", "Postgres DSN (default $WFSTORE_POSTGRES_DSN); postgres is skipped without one")
	etcdEndpoints := fs.String("etcd", "", "comma-separated etcd endpoints (default $WFSTORE_ETCD_ENDPOINTS); etcd is skipped without them")
	etcdOps := fs.Int("etcd-max-txn-ops", 4096, "the etcd cluster's --max-txn-ops (the batch workloads need a few thousand)")
	out := fs.String("out", "", "directory for report.md, report.json and the charts (SVG and PNG)")
	jsonPath := fs.String("json", "", "file for one JSON object per backend and workload")
	dir := fs.String("dir", "", "directory for the store files (default a temporary directory)")
	workloads := fs.String("workloads", "", "comma-separated workloads to run (default all): "+strings.Join(wfbench.Workloads, ", ")+"; a ratio whose reference workload did not run is left out")
	failOnMissed := fs.Bool("fail-on-missed", false, "exit 1 when any target is MISSED, listing them on stderr (default: report and exit 0)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: wfstore bench [flags]\n\n"+
			"Measures every backend side by side against its own bare commit rate, in durable mode:\n"+
			"bare commit, raw admission, sequential, batch (batch 100 over a backlog), parallel and batch-parallel\n"+
			"(distinct runs), racing in both modes (dispatchers of one Store, and of one Store each), history growth,\n"+
			"retry round trip; then the targets, met or missed, and River draining the same backlog on the same Postgres.\n\n")
		fs.PrintDefaults()
	}
	if ok, err := parseFlags(fs, args, stderr); !ok {
		return err
	}
	if *workers < 1 || *n < 0 || *history < 0 || *batchN < 0 {
		fmt.Fprintln(stderr, "wfstore bench: --workers must be positive, --n, --batch-n and --history not negative")
		return errUsage
	}
	if *dsn == "" {
		*dsn = os.Getenv("WFSTORE_POSTGRES_DSN")
	}

	cfg := wfbench.Config{Quick: *quick, N: *n, BatchN: *batchN, Workers: *workers, History: *history, Dir: *dir, Progress: stderr}
	for _, w := range strings.Split(*workloads, ",") {
		w = strings.TrimSpace(w)
		if w == "" {
			continue
		}
		if !slices.Contains(wfbench.Workloads, w) {
			fmt.Fprintf(stderr, "wfstore bench: unknown workload %q (valid values: %s)\n", w, strings.Join(wfbench.Workloads, ", "))
			return errUsage
		}
		cfg.Workloads = append(cfg.Workloads, w)
	}
	var skipped [][2]string
	settings := benchSettings{dsn: *dsn, etcdEndpoints: *etcdEndpoints, etcdOps: *etcdOps}
	for _, b := range strings.Split(*backends, ",") {
		name := strings.TrimSpace(b)
		if name == "" {
			continue
		}
		spec, ok := lookupBackend(name)
		if !ok {
			fmt.Fprintf(stderr, "wfstore bench: unknown backend %q (valid values: %s)\n", name, backendNames(nil))
			return errUsage
		}
		target, skip := spec.benchTarget(settings)
		if skip != "" {
			skipped = append(skipped, [2]string{name, skip})
			continue
		}
		cfg.Targets = append(cfg.Targets, target)
	}
	for _, s := range skipped {
		fmt.Fprintf(stderr, "wfstore bench: %s skipped: %s\n", s[0], s[1])
	}
	if len(cfg.Targets) == 0 {
		return errors.New("no backend to measure")
	}
	var riverNote string
	switch {
	case *river != "on" && *river != "off" && *river != "auto": // auto: the old default
		fmt.Fprintf(stderr, "wfstore bench: --river %q: want on or off (River is compiled in)\n", *river)
		return errUsage
	case *river == "off":
		riverNote = "not run (--river off)"
	case !slices.ContainsFunc(cfg.Targets, func(t wfbench.Target) bool { return t.Name == "postgres" }):
		riverNote = "not run: it needs the postgres backend (" + postgresSkip(skipped) + ")"
	default:
		cfg.River = true
	}
	if *dir != "" {
		if err := os.MkdirAll(*dir, 0o755); err != nil {
			return fmt.Errorf("--dir: %w", err)
		}
	}

	rep, err := wfbench.Run(ctx, cfg)
	if rep == nil {
		return err
	}
	interrupted := err != nil && context.Cause(ctx) != nil
	if interrupted {
		// What was measured stands; the rest was not run.
		rep.MarkPartial(fmt.Sprintf("%v after %.0f s, %s", context.Cause(ctx), rep.Seconds, rep.Where()))
		err = nil
	}
	for _, s := range skipped {
		rep.Skip(s[0], s[1])
	}
	if riverNote != "" {
		rep.Peers = append(rep.Peers, wfbench.Peer{Name: "river", Skipped: riverNote})
	}
	rep.WritePartial(stdout)
	rep.WriteTable(stdout)
	fmt.Fprintln(stdout)
	rep.WriteWrites(stdout)
	fmt.Fprintln(stdout)
	rep.WriteSummary(stdout)
	fmt.Fprintln(stdout)
	rep.WriteChecks(stdout)
	rep.WriteSkips(stdout)
	command := "wfstore bench " + strings.Join(args, " ")
	var wrote []string
	if *jsonPath != "" {
		if jerr := rep.WriteJSON(*jsonPath); jerr != nil {
			return errors.Join(err, jerr)
		}
		wrote = append(wrote, *jsonPath)
	}
	if *out != "" {
		if oerr := rep.WriteDir(*out, command); oerr != nil {
			return errors.Join(err, oerr)
		}
		wrote = append(wrote, *out)
		if !interrupted {
			fmt.Fprintf(stderr, "wfstore bench: report in %s\n", *out)
		}
	}
	if interrupted {
		left := fmt.Sprintf("partial report of %d measured rows (marked partial) on stdout", rep.Measured())
		if len(wrote) > 0 {
			left += " and in " + strings.Join(wrote, ", ")
		}
		return &interruptedError{left: left}
	}
	if err == nil && *failOnMissed {
		err = missedError(rep.Checks())
	}
	return err
}

// postgresSkip says why postgres is not measured: skipped with a reason,
// or not asked for.
func postgresSkip(skipped [][2]string) string {
	for _, s := range skipped {
		if s[0] == "postgres" {
			return "postgres skipped: " + s[1]
		}
	}
	return "not in --backends"
}

// missedError lists the targets checks marks missed, one per line, or
// returns nil when every target was met.
func missedError(checks []wfbench.Check) error {
	var lines []string
	for _, c := range checks {
		if !c.Met {
			lines = append(lines, fmt.Sprintf("%s — %s: %s", c.Backend, c.Target, c.Value))
		}
	}
	switch len(lines) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("1 target missed: %s", lines[0])
	}
	return fmt.Errorf("%d targets missed:\n%s", len(lines), strings.Join(lines, "\n"))
}

// benchSettings are the bench flags a backend's target needs.
type benchSettings struct {
	dsn           string // postgres
	etcdEndpoints string // comma-separated
	etcdOps       int
}

func benchSQLite(benchSettings) (wfbench.Target, string) { return wfbench.SQLite(), "" }

func benchBolt(benchSettings) (wfbench.Target, string) { return wfbench.Bolt(), "" }

func benchPostgres(s benchSettings) (wfbench.Target, string) {
	if s.dsn == "" {
		return wfbench.Target{}, "no DSN (set --dsn or WFSTORE_POSTGRES_DSN)"
	}
	return wfbench.Postgres(s.dsn), ""
}

func benchEtcd(s benchSettings) (wfbench.Target, string) {
	eps := s.etcdEndpoints
	if eps == "" {
		eps = os.Getenv("WFSTORE_ETCD_ENDPOINTS")
	}
	if eps == "" {
		return wfbench.Target{}, "no endpoints (set --etcd or WFSTORE_ETCD_ENDPOINTS)"
	}
	return wfbench.Etcd(strings.Split(eps, ","), s.etcdOps), ""
}
