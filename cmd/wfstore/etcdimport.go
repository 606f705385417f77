package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/etcd"
)

// importEtcd loads the checked stream into an etcd prefix that is empty or
// holds an empty store. One etcd transaction holds at most --max-txn-ops
// operations, so the records are written in many transactions; the store
// is never seen half-imported:
//
//  1. the store is opened (created when the prefix is empty) and checked
//     empty; then one transaction, which applies only if nothing under the
//     prefix changed since the check, replaces the store's marker with the
//     import's mark (the stream's digest and record count). From then on
//     the prefix holds keys but no marker: the adapter, so every command
//     and every program, refuses to open it as a store, and the commands
//     name the unfinished import (errImportUnfinished);
//  2. the records are written in transactions of at most --max-txn-ops
//     operations (a batch the cluster refuses as too large is split);
//  3. the store's invariants and the digest of the records read back are
//     checked; a stream that fails them is removed again;
//  4. one transaction, which applies only while the mark is still this
//     import's, puts the marker back and deletes the mark.
//
// Killed at any point, the prefix is as it was, complete, or marked
// unfinished. Run again with the same stream, the import removes what the
// unfinished one wrote (under its mark) and imports again; with another
// stream it refuses, naming the unfinished import's stream.
func importEtcd(ctx context.Context, f *storeFlags, st *checkedStream) error {
	cli, err := newEtcdClient(ctx, f)
	if err != nil {
		return err
	}
	defer cli.Close()
	markKey := etcdMetaKey(f.prefix, "import")
	for range 3 {
		m, err := readEtcdMeta(ctx, cli, f.prefix)
		if err != nil {
			return fmt.Errorf("%s: %w", f.where(), err)
		}
		if m.imp == nil {
			break
		}
		var mk importMark
		if json.Unmarshal(m.imp, &mk) != nil || mk.Digest != st.digest || mk.Records != st.records {
			return fmt.Errorf("%w; it is of another stream than this one (%d records, digest %s)",
				unfinishedImport(f.where(), m), st.records, st.digest)
		}
		// The same stream: remove what the stopped import wrote, and
		// start again.
		if _, err := removeOwnedPrefix(ctx, cli, f.prefix, markKey, m.impRev); err != nil {
			return fmt.Errorf("%s: removing the unfinished import: %w", f.where(), err)
		}
	}
	b, err := etcd.Open(ctx, cli, f.etcdOptions()...) // creates the store on an empty prefix
	if err != nil {
		return err
	}
	defer b.Close()
	// rev: the prefix as it was when checked empty; the mark goes in
	// only if nothing under the prefix changed since.
	m, err := readEtcdMeta(ctx, cli, f.prefix)
	if err != nil {
		return fmt.Errorf("%s: %w", f.where(), err)
	}
	if err := b.View(ctx, func(tx backend.ReadTx) error {
		existing, err := tx.Runs(ctx, backend.RunQuery{Limit: 1})
		if err == nil && len(existing) > 0 {
			err = fmt.Errorf("%s %w (it has run %q); import only into an empty store", f.where(), errNotEmpty, existing[0].ID)
		}
		return err
	}); err != nil {
		return err
	}
	mark, err := json.Marshal(importMark{Digest: st.digest, Records: st.records, Started: time.Now().UTC()})
	if err != nil {
		return err
	}
	storeKey := etcdMetaKey(f.prefix, "store")
	rctx, cancel := context.WithTimeout(ctx, etcd.DefaultRequestTimeout)
	resp, err := cli.Txn(rctx).If(
		clientv3.Compare(clientv3.ModRevision(f.prefix), "<", m.rev+1).WithRange(prefixEnd(f.prefix)),
		clientv3.Compare(clientv3.Value(storeKey), "=", etcdStoreMarker),
	).Then(clientv3.OpDelete(storeKey), clientv3.OpPut(markKey, string(mark))).Commit()
	cancel()
	switch {
	case err != nil && ctx.Err() != nil:
		return &interruptedError{left: "the import was stopped before writing a record; " + f.where() +
			" is as it was, or marked unfinished (then the same import run again finishes it)"}
	case err != nil:
		return fmt.Errorf("%s: marking the import: %w", f.where(), err)
	case !resp.Succeeded:
		return fmt.Errorf("%s changed while the import checked that it is empty; nothing was imported", f.where())
	}
	markRev := resp.Header.Revision

	err = importEtcdRecords(ctx, b, f, st)
	if err == nil {
		rctx, cancel := context.WithTimeout(ctx, etcd.DefaultRequestTimeout)
		resp, err = cli.Txn(rctx).If(clientv3.Compare(clientv3.ModRevision(markKey), "=", markRev)).
			Then(clientv3.OpPut(storeKey, etcdStoreMarker), clientv3.OpDelete(markKey)).Commit()
		cancel()
		switch {
		case err == nil && resp.Succeeded:
			return nil
		case err == nil:
			return fmt.Errorf("%s: another process took over the import's prefix; the import did not complete", f.where())
		case ctx.Err() == nil:
			return fmt.Errorf("%s: completing the import: %w (if it is still marked unfinished, run the same import again)", f.where(), err)
		}
	}
	// Failed or stopped after the mark: remove what was written, if the
	// mark is still this import's. The cleanup outlives a cancelled ctx
	// by a few seconds.
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), 2*etcd.DefaultRequestTimeout)
	removed, rerr := removeOwnedPrefix(cctx, cli, f.prefix, markKey, markRev)
	ccancel()
	left := "the records written were removed: the prefix holds no key"
	if rerr != nil || !removed {
		left = "the prefix is marked as an unfinished import, which no command opens as a store; run the same import again to finish it"
	}
	if ctx.Err() != nil {
		return &interruptedError{left: "the import into " + f.where() + " was stopped; " + left}
	}
	return fmt.Errorf("%w; %s", err, left)
}

