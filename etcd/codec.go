package etcd

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// This file is the order-preserving key codec, the same as the bolt
// adapter's. A key is a tuple of parts
// (strings, unsigned and signed integers) encoded so that comparing two
// encoded keys bytewise, as etcd orders keys, gives the same answer as comparing
// the tuples part by part:
//
//   - uint32 and uint64: fixed-width big-endian.
//   - int64: the sign bit flipped, then fixed-width big-endian, so that
//     math.MinInt64 encodes as 8 zero bytes and -1 sorts before 0.
//   - string: every 0x00 byte is written as 0x00 0xFF and the string ends
//     with the terminator 0x00 0x01. Other bytes are written as they are.
//
// The string encoding is order-preserving (a 0x00 byte of the input sorts
// after the end of a shorter string, as 0xFF > 0x01) and self-delimiting: a
// decoder stops at the first 0x00 0x01. So no encoded tuple is a prefix of
// another tuple of the same schema, and the encoded tuple (a, b) is a prefix
// of a key exactly when that key's first parts are a and b; prefix scans
// ("every activation of run r") are exact. The codec is correct for any
// byte string, not only for the UTF-8 ids the workflow layer admits.

const (
	escByte   = 0x00 // introduces a two-byte sequence in an encoded string
	escNul    = 0xFF // 0x00 0xFF: a literal 0x00 byte
	escEnd    = 0x01 // 0x00 0x01: end of the string
	int64Flip = 1 << 63
)

// key is an encoded tuple. Its methods append one part and return the
// extended key, so a key reads like its schema:
//
//	key(nil).str(run).str(node).str(act).u32(attempt)
type key []byte

// str appends a string part.
func (k key) str(s string) key {
	for {
		i := strings.IndexByte(s, escByte)
		if i < 0 {
			break
		}
		k = append(k, s[:i]...)
		k = append(k, escByte, escNul)
		s = s[i+1:]
	}
	k = append(k, s...)
	return append(k, escByte, escEnd)
}

// u32 appends a fixed-width unsigned 32-bit part.
func (k key) u32(v uint32) key { return binary.BigEndian.AppendUint32(k, v) }

// u64 appends a fixed-width unsigned 64-bit part.
func (k key) u64(v uint64) key { return binary.BigEndian.AppendUint64(k, v) }

// i64 appends a signed 64-bit part in order-preserving form.
func (k key) i64(v int64) key { return k.u64(uint64(v) ^ int64Flip) }

// errMalformedKey reports a key that does not decode under its schema.
var errMalformedKey = errors.New("etcd: malformed key")

// keyReader decodes the parts of a key in order. The first failure sticks:
// later reads return zero values and end reports it.
type keyReader struct {
	rest []byte
	err  error
}

// readKey starts decoding k.
func readKey(k []byte) *keyReader { return &keyReader{rest: k} }

func (r *keyReader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", errMalformedKey, what)
	}
	r.rest = nil
}

// str reads a string part.
func (r *keyReader) str() string {
	if r.err != nil {
		return ""
	}
	var out []byte
	b := r.rest
	for {
		i := bytes.IndexByte(b, escByte)
		if i < 0 || i+1 >= len(b) {
			r.fail("unterminated string")
			return ""
		}
		switch b[i+1] {
		case escEnd:
			if out == nil {
				out = b[:i] // no escapes: one copy in the conversion below
			} else {
				out = append(out, b[:i]...)
			}
			r.rest = b[i+2:]
			return string(out)
		case escNul:
			out = append(out, b[:i]...)
			out = append(out, escByte)
			b = b[i+2:]
		default:
			r.fail(fmt.Sprintf("bad escape 0x00 0x%02x", b[i+1]))
			return ""
		}
	}
}

// u32 reads a fixed-width unsigned 32-bit part.
func (r *keyReader) u32() uint32 {
	if r.err != nil || len(r.rest) < 4 {
		r.fail("short uint32")
		return 0
	}
	v := binary.BigEndian.Uint32(r.rest)
	r.rest = r.rest[4:]
	return v
}

// u64 reads a fixed-width unsigned 64-bit part.
func (r *keyReader) u64() uint64 {
	if r.err != nil || len(r.rest) < 8 {
		r.fail("short uint64")
		return 0
	}
	v := binary.BigEndian.Uint64(r.rest)
	r.rest = r.rest[8:]
	return v
}

// i64 reads a signed 64-bit part.
func (r *keyReader) i64() int64 { return int64(r.u64() ^ int64Flip) }

// end reports the first decoding failure, or trailing bytes after the last
// part the caller read.
func (r *keyReader) end() error {
	if r.err == nil && len(r.rest) != 0 {
		r.fail(fmt.Sprintf("%d trailing bytes", len(r.rest)))
	}
	return r.err
}

// prefixEnd returns the smallest key greater than every key that starts
// with p, or nil when there is none (p is all 0xFF). Seeking to
// prefixEnd(p) skips everything under p. For an encoded tuple it means
// "strictly after this position", because an encoded string always ends in
// 0x01, which increments without carry.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xFF {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// part is the type of one part of a key schema.
type part uint8

const (
	partStr part = iota + 1
	partU32
	partI64
)

// field names one part of a key schema.
type field struct {
	name string
	part part
}

// schema describes the parts of the keys of one bucket. It lets generic code
// (the verifier, index entry decoding) take keys apart and print them.
type schema []field

// decode splits k into its parts: string, uint32 or int64 values.
func (s schema) decode(k []byte) ([]any, error) {
	r := readKey(k)
	vals := make([]any, len(s))
	for i, f := range s {
		switch f.part {
		case partStr:
			vals[i] = r.str()
		case partU32:
			vals[i] = r.u32()
		case partI64:
			vals[i] = r.i64()
		}
	}
	return vals, r.end()
}

// encode is the inverse of decode for the parts at positions pick (all
// parts when pick is nil).
func (s schema) encode(vals []any, pick []int) key {
	var k key
	add := func(i int) {
		switch v := vals[i].(type) {
		case string:
			k = k.str(v)
		case uint32:
			k = k.u32(v)
		case int64:
			k = k.i64(v)
		}
	}
	if pick == nil {
		for i := range vals {
			add(i)
		}
	}
	for _, i := range pick {
		add(i)
	}
	return k
}

// format renders k for people: (run="r1", attempt=2). A key that does not
// decode is shown in hex.
func (s schema) format(k []byte) string {
	vals, err := s.decode(k)
	if err != nil {
		return fmt.Sprintf("%x (%v)", k, err)
	}
	var b strings.Builder
	b.WriteByte('(')
	for i, f := range s {
		if i > 0 {
			b.WriteString(", ")
		}
		if str, ok := vals[i].(string); ok {
			fmt.Fprintf(&b, "%s=%q", f.name, str)
		} else {
			fmt.Fprintf(&b, "%s=%d", f.name, vals[i])
		}
	}
	b.WriteByte(')')
	return b.String()
}
