package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/backend"
)

// currentStream is a stream of the current format version of the given
// record lines, with a trailer that matches them: what is refused is the
// record, not the file.
func currentStream(lines ...[]byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"format":"wfstore-export","version":%d}`+"\n", exportVersion)
	h := sha256.New()
	for _, l := range lines {
		b.Write(l)
		b.WriteByte('\n')
		h.Write(l)
		h.Write([]byte{'\n'})
	}
	fmt.Fprintf(&b, `{"trailer":{"records":%d,"sha256":"%s"}}`+"\n", len(lines), hex.EncodeToString(h.Sum(nil)))
	return b.Bytes()
}

// recordLines encodes recs as export lines.
func recordLines(t *testing.T, recs []record) [][]byte {
	t.Helper()
	var out [][]byte
	for _, r := range recs {
		l, err := encodeLine(r)
		require.NoError(t, err)
		out = append(out, l)
	}
	return out
}

// edited is everyKind with the record at i (0..len-1) passed through
// edit; i == -1 appends add instead.
func edited(i int, edit func(record) record) []record {
	recs := everyKind()
	recs[i] = edit(recs[i])
	return recs
}

func TestImportRefusesInvalidRecordsNamingTheLineAndRule(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	run := func(f func(*backend.Run)) func(record) record {
		return func(r record) record { x := r.(backend.Run); f(&x); return x }
	}
	// everyKind: 0 run-é, 1 child, 2 link, 3 activation A, 4 member, 5
	// child's activation, 6 group, 7 attempt A#3, 8 attempt m0#1, 9 lease,
	// 10 released lease, 11 schedule, 12 event 1, 13 event 2.
	cases := []struct {
		name  string
		lines [][]byte
		want  string
	}{
		{"a null record", [][]byte{[]byte(`{"kind":"run","record":null}`)}, "line 2: the line has no record"},
		{"an empty record", [][]byte{[]byte(`{"kind":"run","record":{}}`)}, "line 2: run record: ID must contain 1 to 512 bytes"},
		{"a bogus status", recordLines(t, edited(0, run(func(r *backend.Run) { r.Status = "bogus" }))), `line 2: run record: Status "bogus" is not one the store knows`},
		{"a NUL in an id", recordLines(t, edited(1, run(func(r *backend.Run) { r.ID = "ch\x00ild" }))), "line 3: run record: ID must not contain a NUL byte"},
		{"a 600-byte id", recordLines(t, edited(1, run(func(r *backend.Run) { r.ID = strings.Repeat("x", 600) }))), "line 3: run record: ID must contain 1 to 512 bytes"},
		{"a root naming a missing run", recordLines(t, edited(1, run(func(r *backend.Run) { r.RootID, r.ParentID = "nowhere", "nowhere" }))),
			`line 3: names run "nowhere", which the stream does not hold`},
		{"negative limits", recordLines(t, edited(0, run(func(r *backend.Run) { r.Limits.ConcurrencyCap = -1 }))), "line 2: run record: Limits.ConcurrencyCap must not be negative"},
		{"a zero time", recordLines(t, edited(0, run(func(r *backend.Run) { r.CreatedMS = 0 }))), "line 2: run record: CreatedMS must be set"},
		{"a time before 1970", recordLines(t, edited(12, func(r record) record { e := r.(backend.Event); e.CreatedMS = -5; return e })), "line 14: event record: CreatedMS must be set"},
		{"event sequence 0", recordLines(t, edited(12, func(r record) record { e := r.(backend.Event); e.Seq = 0; return e })), "line 14: event record: Seq must be at least 1, not 0"},
		{"an unknown lease mode", recordLines(t, edited(9, func(r record) record { l := r.(backend.Lease); l.Key.Mode = "exclusive"; return l })), `line 11: lease record: Key.Mode "exclusive" is not one the store knows`},
		{"non-canonical JSON", recordLines(t, edited(3, func(r record) record { a := r.(backend.Activation); a.Input = []byte(`{"b":1,"a":2}`); return a })),
			"line 5: activation record: Input is not in canonical form"},
		{"JSON over the size limit", recordLines(t, edited(3, func(r record) record {
			a := r.(backend.Activation)
			a.Input = []byte(`"` + strings.Repeat("a", 1<<20) + `"`)
			return a
		})), "line 5: activation record: Input is larger than 1048576 bytes"},
		{"an activation of a missing run", recordLines(t, append(everyKind(), backend.Activation{Key: backend.ActivationKey{RunID: "gone", NodeID: "n", ActivationID: "a"},
			Status: backend.ActivationPending, Input: []byte(`{}`), Effect: backend.ReadOnly, Reconciliation: backend.IdempotentReplay, CreatedMS: 1_700_000_000_000})),
			`line 16: names run "gone", which the stream does not hold`},
		{"two live attempts for one activation", recordLines(t, append(edited(0, run(func(r *backend.Run) { r.AttemptCount, r.ActiveCount, r.TreeAttemptCount = 3, 2, 3 })),
			backend.Attempt{Key: backend.AttemptKey{ActivationKey: backend.ActivationKey{RunID: "run-é", NodeID: "n/1", ActivationID: "A"}, Attempt: 2},
				Identity: "ident-2", Status: backend.AttemptAdmitted, SideEffect: backend.Mutating, Intent: []byte(`{}`),
				IntentChecksum: "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a", Handoff: backend.HandoffRecorded,
				PreparedMS: 1_700_000_000_030, AdmittedMS: 1_700_000_000_031})),
			`line 2 (the run's record): one_active_attempt run "run-é" activation "n/1"/"A": 2 live attempts by admission`},
		{"lying counters", recordLines(t, edited(0, run(func(r *backend.Run) { r.AttemptCount = 80 }))),
			`line 2 (the run's record): run_counters run "run-é" AttemptCount: is 80, the run has 2 attempts`},
	}
	for _, c := range cases {
		for _, be := range []string{"sqlite", "bolt"} {
			dir := t.TempDir()
			in := filepath.Join(dir, "in.jsonl")
			require.NoError(t, os.WriteFile(in, currentStream(c.lines...), 0o600))
			db := filepath.Join(dir, "target")
			err := importCmd(ctx, []string{"--backend", be, "--db", db, "--in", in}, io.Discard, io.Discard)
			require.Error(t, err, "%s (%s)", c.name, be)
			assert.Contains(t, err.Error(), c.want, "%s (%s)", c.name, be)
			_, serr := os.Stat(db)
			assert.True(t, os.IsNotExist(serr), "%s (%s): the target was not made", c.name, be)
			assert.Equal(t, []string{"in.jsonl"}, dirNames(t, dir), "%s (%s): nothing left beside it", c.name, be)
		}
	}

	// The same records, unedited, import.
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	require.NoError(t, os.WriteFile(in, currentStream(recordLines(t, everyKind())...), 0o600))
	require.NoError(t, importCmd(ctx, []string{"--db", filepath.Join(dir, "ok.db"), "--in", in}, io.Discard, io.Discard))
}
