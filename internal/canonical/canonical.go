// Package canonical is the store's canonical JSON: a strict RFC 8259 parser
// that writes the canonical form as it goes, and the encoder of the
// payloads the store builds itself.
//
// The canonical form is:
//   - compact: no whitespace outside strings;
//   - object members sorted bytewise by their decoded (unescaped) UTF-8 key;
//   - numbers exactly as written (after validating the JSON number grammar),
//     so 1, 1.0, 1e0 and -0 are all distinct;
//   - strings as literal UTF-8 with the fewest escapes: only '"' and '\\'
//     (as \" and \\) and the control characters U+0000..U+001F, written as
//     \b \f \n \r \t where such a short form exists and \u00XX (lowercase
//     hex) otherwise. Everything else, including '/', '<', '>', '&', U+007F,
//     U+2028 and U+2029, is written literally; \uXXXX escapes in the input
//     are decoded (a surrogate pair to its one code point).
package canonical

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"unicode/utf8"
)

// MaxBytes is the largest canonical document accepted: the check is
// "canonical length > MaxBytes".
const MaxBytes = 1 << 20

// MaxDepth bounds array/object nesting. Deeper documents are invalid; the
// bound keeps the recursive parser's stack small.
const MaxDepth = 10000

// Limits bounds one document: its canonical length in bytes (the check is
// "canonical length > Bytes") and its array/object nesting (a scalar has
// depth 0, [] and {} depth 1). Both must be positive and at most MaxBytes
// and MaxDepth.
type Limits struct {
	Bytes int
	Depth int
}

// Default is the largest document the store keeps.
var Default = Limits{Bytes: MaxBytes, Depth: MaxDepth}

// Error is why a document was rejected.
type Error struct {
	Reason string
	// Oversized: the canonical form exceeds the byte limit.
	Oversized bool
	// TooDeep: the document is nested deeper than the depth limit.
	TooDeep bool
}

func (e *Error) Error() string { return "canonical JSON " + e.Reason }

// Canonical parses raw as one strict JSON document and returns its
// canonical encoding, within Default.
//
// Rejected, with an *Error: empty input, invalid JSON, trailing data after
// the document, invalid UTF-8 anywhere, unpaired surrogate escapes,
// duplicate keys in one object (compared after unescaping) and nesting
// deeper than 10000 (TooDeep). A canonical form longer than MaxBytes is
// rejected as Oversized; the parse stops as soon as the output grows past
// the limit, so an oversized document may be reported as such even if it
// is invalid further on.
//
// Canonical is idempotent: Canonical(Canonical(x)) == Canonical(x).
func Canonical(raw []byte) ([]byte, error) { return Within(raw, Default) }

// Within is Canonical with the limits lim (clamped to Default).
func Within(raw []byte, lim Limits) ([]byte, error) {
	return within(nil, raw, lim, true)
}

// AppendWithin appends the canonical encoding of raw within lim to dst and
// returns the extended slice: the bytes Within returns, with the same
// errors (dst is returned unchanged with an error).
func AppendWithin(dst, raw []byte, lim Limits) ([]byte, error) {
	return within(dst, raw, lim, false)
}

// within appends the canonical encoding of raw to dst; fresh makes the
// result a new slice of its exact length even when dst is nil.
func within(dst, raw []byte, lim Limits, fresh bool) ([]byte, error) {
	if len(raw) == 0 {
		return dst, &Error{Reason: "is not valid JSON: empty input"}
	}
	p := canonPool.Get().(*canonParser)
	p.in, p.pos, p.depth = raw, 0, 0
	p.maxBytes, p.maxDepth = min(max(lim.Bytes, 0), MaxBytes), min(max(lim.Depth, 0), MaxDepth)
	err := p.value()
	if err == nil {
		p.skipWS()
		if p.pos != len(p.in) {
			err = p.fail("trailing data after the JSON value")
		}
	}
	if err == nil && len(p.out) > p.maxBytes {
		err = p.oversized()
	}
	res := dst
	if err == nil {
		if fresh {
			res = make([]byte, len(p.out))
			copy(res, p.out)
		} else {
			res = append(dst, p.out...)
		}
	}
	p.release()
	return res, err
}

// AppendValidString appends s as a canonical JSON string (the form
// Canonical gives the string encoding/json writes for s) and reports true;
// when s is not valid UTF-8 (which encoding/json would rewrite) it appends
// nothing and reports false.
func AppendValidString(dst []byte, s string) ([]byte, bool) {
	if !utf8.ValidString(s) {
		return dst, false
	}
	return appendQuoted(dst, s), true
}

// Marshal encodes a payload the library builds itself: encoding/json
// (without HTML escaping), then Canonical. Unlike a panic, its error (an
// *Error for a payload over Default) leaves the caller free to refuse the
// write that needed it.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("canonical.Marshal(%T): %w", v, err)
	}
	return Canonical(buf.Bytes())
}

