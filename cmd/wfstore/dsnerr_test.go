package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A connection string the driver cannot parse is a usage error (exit 2)
// that says what is wrong with it and how one is written, never the
// driver's "failed to parse as keyword/value", and never its password.
func TestMalformedDSNSaysWhatIsWrong(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-pw"
	for dsn, want := range map[string]string{
		"postgress://u:" + secret + "@127.0.0.1/test":                   `the scheme "postgress" is not postgres:// or postgresql://`,
		"127.0.0.1:5432/test":                                           "neither a URL nor key=value pairs",
		"host=127.0.0.1 port=abc password=" + secret:                    `the port "abc" is not a number`,
		"postgres://u:" + secret + "@127.0.0.1:5432/test?sslmode=bogus": `sslmode "bogus" is not one of disable, allow, prefer, require, verify-ca, verify-full`,
		"postgres://u:" + secret + "@127.0.0.1:54x2/test":               "not a valid URL",
		"host=127.0.0.1 dbname=test " + secret:                          "word 3 is not a key=value pair",
	} {
		for _, cmd := range [][]string{{"verify"}, {"inspect", "runs"}, {"prune", "--run", "r"}} {
			args := append(append([]string{}, cmd...), "--backend", "postgres", "--dsn", dsn)
			code, stdout, stderr := runInProcess(t, time.Minute, args...)
			out := stdout + stderr
			assert.Equal(t, 2, code, "%v: %s", args, out)
			assert.Contains(t, stderr, "is not valid: ", "%v", args)
			assert.Contains(t, stderr, want, "%v", args)
			assert.Contains(t, stderr, "postgres://USER@HOST:PORT/DATABASE", "%v: the message shows the form", args)
			assert.NotContains(t, stderr, "failed to parse as keyword/value", "%v", args)
			assert.False(t, strings.Contains(out, secret), "%v printed the secret: %s", args, out)
		}
	}
}
