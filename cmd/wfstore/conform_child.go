package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/bolt"
	"github.com/wfstore/wfstore/conformance"
	"github.com/wfstore/wfstore/internal/pgscratch"
	"github.com/wfstore/wfstore/postgres"
	"github.com/wfstore/wfstore/sqlite"
)

// conformChild runs the conformance suite in this process as a test binary
// would: `wfstore conform` starts it with -test.* flags and reads its
// verbose output. The suite's own multi-process cases re-execute this
// binary again; they inherit the environment and land here too.
func conformChild() {
	ops, _ := strconv.Atoi(os.Getenv(envConformMaxTxnOps))
	h, err := conformHarness(os.Getenv(envConformBackend), conformTarget{
		server: os.Getenv(envConformDSN), scratch: os.Getenv(envConformScratch),
		relaxed: os.Getenv(envConformRelaxed) != "", maxTxnOps: ops,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "wfstore conform:", err)
		os.Exit(2)
	}
	testing.Main(regexp.MatchString, []testing.InternalTest{{
		Name: "TestConformance",
		F:    func(t *testing.T) { conformance.Run(t, h) },
	}}, nil, nil)
}

// conformTarget is where a conform run's cases make their stores.
type conformTarget struct {
	// server: postgres's DSN, or etcd's endpoints (comma-separated).
	server string
	// scratch: postgres's scratch schema name prefix, or etcd's scratch
	// key prefix; each case's store is named by it and random hex digits.
	scratch string
	// relaxed: open in the adapter's relaxed durability mode.
	relaxed bool
	// maxTxnOps: etcd's --max-txn-ops.
	maxTxnOps int
}

// conformHarness is the suite's harness for one of our adapters, opened in
// its default (durable) mode unless relaxed.
func conformHarness(name string, tg conformTarget) (conformance.Harness, error) {
	spec, ok := lookupBackend(name)
	if !ok || spec.harness == nil {
		return conformance.Harness{}, fmt.Errorf("unknown backend %q", name)
	}
	return spec.harness(tg)
}

// scratchFile is a conformance case's store file.
func scratchFile(t testing.TB) string { return filepath.Join(t.TempDir(), "store.db") }

func sqliteHarness(tg conformTarget) (conformance.Harness, error) {
	var opts []sqlite.Option
	if tg.relaxed {
		opts = append(opts, sqlite.WithRelaxedDurability())
	}
	return conformance.Harness{Name: "sqlite", New: scratchFile,
		Open: func(ctx context.Context, loc string) (backend.Backend, error) { return sqlite.Open(ctx, loc, opts...) },
	}, nil
}

func boltHarness(tg conformTarget) (conformance.Harness, error) {
	var opts []bolt.Option
	if tg.relaxed {
		opts = append(opts, bolt.WithRelaxedDurability())
	}
	return conformance.Harness{Name: "bolt", New: scratchFile,
		Open: func(ctx context.Context, loc string) (backend.Backend, error) { return bolt.Open(ctx, loc, opts...) },
		Verify: func(ctx context.Context, b backend.Backend) error {
			bb, ok := b.(*bolt.Backend)
			if !ok {
				return fmt.Errorf("verify: %T is not a *bolt.Backend", b)
			}
			return bb.Verify(ctx)
		},
	}, nil
}

func postgresHarness(tg conformTarget) (conformance.Harness, error) {
	dsn, prefix := tg.server, tg.scratch
	if dsn == "" {
		return conformance.Harness{}, fmt.Errorf("postgres needs a DSN")
	}
	var opts []postgres.Option
	if tg.relaxed {
		opts = append(opts, postgres.WithRelaxedDurability())
	}
	return conformance.Harness{Name: "postgres",
		New: func(t testing.TB) string {
			schema, err := createScratchSchema(context.Background(), dsn, prefix)
			if err != nil {
				t.Fatalf("creating a scratch schema: %v", err)
			}
			t.Cleanup(func() {
				if err := dropScratchSchema(context.Background(), dsn, schema); err != nil {
					t.Errorf("dropping scratch schema %s: %v", schema, err)
				}
			})
			return schema
		},
		Open: func(ctx context.Context, schema string) (backend.Backend, error) {
			return postgres.Open(ctx, withPoolSize(dsn, 4), append([]postgres.Option{postgres.WithSchema(schema)}, opts...)...)
		},
	}, nil
}

// scratchPrefix begins the name of every schema conform creates; it drops
// only those. One run's schemas share the longer prefix newScratchPrefix
// returns, so that the run can find and drop its own (and only its own)
// when it is interrupted.
const scratchPrefix = "wfstore_conform_"

