package main

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/bolt"
	"github.com/wfstore/wfstore/internal/testkit/pgtest"
	"github.com/wfstore/wfstore/sqlite"
)

func TestImportOfADirectoryFailsBeforeCreatingTheTarget(t *testing.T) {
	t.Parallel()
	bin := wfstoreBinary(t, "")
	dir := t.TempDir()
	for _, be := range []string{"sqlite", "bolt"} {
		db := filepath.Join(dir, "target."+be)
		_, stderr, code := runCLI(t, bin, nil, "import", "--backend", be, "--db", db, "--in", dir)
		assert.Equal(t, 1, code, stderr)
		assert.Contains(t, stderr, "is a directory")
		_, err := os.Stat(db)
		assert.True(t, os.IsNotExist(err), "%s: the target was not created", be)
	}
}

// An import SIGKILLed at any point leaves no target, or a complete and
// verified one (a PostgreSQL schema may be left empty); when it left none,
// importing again succeeds. One test per backend, each well under a
// minute.
func TestImportKilledAtRandomPointsSQLite(t *testing.T) { importKilled(t, "sqlite") }

func TestImportKilledAtRandomPointsBolt(t *testing.T) { importKilled(t, "bolt") }

func TestImportKilledAtRandomPointsPostgres(t *testing.T) { importKilled(t, "postgres") }

func importKilled(t *testing.T, be string) {
	t.Parallel()
	bin := wfstoreBinary(t, "")
	dir := t.TempDir()
	src := filepath.Join(dir, "src.db")
	_, stderr, code := runCLI(t, bin, nil, "demo", "-db", src, "-activations", "30", "-events", "0")
	require.Equal(t, 0, code, stderr)
	stream := filepath.Join(dir, "src.jsonl")
	_, stderr, code = runCLI(t, bin, nil, "export", "--db", src, "--out", stream)
	require.Equal(t, 0, code, stderr)
	want := digestOf(t, stderr)
	require.Len(t, want, 1)

	// target names a new, empty target.
	target := func() []string {
		if be == "postgres" {
			dsn, schema := pgtest.SchemaName(t)
			return []string{"--backend", be, "--dsn", dsn, "--schema", schema}
		}
		return []string{"--backend", be, "--db", filepath.Join(t.TempDir(), "target")}
	}
	// How long an import takes here: the kills land within it.
	start := time.Now()
	_, stderr, code = runCLI(t, bin, nil, append([]string{"import", "--in", stream}, target()...)...)
	require.Equal(t, 0, code, stderr)
	took := time.Since(start)

	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d, an import takes %v", seed, took)
	rng := rand.New(rand.NewPCG(seed, 1))
	killed, complete := 0, 0
	for try := 0; killed < 20 && try < 120; try++ {
		tgt := target()
		args := append([]string{"import", "--in", stream}, tgt...)
		d := time.Duration(rng.Int64N(int64(took) + 1))
		if !killAfter(t, bin, d, args...) {
			killed++
		} else {
			// The import finished before the kill: imports run faster
			// than the first one measured (a loaded machine, a warm
			// server), so aim earlier.
			took = took * 4 / 5
		}
		if exists(t, tgt) || records(t, bin, tgt) > 0 {
			// A file target that exists must be complete; a schema
			// may be left empty.
			complete++
			assertImported(t, bin, tgt, want[0])
			continue
		}
		stdout, stderr, code := runCLI(t, bin, nil, args...)
		require.Equal(t, 0, code, "re-import after a kill at %v: %s%s", d, stdout, stderr)
		// Import verified the records and read them back before it
		// committed; the second digest is the store's.
		assert.Equal(t, []string{want[0], want[0]}, digestOf(t, stdout))
	}
	t.Logf("%d kills landed inside an import; %d targets were complete", killed, complete)
	assert.GreaterOrEqual(t, killed, 20)
}

// exists reports whether a file target exists (false for a schema).
func exists(t *testing.T, target []string) bool {
	t.Helper()
	if target[1] == "postgres" {
		return false
	}
	_, err := os.Stat(target[3])
	if err != nil {
		require.True(t, os.IsNotExist(err), "%v", err)
	}
	return err == nil
}

// records counts the records of a schema target.
func records(t *testing.T, bin string, target []string) int {
	t.Helper()
	if target[1] != "postgres" {
		return 0
	}
	_, stderr, code := runCLI(t, bin, nil, append([]string{"export", "--out", os.DevNull}, target...)...)
	if code != 0 && (strings.Contains(stderr, "the schema does not exist") || strings.Contains(stderr, "the schema is empty")) {
		return 0 // export reads only existing stores: no schema, no records
	}
	require.Equal(t, 0, code, stderr)
	m := digestLine.FindStringSubmatch(stderr)
	require.NotNil(t, m, stderr)
	n, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	return n
}

// assertImported checks that the target is verify-clean and exports the
// stream's records.
func assertImported(t *testing.T, bin string, target []string, want string) {
	t.Helper()
	stdout, stderr, code := runCLI(t, bin, nil, append([]string{"verify"}, target...)...)
	require.Equal(t, 0, code, "%s%s", stdout, stderr)
	_, stderr, code = runCLI(t, bin, nil, append([]string{"export", "--out", os.DevNull}, target...)...)
	require.Equal(t, 0, code, stderr)
	got := digestOf(t, stderr)
	require.Len(t, got, 1)
	require.Equal(t, want, got[0], "the target holds the stream's records")
}

func TestImportIntoAnExistingEmptyStoreOrFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	require.NoError(t, os.WriteFile(in, currentStream(recordLines(t, everyKind())...), 0o600))
	emptySQLite := filepath.Join(dir, "empty.db")
	b, err := sqlite.Open(ctx, emptySQLite)
	require.NoError(t, err)
	require.NoError(t, b.Close())
	emptyBolt := filepath.Join(dir, "empty.bolt")
	bb, err := bolt.Open(ctx, emptyBolt)
	require.NoError(t, err)
	require.NoError(t, bb.Close())
	zero := filepath.Join(dir, "zero.db")
	require.NoError(t, os.WriteFile(zero, nil, 0o600))
	for _, target := range [][]string{{"--db", emptySQLite}, {"--backend", "bolt", "--db", emptyBolt}, {"--db", zero}} {
		var out bytes.Buffer
		require.NoError(t, importCmd(ctx, append([]string{"--in", in}, target...), &out, io.Discard), "%v", target)
		ds := digestOf(t, out.String())
		require.Len(t, ds, 2)
		fi, err := os.Stat(target[len(target)-1])
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "%v", target)
		// Now it is not empty: a second import is refused and changes nothing.
		err = importCmd(ctx, append([]string{"--in", in}, target...), io.Discard, io.Discard)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "is not empty")
	}
	assert.Equal(t, []string{"empty.bolt", "empty.db", "in.jsonl", "zero.db"}, dirNames(t, dir), "no temporary folder is left")
}