// member is one parsed object member: its decoded key in canonParser.keys and
// its canonical `"key":value` bytes in canonParser.out.
type member struct {
	keyOff, keyEnd int
	start, end     int
}

// canonParser is a recursive-descent JSON parser that writes the canonical
// form as it goes. Its buffers are reused through canonPool.
type canonParser struct {
	in       []byte
	pos      int
	depth    int
	maxBytes int // limits of the current document
	maxDepth int
	out      []byte   // canonical output
	keys     []byte   // decoded keys of the open objects, stack-wise
	members  []member // members of the open objects, stack-wise
	sbuf     []byte   // decoded escaped string values
	tmp      []byte   // scratch for re-ordering an object's members
}

var canonPool = sync.Pool{New: func() any { return new(canonParser) }}

// maxPooledBytes bounds the buffers kept in canonPool.
const maxPooledBytes = 4 * MaxBytes

func (p *canonParser) release() {
	p.in = nil
	if cap(p.out) > maxPooledBytes || cap(p.keys) > maxPooledBytes ||
		cap(p.sbuf) > maxPooledBytes || cap(p.tmp) > maxPooledBytes || cap(p.members) > maxPooledBytes/32 {
		return // let an unusually large parser be collected
	}
	p.out, p.keys, p.members, p.sbuf, p.tmp = p.out[:0], p.keys[:0], p.members[:0], p.sbuf[:0], p.tmp[:0]
	canonPool.Put(p)
}

func (p *canonParser) fail(format string, args ...any) error {
	return &Error{Reason: fmt.Sprintf("is not valid JSON: %s at offset %d", fmt.Sprintf(format, args...), p.pos)}
}

func (p *canonParser) oversized() error {
	return &Error{Reason: fmt.Sprintf("exceeds %d bytes", p.maxBytes), Oversized: true}
}

