package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash"
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
	in := &c.Insert
	switch r := rec.(type) {
	case backend.Run:
		in.Runs = append(in.Runs, r)
	case backend.RunLink:
		in.Links = append(in.Links, r)
	case backend.Activation:
		in.Activations = append(in.Activations, r)
	case backend.FanOutGroup:
		in.Groups = append(in.Groups, r)
	case backend.Attempt:
		in.Attempts = append(in.Attempts, r)
	case backend.Lease:
		in.Leases = append(in.Leases, r)
	case backend.RetrySchedule:
		in.Schedules = append(in.Schedules, r)
	case backend.Event:
		in.Events = append(in.Events, r)
	default:
		panic(fmt.Sprintf("wfstore: %T is not a backend record", rec))
	}
}

// exportLine is one line of an export stream: a record tagged with its
// kind. Record holds the backend record's fields under their Go names;
// byte fields are base64, so nil, empty and any bytes round-trip exactly.
type exportLine struct {
	Kind   string          `json:"kind"`
	Record json.RawMessage `json:"record"`
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
	spool, err := os.CreateTemp("", "wfstore-export-*.jsonl")
	if err != nil {
		return fmt.Errorf("export spool: %w", err)
	}
	defer func() {
		spool.Close()
		os.Remove(spool.Name())
	}()
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
	if _, err := spool.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("export spool: %w", err)
	}
	rd := bufio.NewReader(spool)
	for {
		line, err := rd.ReadBytes('\n')
		if errors.Is(err, io.EOF) && len(line) == 0 {
			return nil
		}
		if err != nil {
			return fmt.Errorf("export spool: %w", err)
		}
		rec, err := decodeLine(bytes.TrimSuffix(line, []byte{'\n'}))
		if err != nil {
			return fmt.Errorf("export spool: %w", err)
		}
		if err := emit(rec); err != nil {
			return err
		}
	}
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

// encodeLine renders rec as one canonical export line (no newline).
func encodeLine(rec record) ([]byte, error) {
	raw, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	return json.Marshal(exportLine{Kind: kindOf(rec), Record: raw})
}

// decodeLine parses one export line into its record.
func decodeLine(line []byte) (record, error) {
	var l exportLine
	if err := json.Unmarshal(line, &l); err != nil {
		return nil, err
	}
	var rec record
	var err error
	switch l.Kind {
	case "run":
		rec, err = decodeAs[backend.Run](l.Record)
	case "run_link":
		rec, err = decodeAs[backend.RunLink](l.Record)
	case "activation":
		rec, err = decodeAs[backend.Activation](l.Record)
	case "fan_out_group":
		rec, err = decodeAs[backend.FanOutGroup](l.Record)
	case "attempt":
		rec, err = decodeAs[backend.Attempt](l.Record)
	case "lease":
		rec, err = decodeAs[backend.Lease](l.Record)
	case "retry_schedule":
		rec, err = decodeAs[backend.RetrySchedule](l.Record)
	case "event":
		rec, err = decodeAs[backend.Event](l.Record)
	default:
		return nil, fmt.Errorf("unknown record kind %q", l.Kind)
	}
	return rec, err
}

