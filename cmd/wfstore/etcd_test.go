package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/etcd"
	"github.com/wfstore/wfstore/internal/testkit/etcdcluster"
)

// The etcd tests share embedded single-member clusters, started on first
// use and stopped by TestMain: one with etcd's default --max-txn-ops
// (128), so that an import must split its records into many
// transactions, and one with 8192 for prune.
type testCluster struct {
	once    sync.Once
	dir     string
	members []*embed.Etcd
	eps     string
	err     error
}

var testEtcd = map[int]*testCluster{etcd.DefaultMaxTxnOps: {}, 8192: {}}

func etcdEndpointsOps(t *testing.T, maxTxnOps int) string {
	t.Helper()
	c := testEtcd[maxTxnOps]
	c.once.Do(func() {
		c.dir, c.err = os.MkdirTemp("", "wfstore-cli-etcd-")
		if c.err != nil {
			return
		}
		c.members, c.err = etcdcluster.Start(c.dir, 1, etcdcluster.Options{MaxTxnOps: maxTxnOps})
		if c.err == nil {
			c.eps = strings.Join(etcdcluster.Endpoints(c.members), ",")
		}
	})
	require.NoError(t, c.err, "starting the embedded etcd cluster")
	return c.eps
}

func etcdEndpoints(t *testing.T) string { return etcdEndpointsOps(t, etcd.DefaultMaxTxnOps) }

// stopTestEtcd stops the shared cluster, if it was started.
func stopTestEtcd() {
	for _, c := range testEtcd {
		for _, m := range c.members {
			m.Close()
		}
		if c.dir != "" {
			_ = os.RemoveAll(c.dir)
		}
	}
}

