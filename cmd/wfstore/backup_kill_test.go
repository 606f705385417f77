package main

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A backup killed (SIGKILL) at any point leaves its destination absent or
// complete and verified, and the next backup to it succeeds and leaves no
// temporary file behind. 25 kills per backend, at random points of a
// backup's run.
func TestBackupKilledAtAnyPointLeavesNothingPartial(t *testing.T) {
	t.Parallel()
	bin := wfstoreBinary(t, "")
	dir := t.TempDir()
	src := filepath.Join(dir, "src.db")
	_, stderr, code := runCLI(t, bin, nil, "demo", "-db", src, "-activations", "300")
	require.Equal(t, 0, code, stderr)
	stream := filepath.Join(dir, "src.jsonl")
	_, stderr, code = runCLI(t, bin, nil, "export", "--db", src, "--out", stream)
	require.Equal(t, 0, code, stderr)
	srcBolt := filepath.Join(dir, "src.bolt")
	_, stderr, code = runCLI(t, bin, nil, "import", "--backend", "bolt", "--db", srcBolt, "--in", stream)
	require.Equal(t, 0, code, stderr)

	for _, tc := range []struct{ backend, src string }{{"sqlite", src}, {"bolt", srcBolt}} {
		t.Run(tc.backend, func(t *testing.T) {
			t.Parallel()
			runs := func(path string) string {
				out, stderr, code := runCLI(t, bin, nil, "inspect", "runs", "--backend", tc.backend, "--db", path, "--limit", "1000", "--json")
				require.Equal(t, 0, code, stderr)
				return out
			}
			want := runs(tc.src)
			out := t.TempDir()
			dst := filepath.Join(out, "copy")
			// How long one backup takes, start to end, to spread the kills over.
			start := time.Now()
			_, stderr, code := runCLI(t, bin, nil, "backup", "--backend", tc.backend, "--db", tc.src, "--to", dst)
			require.Equal(t, 0, code, stderr)
			took := time.Since(start)
			require.NoError(t, os.Remove(dst))

			var absent, complete, tempLeft int
			for i := range 25 {
				cmd := exec.Command(bin, "backup", "--backend", tc.backend, "--db", tc.src, "--to", dst)
				require.NoError(t, cmd.Start())
				time.Sleep(time.Duration(rand.Int64N(int64(took) + 1)))
				_ = cmd.Process.Kill()
				_ = cmd.Wait()

				entries, err := os.ReadDir(out)
				require.NoError(t, err)
				for _, e := range entries {
					if strings.Contains(e.Name(), ".wfstore-backup-") {
						tempLeft++
						break
					}
				}
				if _, err := os.Stat(dst); err == nil {
					complete++
					_, stderr, code := runCLI(t, bin, nil, "verify", "--backend", tc.backend, "--db", dst)
					require.Equal(t, 0, code, "kill %d: the destination exists but does not verify: %s", i, stderr)
					require.Equal(t, want, runs(dst), "kill %d: the destination is not the whole store", i)
					require.NoError(t, os.Remove(dst))
				} else {
					absent++
				}

				// The next backup succeeds and removes what the killed one left.
				_, stderr, code := runCLI(t, bin, nil, "backup", "--backend", tc.backend, "--db", tc.src, "--to", dst)
				require.Equal(t, 0, code, "kill %d: the next backup failed: %s", i, stderr)
				entries, err = os.ReadDir(out)
				require.NoError(t, err)
				require.Len(t, entries, 1, "kill %d: files left next to the copy: %v", i, entries)
				_, stderr, code = runCLI(t, bin, nil, "verify", "--backend", tc.backend, "--db", dst)
				require.Equal(t, 0, code, stderr)
				require.NoError(t, os.Remove(dst))
			}
			t.Logf("%s: 25 kills over %v: destination absent %d times, complete %d; a partial temporary file was left %d times",
				tc.backend, took, absent, complete, tempLeft)
			assert.Positive(t, tempLeft, "no kill landed while the copy was being written")
		})
	}
}
