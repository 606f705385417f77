package bench

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.etcd.io/bbolt"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/bolt"
	"github.com/wfstore/wfstore/postgres"
	"github.com/wfstore/wfstore/sqlite"
	"github.com/wfstore/wfstore/workflow"
)

// Target is one backend under test. Open gives a fresh, empty store in the
// adapter's default durable mode, plus a bare-commit handle with the same
// driver and settings, so every workload starts from the same state.
type Target struct {
	Name string
	// BareNote says how the bare commit is made, for the report.
	BareNote string
	// WritesNote says how rows written (and WAL) per operation are counted
	// on this target, or why they are not.
	WritesNote string
	// GrowthNote, when set, says why the growth workload is not run on
	// this target.
	GrowthNote string
	dsn        string // Postgres only: the database, for the River peer
	open       func(ctx context.Context, dir string, workers int) (*Env, error)
}

// Env is one opened store of a Target.
type Env struct {
	Backend backend.Backend
	Store   *workflow.Store
	// bare runs one tiny durable write transaction (the physical ceiling).
	bare  func(ctx context.Context, i int64) error
	close func() error
	dir   string // the store's directory ("" for Postgres)
	// writes reads what the store wrote (Postgres only, else nil).
	writes *pgWrites
	// rows and bareRows count the rows the store and the bare commit wrote,
	// where this process counts them (SQLite, etcd), else nil.
	rows, bareRows *atomic.Int64
}

// Close releases the store and everything Open created (files stay in the
// directory the caller gave; a Postgres schema is dropped).
func (e *Env) Close() error { return e.close() }

// Open opens a fresh store of t in a new subdirectory of dir.
func (t Target) Open(ctx context.Context, dir string, workers int) (*Env, error) {
	sub, err := os.MkdirTemp(dir, t.Name+"-")
	if err != nil {
		return nil, err
	}
	e, err := t.open(ctx, sub, workers)
	if err != nil {
		os.RemoveAll(sub)
		return nil, err
	}
	if t.Name != "postgres" && t.Name != "etcd" {
		e.dir = sub
	}
	closeStore := e.close
	e.close = func() error { return errors.Join(closeStore(), os.RemoveAll(sub)) }
	return e, nil
}

// SQLite is the embedded default adapter: WAL, synchronous=FULL.
//
// The bare commit runs on its own file in the same directory, through a
// database/sql handle of the same driver with the pragmas sqlite.Open gives
// its writer connection (busy_timeout 5 ms, synchronous FULL, WAL), on one
// pinned connection: BEGIN IMMEDIATE; INSERT; COMMIT. The adapter has no
// accessor for its writer connection, and a foreign table in the store
// file would make it refuse the file on reopen.
func SQLite() Target {
	return Target{
		Name:       "sqlite",
		BareNote:   "BEGIN IMMEDIATE; INSERT; COMMIT on one pinned connection, same driver and pragmas (WAL, synchronous=FULL), own file in the same directory",
		WritesNote: "rows written: table rows inserted, updated and deleted by committed transactions, counted by SQLite's preupdate, commit and rollback hooks on every connection of the store's file (the bare commit's file apart); WAL bytes: not measured (SQLite does not count the WAL frames it appends, and its WAL file is reused after each checkpoint)",
		open:       openSQLite,
	}
}

func openSQLite(ctx context.Context, dir string, _ int) (*Env, error) {
	rows, stopStore, err := countSQLiteRows(filepath.Join(dir, "store.db"))
	if err != nil {
		return nil, err
	}
	bareRows, stopBare, err := countSQLiteRows(filepath.Join(dir, "bare.db"))
	if err != nil {
		stopStore()
		return nil, err
	}
	b, err := sqlite.Open(ctx, filepath.Join(dir, "store.db"))
	if err != nil {
		stopStore()
		stopBare()
		return nil, err
	}
	q := url.Values{}
	for _, p := range []string{"busy_timeout(5)", "synchronous(FULL)", "journal_mode(WAL)"} {
		q.Add("_pragma", p)
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(filepath.Join(dir, "bare.db")), RawQuery: q.Encode()}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		b.Close()
		return nil, err
	}
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err == nil {
		_, err = conn.ExecContext(ctx, `CREATE TABLE bare (id INTEGER PRIMARY KEY, v BLOB NOT NULL)`)
	}
	var ins *sql.Stmt
	if err == nil {
		ins, err = conn.PrepareContext(ctx, `INSERT INTO bare (id, v) VALUES (?, ?)`)
	}
	if err != nil {
		if conn != nil {
			conn.Close()
		}
		db.Close()
		b.Close()
		stopStore()
		stopBare()
		return nil, fmt.Errorf("bench: sqlite bare handle: %w", err)
	}
	payload := make([]byte, 32)
	return &Env{
		Backend:  b,
		Store:    workflow.New(b),
		rows:     rows,
		bareRows: bareRows,
		bare: func(ctx context.Context, i int64) error {
			if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
				return err
			}
			if _, err := ins.ExecContext(ctx, i, payload); err != nil {
				_, _ = conn.ExecContext(ctx, "ROLLBACK")
				return err
			}
			_, err := conn.ExecContext(ctx, "COMMIT")
			return err
		},
		close: func() error {
			stopStore()
			stopBare()
			ins.Close()
			conn.Close()
			return errors.Join(db.Close(), b.Close())
		},
	}, nil
}

