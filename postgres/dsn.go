package postgres

import (
	"net/url"
	"regexp"
	"strings"
)

// openError names the server (the DSN, password removed) and schema an
// Open failed on. It unwraps to the cause, so errors.Is and errors.As see
// through it.
type openError struct {
	dsn    string // redacted
	schema string
	secret string // the password, removed from the cause's text too
	err    error
}

func (e *openError) Error() string {
	where := e.dsn
	if e.schema != "" {
		where += " (schema " + e.schema + ")"
	}
	return "postgres: open " + where + ": " + redactIn(strings.TrimPrefix(e.err.Error(), "postgres: "), e.secret)
}

func (e *openError) Unwrap() error { return e.err }

var kvPassword = regexp.MustCompile(`(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]+)`)

// RedactDSN returns dsn with its password, in either the URL or the
// keyword=value form, replaced by xxxxx, for messages and logs. A DSN it
// cannot parse loses everything between "://" and its last "@".
func RedactDSN(dsn string) string {
	if strings.Contains(dsn, "://") {
		if u, err := url.Parse(dsn); err == nil {
			if q := u.Query(); q.Has("password") {
				q.Set("password", "xxxxx")
				u.RawQuery = q.Encode()
			}
			return u.Redacted()
		}
		// Unparseable: drop everything between "://" and the last "@".
		scheme, rest, _ := strings.Cut(dsn, "://")
		if i := strings.LastIndexByte(rest, '@'); i >= 0 {
			rest = "xxxxx" + rest[i:]
		}
		return kvPassword.ReplaceAllString(scheme+"://"+rest, "${1}xxxxx")
	}
	return kvPassword.ReplaceAllString(dsn, "${1}xxxxx")
}

// redactIn removes password=... settings from an error text, and the given
// password itself (pgx does not print passwords; this is a second line of
// defence) unless it is too short to be told from ordinary text.
func redactIn(s, password string) string {
	s = kvPassword.ReplaceAllString(s, "${1}xxxxx")
	if len(password) >= 4 {
		s = strings.ReplaceAll(s, password, "xxxxx")
	}
	return s
}
