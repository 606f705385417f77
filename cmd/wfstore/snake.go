package main

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"unicode"
)

// Every JSON the commands print, and the export format from version 3,
// names fields in snake_case, as the events' payloads do: a Go field name
// is split into words at each change from lower case (or a digit) to upper
// case and before the last capital of an acronym followed by lower case
// ("CreatedMS" is "created_ms", "RunID" "run_id", "IntentChecksum"
// "intent_checksum", "HTTPServer" "http_server"). A field with a JSON tag
// keeps its tag's name.

// snakeName is name in snake_case.
func snakeName(name string) string {
	rs := []rune(name)
	var b strings.Builder
	for i, r := range rs {
		if unicode.IsUpper(r) && i > 0 {
			prev := rs[i-1]
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && nextLower) {
				b.WriteByte('_')
			}
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// jsonKey is the name encoding/json gives field f, and whether it writes
// the field at all.
func jsonKey(f reflect.StructField) (string, bool) {
	tag := f.Tag.Get("json")
	if tag == "-" {
		return "", false
	}
	if name, _, _ := strings.Cut(tag, ","); name != "" {
		return name, true
	}
	return f.Name, true
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

// encodesItself reports whether encoding/json writes t through its own
// method (time.Time, for one), so its JSON is not a struct's fields.
func encodesItself(t reflect.Type) bool {
	return t.Implements(jsonMarshaler) || t.Implements(textMarshaler) ||
		reflect.PointerTo(t).Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(textMarshaler)
}

// structKeys maps, for the struct type t, each key encoding/json writes
// (embedded structs' fields promoted) to its field's type.
func structKeys(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() && !f.Anonymous {
			continue
		}
		if f.Anonymous && f.Tag.Get("json") == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range structKeys(ft) {
					out[k] = v
				}
				continue
			}
		}
		if k, ok := jsonKey(f); ok {
			out[k] = f.Type
		}
	}
	return out
}

// renameKeys rewrites the object keys of raw, the JSON encoding/json
// writes for a value of type t, through name: only the keys that name a
// struct's fields, at any depth, never a map's keys nor anything inside a
// byte field. With toGo, name is applied backwards: a key is the snake
// name of a field and becomes the field's Go key, and a key that names no
// field is an error.
func renameKeys(raw json.RawMessage, t reflect.Type, toGo bool) (json.RawMessage, error) {
	if string(raw) == "null" {
		return raw, nil
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if encodesItself(t) {
		return raw, nil
	}
	switch t.Kind() {
	case reflect.Struct:
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, err
		}
		keys := structKeys(t)
		byName := make(map[string]string, len(keys)) // written key -> Go key
		for k := range keys {
			if toGo {
				byName[snakeName(k)] = k
			} else {
				byName[k] = snakeName(k)
			}
		}
		out := make(map[string]json.RawMessage, len(m))
		for k, v := range m {
			to, ok := byName[k]
			if !ok {
				return nil, fmt.Errorf("json: unknown field %q", k)
			}
			goKey := to
			if !toGo {
				goKey = k
			}
			nv, err := renameKeys(v, keys[goKey], toGo)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			out[to] = nv
		}
		return marshalExact(out)
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return raw, nil // base64, or a JSON document inlined
		}
		var xs []json.RawMessage
		if err := json.Unmarshal(raw, &xs); err != nil {
			return nil, err
		}
		for i, x := range xs {
			nx, err := renameKeys(x, t.Elem(), toGo)
			if err != nil {
				return nil, err
			}
			xs[i] = nx
		}
		return marshalExact(xs)
	case reflect.Map:
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, err
		}
		for k, v := range m {
			nv, err := renameKeys(v, t.Elem(), toGo)
			if err != nil {
				return nil, err
			}
			m[k] = nv
		}
		return marshalExact(m)
	}
	return raw, nil
}
