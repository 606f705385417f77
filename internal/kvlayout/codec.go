package kvlayout

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// This file is the order-preserving key codec. A key is a tuple of parts
// (strings, unsigned and signed integers) encoded so that comparing two
// encoded keys bytewise, as bbolt and etcd do, gives the same answer as comparing
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

// Key is an encoded tuple. Its methods append one part and return the
// extended key, so a key reads like its schema:
//
//	Key(nil).Str(run).Str(node).Str(act).U32(attempt)
type Key []byte

// growKey returns dst with room for the string parts strs (each with its
// terminator, escapes aside) and fixed more bytes after what it holds:
// dst itself when it has the room (a nil dst: a new Key of that size).
func growKey(dst Key, fixed int, strs ...string) Key {
	n := fixed
	for _, s := range strs {
		n += len(s) + 2
	}
	if cap(dst)-len(dst) >= n {
		return dst
	}
	return append(make(Key, 0, len(dst)+n), dst...)
}

// Str appends a string part.
func (k Key) Str(s string) Key {
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

// U32 appends a fixed-width unsigned 32-bit part.
func (k Key) U32(v uint32) Key { return binary.BigEndian.AppendUint32(k, v) }

// U64 appends a fixed-width unsigned 64-bit part.
func (k Key) U64(v uint64) Key { return binary.BigEndian.AppendUint64(k, v) }

// I64 appends a signed 64-bit part in order-preserving form.
func (k Key) I64(v int64) Key { return k.U64(uint64(v) ^ int64Flip) }

// Clone copies k, so that appending to the copy cannot write into k's
// spare capacity.
func (k Key) Clone() Key { return append(Key(nil), k...) }

// ErrMalformedKey reports a key that does not decode under its schema.
var ErrMalformedKey = errors.New("malformed key")

// KeyReader decodes the parts of a key in order. The first failure sticks:
// later reads return zero values and End reports it.
type KeyReader struct {
	rest []byte
	err  error
}

// ReadKey starts decoding k.
func ReadKey(k []byte) *KeyReader { return &KeyReader{rest: k} }

func (r *KeyReader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", ErrMalformedKey, what)
	}
	r.rest = nil
}

// Str reads a string part.
func (r *KeyReader) Str() string {
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

// skipStr reads a string part as Str does, failing as Str fails, without
// making the string.
func (r *KeyReader) skipStr() {
	if r.err != nil {
		return
	}
	b := r.rest
	for {
		i := bytes.IndexByte(b, escByte)
		if i < 0 || i+1 >= len(b) {
			r.fail("unterminated string")
			return
		}
		switch b[i+1] {
		case escEnd:
			r.rest = b[i+2:]
			return
		case escNul:
			b = b[i+2:]
		default:
			r.fail(fmt.Sprintf("bad escape 0x00 0x%02x", b[i+1]))
			return
		}
	}
}

// U32 reads a fixed-width unsigned 32-bit part.
func (r *KeyReader) U32() uint32 {
	if r.err != nil || len(r.rest) < 4 {
		r.fail("short uint32")
		return 0
	}
	v := binary.BigEndian.Uint32(r.rest)
	r.rest = r.rest[4:]
	return v
}

// U64 reads a fixed-width unsigned 64-bit part.
func (r *KeyReader) U64() uint64 {
	if r.err != nil || len(r.rest) < 8 {
		r.fail("short uint64")
		return 0
	}
	v := binary.BigEndian.Uint64(r.rest)
	r.rest = r.rest[8:]
	return v
}

// I64 reads a signed 64-bit part.
func (r *KeyReader) I64() int64 { return int64(r.U64() ^ int64Flip) }

// End reports the first decoding failure, or trailing bytes after the last
// part the caller read.
func (r *KeyReader) End() error {
	if r.err == nil && len(r.rest) != 0 {
		r.fail(fmt.Sprintf("%d trailing bytes", len(r.rest)))
	}
	return r.err
}

// PrefixEnd returns the smallest key greater than every key that starts
// with p, or nil when there is none (p is all 0xFF). Seeking to
// PrefixEnd(p) skips everything under p. For an encoded tuple it means
// "strictly after this position", because an encoded string always ends in
// 0x01, which increments without carry.
func PrefixEnd(p []byte) []byte { return prefixEndOf(append([]byte(nil), p...)) }

// prefixEndOf is PrefixEnd(p) made in p's own bytes.
func prefixEndOf(end []byte) []byte {
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xFF {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// Part is the type of one part of a key schema.
type Part uint8

// The part types.
const (
	PartStr Part = iota + 1 // a string
	PartU32                 // a uint32
	PartI64                 // an int64
)

// Field names one part of a key schema.
type Field struct {
	Name string
	Part Part
}

// Schema describes the parts of the keys of one record kind or index. It
// lets generic code (the verifier, index entry decoding) take keys apart
// and print them.
type Schema []Field

// Decode splits k into its parts: string, uint32 or int64 values. It fails
// with ErrMalformedKey when k is not a key of s.
func (s Schema) Decode(k []byte) ([]any, error) {
	r := ReadKey(k)
	vals := make([]any, len(s))
	for i, f := range s {
		switch f.Part {
		case PartStr:
			vals[i] = r.Str()
		case PartU32:
			vals[i] = r.U32()
		case PartI64:
			vals[i] = r.I64()
		}
	}
	return vals, r.End()
}

// prefixLen returns the length of k's first n parts, k checked whole as
// Decode checks it (the same errors), without decoding its values.
func (s Schema) prefixLen(k []byte, n int) (int, error) {
	r := KeyReader{rest: k}
	at := -1
	for i, f := range s {
		if i == n {
			at = len(k) - len(r.rest)
		}
		switch f.Part {
		case PartStr:
			r.skipStr()
		case PartU32:
			r.U32()
		case PartI64:
			r.I64()
		}
	}
	if at < 0 {
		at = len(k) - len(r.rest)
	}
	return at, r.End()
}

// Encode is the inverse of Decode for the parts at positions pick (all
// parts when pick is nil).
func (s Schema) Encode(vals []any, pick []int) Key {
	var k Key
	add := func(i int) {
		switch v := vals[i].(type) {
		case string:
			k = k.Str(v)
		case uint32:
			k = k.U32(v)
		case int64:
			k = k.I64(v)
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

// Format renders k for people: (run="r1", attempt=2). A key that does not
// decode is shown in hex.
func (s Schema) Format(k []byte) string {
	vals, err := s.Decode(k)
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
			fmt.Fprintf(&b, "%s=%q", f.Name, str)
		} else {
			fmt.Fprintf(&b, "%s=%d", f.Name, vals[i])
		}
	}
	b.WriteByte(')')
	return b.String()
}
