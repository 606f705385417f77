package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/wfstore/wfstore/internal/redact"
)

// redactDSN is dsn with every secret masked, for messages.
func redactDSN(dsn string) string { return redact.DSN(dsn) }

// redactErr returns err with the secrets of dsn removed from its message
// (errors.Is and errors.As still see the original chain).
func redactErr(err error, dsn string) error {
	if err == nil || dsn == "" {
		return err
	}
	return redact.Error(err, dsn)
}

// dsnArgs returns the connection strings a command line carries (the
// values of -dsn and --dsn) and the one bench reads from the environment,
// so that the final message of any command is redacted whatever path the
// error took.
func dsnArgs(args []string) []string {
	var out []string
	for i, a := range args {
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "dsn" {
			continue
		}
		if hasVal {
			out = append(out, val)
		} else if i+1 < len(args) {
			out = append(out, args[i+1])
		}
	}
	if env := os.Getenv("WFSTORE_POSTGRES_DSN"); env != "" {
		out = append(out, env)
	}
	return out
}

// usageError is a usage error the command did not print: exit prints it
// and exits 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}
