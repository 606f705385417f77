package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"reflect"
	"slices"

	"github.com/wfstore/wfstore/backend"
)

// The export stream, format version 3:
//
//	{"format":"wfstore-export","version":3}
//	{"kind":K,"record":{...}}            one line per record
//	...
//	{"trailer":{"records":N,"sha256":H}}
//
// H is the SHA-256 of the body: every record line, newline included, as
// written. A record's fields are the backend record's, named in
// snake_case (see snakeName) at every depth; the fields that hold
// canonical JSON (jsonFields) are written as JSON values (null when
// absent), other byte fields as base64. A JSON field whose bytes are not
// compact JSON is written as base64 instead and named in the line's
// "base64" list, so every value round-trips exactly.
//
// Version 2 is the same stream with the fields under their Go names
// ("CreatedMS" for "created_ms"). Version 1, written before the header
// existed, is version 2's record lines with every byte field base64, and
// no header or trailer. Import reads all three. A field added to a record
// after its version was first written (an activation's attempt timeout and
// join fields, an attempt's handoff token, a group's fan_in) reads as its
// zero value from a line that lacks it.
const (
	exportFormatName = "wfstore-export"
	exportVersion    = 3
	// maxLineBytes bounds one line of a stream: a record holds at most
	// three JSON documents of workflow.MaxJSONBytes each, base64 at worst,
	// plus ids. A longer line is refused without being read whole.
	maxLineBytes = 16 << 20
)

// exportHeader is the first line of a stream of version 2 or later.
type exportHeader struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
}

// exportTrailer is the last line of a stream of version 2 or later.
type exportTrailer struct {
	Records int64  `json:"records"`
	SHA256  string `json:"sha256"`
}

type trailerLine struct {
	Trailer *exportTrailer `json:"trailer"`
}

// exportLine is one record line of an export stream.
type exportLine struct {
	Kind   string          `json:"kind"`
	Record json.RawMessage `json:"record"`
	// Base64 names the JSON fields written as base64 (version 2 on), under
	// the line's field names.
	Base64 []string `json:"base64,omitempty"`
}

// jsonFields names, per kind, the byte fields that hold canonical JSON,
// by their Go names (streamFieldName gives a version's name).
// A field added to a record type is exported as the Go encoding writes it
// (base64 for bytes) unless it is listed here.
var jsonFields = map[string][]string{
	"run":        {"Metadata"},
	"run_link":   {"Target"},
	"activation": {"Input", "Output", "RetryPolicy"},
	"attempt":    {"Intent", "Receipt", "Detail"},
	"event":      {"Payload"},
}

// recordTypes are the record type of each kind.
var recordTypes = map[string]reflect.Type{
	"run":            reflect.TypeFor[backend.Run](),
	"run_link":       reflect.TypeFor[backend.RunLink](),
	"activation":     reflect.TypeFor[backend.Activation](),
	"fan_out_group":  reflect.TypeFor[backend.FanOutGroup](),
	"attempt":        reflect.TypeFor[backend.Attempt](),
	"lease":          reflect.TypeFor[backend.Lease](),
	"retry_schedule": reflect.TypeFor[backend.RetrySchedule](),
	"event":          reflect.TypeFor[backend.Event](),
}

// streamFieldName is the name of the record field goName in a stream of the
// given version.
func streamFieldName(version int, goName string) string {
	if version >= 3 {
		return snakeName(goName)
	}
	return goName
}

// marshalExact encodes v as compact JSON without HTML escaping, so raw
// JSON inside it keeps its bytes.
func marshalExact(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'}), nil
}

// compactJSON reports whether b is one JSON value written compactly: the
// bytes a JSON encoder copies unchanged.
func compactJSON(b []byte) bool {
	if !json.Valid(b) {
		return false
	}
	var c bytes.Buffer
	if err := json.Compact(&c, b); err != nil {
		return false
	}
	return bytes.Equal(c.Bytes(), b)
}

// encodeLine renders rec as one canonical export line of the current
// version (no newline).
func encodeLine(rec record) ([]byte, error) {
	kind := kindOf(rec)
	raw, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	if raw, err = renameKeys(raw, recordTypes[kind], false); err != nil {
		return nil, fmt.Errorf("%s record: %w", kind, err)
	}
	l := exportLine{Kind: kind, Record: raw}
	if fields := jsonFields[kind]; len(fields) > 0 {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, err
		}
		for _, gf := range fields {
			f := streamFieldName(exportVersion, gf)
			var b []byte
			if err := json.Unmarshal(m[f], &b); err != nil {
				return nil, fmt.Errorf("%s field %s: %w", kind, f, err)
			}
			switch {
			case b == nil:
				m[f] = json.RawMessage("null")
			case compactJSON(b):
				m[f] = b
			default:
				l.Base64 = append(l.Base64, f)
			}
		}
		if l.Record, err = marshalExact(m); err != nil {
			return nil, err
		}
	}
	return marshalExact(l)
}

