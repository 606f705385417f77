package main

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
// verified one; when it left none, importing again succeeds.
func TestImportKilledAtRandomPointsLeavesNoTargetOrACompleteOne(t *testing.T) {
	t.Parallel()
	bin := wfstoreBinary(t, "")
	dir := t.TempDir()
	src := filepath.Join(dir, "src.db")
	_, stderr, code := runCLI(t, bin, nil, "demo", "-db", src, "-activations", "40", "-events", "0")
	require.Equal(t, 0, code, stderr)
	stream := filepath.Join(dir, "src.jsonl")
	_, stderr, code = runCLI(t, bin, nil, "export", "--db", src, "--out", stream)
	require.Equal(t, 0, code, stderr)
	want := digestOf(t, stderr)
	require.Len(t, want, 1)

	for _, be := range []string{"sqlite", "bolt"} {
		t.Run(be, func(t *testing.T) {
			// How long an import takes here: the kills land within it.
			probe := filepath.Join(t.TempDir(), "probe")
			start := time.Now()
			_, stderr, code := runCLI(t, bin, nil, "import", "--backend", be, "--db", probe, "--in", stream)
			require.Equal(t, 0, code, stderr)
			took := time.Since(start)

			seed := uint64(time.Now().UnixNano())
			t.Logf("seed %d, an import takes %v", seed, took)
			rng := rand.New(rand.NewPCG(seed, 1))
			killed, complete := 0, 0
			for try := 0; killed < 20 && try < 60; try++ {
				tdir := t.TempDir()
				db := filepath.Join(tdir, "target")
				args := []string{"import", "--backend", be, "--db", db, "--in", stream}
				d := time.Duration(rng.Int64N(int64(took) + 1))
				if !killAfter(t, bin, d, args...) {
					killed++
				}
				if _, err := os.Stat(db); err == nil {
					complete++
					assertImported(t, bin, be, db, want[0])
					continue
				}
				stdout, stderr, code := runCLI(t, bin, nil, args...)
				require.Equal(t, 0, code, "re-import after a kill at %v: %s%s", d, stdout, stderr)
				assertImported(t, bin, be, db, want[0])
			}
			t.Logf("%d kills landed inside an import; %d targets were complete", killed, complete)
			assert.GreaterOrEqual(t, killed, 20)
		})
	}
}

// assertImported checks that the store at db is verify-clean and exports
// the stream's records.
func assertImported(t *testing.T, bin, be, db, want string) {
	t.Helper()
	stdout, stderr, code := runCLI(t, bin, nil, "verify", "--backend", be, "--db", db)
	require.Equal(t, 0, code, "%s%s", stdout, stderr)
	_, stderr, code = runCLI(t, bin, nil, "export", "--backend", be, "--db", db, "--out", os.DevNull)
	require.Equal(t, 0, code, stderr)
	got := digestOf(t, stderr)
	require.Len(t, got, 1)
	require.Equal(t, want, got[0], "the target holds the stream's records")
}
