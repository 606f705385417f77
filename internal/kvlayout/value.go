package kvlayout

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"
)

// This file holds the primitives of the record value encoding: a compact
// binary form with no field names. Integers are varints (zig-zag for
// signed), strings are length-prefixed, and byte fields and slices store
// length+1 so that nil (0) and empty (1) stay distinct: a record reads back
// exactly as it was written, nil fields included. Each value starts with the
// record kind's tag byte, so a value under another kind's key, or a
// truncated or padded one, fails to decode instead of decoding as nonsense.
// See bench_test.go for why this is binary rather than JSON.

// ErrMalformedValue reports a value that does not decode as its record kind.
var ErrMalformedValue = errors.New("malformed record value")

// valueWriter appends the fields of one record value.
type valueWriter struct{ b []byte }

func (w *valueWriter) uvarint(v uint64) { w.b = binary.AppendUvarint(w.b, v) }
func (w *valueWriter) varint(v int64)   { w.b = binary.AppendVarint(w.b, v) }
func (w *valueWriter) u32(v uint32)     { w.uvarint(uint64(v)) }

func (w *valueWriter) bool(v bool) {
	if v {
		w.b = append(w.b, 1)
	} else {
		w.b = append(w.b, 0)
	}
}

func (w *valueWriter) str(s string) {
	w.uvarint(uint64(len(s)))
	w.b = append(w.b, s...)
}

// bytes writes a byte field, keeping nil and empty distinct.
func (w *valueWriter) bytes(p []byte) {
	if p == nil {
		w.uvarint(0)
		return
	}
	w.uvarint(uint64(len(p)) + 1)
	w.b = append(w.b, p...)
}

// count writes a slice length, keeping nil and empty distinct.
func (w *valueWriter) count(n int, isNil bool) {
	if isNil {
		w.uvarint(0)
		return
	}
	w.uvarint(uint64(n) + 1)
}

// valueReader reads the fields of one record value in the order they were
// written. The first failure sticks; end reports it. Unless view is set,
// everything it returns is copied out of the value, so it outlives the
// storage's transaction (a bbolt page, an etcd response). With view, the
// strings and byte fields it returns share the value's memory: for a record
// that is dropped before the value may change or go (Table.decodeView).
type valueReader struct {
	b    []byte
	err  error
	view bool
}

func (r *valueReader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", ErrMalformedValue, what)
	}
	r.b = nil
}

func (r *valueReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("bad uvarint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *valueReader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail("bad varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *valueReader) u32() uint32 {
	v := r.uvarint()
	if v > 1<<32-1 {
		r.fail("uint32 out of range")
		return 0
	}
	return uint32(v)
}

func (r *valueReader) bool() bool {
	if len(r.b) < 1 || r.b[0] > 1 {
		r.fail("bad bool")
		return false
	}
	v := r.b[0] == 1
	r.b = r.b[1:]
	return v
}

func (r *valueReader) take(n uint64) []byte {
	if n > uint64(len(r.b)) {
		r.fail("length past end of value")
		return nil
	}
	p := r.b[:n]
	r.b = r.b[n:]
	return p
}

func (r *valueReader) str() string {
	p := r.take(r.uvarint())
	if r.view && len(p) > 0 {
		return unsafe.String(&p[0], len(p))
	}
	return string(p)
}

// bytes reads a byte field written by valueWriter.bytes, as a copy.
func (r *valueReader) bytes() []byte {
	n := r.uvarint()
	if n == 0 || r.err != nil {
		return nil
	}
	if r.view {
		if p := r.take(n - 1); p != nil {
			return p[:len(p):len(p)]
		}
		return nil
	}
	return append(make([]byte, 0, n-1), r.take(n-1)...)
}

// count reads a slice length written by valueWriter.count; isNil reports a
// nil slice.
func (r *valueReader) count() (n int, isNil bool) {
	c := r.uvarint()
	if c == 0 || r.err != nil {
		return 0, true
	}
	if c-1 > uint64(len(r.b)) { // every element takes at least one byte
		r.fail("count past end of value")
		return 0, true
	}
	return int(c - 1), false
}

// tag checks the kind tag a value starts with.
func (r *valueReader) tag(want byte) {
	if len(r.b) < 1 || r.b[0] != want {
		r.fail(fmt.Sprintf("kind tag is not 0x%02x", want))
		return
	}
	r.b = r.b[1:]
}

// end reports the first failure, or bytes left over after the last field.
func (r *valueReader) end() error {
	if r.err == nil && len(r.b) != 0 {
		r.fail(fmt.Sprintf("%d trailing bytes", len(r.b)))
	}
	return r.err
}
