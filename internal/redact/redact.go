// Package redact removes secrets from connection strings and from the
// messages that may quote them.
//
// One set of rules covers every form a PostgreSQL connection string takes:
// the URL form (a password in the user information, or in a query
// parameter) and the keyword/value form (quoted or not, spaces around
// "="), with any key case and every password-like key (password,
// sslpassword, and any key naming a pass, pwd, secret or token). A
// connection string that cannot be parsed is redacted more, never less: in
// a URL that does not parse, everything between "://" and the last "@" goes.
package redact

import (
	"errors"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Mask replaces every secret.
const Mask = "xxxxx"

// secretKey matches a password-like key (compared in lower case, after
// percent-decoding in URLs).
var secretKey = regexp.MustCompile(`pass|pwd|secret|token`)

func isSecretKey(k string) bool {
	if d, err := url.QueryUnescape(k); err == nil {
		k = d
	}
	return secretKey.MatchString(strings.ToLower(k))
}

// kv matches one keyword=value setting: a quoted value runs to its closing
// quote (or the end of the text when it has none), an unquoted one to the
// next space.
var kv = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_%]*)(\s*=\s*)('(?:[^'\\]|\\.)*'?|[^\s'&,;)"` + "`" + `]*)`)

// urlUserinfo matches the user information of a URL inside a text:
// scheme://user:password@ (the password may hold anything but a space up
// to the last "@" before the next space).
var urlUserinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://[^\s:/@]*):\S*@`)

// DSN returns dsn with every secret replaced by Mask, for messages and
// logs.
func DSN(dsn string) string {
	scheme, rest, isURL := strings.Cut(dsn, "://")
	if !isURL || strings.ContainsAny(scheme, " =") {
		return maskKV(dsn)
	}
	// User information: up to the last "@" (a password may hold "@", "/"
	// or "?" unescaped; masking too much is better than too little).
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		user, _, hasPass := strings.Cut(rest[:at], ":")
		switch {
		case !parses(dsn):
			rest = Mask + rest[at:]
		case hasPass:
			rest = user + ":" + Mask + rest[at:]
		}
	}
	// Query parameters.
	if q := strings.IndexByte(rest, '?'); q >= 0 {
		params := strings.Split(rest[q+1:], "&")
		for i, p := range params {
			k, _, ok := strings.Cut(p, "=")
			if ok && isSecretKey(k) {
				params[i] = k + "=" + Mask
			}
		}
		rest = rest[:q+1] + strings.Join(params, "&")
	}
	return scheme + "://" + rest
}

func parses(dsn string) bool {
	_, err := url.Parse(dsn)
	return err == nil
}

// maskKV masks the values of password-like keys of keyword=value text.
func maskKV(s string) string {
	return kv.ReplaceAllStringFunc(s, func(m string) string {
		sub := kv.FindStringSubmatch(m)
		if !isSecretKey(sub[1]) || strings.HasPrefix(sub[3], Mask) {
			return m
		}
		return sub[1] + sub[2] + Mask
	})
}

// Secrets returns the secrets dsn carries, as written and decoded
// (percent-decoding, quotes and backslash escapes removed), longest first.
func Secrets(dsn string) []string {
	var out []string
	add := func(s string) {
		if s == "" {
			return
		}
		out = append(out, s)
		if d, err := url.PathUnescape(s); err == nil && d != s {
			out = append(out, d)
		}
		if d, err := url.QueryUnescape(s); err == nil && d != s {
			out = append(out, d)
		}
	}
	scheme, rest, isURL := strings.Cut(dsn, "://")
	if isURL && !strings.ContainsAny(scheme, " =") {
		if at := strings.LastIndexByte(rest, '@'); at >= 0 {
			if _, pass, ok := strings.Cut(rest[:at], ":"); ok {
				add(pass)
			}
		}
		if q := strings.IndexByte(rest, '?'); q >= 0 {
			for _, p := range strings.Split(rest[q+1:], "&") {
				if k, v, ok := strings.Cut(p, "="); ok && isSecretKey(k) {
					add(v)
				}
			}
		}
	} else {
		for _, sub := range kv.FindAllStringSubmatch(dsn, -1) {
			if !isSecretKey(sub[1]) {
				continue
			}
			v := sub[3]
			add(v)
			if strings.HasPrefix(v, "'") {
				v = strings.TrimSuffix(strings.TrimPrefix(v, "'"), "'")
				add(v)
				add(unescape(v))
			}
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return slices.Compact(out)
}

func unescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// minLiteral is the shortest secret Text replaces wherever it occurs:
// shorter ones would hit ordinary words (they are still removed where a
// connection string shows them).
const minLiteral = 3

// Text returns s with the secrets of each dsn removed: each dsn quoted
// whole becomes its redacted form, the user information of any URL and
// the value of any password-like keyword or query parameter are masked,
// and each secret is replaced wherever else it appears.
func Text(s string, dsns ...string) string {
	for _, dsn := range dsns {
		if dsn != "" {
			s = strings.ReplaceAll(s, dsn, DSN(dsn))
		}
	}
	s = urlUserinfo.ReplaceAllString(s, "${1}:"+Mask+"@")
	s = maskKV(s)
	for _, dsn := range dsns {
		for _, sec := range Secrets(dsn) {
			if len(sec) >= minLiteral {
				s = strings.ReplaceAll(s, sec, Mask)
			}
		}
	}
	return s
}

// Error returns err with Text applied to its message; errors.Is and
// errors.As still see the original chain. It returns nil for nil.
func Error(err error, dsns ...string) error {
	if err == nil {
		return nil
	}
	var r *redacted
	if errors.As(err, &r) && slices.Equal(r.dsns, dsns) {
		return err
	}
	return &redacted{err: err, dsns: dsns}
}

type redacted struct {
	err  error
	dsns []string
}

func (e *redacted) Error() string { return Text(e.err.Error(), e.dsns...) }

func (e *redacted) Unwrap() error { return e.err }
