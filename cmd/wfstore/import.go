package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/workflow"
)

func importCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var sf storeFlags
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sf.register(fs)
	in := fs.String("in", "", "read the stream from this file (default: standard input)")
	fs.Usage = func() {
		fmt.Fprint(stderr, `wfstore import: load a "wfstore export" stream into an empty store, all or nothing.

It reads every format version export ever wrote (version 1 had no header
and no trailer). First the whole stream is read and checked, before the
target is touched: each record against the Store's own rules (ids, known
statuses and enums, canonical JSON within the size limit, times, counters
and limits not negative, event sequence from 1), every run a record names
must be in the stream, and the trailer's record count and SHA-256 must
match (a truncated or corrupted file is refused). A refused stream names
its line and the rule. Then the records are written in one transaction,
in which the store's invariants (as "wfstore verify" checks them) and the
digest of the records read back are checked before it commits.

SQLite and bbolt: the target file must not exist, or be an empty store; the
store is built in a temporary folder beside it and moved into place only
when complete, so an interrupted import leaves no target (a killed one may
leave a hidden .NAME.import-* folder beside it, safe to delete).
PostgreSQL: the target schema must hold no run; the records commit in one
transaction, so an interrupted import leaves the schema empty.
etcd: the prefix must be empty or hold a store without runs. One etcd
transaction holds at most --max-txn-ops operations, so the records are
written in many; while they are, the prefix is marked as an unfinished
import, which no command or program opens as a store. The mark is
replaced by the store's own only after the checks above passed. An
import that fails removes what it wrote; one that was killed leaves the
mark: run the same import again and it starts over and finishes (an
import of another stream is refused, naming the unfinished one).

  wfstore import --backend postgres --dsn 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable' --in store.jsonl
  wfstore export --db a.db | wfstore import --backend bolt --db b.bolt
  wfstore import --backend etcd --endpoints http://127.0.0.1:2379 --prefix wfstore/ --in store.jsonl

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
		fi, err := os.Stat(*in)
		if err != nil {
			return err
		}
		if fi.IsDir() {
			return fmt.Errorf("--in %s is a directory, not an export stream", *in)
		}
		f, err := os.Open(*in)
		if err != nil {
			return err
		}
		defer f.Close()
		r = f
	}
	p := newProgress(stderr, "import")
	defer p.finish()
	p.begin("reading and checking the stream", "bytes")
	st, err := checkStream(ctx, progressReader{r, p})
	if err != nil {
		if ctx.Err() != nil {
			return &interruptedError{left: "nothing was imported; " + sf.where() + " was not touched"}
		}
		return err
	}
	defer st.close()
	p.begin(fmt.Sprintf("writing %d records and checking them", st.records), "")
	err = sf.spec().importInto(ctx, &sf, st)
	if err != nil {
		var left *interruptedError
		if errors.As(err, &left) {
			return left // the import says what it left
		}
		if ctx.Err() != nil {
			return &interruptedError{left: "nothing was imported; " + sf.where() + " is as it was"}
		}
		return err
	}
	p.finish()
	fmt.Fprintf(stdout, "stream: %d records, digest %s\n", st.records, st.digest)
	fmt.Fprintf(stdout, "store:  %d records, digest %s\n", st.records, st.stored)
	return nil
}

// checkedStream is a stream read and checked whole, its records spooled
// as canonical lines to a temporary file.
type checkedStream struct {
	spool   *os.File
	records int64
	digest  string
	// set is the order-free digest of the records; stored the digest of
	// the store once imported, in export order.
	set    [32]byte
	stored string
	// runLine is the line of each run's record, to name it in messages.
	runLine map[string]int
}

func (c *checkedStream) close() { closeSpool(c.spool) }

// checkStream reads r to its end, checking every record and the
// references between them, and spools the records.
func checkStream(ctx context.Context, r io.Reader) (_ *checkedStream, err error) {
	sr, err := newStreamReader(r)
	if err != nil {
		return nil, err
	}
	spool, err := createSpool("wfstore-import-*.jsonl")
	if err != nil {
		return nil, fmt.Errorf("import spool: %w", err)
	}
	st := &checkedStream{spool: spool, runLine: map[string]int{}}
	defer func() {
		if err != nil {
			st.close()
		}
	}()
	w := bufio.NewWriter(spool)
	d := newDigester()
	missing := map[string]int{} // a run named before its record: the first line naming it
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		rec, canon, err := sr.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if err := checkRecord(rec); err != nil {
			return nil, fmt.Errorf("line %d: %s record: %w", sr.line, kindOf(rec), err)
		}
		if run, ok := rec.(backend.Run); ok {
			if _, dup := st.runLine[run.ID]; dup {
				return nil, fmt.Errorf("line %d: run %q appears twice (first at line %d)", sr.line, run.ID, st.runLine[run.ID])
			}
			st.runLine[run.ID] = sr.line
			delete(missing, run.ID)
		}
		for _, id := range runRefs(rec) {
			if _, ok := st.runLine[id]; !ok {
				if _, seen := missing[id]; !seen {
					missing[id] = sr.line
				}
			}
		}
		d.add(canon)
		w.Write(canon)
		if err := w.WriteByte('\n'); err != nil {
			return nil, fmt.Errorf("import spool: %w", err)
		}
	}
	if len(missing) > 0 {
		first, line := "", 0
		for id, l := range missing {
			if line == 0 || l < line {
				first, line = id, l
			}
		}
		return nil, fmt.Errorf("line %d: names run %q, which the stream does not hold (%d runs are missing)", line, first, len(missing))
	}
	if err := w.Flush(); err != nil {
		return nil, fmt.Errorf("import spool: %w", err)
	}
	st.records, st.digest, st.set = d.n, d.sum(), d.set
	return st, nil
}

// importOpened opens the target and imports into it.
func importOpened(ctx context.Context, sf *storeFlags, st *checkedStream) error {
	b, err := sf.open(ctx)
	if err != nil {
		return err
	}
	err = importInto(ctx, b, sf.where(), st)
	if cerr := b.Close(); err == nil {
		err = cerr
	}
	return err
}

// importFile builds the store in a temporary folder beside the target and
// moves it into place once complete.
func importFile(ctx context.Context, sf *storeFlags, st *checkedStream) error {
	target := sf.path
	replace := false
	fi, err := os.Stat(target)
	switch {
	case err == nil && !fi.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file", target)
	case err == nil:
		// An existing empty store (or empty file) may be replaced.
		if fi.Size() > 0 {
			if err := importOpened(ctx, sf, &checkedStream{spool: nil}); err != nil {
				return err
			}
		}
		replace = true
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	dir, base := filepath.Split(target)
	if dir == "" {
		dir = "."
	}
	tmpDir, err := os.MkdirTemp(dir, "."+base+".import-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmpDir)
	tmp := filepath.Join(tmpDir, base)
	tsf := *sf
	tsf.path = tmp
	if err := importOpened(ctx, &tsf, st); err != nil {
		// Name the target, not the temporary file, in the message.
		return errors.New(strings.ReplaceAll(err.Error(), tmp, target))
	}
	for _, side := range []string{"-wal", "-journal"} {
		if fi, err := os.Stat(tmp + side); err == nil && fi.Size() > 0 {
			return fmt.Errorf("the imported store's %s file was not folded into it on close; nothing was moved to %s", side, target)
		}
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		return err
	}
	if err := syncFile(tmp); err != nil {
		return err
	}
	if replace {
		err = os.Rename(tmp, target)
	} else if err = os.Link(tmp, target); errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s appeared while the import ran; it was left as it is", target)
	}
	if err != nil {
		return err
	}
	return syncDir(dir)
}

func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// errNotEmpty reports a target that holds runs.
var errNotEmpty = errors.New("is not empty")

// importInto writes the spooled records into b in one transaction, which
// commits only if the target held no run, the records satisfy the
// store's invariants and read back with the stream's digest. With a nil
// spool it only checks that the target is empty.
func importInto(ctx context.Context, b backend.Backend, where string, st *checkedStream) error {
	return b.Update(ctx, func(tx backend.Tx) error {
		existing, err := tx.Runs(ctx, backend.RunQuery{Limit: 1})
		if err != nil {
			return err
		}
		if len(existing) > 0 {
			return fmt.Errorf("%s %w (it has run %q); import only into an empty store", where, errNotEmpty, existing[0].ID)
		}
		if st.spool == nil {
			return nil
		}
		var batch backend.Changes
		if err := st.eachSpooled(func(rec record) error {
			addInsert(&batch, rec)
			if batch.Len() >= exportBatch {
				if err := tx.Apply(ctx, batch); err != nil {
					return fmt.Errorf("inserting records: %w", err)
				}
				batch = backend.Changes{}
			}
			return nil
		}); err != nil {
			return err
		}
		if !batch.Empty() {
			if err := tx.Apply(ctx, batch); err != nil {
				return fmt.Errorf("inserting records: %w", err)
			}
		}
		return checkImported(ctx, inTx{Backend: b, tx: tx}, st)
	})
}

// eachSpooled calls fn with each record of the spool, from its start, and
// stops at the first error.
func (st *checkedStream) eachSpooled(fn func(record) error) error {
	return readSpool(st.spool, "import spool", fn)
}

// readSpool calls fn with each record of spool (one export line each),
// from its start, and stops at the first error; what names the spool in
// errors.
func readSpool(spool io.ReadSeeker, what string, fn func(record) error) error {
	if _, err := spool.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	rd := bufio.NewReaderSize(spool, 1<<20)
	for {
		line, err := rd.ReadBytes('\n')
		if errors.Is(err, io.EOF) && len(line) == 0 {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		rec, err := decodeLine(exportVersion, bytes.TrimSuffix(line, []byte{'\n'}))
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if err := fn(rec); err != nil {
			return err
		}
	}
}

// checkImported checks the store's invariants (as "wfstore verify" does)
// and that its records read back with the stream's digest, which it
// records in st.stored.
func checkImported(ctx context.Context, b backend.Backend, st *checkedStream) error {
	rep, err := workflow.New(b).Verify(ctx, workflow.VerifyOptions{MaxViolations: 20})
	if err != nil {
		return err
	}
	if !rep.OK() {
		var lines []string
		for _, v := range rep.Violations {
			lines = append(lines, fmt.Sprintf("line %d (the run's record): %s", st.runLine[v.RunID], v))
		}
		more := ""
		if rep.Truncated {
			more = " (and more)"
		}
		return fmt.Errorf("the stream breaks the store's invariants%s; nothing was imported:\n%s", more, strings.Join(lines, "\n"))
	}
	got, err := storeDigest(ctx, b)
	if err != nil {
		return err
	}
	if got.set != st.set || got.n != st.records {
		return fmt.Errorf("the %d records read back differ from the stream's %d: some record did not round-trip; nothing was imported",
			got.n, st.records)
	}
	st.stored = got.sum()
	return nil
}

// inTx is a Backend whose reads see one open transaction: Verify and the
// digest read the records the import wrote before it commits.
type inTx struct {
	backend.Backend
	tx backend.Tx
}

func (b inTx) View(ctx context.Context, fn func(backend.ReadTx) error) error { return fn(b.tx) }

func (b inTx) Update(context.Context, func(backend.Tx) error) error {
	return errors.New("wfstore import: no write while checking the import")
}