// etcdTarget returns the flags of a new, empty prefix of the shared cluster.
func etcdTarget(t *testing.T) []string {
	t.Helper()
	eps := etcdEndpoints(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	return []string{"--backend", "etcd", "--endpoints", eps, "--prefix", "clitest/" + hex.EncodeToString(b[:]) + "/"}
}

// etcdKeys counts the keys under the target's prefix.
func etcdKeys(t *testing.T, target []string) int64 {
	t.Helper()
	cli := etcdTestClient(t)
	resp, err := cli.Get(context.Background(), target[5], clientv3.WithPrefix(), clientv3.WithCountOnly())
	require.NoError(t, err)
	return resp.Count
}

func etcdTestClient(t *testing.T) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: strings.Split(etcdEndpoints(t), ","), DialTimeout: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// demoStream writes a demo store and its export; it returns the store,
// the stream and the stream's digest line.
func demoStream(t *testing.T, bin string, activations int) (src, stream, digest string) {
	t.Helper()
	dir := t.TempDir()
	src = filepath.Join(dir, "src.db")
	_, stderr, code := runCLI(t, bin, nil, "demo", "-db", src, "-activations", fmt.Sprint(activations), "-events", "0")
	require.Equal(t, 0, code, stderr)
	stream = filepath.Join(dir, "src.jsonl")
	_, stderr, code = runCLI(t, bin, nil, "export", "--db", src, "--out", stream)
	require.Equal(t, 0, code, stderr)
	want := digestOf(t, stderr)
	require.Len(t, want, 1)
	return src, stream, want[0]
}

// Every store command works on an etcd store: import (in many
// transactions: the cluster takes 128 operations per transaction), verify,
// inspect, export, prune, migrate, backup; what they print matches the
// same commands on the SQLite store the stream came from.
func TestEtcdStoreCommands(t *testing.T) {
	t.Parallel()
	bin := wfstoreBinary(t, "")
	src, stream, want := demoStream(t, bin, 40)
	tgt := etcdTarget(t)
	sqliteFlags := []string{"--db", src}

	// migrate on an empty prefix: nothing yet; up creates the store.
	stdout, stderr, code := runCLI(t, bin, nil, append([]string{"migrate", "status"}, tgt...)...)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, fmt.Sprintf("no store yet (this build creates schema version %d)", etcd.SchemaVersion))
	assert.Zero(t, etcdKeys(t, tgt), "status writes nothing")

	stdout, stderr, code = runCLI(t, bin, nil, append([]string{"import", "--in", stream}, tgt...)...)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, []string{want, want}, digestOf(t, stdout))

	stdout, stderr, code = runCLI(t, bin, nil, append([]string{"migrate", "status"}, tgt...)...)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, fmt.Sprintf("schema version %d, current", etcd.SchemaVersion))

	// same runs args on both stores and checks they print the same
	// lines (but for the store's name), in any order: the backends may
	// list a run's attempts in different orders.
	same := func(args ...string) string {
		t.Helper()
		a, stderr, code := runCLI(t, bin, nil, append(args, sqliteFlags...)...)
		require.Equal(t, 0, code, "sqlite %v: %s", args, stderr)
		b, stderr, code := runCLI(t, bin, nil, append(args, tgt...)...)
		require.Equal(t, 0, code, "etcd %v: %s", args, stderr)
		where := fmt.Sprintf("etcd %s prefix %q", tgt[3], tgt[5])
		norm := func(s string) []string {
			var out []string
			for _, l := range strings.Split(s, "\n") {
				// Columns are padded to their widest cell: an age of 10s
				// instead of 9s moves the ones after it.
				out = append(out, strings.Join(strings.Fields(ageColumn.ReplaceAllString(l, " AGE ")), " "))
			}
			return out
		}
		assert.ElementsMatch(t, norm(a), norm(strings.ReplaceAll(b, where, src)), "%v prints the same on both stores", args)
		return b
	}
	out := same("verify")
	assert.Contains(t, out, "0 violations")
	same("inspect", "runs", "--limit", "1000")
	completed := same("inspect", "runs", "--status", "completed", "--json")
	ids := runIDsOf(t, completed)
	require.NotEmpty(t, ids)
	same("inspect", "run", ids[0])
	same("inspect", "events", ids[0])
	same("prune", "--run", ids[0], "--dry-run")

	_, stderr, code = runCLI(t, bin, nil, append([]string{"export", "--out", os.DevNull}, tgt...)...)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, []string{want}, digestOf(t, stderr), "export reads back the stream's records")

	// Prune's first transaction reads the run's whole history: more than
	// 128 operations. Refused, the command says what to do.
	_, stderr, code = runCLI(t, bin, nil, append([]string{"prune", "--run", ids[0]}, tgt...)...)
	assert.Equal(t, 1, code, stderr)
	assert.Contains(t, stderr, "run the cluster with a larger --max-txn-ops")
	// On a cluster that allows more, it prunes.
	big := etcdTarget(t)
	big[3] = etcdEndpointsOps(t, 8192)
	big = append(big, "--max-txn-ops", "8192")
	_, stderr, code = runCLI(t, bin, nil, append([]string{"import", "--in", stream}, big...)...)
	require.Equal(t, 0, code, stderr)
	stdout, stderr, code = runCLI(t, bin, nil, append([]string{"prune", "--run", ids[0]}, big...)...)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "pruned etcd")
	stdout, stderr, code = runCLI(t, bin, nil, append([]string{"verify"}, big...)...)
	require.Equal(t, 0, code, "%s%s", stdout, stderr)
	stdout, stderr, code = runCLI(t, bin, nil, append([]string{"verify"}, tgt...)...)
	require.Equal(t, 0, code, "%s%s", stdout, stderr)

	// A second import into the store, now not empty, is refused.
	_, stderr, code = runCLI(t, bin, nil, append([]string{"import", "--in", stream}, tgt...)...)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "is not empty")

	dst := filepath.Join(t.TempDir(), "snap.db")
	stdout, stderr, code = runCLI(t, bin, nil, append([]string{"backup", "--to", dst}, tgt...)...)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "an etcd snapshot of the whole cluster")
	sum, err := checkEtcdSnapshot(dst, tgt[5])
	require.NoError(t, err)
	assert.Equal(t, etcdKeys(t, tgt), int64(sum.keys), "the snapshot holds every key of the store")
	fi, err := os.Stat(dst)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	_, stderr, code = runCLI(t, bin, nil, append([]string{"backup", "--to", dst}, tgt...)...)
	assert.Equal(t, 1, code, "never over an existing file")
	assert.Contains(t, stderr, "exists")
}