// decodeLine parses one record line of a stream of the given version.
func decodeLine(version int, line []byte) (record, error) {
	var l exportLine
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return nil, err
	}
	if len(l.Record) == 0 || string(l.Record) == "null" {
		return nil, errors.New("the line has no record")
	}
	if version < 2 && l.Base64 != nil {
		return nil, errors.New(`unknown field "base64" in a version 1 stream`)
	}
	if fields, ok := jsonFields[l.Kind]; ok && version >= 2 {
		names := make([]string, len(fields))
		for i, gf := range fields {
			names[i] = streamFieldName(version, gf)
		}
		for _, f := range l.Base64 {
			if !slices.Contains(names, f) {
				return nil, fmt.Errorf("base64 names %q, not a JSON field of a %s", f, l.Kind)
			}
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(l.Record, &m); err != nil {
			return nil, err
		}
		if m == nil {
			return nil, errors.New("the line has no record")
		}
		for _, f := range names {
			v, ok := m[f]
			if !ok || slices.Contains(l.Base64, f) || string(v) == "null" {
				continue
			}
			b, err := json.Marshal([]byte(v)) // as base64, for the Go decoder
			if err != nil {
				return nil, err
			}
			m[f] = b
		}
		raw, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		l.Record = raw
	}
	if t, ok := recordTypes[l.Kind]; ok && version >= 3 {
		raw, err := renameKeys(l.Record, t, true)
		if err != nil {
			return nil, fmt.Errorf("%s record: %w", l.Kind, err)
		}
		l.Record = raw
	}
	switch l.Kind {
	case "run":
		return decodeAs[backend.Run](l.Record)
	case "run_link":
		return decodeAs[backend.RunLink](l.Record)
	case "activation":
		return decodeAs[backend.Activation](l.Record)
	case "fan_out_group":
		return decodeAs[backend.FanOutGroup](l.Record)
	case "attempt":
		return decodeAs[backend.Attempt](l.Record)
	case "lease":
		return decodeAs[backend.Lease](l.Record)
	case "retry_schedule":
		return decodeAs[backend.RetrySchedule](l.Record)
	case "event":
		return decodeAs[backend.Event](l.Record)
	}
	return nil, fmt.Errorf("unknown record kind %q", l.Kind)
}

