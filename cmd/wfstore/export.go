package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/wfstore/wfstore/backend"
)

// exportBatch bounds every read of an export and every transaction of an
// import.
const exportBatch = 500

// record is a value of one of the backend record types.
type record = any

// kindOf names rec's kind in an export line.
func kindOf(rec record) string {
	switch rec.(type) {
	case backend.Run:
		return "run"
	case backend.RunLink:
		return "run_link"
	case backend.Activation:
		return "activation"
	case backend.FanOutGroup:
		return "fan_out_group"
	case backend.Attempt:
		return "attempt"
	case backend.Lease:
		return "lease"
	case backend.RetrySchedule:
		return "retry_schedule"
	case backend.Event:
		return "event"
	}
	panic(fmt.Sprintf("wfstore: %T is not a backend record", rec))
}

// addInsert adds an insert of rec to c.
func addInsert(c *backend.Changes, rec record) {
	if !c.Insert.Add(rec) {
		panic(fmt.Sprintf("wfstore: %T is not a backend record", rec))
	}
}

// walkStore enumerates every record of the store as of one snapshot, run
// by run in run id order (its records in the contract's scan orders),
// calling emit for each. The order depends only on the stored records, so
// two stores with the same records give the same sequence. The snapshot
// is read in pages of exportBatch into a temporary spool file (memory
// stays bounded however large the store) and emitted from it after the
// read transaction ends, so a View the adapter runs again after a
// transient failure starts the spool afresh and nothing is emitted twice.
func walkStore(ctx context.Context, b backend.Backend, emit func(record) error) error {
	spool, err := createSpool("wfstore-export-*.jsonl")
	if err != nil {
		return fmt.Errorf("export spool: %w", err)
	}
	defer closeSpool(spool)
	w := bufio.NewWriter(spool)
	err = b.View(ctx, func(r backend.ReadTx) error {
		if _, err := spool.Seek(0, io.SeekStart); err != nil {
			return err
		}
		if err := spool.Truncate(0); err != nil {
			return err
		}
		w.Reset(spool)
		return spoolStore(ctx, r, w)
	})
	if err != nil {
		return err
	}
	return readSpool(spool, "export spool", emit)
}

// spoolStore writes every record r reads, one export line each, to w.
func spoolStore(ctx context.Context, r backend.ReadTx, w *bufio.Writer) error {
	after := ""
	var recs []record
	for {
		runs, err := r.Runs(ctx, backend.RunQuery{After: after, Limit: exportBatch})
		if err != nil {
			return err
		}
		for _, run := range runs {
			after = run.ID
			if recs, err = runRecords(ctx, r, run.ID, recs[:0]); err != nil {
				return err
			}
			for _, rec := range recs {
				line, err := encodeLine(rec)
				if err != nil {
					return err
				}
				w.Write(line)
				if err := w.WriteByte('\n'); err != nil {
					return fmt.Errorf("export spool: %w", err)
				}
			}
		}
		if len(runs) < exportBatch {
			return w.Flush()
		}
	}
}

// drain reads pages with next until one is shorter than exportBatch,
// passing every record to take (which advances next's cursor).
func drain[T any](next func() ([]T, error), take func(T)) error {
	for {
		page, err := next()
		if err != nil {
			return err
		}
		for _, v := range page {
			take(v)
		}
		if len(page) < exportBatch {
			return nil
		}
	}
}

// runRecords appends every record of one run: the run, its activations
// and fan-out groups, attempts, leases (released too), retry schedules,
// events and, for a root, the links of its descendants.
func runRecords(ctx context.Context, r backend.ReadTx, id string, out []record) ([]record, error) {
	run, err := backend.GetRun(ctx, r, id)
	if errors.Is(err, backend.ErrNotFound) {
		return out, nil
	}
	if err != nil {
		return out, err
	}
	out = append(out, run)
	nActs := 0
	aq := backend.ActivationQuery{RunID: id, Limit: exportBatch}
	for {
		acts, err := r.Activations(ctx, aq)
		if err != nil {
			return out, err
		}
		keys := make([]backend.ActivationKey, len(acts))
		for i, a := range acts {
			out = append(out, a)
			keys[i] = a.Key
			aq.After = backend.NodeRef{NodeID: a.Key.NodeID, ActivationID: a.Key.ActivationID}
		}
		nActs += len(acts)
		if len(keys) > 0 {
			// A fan-out group is keyed by its controller activation.
			f, err := r.Load(ctx, backend.Lookup{Groups: keys})
			if err != nil {
				return out, err
			}
			for _, k := range keys {
				if g, ok := f.Groups[k]; ok {
					out = append(out, g)
				}
			}
		}
		if len(acts) < exportBatch {
			break
		}
	}
	tq := backend.AttemptQuery{RunID: id, Limit: exportBatch}
	err = drain(func() ([]backend.Attempt, error) { return r.Attempts(ctx, tq) }, func(a backend.Attempt) {
		out = append(out, a)
		tq.After = backend.AttemptCursor{PreparedMS: a.PreparedMS, Identity: a.Identity}
	})
	if err != nil {
		return out, err
	}
	lq := backend.LeaseQuery{RunID: id, IncludeReleased: true, Limit: exportBatch}
	err = drain(func() ([]backend.Lease, error) { return r.Leases(ctx, lq) }, func(l backend.Lease) {
		out = append(out, l)
		lq.After = l.Key
	})
	if err != nil {
		return out, err
	}
	// At most one schedule per activation.
	scheds, err := r.DueSchedules(ctx, backend.ScheduleQuery{RunID: id, DueBy: math.MaxInt64, Limit: nActs + exportBatch})
	if err != nil {
		return out, err
	}
	for _, sc := range scheds {
		out = append(out, sc)
	}
	eq := backend.EventQuery{RunID: id, Limit: exportBatch}
	err = drain(func() ([]backend.Event, error) { return r.Events(ctx, eq) }, func(e backend.Event) {
		out = append(out, e)
		eq.After = e.Seq
	})
	if err != nil {
		return out, err
	}
	cq := backend.ChildRunQuery{RootRunID: id, Limit: exportBatch}
	err = drain(func() ([]backend.RunLink, error) { return r.ChildRuns(ctx, cq) }, func(l backend.RunLink) {
		out = append(out, l)
		cq.After = backend.ChildRunCursor{CreatedMS: l.CreatedMS, ChildRunID: l.ChildRunID}
	})
	if err != nil {
		return out, err
	}
	return out, nil
}

