package conformance

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/wfstore/wfstore/backend"
)

// Helpers shared by the cases. They run on the test's goroutine unless they
// say otherwise (they may call T.Fatal).

// update runs fn in b.Update and fails the test on error.
func (e *env) update(b backend.Backend, fn func(tx backend.Tx) error) {
	e.T.Helper()
	if err := b.Update(e.Ctx, fn); err != nil {
		e.T.Fatalf("Update: %v", err)
	}
}

// view runs fn in b.View and fails the test on error.
func (e *env) view(b backend.Backend, fn func(rtx backend.ReadTx) error) {
	e.T.Helper()
	if err := b.View(e.Ctx, fn); err != nil {
		e.T.Fatalf("View: %v", err)
	}
}

// apply commits c in one Update on b, failing the test on error.
func (e *env) apply(b backend.Backend, c backend.Changes) {
	e.T.Helper()
	e.update(b, func(tx backend.Tx) error { return tx.Apply(e.Ctx, c) })
}

// applyErr commits c in one Update on b and returns Update's error.
func (e *env) applyErr(b backend.Backend, c backend.Changes) error {
	return b.Update(e.Ctx, func(tx backend.Tx) error { return tx.Apply(e.Ctx, c) })
}

// load reads l in one View on b.
func (e *env) load(b backend.Backend, l backend.Lookup) backend.Found {
	e.T.Helper()
	var f backend.Found
	e.view(b, func(rtx backend.ReadTx) error {
		var err error
		f, err = rtx.Load(e.Ctx, l)
		return err
	})
	return f
}

// scan runs one read in a View on b and returns its result.
func scan[T any](e *env, b backend.Backend, read func(rtx backend.ReadTx) (T, error)) T {
	e.T.Helper()
	var out T
	e.view(b, func(rtx backend.ReadTx) error {
		var err error
		out, err = read(rtx)
		return err
	})
	return out
}

// equal fails the test (without stopping it) when got differs from want,
// listing every differing field. JSON and other byte fields compare by
// content, where nil and empty both mean absent; nil and empty slices are
// equal too.
func (e *env) equal(what string, want, got any) bool {
	e.T.Helper()
	d := diff(want, got)
	if len(d) == 0 {
		return true
	}
	if len(d) > 20 {
		d = append(d[:20], fmt.Sprintf("... and %d more differences", len(d)-20))
	}
	e.T.Errorf("%s: stored and returned values differ (want vs %s):\n\t%s", what, e.H.Name, strings.Join(d, "\n\t"))
	return false
}

// wantErr fails the test unless errors.Is(err, target).
func (e *env) wantErr(what string, err, target error) {
	e.T.Helper()
	if !errors.Is(err, target) {
		e.T.Errorf("%s: got error %v, want one matching %v (errors.Is)", what, err, target)
	}
}

// diff lists the differences between want and got.
func diff(want, got any) []string {
	var out []string
	diffValue(&out, "", reflect.ValueOf(want), reflect.ValueOf(got))
	return out
}

var bytesType = reflect.TypeOf([]byte(nil))