// importEtcdRecords writes the spooled records in transactions that fit
// the cluster's limits, then checks the store's invariants and the digest
// of the records read back.
func importEtcdRecords(ctx context.Context, b *etcd.Backend, f *storeFlags, st *checkedStream) error {
	size := etcdRecordsPerTxn(f)
	var pending []record
	flush := func(all bool) error {
		for len(pending) > 0 && (all || len(pending) >= size) {
			n := min(size, len(pending))
			var c backend.Changes
			for _, rec := range pending[:n] {
				addInsert(&c, rec)
			}
			err := b.Update(ctx, func(tx backend.Tx) error { return tx.Apply(ctx, c) })
			if err != nil && tooLarge(err) && n > 1 {
				size = n / 2
				continue
			}
			if err != nil {
				return fmt.Errorf("inserting records: %w", err)
			}
			pending = pending[n:]
		}
		return nil
	}
	if err := st.eachSpooled(func(rec record) error {
		pending = append(pending, rec)
		return flush(false)
	}); err != nil {
		return err
	}
	if err := flush(true); err != nil {
		return err
	}
	return checkImported(ctx, importingEtcd{b}, st)
}

// importingEtcd is the store being imported, whose index check (etcd's
// Verify: every key under the prefix belongs to the store) accepts the
// import's own mark, and nothing else it would refuse.
type importingEtcd struct{ *etcd.Backend }

func (b importingEtcd) Verify(ctx context.Context) error {
	err := b.Backend.Verify(ctx)
	var ve *etcd.VerifyError
	if !errors.As(err, &ve) {
		return err
	}
	var rest []etcd.Discrepancy
	for _, d := range ve.Discrepancies {
		if d.Space == "prefix" && string(d.Key) == etcdMetaKey("", "import") {
			continue
		}
		rest = append(rest, d)
	}
	if len(rest) == 0 {
		return nil
	}
	return &etcd.VerifyError{Discrepancies: rest}
}

// etcdRecordsPerTxn is how many records one transaction writes: a record
// writes itself and its index entries, and the commit compares each key
// it read or creates: at most sixteen operations per record.
func etcdRecordsPerTxn(f *storeFlags) int { return max(1, f.maxTxnOps/16) }

// explain adds to an error of an etcd transaction the cluster refused as
// too large what to do about it; other errors are returned as they are.
func (f *storeFlags) explain(err error) error {
	if err == nil || f.spec().loc != byEtcd || !tooLarge(err) {
		return err
	}
	return fmt.Errorf("%w (one transaction of this command needs more operations than the cluster allows: run the cluster with a larger --max-txn-ops, a few thousand, and pass the same value as --max-txn-ops here)", err)
}

// tooLarge reports a transaction the cluster refused for its size.
func tooLarge(err error) bool {
	for _, e := range []error{rpctypes.ErrTooManyOps, rpctypes.ErrRequestTooLarge} {
		if errors.Is(err, e) || strings.Contains(err.Error(), rpctypes.ErrorDesc(e)) {
			return true
		}
	}
	return false
}
