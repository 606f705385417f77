package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// streamRecords decodes the records of the stream file at path, of any
// version.
func streamRecords(t *testing.T, path string) []record {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	sr, err := newStreamReader(f)
	require.NoError(t, err)
	var out []record
	for {
		rec, _, err := sr.next()
		if err != nil {
			require.ErrorContains(t, err, "EOF")
			return out
		}
		out = append(out, rec)
	}
}

// Export files written before the format had a version (testdata, written
// by the export of that time) still import, record for record, and the
// store they make is verify-clean.
func TestImportReadsTheVersion1Format(t *testing.T) {
	t.Parallel()
	bin := wfstoreBinary(t, "")
	for _, fixture := range []string{"export-v1.jsonl", "export-v1-every-kind.jsonl"} {
		in, err := filepath.Abs(filepath.Join("testdata", fixture))
		require.NoError(t, err)
		want := streamRecords(t, in)
		require.NotEmpty(t, want)
		for _, be := range []string{"sqlite", "bolt"} {
			dir := t.TempDir()
			db := filepath.Join(dir, "v1."+be)
			stdout, stderr, code := runCLI(t, bin, nil, "import", "--backend", be, "--db", db, "--in", in)
			require.Equal(t, 0, code, "%s %s: %s%s", fixture, be, stdout, stderr)
			stdout, stderr, code = runCLI(t, bin, nil, "verify", "--backend", be, "--db", db)
			require.Equal(t, 0, code, "%s %s: %s%s", fixture, be, stdout, stderr)
			out := filepath.Join(dir, "again.jsonl")
			_, stderr, code = runCLI(t, bin, nil, "export", "--backend", be, "--db", db, "--out", out)
			require.Equal(t, 0, code, stderr)
			assert.Equal(t, want, streamRecords(t, out), "%s %s: the store holds the version 1 file's records", fixture, be)
		}
	}
}

func TestExportFormatHasAVersionJSONFieldsAndATrailer(t *testing.T) {
	t.Parallel()
	bin := wfstoreBinary(t, "")
	dir := t.TempDir()
	src := sourceStore(t, dir)
	stream := filepath.Join(dir, "s.jsonl")
	_, stderr, code := runCLI(t, bin, nil, "export", "--db", src, "--out", stream)
	require.Equal(t, 0, code, stderr)
	data, err := os.ReadFile(stream)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	assert.Equal(t, `{"format":"wfstore-export","version":3}`, lines[0])
	assert.Contains(t, string(data), `"input":{"i":[1,2]}`, "JSON fields are JSON, not base64")
	assert.Contains(t, string(data), `"metadata":{"m":"ü"}`)
	assert.Contains(t, string(data), `"output":null`, "an absent JSON field is null")
	m := digestLine.FindStringSubmatch(stderr)
	require.NotNil(t, m, stderr)
	assert.Equal(t, `{"trailer":{"records":`+m[1]+`,"sha256":"`+m[2]+`"}}`, lines[len(lines)-1],
		"the trailer holds the record count and the body's SHA-256, the digest printed")
}

// A stream cut short anywhere, or with any byte of a record changed, is
// refused, and no target is made.
func TestImportDetectsTruncationAndCorruption(t *testing.T) {
	t.Parallel()
	bin := wfstoreBinary(t, "")
	dir := t.TempDir()
	src := sourceStore(t, dir)
	stream := filepath.Join(dir, "s.jsonl")
	_, stderr, code := runCLI(t, bin, nil, "export", "--db", src, "--out", stream)
	require.Equal(t, 0, code, stderr)
	data, err := os.ReadFile(stream)
	require.NoError(t, err)
	lines := strings.SplitAfter(string(data), "\n")
	lines = lines[:len(lines)-1] // the empty string after the last newline
	n := len(lines)
	body := strings.Join(lines[:n-1], "")

	cases := map[string]struct {
		stream string
		want   string
	}{
		"the trailer missing":          {body, "without its trailer: it is truncated"},
		"the last record line missing": {strings.Join(lines[:n-2], ""), "without its trailer"},
		"cut inside a record line":     {body[:len(body)-40], "is cut off (no newline): the stream is truncated"},
		"cut inside the trailer":       {string(data[:len(data)-10]), "truncated"},
		"a record line dropped, trailer kept": {strings.Join(lines[:n-3], "") + lines[n-2] + lines[n-1],
			"the trailer counts 14 records, the stream holds 13"},
		"a digit changed": {strings.Replace(string(data), "1700000000019", "1700000000018", 1),
			"the stream is corrupt"},
		"a JSON value changed":   {strings.Replace(string(data), `{"i":[1,2]}`, `{"i":[1,3]}`, 1), "the stream is corrupt"},
		"data after the trailer": {string(data) + lines[1], "data after the trailer"},
	}
	for name, c := range cases {
		in := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".jsonl")
		require.NoError(t, os.WriteFile(in, []byte(c.stream), 0o600))
		for _, be := range []string{"sqlite", "bolt"} {
			db := filepath.Join(dir, "target-"+be)
			_, stderr, code := runCLI(t, bin, nil, "import", "--backend", be, "--db", db, "--in", in)
			assert.Equal(t, 1, code, "%s (%s): %s", name, be, stderr)
			assert.Contains(t, stderr, c.want, "%s (%s)", name, be)
			_, err := os.Stat(db)
			assert.True(t, os.IsNotExist(err), "%s (%s): no target was made", name, be)
		}
	}
	for _, name := range dirNames(t, dir) {
		assert.False(t, strings.Contains(name, "target"), "%s is left beside the targets", name)
	}
}

// A line longer than the limit is refused after reading the limit, not
// the whole line.
func TestImportRefusesAnOverlongLineUnread(t *testing.T) {
	t.Parallel()
	const total = 100 << 20
	r := &countingReader{left: total}
	_, err := checkStream(context.Background(), r)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "line 1 is longer than 16777216 bytes")
	assert.Less(t, r.read, int64(maxLineBytes+1<<20), "read at most the limit and a buffer of the 100 MB line")
}

// countingReader yields left bytes of one endless JSON line, counting what
// was read.
type countingReader struct {
	left int64
	read int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.left == 0 {
		return 0, os.ErrClosed
	}
	n := int64(len(p))
	if n > c.left {
		n = c.left
	}
	copy(p, bytes.Repeat([]byte{'x'}, int(n)))
	if c.read == 0 {
		copy(p, `{"kind":"event","record":{"Payload":"`)
	}
	c.left -= n
	c.read += n
	return int(n), nil
}