func diffValue(out *[]string, path string, w, g reflect.Value) {
	if !w.IsValid() || !g.IsValid() {
		if w.IsValid() != g.IsValid() {
			*out = append(*out, fmt.Sprintf("%s: want %s, got %s", pathOr(path), show(w), show(g)))
		}
		return
	}
	if w.Type() != g.Type() {
		*out = append(*out, fmt.Sprintf("%s: want type %s, got %s", pathOr(path), w.Type(), g.Type()))
		return
	}
	if w.Type() == bytesType {
		wb, gb := w.Bytes(), g.Bytes()
		if !bytes.Equal(wb, gb) {
			*out = append(*out, fmt.Sprintf("%s: %s", pathOr(path), bytesDiff(wb, gb)))
		}
		return
	}
	switch w.Kind() {
	case reflect.Pointer, reflect.Interface:
		if w.IsNil() || g.IsNil() {
			if w.IsNil() != g.IsNil() {
				*out = append(*out, fmt.Sprintf("%s: want %s, got %s", pathOr(path), show(w), show(g)))
			}
			return
		}
		diffValue(out, path, w.Elem(), g.Elem())
	case reflect.Struct:
		for i := range w.NumField() {
			diffValue(out, path+"."+w.Type().Field(i).Name, w.Field(i), g.Field(i))
		}
	case reflect.Slice, reflect.Array:
		if w.Len() != g.Len() {
			*out = append(*out, fmt.Sprintf("%s: want %d elements, got %d: want %s, got %s", pathOr(path), w.Len(), g.Len(), show(w), show(g)))
			return
		}
		for i := range w.Len() {
			diffValue(out, fmt.Sprintf("%s[%d]", path, i), w.Index(i), g.Index(i))
		}
	case reflect.Map:
		for _, k := range w.MapKeys() {
			gv := g.MapIndex(k)
			if !gv.IsValid() {
				*out = append(*out, fmt.Sprintf("%s[%s]: missing", pathOr(path), show(k)))
				continue
			}
			diffValue(out, fmt.Sprintf("%s[%s]", path, show(k)), w.MapIndex(k), gv)
		}
		for _, k := range g.MapKeys() {
			if !w.MapIndex(k).IsValid() {
				*out = append(*out, fmt.Sprintf("%s[%s]: unexpected entry %s", pathOr(path), show(k), show(g.MapIndex(k))))
			}
		}
	case reflect.String:
		if w.String() != g.String() {
			*out = append(*out, fmt.Sprintf("%s: want %s, got %s", pathOr(path), clipString(w.String()), clipString(g.String())))
		}
	default:
		if !w.Equal(g) {
			*out = append(*out, fmt.Sprintf("%s: want %s, got %s", pathOr(path), show(w), show(g)))
		}
	}
}

func pathOr(p string) string {
	if p == "" {
		return "value"
	}
	return strings.TrimPrefix(p, ".")
}

// show formats a value briefly (long strings and byte slices are clipped).
func show(v reflect.Value) string {
	if !v.IsValid() {
		return "<absent>"
	}
	s := fmt.Sprintf("%+v", v.Interface())
	if v.Kind() == reflect.String {
		return clipString(v.String())
	}
	if len(s) > 300 {
		s = s[:300] + fmt.Sprintf("...(%d chars)", len(s))
	}
	return s
}

func clipString(s string) string {
	if len(s) > 80 {
		return fmt.Sprintf("%q...(%d bytes)", s[:80], len(s))
	}
	return fmt.Sprintf("%q", s)
}

func bytesDiff(w, g []byte) string {
	if len(w) == 0 || len(g) == 0 {
		return fmt.Sprintf("want %s, got %s", clipBytes(w), clipBytes(g))
	}
	i := 0
	for i < len(w) && i < len(g) && w[i] == g[i] {
		i++
	}
	from := max(i-16, 0)
	return fmt.Sprintf("want %d bytes, got %d; first difference at byte %d: want ...%s, got ...%s",
		len(w), len(g), i, clipBytes(w[from:]), clipBytes(g[from:]))
}

func clipBytes(b []byte) string {
	if b == nil {
		return "nil (absent)"
	}
	if len(b) == 0 {
		return "empty (absent)"
	}
	if len(b) > 48 {
		return fmt.Sprintf("%q...", b[:48])
	}
	return fmt.Sprintf("%q", b)
}

// zeroFields lists the fields of v (a record, recursively) left at their zero
// value, so that a fixture meant to set every field notices a field added to
// the contract later.
func zeroFields(v any) []string {
	var out []string
	var walk func(path string, v reflect.Value)
	walk = func(path string, v reflect.Value) {
		switch v.Kind() {
		case reflect.Struct:
			for i := range v.NumField() {
				walk(path+"."+v.Type().Field(i).Name, v.Field(i))
			}
		case reflect.Pointer:
			if v.IsNil() {
				out = append(out, path)
				return
			}
			walk(path, v.Elem())
		case reflect.Slice:
			if v.Len() == 0 {
				out = append(out, path)
				return
			}
			if v.Type() != bytesType {
				for i := range v.Len() {
					walk(fmt.Sprintf("%s[%d]", path, i), v.Index(i))
				}
			}
		default:
			if v.IsZero() {
				out = append(out, path)
			}
		}
	}
	walk(reflect.TypeOf(v).Name(), reflect.ValueOf(v))
	return out
}

// requireFull fails the test when a fixture (a record) leaves a field
// unset.
func (e *env) requireFull(recs ...any) {
	e.T.Helper()
	for _, r := range recs {
		if z := zeroFields(r); len(z) > 0 {
			e.T.Fatalf("conformance suite bug: the full %s fixture leaves %v unset; a field was added to the contract and the suite must set it", kindOf(r), z)
		}
	}
}