// storeDigest digests the store's canonical record lines in walkStore's
// order.
func storeDigest(ctx context.Context, b backend.Backend) (*digester, error) {
	d := newDigester()
	err := walkStore(ctx, b, func(rec record) error {
		line, err := encodeLine(rec)
		if err != nil {
			return err
		}
		d.add(line)
		return nil
	})
	return d, err
}

func exportCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var sf storeFlags
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sf.register(fs)
	out := fs.String("out", "", "write the stream to this file, which must not exist (default: standard output)")
	replace := fs.Bool("replace", false, "with --out: replace an existing file (atomically: the new export is written beside it and renamed over it)")
	verify := fs.Bool("verify", false, "read the store again after the export and exit 1 unless its digest equals the stream's")
	fs.Usage = func() {
		fmt.Fprint(stderr, `wfstore export: write every record of a store as JSON lines.

The stream (format version 2) is a header line {"format":"wfstore-export",
"version":2}, one line {"kind": K, "record": {...}} per record with the
backend record's fields (JSON documents as JSON, other bytes base64, so
every value round-trips exactly), and a trailer line
{"trailer":{"records":N,"sha256":H}}: the record count and the SHA-256 of
the record lines, which import checks to detect a truncated or corrupted
file (not tampering: anyone can recompute it). Records are read run by
run, all from one snapshot of the store, in bounded pages spooled to a
temporary file, so a store in use exports consistently. The digest (H) and
record count are printed on standard error; "wfstore import" prints the
same digest for the store it fills. A stream written by an earlier wfstore
(format version 1, or lacking record fields added since) imports with each
missing field read as its zero value.

--out never overwrites an existing file unless --replace is given; the
file is written under a temporary name beside it (mode 0600), fsynced and
renamed into place, so an interrupted export leaves the old file as it was.
A missing --db file is refused (export creates no store).

  wfstore export --db wfstore-demo.db --out store.jsonl --verify
  wfstore export --backend bolt --db store.bolt > store.jsonl

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
	if *replace && *out == "" {
		return errors.New("--replace goes with --out")
	}
	// The source is opened first, read-only (a missing or empty store is
	// refused, never created), so a mistyped --db leaves --out untouched.
	b, err := sf.openExisting(ctx)
	if err != nil {
		return err
	}
	defer b.Close()
	w := stdout
	var f *atomicFile
	if *out != "" {
		if f, err = createAtomic(*out, *replace); err != nil {
			return err
		}
		defer f.abort()
		w = f
	}
	p := newProgress(stderr, "export")
	defer p.finish()
	p.begin("exporting", "records")
	sw, err := newStreamWriter(w)
	if err == nil {
		err = walkStore(ctx, b, func(rec record) error {
			p.add(1)
			return sw.write(rec)
		})
	}
	if err == nil {
		err = sw.close()
	}
	if err == nil && f != nil {
		err = f.commit()
	}
	if err != nil {
		if f != nil && ctx.Err() != nil {
			return &interruptedError{left: "nothing was written: " + *out + " is as it was"}
		}
		return err
	}
	p.finish()
	d := sw.d
	fmt.Fprintf(stderr, "exported %d records, digest %s\n", d.n, d.sum())
	if *verify {
		p := newProgress(stderr, "export")
		p.begin("reading the store again to compare", "")
		again, err := storeDigest(ctx, b)
		p.finish()
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "store now: %d records, digest %s\n", again.n, again.sum())
		if again.sum() != d.sum() {
			return errors.New("the store's digest differs from the exported stream's (was it written to during the export?)")
		}
	}
	return nil
}

// createSpool creates a temporary file (mode 0600) and removes its name at
// once where the system allows it (the open file stays usable), so a
// killed process leaves no spool behind.
func createSpool(pattern string) (*os.File, error) {
	f, err := os.CreateTemp("", pattern)
	if err != nil {
		return nil, err
	}
	os.Remove(f.Name()) // fails on systems that keep open files' names; closeSpool retries
	return f, nil
}

// closeSpool closes a spool and removes its name if it still has one.
func closeSpool(f *os.File) {
	f.Close()
	os.Remove(f.Name())
}
