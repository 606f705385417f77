package bench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wfstore/wfstore/internal/benchdata"
	"github.com/wfstore/wfstore/postgres"
	"github.com/wfstore/wfstore/workflow"
)

// ProbeSemantics says what the hand-written probe writes and skips; the
// report prints it next to the probe's figures.
const ProbeSemantics = "The probe is hand-written SQL, not wfstore: on the adapter's own schema (same tables, indexes and fill) " +
	"and the same backlog, each batch of 100 is the same three SERIALIZABLE transactions with the same rows written per admission " +
	"(prepare: the activation updated by compare-and-set, the attempt inserted, an attempt_prepared event; handoff: the attempt's " +
	"handoff by compare-and-set, a dispatch_handed_off event; receipt: the attempt's status and receipt by compare-and-set, an " +
	"attempt_admitted event; the run's counters in each), one multi-row statement per table and two round trips per transaction. " +
	"It skips what wfstore's decisions add: the records' full comparison (Expect), the authority and capacity checks, leases, " +
	"the claim, the per-record encoding. Its rate is the ceiling these writes allow on this machine."

// RunProbe admits a backlog of n activations with the hand-written probe
// (see ProbeSemantics) on the database at dsn, measured as RunRiver
// measures River's drain: from the first batch to the last commit, with
// the machine's CPU time, the rows the schema's tables wrote and the
// server's WAL. It creates a fresh schema (probebench_<pid>_<random>)
// through the adapter, seeds the backlog as the batch workload does (not
// counted), and drops the schema on every exit path. It never fails the
// run: a probe that cannot run comes back with Skipped saying why.
func RunProbe(ctx context.Context, dsn string, n int, log io.Writer) Peer {
	if log == nil {
		log = io.Discard
	}
	p, err := runProbe(ctx, dsn, n, log)
	if err != nil {
		return Peer{Name: "probe", Schema: p.Schema, Skipped: fmt.Sprintf("the hand-written probe failed: %v", err)}
	}
	return p
}

// probeAct is one activation of a probe batch.
type probeAct struct{ run, node, act string }

func runProbe(ctx context.Context, dsn string, n int, log io.Writer) (p Peer, err error) {
	p = Peer{Name: "probe", Version: "hand-written SQL", Jobs: n}
	if n < 1 {
		return p, errors.New("no activations to admit")
	}
	pool, schema, err := scratchPool(ctx, dsn, "probebench", 4)
	p.Schema = schema
	if err != nil {
		return p, err
	}
	defer pool.Close()
	be, err := postgres.OpenPool(ctx, pool, postgres.WithSchema(p.Schema))
	if err != nil {
		return p, err
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		be.Close()
		if _, derr := pool.Exec(dctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{p.Schema}.Sanitize()+" CASCADE"); derr != nil {
			err = errors.Join(err, fmt.Errorf("drop schema %s: %w", p.Schema, derr))
		}
	}()
	if _, err := benchdata.SeedRuns(ctx, workflow.New(be), be, "probe", n, perRun, nil, time.Now()); err != nil {
		return p, fmt.Errorf("seed: %w", err)
	}
	fmt.Fprintf(log, "probe: %d activations seeded; admitting\n", n)
	q := probeSQL(pgx.Identifier{p.Schema}.Sanitize())

	writes := &writeCounts{pg: &pgWrites{pool: pool, schema: p.Schema, appName: p.Schema}}
	writes.begin(ctx)
	b0, tot0, ok0 := machineCPU()
	wal0 := writes.walBefore(ctx)
	start := time.Now()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return p, err
	}
	for done := 0; done < n; {
		k, err := probeBatch(ctx, conn.Conn(), q, min(batchSize, n-done))
		if err != nil {
			conn.Release()
			return p, err
		}
		if k == 0 {
			conn.Release()
			return p, fmt.Errorf("admitted %d of %d: no pending work left", done, n)
		}
		done += k
	}
	conn.Release()
	elapsed := time.Since(start)
	b1, tot1, ok1 := machineCPU()
	writes.walAfter(ctx, wal0)
	writes.end(ctx)

	p.Seconds = elapsed.Seconds()
	p.JobsPerSec = float64(n) / elapsed.Seconds()
	if ok0 && ok1 && tot1 > tot0 {
		p.MachineBusyPct = 100 * float64(b1-b0) / float64(tot1-tot0)
		p.MachineCPUPerJobUS = float64(b1-b0) * 1e6 / userHZ / float64(n)
	}
	var r Result
	r.Ops = n
	writes.fill(&r)
	p.RowsPerJob, p.WALBytesPerJob = r.RowsPerOp, r.WALBytesPerOp
	return p, nil
}