// Bolt is the bbolt adapter with fsync on every commit.
//
// The bare commit is one bbolt Update putting one small key into a bucket of
// its own file in the same directory, opened with the options bolt.Open uses
// (bbolt defaults: fsync on). bbolt locks a file for one handle, and the
// adapter's OpenDB asks that the handle be used for nothing else.
func Bolt() Target {
	return Target{
		Name:       "bolt",
		BareNote:   "one bbolt Update (one Put) with the options bolt.Open uses (fsync on), own file in the same directory",
		WritesNote: "not measured: the bolt adapter has no hook to count its puts and deletes, and bbolt itself counts pages, not keys",
		open:       openBolt,
	}
}

func openBolt(ctx context.Context, dir string, _ int) (*Env, error) {
	b, err := bolt.Open(ctx, filepath.Join(dir, "store.bolt"))
	if err != nil {
		return nil, err
	}
	db, err := bbolt.Open(filepath.Join(dir, "bare.bolt"), 0o600, &bbolt.Options{
		Timeout: bolt.DefaultLockTimeout, NoFreelistSync: true, FreelistType: bbolt.FreelistArrayType, // as bolt.Open
	})
	if err == nil {
		err = db.Update(func(tx *bbolt.Tx) error { _, err := tx.CreateBucket([]byte("bare")); return err })
	}
	if err != nil {
		if db != nil {
			db.Close()
		}
		b.Close()
		return nil, fmt.Errorf("bench: bolt bare handle: %w", err)
	}
	payload := make([]byte, 32)
	return &Env{
		Backend: b,
		Store:   workflow.New(b),
		bare: func(ctx context.Context, i int64) error {
			return db.Update(func(tx *bbolt.Tx) error {
				var k [8]byte
				binary.BigEndian.PutUint64(k[:], uint64(i))
				return tx.Bucket([]byte("bare")).Put(k[:], payload)
			})
		},
		close: func() error { return errors.Join(db.Close(), b.Close()) },
	}, nil
}

var schemaSeq atomic.Int64

// Postgres is the pgx adapter on the database at dsn, in a fresh schema per
// store (created here, dropped by Close).
//
// The pool is created here and given to postgres.OpenPool, so the bare
// commit runs through the very same pool: BEGIN ISOLATION LEVEL
// SERIALIZABLE with SET LOCAL synchronous_commit = on and one INSERT in one
// round trip, then COMMIT — the round trips the adapter itself spends on a
// one-statement Update. The pool gets max(10, workers+2) connections so 8
// dispatchers never wait for one.
func Postgres(dsn string) Target {
	return Target{
		Name:       "postgres",
		dsn:        dsn,
		BareNote:   "BEGIN SERIALIZABLE + SET LOCAL synchronous_commit=on + INSERT (one round trip), COMMIT, through the adapter's own pgx pool",
		WritesNote: "rows written: n_tup_ins + n_tup_upd + n_tup_del of the schema's tables (pg_stat_user_tables; rolled-back rows included), read once the pool's server processes exited and so flushed their statistics (the bare table apart); WAL bytes: pg_current_wal_insert_lsn around each measured stretch, server-wide",
		open:       func(ctx context.Context, _ string, workers int) (*Env, error) { return openPostgres(ctx, dsn, workers) },
	}
}

func openPostgres(ctx context.Context, dsn string, workers int) (*Env, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("bench: postgres dsn: %w", err)
	}
	cfg.MaxConns = int32(max(10, workers+2))
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	schema := fmt.Sprintf("wfbench_%d_%d_%s", os.Getpid(), schemaSeq.Add(1), hex.EncodeToString(rnd[:]))
	appNamed(cfg, schema)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	b, err := postgres.OpenPool(ctx, pool, postgres.WithSchema(schema))
	if err != nil {
		pool.Close()
		return nil, err
	}
	drop := func() error {
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := pool.Exec(dctx, `DROP SCHEMA IF EXISTS "`+schema+`" CASCADE`)
		return err
	}
	table := `"` + schema + `".bare`
	if _, err := pool.Exec(ctx, `CREATE TABLE `+table+` (id bigint PRIMARY KEY, v bytea NOT NULL)`); err != nil {
		b.Close()
		drop()
		pool.Close()
		return nil, err
	}
	insert := `INSERT INTO ` + table + ` (id, v) VALUES ($1, $2)`
	payload := make([]byte, 32)
	return &Env{
		Backend: b,
		Store:   workflow.New(b),
		writes:  &pgWrites{pool: pool, schema: schema, appName: schema},
		bare: func(ctx context.Context, i int64) error {
			conn, err := pool.Acquire(ctx)
			if err != nil {
				return err
			}
			defer conn.Release()
			batch := &pgx.Batch{}
			batch.Queue("BEGIN ISOLATION LEVEL SERIALIZABLE, READ WRITE")
			batch.Queue("SET LOCAL synchronous_commit = on")
			batch.Queue(insert, i, payload)
			if err := conn.SendBatch(ctx, batch).Close(); err != nil {
				_, _ = conn.Exec(ctx, "ROLLBACK")
				return err
			}
			_, err = conn.Exec(ctx, "COMMIT")
			return err
		},
		close: func() error {
			err := b.Close()
			err = errors.Join(err, drop())
			pool.Close()
			return err
		},
	}, nil
}
