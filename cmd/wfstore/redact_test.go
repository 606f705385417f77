package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// dsnSecret is in every connection string of dsnForms; no output may show it.
const dsnSecret = "s3cr3t"

// dsnForms are the forms a password takes in a connection string (the
// server they name refuses connections: port 1).
var dsnForms = []struct{ name, dsn string }{
	{"url userinfo", "postgres://alice:Zq7-s3cr3t@127.0.0.1:1/db?sslmode=disable"},
	{"postgresql scheme", "postgresql://alice:Zq7-s3cr3t@127.0.0.1:1/db?sslmode=disable"},
	{"url query password", "postgres://alice@127.0.0.1:1/db?password=Zq7-s3cr3t&sslmode=disable"},
	{"url query PASSWORD", "postgres://alice@127.0.0.1:1/db?sslmode=disable&PASSWORD=Zq7-s3cr3t"},
	{"url query sslpassword", "postgres://alice@127.0.0.1:1/db?sslmode=disable&sslpassword=Zq7-s3cr3t"},
	{"url query encoded key", "postgres://alice@127.0.0.1:1/db?sslmode=disable&pass%77ord=Zq7-s3cr3t"},
	{"url percent-encoded password", "postgres://alice:Zq7%2Ds3cr3t@127.0.0.1:1/db?sslmode=disable"},
	{"url password with @ and /", "postgres://alice:Zq7-s3cr3t@/x@127.0.0.1:1/db?sslmode=disable"},
	{"unparseable url", "postgres://alice:Zq7-s3cr3t@127.0.0.1:notaport/db"},
	{"unknown url scheme", "postgress://alice:Zq7-s3cr3t@127.0.0.1:1/db"},
	{"multi-host url", "postgres://alice:Zq7-s3cr3t@127.0.0.1:1,127.0.0.1:2/db?sslmode=disable"},
	{"keyword/value", "host=127.0.0.1 port=1 user=alice password=Zq7-s3cr3t dbname=db sslmode=disable"},
	{"keyword/value PASSWORD", "host=127.0.0.1 port=1 sslmode=disable PASSWORD=Zq7-s3cr3t"},
	{"keyword/value sslpassword", "host=127.0.0.1 port=1 sslmode=disable sslpassword=Zq7-s3cr3t"},
	{"keyword/value spaces", "host=127.0.0.1 port=1 sslmode=disable password = Zq7-s3cr3t"},
	{"keyword/value quoted", "host=127.0.0.1 port=1 sslmode=disable password='Zq7-s3cr3t it\\'s'"},
	{"keyword/value unterminated quote", "host=127.0.0.1 port=1 password='Zq7-s3cr3t user=alice"},
	{"keyword/value bad port", "host=127.0.0.1 port=notaport password=Zq7-s3cr3t"},
	{"keyword/value bad port, PASSWORD", "host=127.0.0.1 port=notaport PASSWORD=Zq7-s3cr3t"},
	{"keyword/value bad port, quoted", "host=127.0.0.1 port=notaport password='Zq7-s3cr3t x'"},
	{"url bad port, query PASSWORD", "postgres://alice@127.0.0.1:notaport/db?PASSWORD=Zq7-s3cr3t"},
	{"keyword/value stray word", "host=127.0.0.1 port=1 password=Zq7-s3cr3t bogus"},
	{"keyword/value unknown key", "host=127.0.0.1 port=1 password=Zq7-s3cr3t frobnicate=1"},
}

// Every command that takes a connection string fails on each form without
// printing its secret, on stdout or stderr.
func TestNoCommandPrintsADSNSecret(t *testing.T) {
	t.Parallel()
	in := filepath.Join(t.TempDir(), "empty.jsonl")
	require.NoError(t, os.WriteFile(in, nil, 0o600))
	pg := []string{"--backend", "postgres", "--dsn"}
	commands := []struct {
		name string
		args func(dsn string) []string
	}{
		{"migrate status", func(d string) []string { return append([]string{"migrate", "status"}, append(pg, d)...) }},
		{"migrate up", func(d string) []string { return append([]string{"migrate", "up"}, append(pg, d)...) }},
		{"verify", func(d string) []string { return append([]string{"verify"}, append(pg, d)...) }},
		{"inspect runs", func(d string) []string { return append([]string{"inspect", "runs"}, append(pg, d)...) }},
		{"inspect run", func(d string) []string { return append([]string{"inspect", "run", "r1"}, append(pg, d)...) }},
		{"export", func(d string) []string { return append([]string{"export"}, append(pg, d)...) }},
		{"import", func(d string) []string { return append([]string{"import", "--in", in}, append(pg, d)...) }},
		{"prune", func(d string) []string { return append([]string{"prune", "--run", "r1"}, append(pg, d)...) }},
		{"backup", func(d string) []string { return append([]string{"backup", "--to", in + ".bak"}, append(pg, d)...) }},
		{"conform", func(d string) []string {
			return append([]string{"conform", "--run", "contract/insert"}, append(pg, d)...)
		}},
		{"bench", func(d string) []string {
			return []string{"bench", "--backends", "postgres", "--river", "off", "-n", "1", "--batch-n", "1", "--history", "1", "--dsn", d}
		}},
	}
	for _, f := range dsnForms {
		require.Contains(t, f.dsn, "s3cr3t", f.name)
		for _, c := range commands {
			args := c.args(f.dsn)
			code, stdout, stderr := runInProcess(t, time.Minute, args...)
			assert.NotEqual(t, 0, code, "%s × %s: %s", f.name, c.name, stderr)
			out := stdout + stderr
			assert.False(t, strings.Contains(out, dsnSecret), "%s × %s printed the secret:\n%s", f.name, c.name, out)
		}
	}
}