// probeQueries are the probe's statements on one schema.
type probeQueries struct {
	discover, runs               string
	prepare, handoff, receipt    string
	insertAttempts, insertEvents string
	bumpRuns                     string
}

func probeSQL(s string) probeQueries {
	keys := "unnest($1::text[], $2::text[], $3::text[]) AS k(r, n, a)"
	on := "x.run_id = k.r AND x.node_id = k.n AND x.activation_id = k.a"
	// Each compare-and-set returns the rows this statement changed.
	return probeQueries{
		discover: "SELECT run_id, node_id, activation_id FROM " + s + ".activations WHERE admissible" +
			" ORDER BY run_id, node_id, activation_id LIMIT $1",
		runs: "SELECT id, last_event_seq FROM " + s + ".runs WHERE id = ANY($1::text[]) ORDER BY id",
		prepare: "UPDATE " + s + ".activations AS x SET status = 'running', admissible = false, last_attempt = x.last_attempt + 1," +
			" updated_ms = $4 FROM " + keys + " WHERE " + on + " AND x.admissible RETURNING x.activation_id",
		handoff: "UPDATE " + s + ".attempts AS x SET handoff = 'recorded', handoff_token = md5(x.identity)" +
			" FROM " + keys + " WHERE " + on + " AND x.attempt = 1 AND x.handoff = 'pending' RETURNING x.activation_id",
		receipt: "UPDATE " + s + ".attempts AS x SET status = 'admitted', receipt = $4, admitted_ms = $5" +
			" FROM " + keys + " WHERE " + on + " AND x.attempt = 1 AND x.status = 'prepared' AND x.handoff = 'recorded'" +
			" RETURNING x.activation_id",
		insertAttempts: "INSERT INTO " + s + ".attempts (run_id, node_id, activation_id, attempt, identity, status, side_effect," +
			" intent, intent_checksum, receipt, handoff, detail, prepared_ms, admitted_ms, terminal_ms, handoff_token)" +
			" SELECT k.r, k.n, k.a, 1, i, 'prepared', 'read_only', $5, $6, NULL, 'pending', NULL, $7, $7, 0, ''" +
			" FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS k(r, n, a, i)",
		insertEvents: "INSERT INTO " + s + ".events (run_id, seq, type, payload, created_ms)" +
			" SELECT r, q, $3, p, $5 FROM unnest($1::text[], $2::bigint[], $4::bytea[]) AS e(r, q, p)",
		bumpRuns: "UPDATE " + s + ".runs AS x SET last_event_seq = k.q, updated_ms = $4," +
			" attempt_count = x.attempt_count + $5 * k.c, active_count = x.active_count + $5 * k.c" +
			" FROM unnest($1::text[], $2::bigint[], $3::bigint[], $6::bigint[]) AS k(id, q, c, was)" +
			" WHERE x.id = k.id AND x.last_event_seq = k.was RETURNING x.id",
	}
}