// ageColumn is an age in inspect's tables, which the second run of a
// command may print older.
var ageColumn = regexp.MustCompile(`\s\d+(ms|s|m|h|d)\s`)

func runIDsOf(t *testing.T, inspectJSON string) []string {
	t.Helper()
	var page struct {
		Runs []struct{ ID string } `json:"runs"`
	}
	require.NoError(t, json.Unmarshal([]byte(inspectJSON), &page), inspectJSON)
	var ids []string
	for _, r := range page.Runs {
		ids = append(ids, r.ID)
	}
	return ids
}

// The commands that only read never create a store on an empty prefix:
// they refuse it, naming it, and write nothing.
func TestEtcdReadCommandsRefuseAnEmptyPrefix(t *testing.T) {
	t.Parallel()
	tgt := etcdTarget(t)
	for _, args := range [][]string{
		{"verify"}, {"inspect", "runs"}, {"export", "--out", os.DevNull},
		{"backup", "--to", filepath.Join(t.TempDir(), "x")},
	} {
		code, _, stderr := runInProcess(t, time.Minute, append(args, tgt...)...)
		assert.Equal(t, 1, code, "%v: %s", args, stderr)
		assert.Contains(t, stderr, "no wfstore store", "%v", args)
		assert.Contains(t, stderr, "the prefix holds no key", "%v", args)
	}
	assert.Zero(t, etcdKeys(t, tgt), "nothing was written")
	err := checkEtcdStore(context.Background(), flagsOf(t, tgt))
	assert.True(t, errors.Is(err, errNoStore), "%v", err)
}

func flagsOf(t *testing.T, tgt []string) *storeFlags {
	t.Helper()
	return &storeFlags{backend: "etcd", endpoints: tgt[3], prefix: tgt[5], maxTxnOps: etcd.DefaultMaxTxnOps}
}

// A prefix an import left unfinished is opened by no command, as a store
// or for writing; an import of another stream refuses it, naming the
// unfinished one's stream; the same import run again finishes it.
func TestEtcdUnfinishedImport(t *testing.T) {
	t.Parallel()
	bin := wfstoreBinary(t, "")
	_, stream, want := demoStream(t, bin, 5)
	_, other, _ := demoStream(t, bin, 6)
	tgt := etcdTarget(t)
	ctx := context.Background()

	// What a killed import of stream leaves: its mark (of the stream's
	// digest) and some records' keys, no store marker.
	var n int64
	var digest string
	_, err := fmt.Sscanf(want, "%d %s", &n, &digest)
	require.NoError(t, err)
	cli := etcdTestClient(t)
	mark := fmt.Sprintf(`{"digest":%q,"records":%d,"started":"2026-01-02T03:04:05Z"}`, digest, n)
	_, err = cli.Put(ctx, etcdMetaKey(tgt[5], "import"), mark)
	require.NoError(t, err)
	_, err = cli.Put(ctx, tgt[5]+"r-partial-record", "x")
	require.NoError(t, err)

	for _, args := range [][]string{
		{"verify"}, {"inspect", "runs"}, {"export", "--out", os.DevNull}, {"prune", "--run", "r"},
		{"migrate", "up"}, {"backup", "--to", filepath.Join(t.TempDir(), "x")},
	} {
		_, stderr, code := runCLI(t, bin, nil, append(args, tgt...)...)
		assert.Equal(t, 1, code, "%v: %s", args, stderr)
		assert.Contains(t, stderr, "an import into this prefix did not finish", "%v", args)
		assert.Contains(t, stderr, "digest "+digest, "%v names the stream", args)
	}
	err = checkEtcdStore(ctx, flagsOf(t, tgt))
	assert.True(t, errors.Is(err, errImportUnfinished), "%v", err)
	_, err = etcd.Dial(ctx, strings.Split(tgt[3], ","), etcd.WithPrefix(tgt[5]))
	assert.True(t, errors.Is(err, backend.ErrForeignStore), "the adapter does not open it either: %v", err)

	_, stderr, code := runCLI(t, bin, nil, append([]string{"import", "--in", other}, tgt...)...)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "it is of another stream than this one")
	assert.Equal(t, int64(2), etcdKeys(t, tgt), "the refused import left the prefix as it was")

	stdout, stderr, code := runCLI(t, bin, nil, append([]string{"import", "--in", stream}, tgt...)...)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, []string{want, want}, digestOf(t, stdout))
	assertImported(t, bin, tgt, want)
	resp, err := cli.Get(ctx, tgt[5]+"r-partial-record")
	require.NoError(t, err)
	assert.Empty(t, resp.Kvs, "what the unfinished import wrote was removed")
}