func (p *canonParser) skipWS() {
	for p.pos < len(p.in) {
		switch p.in[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *canonParser) value() error {
	p.skipWS()
	if p.pos >= len(p.in) {
		return p.fail("unexpected end of input")
	}
	switch c := p.in[p.pos]; c {
	case '{':
		return p.object()
	case '[':
		return p.array()
	case '"':
		return p.stringValue()
	case 't':
		return p.literal("true")
	case 'f':
		return p.literal("false")
	case 'n':
		return p.literal("null")
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return p.number()
	default:
		return p.fail("unexpected character %q", c)
	}
}

func (p *canonParser) literal(lit string) error {
	if !bytes.HasPrefix(p.in[p.pos:], []byte(lit)) {
		return p.fail("invalid literal")
	}
	p.pos += len(lit)
	p.out = append(p.out, lit...)
	return nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// number validates the JSON number grammar and copies the number as written:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *canonParser) number() error {
	in, i := p.in, p.pos
	if in[i] == '-' {
		i++
	}
	switch {
	case i < len(in) && in[i] == '0':
		i++
	case i < len(in) && in[i] >= '1' && in[i] <= '9':
		for i++; i < len(in) && isDigit(in[i]); i++ {
		}
	default:
		p.pos = i
		return p.fail("invalid number")
	}
	if i < len(in) && in[i] == '.' {
		i++
		if i >= len(in) || !isDigit(in[i]) {
			p.pos = i
			return p.fail("invalid number: digit expected after '.'")
		}
		for i++; i < len(in) && isDigit(in[i]); i++ {
		}
	}
	if i < len(in) && (in[i] == 'e' || in[i] == 'E') {
		i++
		if i < len(in) && (in[i] == '+' || in[i] == '-') {
			i++
		}
		if i >= len(in) || !isDigit(in[i]) {
			p.pos = i
			return p.fail("invalid number: digit expected in exponent")
		}
		for i++; i < len(in) && isDigit(in[i]); i++ {
		}
	}
	p.out = append(p.out, in[p.pos:i]...)
	p.pos = i
	if len(p.out) > p.maxBytes {
		return p.oversized()
	}
	return nil
}

func (p *canonParser) enter() error {
	p.depth++
	if p.depth > p.maxDepth {
		err := p.fail("nesting deeper than %d", p.maxDepth)
		err.(*Error).TooDeep = true
		return err
	}
	return nil
}

func (p *canonParser) array() error {
	if err := p.enter(); err != nil {
		return err
	}
	p.pos++ // '['
	p.out = append(p.out, '[')
	p.skipWS()
	if p.pos < len(p.in) && p.in[p.pos] == ']' {
		p.pos++
		p.out = append(p.out, ']')
		p.depth--
		return nil
	}
	for {
		if err := p.value(); err != nil {
			return err
		}
		p.skipWS()
		if p.pos >= len(p.in) {
			return p.fail("unexpected end of input in array")
		}
		switch p.in[p.pos] {
		case ',':
			p.pos++
			p.out = append(p.out, ',')
		case ']':
			p.pos++
			p.out = append(p.out, ']')
			p.depth--
			return nil
		default:
			return p.fail("expected ',' or ']' in array, found %q", p.in[p.pos])
		}
	}
}

func (p *canonParser) object() error {
	if err := p.enter(); err != nil {
		return err
	}
	p.pos++ // '{'
	objStart := len(p.out)
	p.out = append(p.out, '{')
	memBase, keyBase := len(p.members), len(p.keys)
	p.skipWS()
	if p.pos < len(p.in) && p.in[p.pos] == '}' {
		p.pos++
		p.out = append(p.out, '}')
		p.depth--
		return nil
	}
	sorted := true
	for {
		p.skipWS()
		if p.pos >= len(p.in) || p.in[p.pos] != '"' {
			return p.fail("expected a string object key")
		}
		if len(p.members) > memBase {
			p.out = append(p.out, ',')
		}
		start, keyOff := len(p.out), len(p.keys)
		if err := p.key(); err != nil {
			return err
		}
		keyEnd := len(p.keys)
		if sorted && len(p.members) > memBase {
			prev := p.members[len(p.members)-1]
			switch bytes.Compare(p.keys[prev.keyOff:prev.keyEnd], p.keys[keyOff:keyEnd]) {
			case 0:
				return p.fail("duplicate object key %q", p.keys[keyOff:keyEnd])
			case 1:
				sorted = false
			}
		}
		p.skipWS()
		if p.pos >= len(p.in) || p.in[p.pos] != ':' {
			return p.fail("expected ':' after object key")
		}
		p.pos++
		p.out = append(p.out, ':')
		if err := p.value(); err != nil {
			return err
		}
		p.members = append(p.members, member{keyOff: keyOff, keyEnd: keyEnd, start: start, end: len(p.out)})
		p.skipWS()
		if p.pos >= len(p.in) {
			return p.fail("unexpected end of input in object")
		}
		c := p.in[p.pos]
		if c == '}' {
			p.pos++
			break
		}
		if c != ',' {
			return p.fail("expected ',' or '}' in object, found %q", c)
		}
		p.pos++
	}
	if !sorted {
		ms := p.members[memBase:]
		keys := p.keys
		slices.SortFunc(ms, func(a, b member) int {
			return bytes.Compare(keys[a.keyOff:a.keyEnd], keys[b.keyOff:b.keyEnd])
		})
		for i := 1; i < len(ms); i++ {
			if bytes.Equal(keys[ms[i-1].keyOff:ms[i-1].keyEnd], keys[ms[i].keyOff:ms[i].keyEnd]) {
				return p.fail("duplicate object key %q", keys[ms[i].keyOff:ms[i].keyEnd])
			}
		}
		base := objStart + 1
		p.tmp = append(p.tmp[:0], p.out[base:]...)
		p.out = p.out[:base]
		for i, m := range ms {
			if i > 0 {
				p.out = append(p.out, ',')
			}
			p.out = append(p.out, p.tmp[m.start-base:m.end-base]...)
		}
	}
	p.out = append(p.out, '}')
	p.members = p.members[:memBase]
	p.keys = p.keys[:keyBase]
	p.depth--
	return nil
}

// strPlain[c] is true for the bytes that may appear unescaped inside a JSON
// string and need no escaping in the canonical form: everything but '"',
// '\\' and the control characters below 0x20 (bytes >= 0x80 are checked
// separately as UTF-8).
var strPlain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// key parses the string at p.pos, appending its decoded bytes to p.keys and
// its canonical form to p.out.
func (p *canonParser) key() error {
	start, end, plain, err := p.scanPlain()
	if err != nil {
		return err
	}
	if plain {
		seg := p.in[start:end]
		p.keys = append(p.keys, seg...)
		p.out = append(p.out, '"')
		p.out = append(p.out, seg...)
		p.out = append(p.out, '"')
	} else {
		off := len(p.keys)
		if p.keys, err = p.decodeEscaped(p.keys, start, end); err != nil {
			return err
		}
		p.out = appendQuoted(p.out, p.keys[off:])
	}
	if len(p.out) > p.maxBytes {
		return p.oversized()
	}
	return nil
}

// stringValue parses the string at p.pos and appends its canonical form.
func (p *canonParser) stringValue() error {
	start, end, plain, err := p.scanPlain()
	if err != nil {
		return err
	}
	if plain {
		p.out = append(p.out, '"')
		p.out = append(p.out, p.in[start:end]...)
		p.out = append(p.out, '"')
	} else {
		if p.sbuf, err = p.decodeEscaped(p.sbuf[:0], start, end); err != nil {
			return err
		}
		p.out = appendQuoted(p.out, p.sbuf)
	}
	if len(p.out) > p.maxBytes {
		return p.oversized()
	}
	return nil
}

// scanPlain scans the string whose opening quote is at p.pos. When the string
// has no escapes (plain) it validates it, sets p.pos past the closing quote
// and returns the content as in[start:end]. Otherwise it returns plain=false
// with start at the content and end at the first backslash, leaving the rest
// to decodeEscaped.
func (p *canonParser) scanPlain() (start, end int, plain bool, err error) {
	in := p.in
	start = p.pos + 1
	i := start
	for i < len(in) && strPlain[in[i]] {
		i++
	}
	if !utf8.Valid(in[start:i]) {
		return 0, 0, false, p.failUTF8(start, i)
	}
	if i >= len(in) {
		p.pos = i
		return 0, 0, false, p.fail("unterminated string")
	}
	switch in[i] {
	case '"':
		p.pos = i + 1
		return start, i, true, nil
	case '\\':
		return start, i, false, nil
	default:
		p.pos = i
		return 0, 0, false, p.fail("unescaped control character %q in string", in[i])
	}
}

func (p *canonParser) failUTF8(from, to int) error {
	seg := p.in[from:to]
	for len(seg) > 0 {
		r, n := utf8.DecodeRune(seg)
		if r == utf8.RuneError && n == 1 {
			break
		}
		seg = seg[n:]
	}
	p.pos = to - len(seg)
	return p.fail("invalid UTF-8 in string")
}

// decodeEscaped appends the decoded content of a string with escapes to dst.
// in[start:i] is already validated plain text and in[i] is a backslash. It
// leaves p.pos past the closing quote.
func (p *canonParser) decodeEscaped(dst []byte, start, i int) ([]byte, error) {
	in := p.in
	dst = append(dst, in[start:i]...)
	for {
		// in[i] is '\\', '"' or a control character.
		switch c := in[i]; {
		case c == '"':
			p.pos = i + 1
			return dst, nil
		case c < 0x20:
			p.pos = i
			return dst, p.fail("unescaped control character %q in string", c)
		}
		if i+1 >= len(in) {
			p.pos = i
			return dst, p.fail("unterminated string")
		}
		switch e := in[i+1]; e {
		case '"', '\\', '/':
			dst = append(dst, e)
			i += 2
		case 'b':
			dst = append(dst, '\b')
			i += 2
		case 'f':
			dst = append(dst, '\f')
			i += 2
		case 'n':
			dst = append(dst, '\n')
			i += 2
		case 'r':
			dst = append(dst, '\r')
			i += 2
		case 't':
			dst = append(dst, '\t')
			i += 2
		case 'u':
			r, ok := hex4(in, i+2)
			if !ok {
				p.pos = i
				return dst, p.fail(`invalid \u escape`)
			}
			switch {
			case r >= 0xDC00 && r <= 0xDFFF:
				p.pos = i
				return dst, p.fail(`unpaired surrogate \u%04x`, r)
			case r >= 0xD800 && r <= 0xDBFF:
				lo, ok := rune(0), false
				if i+12 <= len(in) && in[i+6] == '\\' && in[i+7] == 'u' {
					lo, ok = hex4(in, i+8)
				}
				if !ok || lo < 0xDC00 || lo > 0xDFFF {
					p.pos = i
					return dst, p.fail(`unpaired surrogate \u%04x`, r)
				}
				r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
				i += 12
			default:
				i += 6
			}
			dst = utf8.AppendRune(dst, r)
		default:
			p.pos = i
			return dst, p.fail("invalid escape %q", []byte{'\\', e})
		}
		s := i
		for i < len(in) && strPlain[in[i]] {
			i++
		}
		if !utf8.Valid(in[s:i]) {
			return dst, p.failUTF8(s, i)
		}
		if i >= len(in) {
			p.pos = i
			return dst, p.fail("unterminated string")
		}
		dst = append(dst, in[s:i]...)
		if len(dst) > p.maxBytes {
			return dst, p.oversized()
		}
	}
}

// hex4 decodes the four hex digits at in[i:i+4].
func hex4(in []byte, i int) (rune, bool) {
	if i+4 > len(in) {
		return 0, false
	}
	var r rune
	for _, c := range in[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

const lowerHex = "0123456789abcdef"

// AppendString appends s as a canonical JSON string.
func AppendString(dst []byte, s string) []byte { return appendQuoted(dst, s) }

// appendQuoted appends s (decoded UTF-8) as a canonical JSON string: only
// '"', '\\' and control characters are escaped. Invalid UTF-8 in s is copied
// as it is (callers pass validated text).
func appendQuoted[S ~string | ~[]byte](dst []byte, s S) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', lowerHex[c>>4], lowerHex[c&0xF])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