// probeBatch admits up to limit activations in the three transactions and
// returns how many it admitted.
func probeBatch(ctx context.Context, c *pgx.Conn, q probeQueries, limit int) (int, error) {
	rows, err := c.Query(ctx, q.discover, limit)
	if err != nil {
		return 0, err
	}
	acts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (probeAct, error) {
		var a probeAct
		err := r.Scan(&a.run, &a.node, &a.act)
		return a, err
	})
	if err != nil || len(acts) == 0 {
		return 0, err
	}
	var rs, ns, as, ids []string
	for _, a := range acts {
		rs, ns, as = append(rs, a.run), append(ns, a.node), append(as, a.act)
		sum := sha256.Sum256([]byte(a.run + "\x00" + a.node + "\x00" + a.act + "\x00" + "1"))
		ids = append(ids, hex.EncodeToString(sum[:]))
	}
	at := time.Now().UnixMilli()
	intent := benchdata.Intent
	isum := sha256.Sum256(intent)
	steps := []struct {
		typ   string
		cas   string
		args  []any
		count int64 // the run's attempt and active counts move by count per admission
		doc   func(i int) string
	}{
		{"attempt_prepared", q.prepare, []any{rs, ns, as, at}, 1, func(i int) string {
			return fmt.Sprintf(`{"activation_id":%q,"attempt":1,"intent":%s,"node_id":%q,"prepared_at_ms":%d,"run_id":%q,"side_effect":"read_only"}`,
				as[i], intent, ns[i], at, rs[i])
		}},
		{"dispatch_handed_off", q.handoff, []any{rs, ns, as}, 0, func(i int) string {
			return fmt.Sprintf(`{"activation_id":%q,"attempt":1,"dispatch_identity":%q,"node_id":%q,"run_id":%q}`, as[i], ids[i], ns[i], rs[i])
		}},
		{"attempt_admitted", q.receipt, []any{rs, ns, as, []byte(benchdata.Receipt), at}, 0, func(i int) string {
			return fmt.Sprintf(`{"activation_id":%q,"admitted_at_ms":%d,"attempt":1,"dispatch_identity":%q,"node_id":%q,"receipt":%s,"run_id":%q}`,
				as[i], at, ids[i], ns[i], benchdata.Receipt, rs[i])
		}},
	}
	for si, st := range steps {
		// Round trip 1: BEGIN and the runs' event sequence.
		b := &pgx.Batch{}
		b.Queue("BEGIN ISOLATION LEVEL SERIALIZABLE, READ WRITE")
		b.Queue("SET LOCAL synchronous_commit = on")
		b.Queue(q.runs, uniq(rs))
		br := c.SendBatch(ctx, b)
		_, err1 := br.Exec()
		_, err2 := br.Exec()
		seqs := map[string]int64{}
		rrows, err3 := br.Query()
		if err3 == nil {
			for rrows.Next() {
				var id string
				var seq int64
				if err := rrows.Scan(&id, &seq); err != nil {
					err3 = err
					break
				}
				seqs[id] = seq
			}
			rrows.Close()
			if err3 == nil {
				err3 = rrows.Err()
			}
		}
		if err := errors.Join(err1, err2, err3, br.Close()); err != nil {
			_, _ = c.Exec(ctx, "ROLLBACK")
			return 0, err
		}
		// Round trip 2: the compare-and-set, the inserts, the runs, COMMIT.
		was := map[string]int64{}
		var evRuns []string
		var evSeqs []int64
		var docs [][]byte
		perRunN := map[string]int64{}
		for i := range acts {
			if _, ok := was[rs[i]]; !ok {
				was[rs[i]] = seqs[rs[i]]
			}
			seqs[rs[i]]++
			perRunN[rs[i]]++
			evRuns, evSeqs, docs = append(evRuns, rs[i]), append(evSeqs, seqs[rs[i]]), append(docs, []byte(st.doc(i)))
		}
		var runIDs []string
		var runSeqs, runN, runWas []int64
		for _, id := range uniq(rs) {
			runIDs, runSeqs, runN, runWas = append(runIDs, id), append(runSeqs, seqs[id]), append(runN, perRunN[id]), append(runWas, was[id])
		}
		b = &pgx.Batch{}
		b.Queue(st.cas, st.args...)
		if si == 0 {
			b.Queue(q.insertAttempts, rs, ns, as, ids, []byte(intent), hex.EncodeToString(isum[:]), at)
		}
		b.Queue(q.insertEvents, evRuns, evSeqs, st.typ, docs, at)
		b.Queue(q.bumpRuns, runIDs, runSeqs, runN, at, st.count, runWas)
		b.Queue("COMMIT")
		br = c.SendBatch(ctx, b)
		tag, err := br.Exec()
		if err == nil && tag.RowsAffected() != int64(len(acts)) {
			err = fmt.Errorf("%s: changed %d of %d rows", st.typ, tag.RowsAffected(), len(acts))
		}
		for j := 1; err == nil && j < b.Len(); j++ {
			_, err = br.Exec()
		}
		if err := errors.Join(err, br.Close()); err != nil {
			_, _ = c.Exec(ctx, "ROLLBACK")
			return 0, err
		}
	}
	return len(acts), nil
}

// uniq returns the distinct strings of ss in their first order.
func uniq(ss []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