func decodeAs[T any](raw json.RawMessage) (record, error) {
	var v T
	if len(raw) == 0 {
		return nil, errors.New("line has no record")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// digester hashes canonical record lines in order.
type digester struct {
	h hash.Hash
	n int64
}

func newDigester() *digester { return &digester{h: sha256.New()} }

func (d *digester) add(line []byte) {
	d.h.Write(line)
	d.h.Write([]byte{'\n'})
	d.n++
}

func (d *digester) sum() string { return hex.EncodeToString(d.h.Sum(nil)) }

// storeDigest is the SHA-256 of the store's canonical record lines in
// walkStore's order, and the number of records.
func storeDigest(ctx context.Context, b backend.Backend) (string, int64, error) {
	d := newDigester()
	err := walkStore(ctx, b, func(rec record) error {
		line, err := encodeLine(rec)
		if err != nil {
			return err
		}
		d.add(line)
		return nil
	})
	return d.sum(), d.n, err
}

func exportCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var sf storeFlags
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sf.register(fs)
	out := fs.String("out", "", "write the stream to this file (default: standard output)")
	verify := fs.Bool("verify", false, "read the store again after the export and exit 1 unless its digest equals the stream's")
	fs.Usage = func() {
		fmt.Fprint(stderr, `wfstore export: write every record of a store as JSON lines.

Each line is {"kind": K, "record": {...}} with the backend record's fields
(byte fields base64, so every value round-trips exactly). A stream written
by an earlier wfstore lacks the record fields added since; "wfstore import"
reads each of them as its zero value (and digests the lines as this build
writes them, so its digest differs from the earlier export's). Records are read
run by run, all from one snapshot of the store, in bounded pages spooled
to a temporary file, so a store in use exports consistently. The stream's
digest (SHA-256 of its lines) and record count are printed on standard
error; "wfstore import" prints the same digest for the store it fills.

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
	b, err := sf.open(ctx)
	if err != nil {
		return err // the adapter's error names the file or the DSN
	}
	defer b.Close()
	w := stdout
	var f *os.File
	if *out != "" {
		if f, err = os.Create(*out); err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	bw := bufio.NewWriter(w)
	d := newDigester()
	err = walkStore(ctx, b, func(rec record) error {
		line, err := encodeLine(rec)
		if err != nil {
			return err
		}
		d.add(line)
		if _, err := bw.Write(line); err != nil {
			return err
		}
		return bw.WriteByte('\n')
	})
	if err == nil {
		err = bw.Flush()
	}
	if err == nil && f != nil {
		err = f.Sync()
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "exported %d records, digest %s\n", d.n, d.sum())
	if *verify {
		again, n, err := storeDigest(ctx, b)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "store now: %d records, digest %s\n", n, again)
		if again != d.sum() {
			return errors.New("the store's digest differs from the exported stream's (was it written to during the export?)")
		}
	}
	return nil
}

func importCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var sf storeFlags
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sf.register(fs)
	in := fs.String("in", "", "read the stream from this file (default: standard input)")
	fs.Usage = func() {
		fmt.Fprint(stderr, `wfstore import: load a "wfstore export" stream into an empty store.

The target must hold no run (it is created if absent). Records are inserted
through the backend contract in bounded transactions, field for field.
Afterwards the target is read back and its digest compared with the
stream's: both are printed, and the command exits 1 if they differ.

  wfstore import --backend postgres --dsn 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable' --in store.jsonl
  wfstore export --db a.db | wfstore import --backend bolt --db b.bolt

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
	var r io.Reader = os.Stdin
	if *in != "" {
		f, err := os.Open(*in)
		if err != nil {
			return err
		}
		defer f.Close()
		r = f
	}
	b, err := sf.open(ctx)
	if err != nil {
		return err // the adapter's error names the file or the DSN
	}
	defer b.Close()
	var existing []backend.Run
	if err := b.View(ctx, func(rt backend.ReadTx) error {
		var err error
		existing, err = rt.Runs(ctx, backend.RunQuery{Limit: 1})
		return err
	}); err != nil {
		return err
	}
	if len(existing) > 0 {
		return fmt.Errorf("%s is not empty (it has run %q); import only into an empty store", sf.where(), existing[0].ID)
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 1<<30)
	d := newDigester()
	var batch backend.Changes
	flush := func() error {
		if batch.Empty() {
			return nil
		}
		err := b.Update(ctx, func(tx backend.Tx) error { return tx.Apply(ctx, batch) })
		batch = backend.Changes{}
		return err
	}
	lineNo := 0
	for sc.Scan() {
		lineNo++
		if len(sc.Bytes()) == 0 {
			continue
		}
		rec, err := decodeLine(sc.Bytes())
		if err != nil {
			return fmt.Errorf("line %d: %w", lineNo, err)
		}
		canon, err := encodeLine(rec)
		if err != nil {
			return fmt.Errorf("line %d: %w", lineNo, err)
		}
		d.add(canon)
		addInsert(&batch, rec)
		if batch.Len() >= exportBatch {
			if err := flush(); err != nil {
				return fmt.Errorf("inserting records up to line %d: %w", lineNo, err)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if err := flush(); err != nil {
		return fmt.Errorf("inserting records up to line %d: %w", lineNo, err)
	}
	got, n, err := storeDigest(ctx, b)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "stream: %d records, digest %s\n", d.n, d.sum())
	fmt.Fprintf(stdout, "store:  %d records, digest %s\n", n, got)
	if got != d.sum() {
		return errors.New("the imported store's digest differs from the stream's: some record did not round-trip")
	}
	return nil
}