func decodeAs[T any](raw json.RawMessage) (record, error) {
	var v T
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// digester hashes canonical record lines in order. It also keeps an
// order-free digest of the lines (the sum, modulo 2^256, of each line's
// SHA-256), which is equal for two sequences of the same lines in any
// order: import compares the store it filled with a stream whose records
// may come in another order than an export writes them.
type digester struct {
	h   hash.Hash
	n   int64
	set [sha256.Size]byte
}

func newDigester() *digester { return &digester{h: sha256.New()} }

func (d *digester) add(line []byte) {
	d.h.Write(line)
	d.h.Write([]byte{'\n'})
	d.n++
	sum := sha256.Sum256(line)
	carry := 0
	for i := len(sum) - 1; i >= 0; i-- {
		v := int(d.set[i]) + int(sum[i]) + carry
		d.set[i], carry = byte(v), v>>8
	}
}

func (d *digester) sum() string { return hex.EncodeToString(d.h.Sum(nil)) }

// streamWriter writes a stream of the current version: the header, then
// one line per record, then (close) the trailer.
type streamWriter struct {
	w *bufio.Writer
	d *digester
}

func newStreamWriter(w io.Writer) (*streamWriter, error) {
	s := &streamWriter{w: bufio.NewWriter(w), d: newDigester()}
	h, err := json.Marshal(exportHeader{Format: exportFormatName, Version: exportVersion})
	if err != nil {
		return nil, err
	}
	s.w.Write(h)
	return s, s.w.WriteByte('\n')
}

func (s *streamWriter) write(rec record) error {
	line, err := encodeLine(rec)
	if err != nil {
		return err
	}
	s.d.add(line)
	s.w.Write(line)
	return s.w.WriteByte('\n')
}

// close writes the trailer and flushes.
func (s *streamWriter) close() error {
	t, err := json.Marshal(trailerLine{Trailer: &exportTrailer{Records: s.d.n, SHA256: s.d.sum()}})
	if err != nil {
		return err
	}
	s.w.Write(t)
	s.w.WriteByte('\n')
	return s.w.Flush()
}

// errNoNewline: the last line of the input ended without a newline.
var errNoNewline = errors.New("no newline")

// streamReader reads a stream of any version, record by record. It
// checks the trailer of a version 2 stream when the records end.
type streamReader struct {
	br      *bufio.Reader
	version int
	line    int // the number of the last line read
	body    hash.Hash
	records int64
	pending []byte // version 1: the first record line, already read
	eof     bool
}

// newStreamReader reads the first line of r to learn the version.
func newStreamReader(r io.Reader) (*streamReader, error) {
	s := &streamReader{br: bufio.NewReaderSize(r, 64<<10), body: sha256.New()}
	first, err := s.readLine()
	switch {
	case errors.Is(err, io.EOF):
		// An empty input: what version 1 wrote for an empty store.
		s.version, s.eof = 1, true
		return s, nil
	case err != nil && !errors.Is(err, errNoNewline):
		return nil, err
	}
	var h exportHeader
	if json.Unmarshal(first, &h) == nil && h.Format != "" {
		switch {
		case h.Format != exportFormatName:
			return nil, fmt.Errorf("line 1: format %q is not a wfstore export", h.Format)
		case h.Version < 2:
			return nil, fmt.Errorf("line 1: format version %d is not valid", h.Version)
		case h.Version > exportVersion:
			return nil, fmt.Errorf("line 1: format version %d was written by a newer wfstore (this one reads versions 1 to %d)", h.Version, exportVersion)
		case err != nil:
			return nil, fmt.Errorf("line 1 is cut off (%w): the stream is truncated", err)
		}
		s.version = h.Version
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("line 1 is cut off (%w): the stream is truncated", err)
	}
	s.version = 1
	s.pending = first
	return s, nil
}

// readLine reads one line without its newline. A line longer than
// maxLineBytes is refused after reading that much of it.
func (s *streamReader) readLine() ([]byte, error) {
	s.line++
	var buf []byte
	for {
		frag, err := s.br.ReadSlice('\n')
		if len(buf)+len(frag) > maxLineBytes+1 {
			return nil, fmt.Errorf("line %d is longer than %d bytes, the longest line an export holds: refused unread", s.line, maxLineBytes)
		}
		buf = append(buf, frag...)
		switch {
		case err == nil:
			return buf[:len(buf)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(buf) == 0 {
				s.line--
				return nil, io.EOF
			}
			return buf, errNoNewline
		default:
			return nil, fmt.Errorf("line %d: %w", s.line, err)
		}
	}
}

// next returns the next record and its canonical line, or io.EOF after
// the last one (for version 2, once the trailer checked out).
func (s *streamReader) next() (record, []byte, error) {
	for {
		if s.eof && s.pending == nil {
			return nil, nil, io.EOF
		}
		var line []byte
		var err error
		if s.pending != nil {
			line, s.pending = s.pending, nil
		} else {
			line, err = s.readLine()
		}
		switch {
		case errors.Is(err, io.EOF):
			if s.version >= 2 {
				return nil, nil, fmt.Errorf("the stream ends after line %d without its trailer: it is truncated", s.line)
			}
			s.eof = true
			return nil, nil, io.EOF
		case errors.Is(err, errNoNewline):
			return nil, nil, fmt.Errorf("line %d is cut off (no newline): the stream is truncated", s.line)
		case err != nil:
			return nil, nil, err
		}
		if s.version >= 2 && bytes.HasPrefix(line, []byte(`{"trailer"`)) {
			return nil, nil, s.trailer(line)
		}
		if len(bytes.TrimSpace(line)) == 0 {
			if s.version >= 2 {
				return nil, nil, fmt.Errorf("line %d is blank: a stream of version %d has none", s.line, s.version)
			}
			continue // version 1 tolerated them
		}
		s.body.Write(line)
		s.body.Write([]byte{'\n'})
		rec, err := decodeLine(s.version, line)
		if err != nil {
			return nil, nil, fmt.Errorf("line %d: %w", s.line, err)
		}
		canon, err := encodeLine(rec)
		if err != nil {
			return nil, nil, fmt.Errorf("line %d: %w", s.line, err)
		}
		s.records++
		return rec, canon, nil
	}
}

// trailer checks the trailer line against the body read, and that
// nothing follows it.
func (s *streamReader) trailer(line []byte) error {
	at := s.line
	var t trailerLine
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil || t.Trailer == nil {
		return fmt.Errorf("line %d: the trailer is not valid: %v", at, err)
	}
	sum := hex.EncodeToString(s.body.Sum(nil))
	switch {
	case t.Trailer.Records != s.records:
		return fmt.Errorf("line %d: the trailer counts %d records, the stream holds %d: it is corrupt or truncated", at, t.Trailer.Records, s.records)
	case t.Trailer.SHA256 != sum:
		return fmt.Errorf("line %d: the body's SHA-256 is %s, the trailer says %s: the stream is corrupt", at, sum, t.Trailer.SHA256)
	}
	if _, err := s.readLine(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("line %d: data after the trailer", s.line)
	}
	s.eof = true
	return io.EOF
}
