package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/sqlite"
)

func TestSnakeName(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"ID": "id", "RunID": "run_id", "CreatedMS": "created_ms", "NodeExecutionCap": "node_execution_cap",
		"IntentChecksum": "intent_checksum", "HTTPServer": "http_server", "P99US": "p99_us",
		"SHA256": "sha256", "AttemptTimeoutMS": "attempt_timeout_ms", "run_id": "run_id", "Seq": "seq",
	} {
		assert.Equal(t, want, snakeName(in), in)
	}
}

var snakeKey = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// snakeKeys reports every object key in v, at any depth, that is not
// snake_case, skipping the values of the keys in skip (JSON documents the
// user wrote).
func nonSnakeKeys(v any, skip []string, path string) []string {
	var bad []string
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if !snakeKey.MatchString(k) {
				bad = append(bad, path+"."+k)
			}
			if slices.Contains(skip, k) {
				continue
			}
			bad = append(bad, nonSnakeKeys(e, skip, path+"."+k)...)
		}
	case []any:
		for _, e := range x {
			bad = append(bad, nonSnakeKeys(e, skip, path+"[]")...)
		}
	}
	return bad
}

// documentFields are the record fields that hold a JSON document, in
// snake_case.
func documentFields() []string {
	var out []string
	for _, fs := range jsonFields {
		for _, f := range fs {
			out = append(out, snakeName(f))
		}
	}
	return out
}

// Every field of every record kind is written in snake_case, at every
// depth, as inspect --json and the events name theirs; the JSON documents
// inside stay as written.
func TestExportRecordsNameEveryFieldInSnakeCase(t *testing.T) {
	t.Parallel()
	for _, rec := range everyKind() {
		line, err := encodeLine(rec)
		require.NoError(t, err)
		var v any
		require.NoError(t, json.Unmarshal(line, &v))
		assert.Empty(t, nonSnakeKeys(v, documentFields(), kindOf(rec)), "%s", line)
		got, err := decodeLine(exportVersion, line)
		require.NoError(t, err)
		assert.Equal(t, rec, got, "the line reads back as the record")
	}
}

// A current-version line naming a field by its Go name (the version 2
// spelling) is refused, not read as a zero.
func TestExportVersion3RefusesGoFieldNames(t *testing.T) {
	t.Parallel()
	for _, rec := range everyKind() {
		line, err := encodeLine(rec)
		require.NoError(t, err)
		var l struct {
			Kind   string                     `json:"kind"`
			Record map[string]json.RawMessage `json:"record"`
		}
		require.NoError(t, json.Unmarshal(line, &l))
		for k, v := range l.Record {
			if k == "created_ms" || k == "id" || k == "run_id" {
				delete(l.Record, k)
				l.Record[map[string]string{"created_ms": "CreatedMS", "id": "ID", "run_id": "RunID"}[k]] = v
				bad, err := json.Marshal(map[string]any{"kind": l.Kind, "record": l.Record})
				require.NoError(t, err)
				_, err = decodeLine(exportVersion, bad)
				assert.ErrorContains(t, err, "unknown field", "%s", bad)
				break
			}
		}
	}
}

// The files earlier releases wrote, version 2 (Go field names) and
// version 1, read as the same records, and a version 2 file imports.
func TestImportReadsVersion2Files(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, pair := range [][2]string{
		{"export-v1.jsonl", "export-v2.jsonl"},
		{"export-v1-every-kind.jsonl", "export-v2-every-kind.jsonl"},
	} {
		v1 := streamRecords(t, filepath.Join("testdata", pair[0]))
		v2 := streamRecords(t, filepath.Join("testdata", pair[1]))
		require.NotEmpty(t, v2)
		assert.ElementsMatch(t, v1, v2, pair[1])

		db := filepath.Join(t.TempDir(), "in.db")
		var stdout, stderr bytes.Buffer
		require.NoError(t, importCmd(ctx, []string{"--db", db, "--in", filepath.Join("testdata", pair[1])}, &stdout, &stderr), "%s%s", &stdout, &stderr)
		b, err := sqlite.Open(ctx, db)
		require.NoError(t, err)
		var got []record
		require.NoError(t, walkStore(ctx, b, func(rec record) error {
			got = append(got, rec)
			return nil
		}))
		require.NoError(t, b.Close())
		assert.ElementsMatch(t, v2, got, pair[1])
		// Re-exported, it is a version 3 stream.
		var out bytes.Buffer
		sw, err := newStreamWriter(&out)
		require.NoError(t, err)
		for _, r := range got {
			require.NoError(t, sw.write(r))
		}
		require.NoError(t, sw.close())
		assert.True(t, strings.HasPrefix(out.String(), `{"format":"wfstore-export","version":3}`+"\n"))
	}
}