// An import into etcd SIGKILLed at any point leaves the prefix empty (no
// store, or a store with no records), complete and verified, or marked
// unfinished, which verify refuses; the same import run again then
// succeeds.
func TestImportKilledAtRandomPointsEtcd(t *testing.T) {
	t.Parallel()
	bin := wfstoreBinary(t, "")
	_, stream, want := demoStream(t, bin, 30)
	start := time.Now()
	_, stderr, code := runCLI(t, bin, nil, append([]string{"import", "--in", stream}, etcdTarget(t)...)...)
	require.Equal(t, 0, code, stderr)
	took := time.Since(start)
	t.Logf("an import takes %v", took)

	killed, complete, unfinished := 0, 0, 0
	for try := 0; killed < 20 && try < 120; try++ {
		tgt := etcdTarget(t)
		args := append([]string{"import", "--in", stream}, tgt...)
		d := time.Duration(try%20+1) * took / 20
		if !killAfter(t, bin, d, args...) {
			killed++
		} else {
			took = took * 4 / 5
		}
		stdout, stderr, code := runCLI(t, bin, nil, append([]string{"verify"}, tgt...)...)
		switch {
		case code == 0 && exportDigest(t, bin, tgt) == emptyDigest:
			// Killed after the store was created on the empty prefix and
			// before the mark: an empty store, which imports as before.
		case code == 0:
			complete++
			assertImported(t, bin, tgt, want)
			continue
		case strings.Contains(stderr, "an import into this prefix did not finish"):
			unfinished++
		case strings.Contains(stderr, "no wfstore store"):
		default:
			t.Fatalf("verify after a kill at %v: exit %d: %s%s", d, code, stdout, stderr)
		}
		stdout, stderr, code = runCLI(t, bin, nil, args...)
		require.Equal(t, 0, code, "re-import after a kill at %v: %s%s", d, stdout, stderr)
		assert.Equal(t, []string{want, want}, digestOf(t, stdout))
		assertImported(t, bin, tgt, want)
	}
	t.Logf("%d kills landed inside an import; %d targets were complete, %d marked unfinished", killed, complete, unfinished)
	assert.GreaterOrEqual(t, killed, 20)
	assert.Positive(t, unfinished, "some kills landed while records were being written")
}

// A backup of an etcd store SIGKILLed at any point leaves its destination
// absent or a complete, checked snapshot, and the next backup to it
// succeeds and leaves no temporary file behind.
func TestBackupKilledAtAnyPointEtcd(t *testing.T) {
	t.Parallel()
	bin := wfstoreBinary(t, "")
	_, stream, _ := demoStream(t, bin, 30)
	tgt := etcdTarget(t)
	_, stderr, code := runCLI(t, bin, nil, append([]string{"import", "--in", stream}, tgt...)...)
	require.Equal(t, 0, code, stderr)
	out := t.TempDir()
	dst := filepath.Join(out, "snap")
	start := time.Now()
	_, stderr, code = runCLI(t, bin, nil, append([]string{"backup", "--to", dst}, tgt...)...)
	require.Equal(t, 0, code, stderr)
	took := time.Since(start)
	require.NoError(t, os.Remove(dst))

	var absent, complete int
	for i := range 25 {
		d := time.Duration(i+1) * took / 25
		killAfter(t, bin, d, append([]string{"backup", "--to", dst}, tgt...)...)
		if _, err := os.Stat(dst); err == nil {
			complete++
			_, err := checkEtcdSnapshot(dst, tgt[5])
			require.NoError(t, err, "a backup killed at %v left a destination: it is complete", d)
			require.NoError(t, os.Remove(dst))
		} else {
			require.True(t, os.IsNotExist(err))
			absent++
		}
		_, stderr, code := runCLI(t, bin, nil, append([]string{"backup", "--to", dst}, tgt...)...)
		require.Equal(t, 0, code, stderr)
		assert.Equal(t, []string{"snap"}, dirNames(t, out), "the next backup removed the killed one's temporary file")
		require.NoError(t, os.Remove(dst))
	}
	t.Logf("%d kills left no destination, %d a complete one", absent, complete)
	assert.Positive(t, absent)
}