// newScratchPrefix returns the prefix of one conform run's schemas:
// scratchPrefix, 8 random hex digits and "_".
func newScratchPrefix() (string, error) {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return scratchPrefix + hex.EncodeToString(b[:]) + "_", nil
}

func createScratchSchema(ctx context.Context, dsn, prefix string) (string, error) {
	if !strings.HasPrefix(prefix, scratchPrefix) {
		return "", fmt.Errorf("scratch schema prefix %q does not begin with %q", prefix, scratchPrefix)
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	schema := prefix + hex.EncodeToString(b[:])
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "", redactErr(fmt.Errorf("connecting to %s: %w", redactDSN(dsn), err), dsn)
	}
	defer conn.Close(ctx)
	// The first schema of a process drops those of conform processes of
	// this host that are gone (killed before they could drop theirs): each
	// schema's comment names the process that created it.
	reapOnce.Do(func() { _, _ = pgscratch.Reap(ctx, conn, scratchPrefix) })
	if err := pgscratch.Create(ctx, conn, schema); err != nil {
		return "", err
	}
	return schema, nil
}

// reapOnce makes a process's first scratch schema reap those of gone ones.
var reapOnce sync.Once

func dropScratchSchema(ctx context.Context, dsn, schema string) error {
	if !strings.HasPrefix(schema, scratchPrefix) {
		return fmt.Errorf("refusing to drop %q: not a conform scratch schema", schema)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return redactErr(fmt.Errorf("connecting to %s: %w", redactDSN(dsn), err), dsn)
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
	return err
}

// withPoolSize bounds each instance's pool so that the cases running at once
// stay well inside the server's connection limit, unless the DSN sets it.
func withPoolSize(dsn string, n int) string {
	if strings.Contains(dsn, "pool_max_conns") {
		return dsn
	}
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		q := u.Query()
		q.Set("pool_max_conns", fmt.Sprint(n))
		u.RawQuery = q.Encode()
		return u.String()
	}
	return dsn + fmt.Sprintf(" pool_max_conns=%d", n)
}

// probeAdapter opens one scratch store of the chosen backend to read the
// adapter's description and capabilities for the report, and removes it.
func probeAdapter(ctx context.Context, c conformConfig) (backend.Info, backend.Capabilities, error) {
	h, err := conformHarness(c.backend, c.target())
	if err != nil {
		return backend.Info{}, backend.Capabilities{}, err
	}
	var loc string
	var cleanup func()
	switch spec, _ := lookupBackend(c.backend); spec.loc {
	case byDSN:
		schema, err := createScratchSchema(ctx, c.dsn, c.scratch)
		if err != nil {
			return backend.Info{}, backend.Capabilities{}, err
		}
		loc, cleanup = schema, func() { _ = dropScratchSchema(context.Background(), c.dsn, schema) }
	case byEtcd:
		loc, cleanup = c.scratch+"probe/", func() {}
	default:
		dir, err := os.MkdirTemp(c.scratch, "probe-")
		if err != nil {
			return backend.Info{}, backend.Capabilities{}, err
		}
		loc, cleanup = filepath.Join(dir, "store.db"), func() { _ = os.RemoveAll(dir) }
	}
	defer cleanup()
	b, err := h.Open(ctx, loc)
	if err != nil {
		return backend.Info{}, backend.Capabilities{}, err
	}
	defer b.Close()
	return b.Info(), b.Capabilities(), nil
}

// moduleVersion is this build's module version, for reports.
func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(unknown)"
}

// dropScratchSchemas drops every schema whose name begins with prefix (one
// run's scratch schemas) and returns those it dropped and those it could
// not drop.
func dropScratchSchemas(ctx context.Context, dsn, prefix string) (dropped, left []string, err error) {
	if !strings.HasPrefix(prefix, scratchPrefix) || len(prefix) <= len(scratchPrefix) {
		return nil, nil, fmt.Errorf("refusing to drop schemas named %q*: not one conform run's prefix", prefix)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, nil, redactErr(fmt.Errorf("connecting to %s: %w", redactDSN(dsn), err), dsn)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, err := conn.Query(ctx, "SELECT nspname FROM pg_namespace WHERE left(nspname, length($1)) = $1 ORDER BY nspname", prefix)
	if err != nil {
		return nil, nil, err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, nil, err
	}
	var errs []error
	for _, s := range names {
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{s}.Sanitize()+" CASCADE"); err != nil {
			left = append(left, s)
			errs = append(errs, fmt.Errorf("dropping %s: %w", s, err))
			continue
		}
		dropped = append(dropped, s)
	}
	return dropped, left, errors.Join(errs...)
}
