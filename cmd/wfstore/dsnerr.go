package main

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// dsnSyntax is how a connection string is written, for messages.
const dsnSyntax = "postgres://USER@HOST:PORT/DATABASE?sslmode=MODE (a password, if any, after USER and a colon), or key=value pairs such as host=HOST port=5432 dbname=DATABASE"

// sslModes are the values sslmode takes.
var sslModes = []string{"disable", "allow", "prefer", "require", "verify-ca", "verify-full"}

// badDSN is the usage error for a connection string the driver could not
// parse: what is wrong with it, in words, and the forms it may take. It
// does not echo the connection string (a malformed one may hold a password
// where no redactor can tell it is one), nor the driver's text quoting it.
func badDSN(err error) (*usageError, bool) {
	var pe *pgconn.ParseConfigError
	if !errors.As(err, &pe) {
		return nil, false
	}
	return &usageError{msg: fmt.Sprintf("the connection string (--dsn, or $WFSTORE_POSTGRES_DSN for bench) is not valid: %s (write it as %s)",
		dsnProblem(pe.ConnString, pe), dsnSyntax)}, true
}

// dsnProblem says what is wrong with dsn, which the driver refused with
// pe.
func dsnProblem(dsn string, pe *pgconn.ParseConfigError) string {
	dsn = strings.TrimSpace(dsn)
	if dsn == "" {
		return "it is empty"
	}
	if scheme, _, ok := strings.Cut(dsn, "://"); ok {
		if scheme != "postgres" && scheme != "postgresql" {
			return fmt.Sprintf("the scheme %q is not postgres:// or postgresql://", scheme)
		}
		u, err := url.Parse(dsn)
		if err != nil {
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err // without the URL, which holds the password
			}
			return "it is not a valid URL: " + err.Error()
		}
		if p := u.Port(); p != "" {
			if why := portProblem(p); why != "" {
				return why
			}
		}
		if m := u.Query().Get("sslmode"); m != "" {
			if why := sslModeProblem(m); why != "" {
				return why
			}
		}
		return driverText(pe)
	}
	if !strings.Contains(dsn, "=") {
		return "it is neither a URL nor key=value pairs (a HOST:PORT/DATABASE form needs postgres:// in front)"
	}
	bare := 0 // the first word that is not key=value
	for i, f := range strings.Fields(dsn) {
		k, v, ok := strings.Cut(f, "=")
		switch {
		case !ok:
			if bare == 0 {
				bare = i + 1
			}
		case k == "port":
			if why := portProblem(v); why != "" {
				return why
			}
		case k == "sslmode":
			if why := sslModeProblem(v); why != "" {
				return why
			}
		}
	}
	if why := driverText(pe); !strings.Contains(why, "keyword/value") || bare == 0 {
		return why
	}
	return fmt.Sprintf("word %d is not a key=value pair (a value with spaces goes in single quotes)", bare)
}

func portProblem(p string) string {
	for _, one := range strings.Split(p, ",") {
		if n, err := strconv.Atoi(one); err != nil || n < 1 || n > 65535 {
			return fmt.Sprintf("the port %q is not a number from 1 to 65535", one)
		}
	}
	return ""
}

func sslModeProblem(m string) string {
	for _, ok := range sslModes {
		if m == ok {
			return ""
		}
	}
	return fmt.Sprintf("sslmode %q is not one of %s", m, strings.Join(sslModes, ", "))
}

// driverText is the driver's reason without the connection string it
// quotes: the part after "cannot parse `...`: ", when it does not hold
// the string's text.
func driverText(pe *pgconn.ParseConfigError) string {
	s := pe.Error()
	if i := strings.LastIndex(s, "`: "); i >= 0 && !strings.Contains(s[i+3:], "`") {
		return s[i+3:]
	}
	return "the driver could not parse it"
}