// A truncated or altered snapshot fails the checks a backup runs before
// naming its copy.
func TestEtcdSnapshotCheckRefusesDamage(t *testing.T) {
	t.Parallel()
	bin := wfstoreBinary(t, "")
	tgt := etcdTarget(t)
	_, stderr, code := runCLI(t, bin, nil, append([]string{"migrate", "up"}, tgt...)...)
	require.Equal(t, 0, code, stderr)
	dst := filepath.Join(t.TempDir(), "snap")
	_, stderr, code = runCLI(t, bin, nil, append([]string{"backup", "--to", dst}, tgt...)...)
	require.Equal(t, 0, code, stderr)
	_, err := checkEtcdSnapshot(dst, tgt[5])
	require.NoError(t, err)
	_, err = checkEtcdSnapshot(dst, "clitest/no-such-prefix/")
	assert.ErrorIs(t, err, errBadSnapshot, "a snapshot without the store")

	data, err := os.ReadFile(dst)
	require.NoError(t, err)
	flipped := append([]byte{}, data...)
	flipped[len(flipped)/2] ^= 1
	bad := filepath.Join(t.TempDir(), "bad")
	require.NoError(t, os.WriteFile(bad, flipped, 0o600))
	_, err = checkEtcdSnapshot(bad, tgt[5])
	assert.ErrorIs(t, err, errBadSnapshot, "a flipped bit")
	require.NoError(t, os.WriteFile(bad, data[:len(data)-512], 0o600))
	_, err = checkEtcdSnapshot(bad, tgt[5])
	assert.ErrorIs(t, err, errBadSnapshot, "a truncated snapshot")
}

// The console serves an etcd store: its run list names the imported runs;
// on an empty prefix it refuses to start and writes nothing.
func TestEtcdConsole(t *testing.T) {
	t.Parallel()
	bin := wfstoreBinary(t, "")
	_, stream, _ := demoStream(t, bin, 5)
	tgt := etcdTarget(t)
	_, stderr, code := runCLI(t, bin, nil, append([]string{"import", "--in", stream}, tgt...)...)
	require.Equal(t, 0, code, stderr)
	stdout, stderr, code := runCLI(t, bin, nil, append([]string{"inspect", "runs", "--json"}, tgt...)...)
	require.Equal(t, 0, code, stderr)
	ids := runIDsOf(t, stdout)
	require.NotEmpty(t, ids)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- consoleCmd(ctx, append([]string{"--listen", "127.0.0.1:0"}, tgt...), pw, io.Discard)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	require.NoError(t, err, "the console did not start")
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	m := regexp.MustCompile(`serving (.*) on (http://\S+/)`).FindStringSubmatch(line)
	require.NotNil(t, m, line)
	assert.Equal(t, fmt.Sprintf("etcd %s prefix %q", tgt[3], tgt[5]), m[1])
	resp, err := http.Get(m[2])
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	assert.Contains(t, string(body), ids[0])
	cancel()
	var ie *interruptedError
	assert.ErrorAs(t, <-done, &ie)

	empty := etcdTarget(t)
	err = consoleCmd(context.Background(), append([]string{"--listen", "127.0.0.1:0"}, empty...), io.Discard, io.Discard)
	assert.ErrorIs(t, err, errNoStore)
	assert.Zero(t, etcdKeys(t, empty))
}

// emptyDigest is the export digest line of a store with no records.
const emptyDigest = "0 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// exportDigest is the "records digest" line of an export of target.
func exportDigest(t *testing.T, bin string, target []string) string {
	t.Helper()
	_, stderr, code := runCLI(t, bin, nil, append([]string{"export", "--out", os.DevNull}, target...)...)
	require.Equal(t, 0, code, stderr)
	got := digestOf(t, stderr)
	require.Len(t, got, 1)
	return got[0]
}
