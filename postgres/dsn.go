package postgres

import (
	"strings"

	"github.com/wfstore/wfstore/internal/redact"
)

// openError names the server (the DSN, password removed) and schema an
// Open failed on. It unwraps to the cause, so errors.Is and errors.As see
// through it.
type openError struct {
	dsn    string // redacted
	schema string
	raw    string // the DSN as given: its secrets are removed from the cause's text too
	err    error
}

func (e *openError) Error() string {
	where := e.dsn
	if e.schema != "" {
		where += " (schema " + e.schema + ")"
	}
	return "postgres: open " + where + ": " + redact.Text(strings.TrimPrefix(e.err.Error(), "postgres: "), e.raw)
}

func (e *openError) Unwrap() error { return e.err }

// RedactDSN returns dsn with every secret (the password in the URL's user
// information, and the value of any password-like key or query parameter,
// in any case) replaced by xxxxx, for messages and logs. A URL it cannot
// parse loses everything between "://" and its last "@".
func RedactDSN(dsn string) string { return redact.DSN(dsn) }
