package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/event"
)

// eventField is one field of a decoded event payload, as the timeline
// shows it.
type eventField struct {
	Name  string
	Value string
}

var (
	unixMSType = reflect.TypeFor[event.UnixMS]()
	millisType = reflect.TypeFor[event.Millis]()
)

// decodeEvent decodes an event's payload with workflow's Event.Decode and
// lists its fields (times as UTC times, durations as durations); an event
// that does not decode shows its raw payload and the error.
func decodeEvent(e backend.Event) eventRow {
	row := eventRow{Seq: e.Seq, Type: e.Type, Created: msTime(e.CreatedMS)}
	p, err := event.Event{RunID: e.RunID, Seq: e.Seq, Type: event.Type(e.Type), Payload: e.Payload}.Decode()
	if err != nil {
		row.Err = err.Error()
		row.Fields = []eventField{{Name: "payload", Value: string(e.Payload)}}
		return row
	}
	v := reflect.ValueOf(p)
	for v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		row.Fields = []eventField{{Name: "payload", Value: string(e.Payload)}}
		return row
	}
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		fv := v.Field(i)
		if fv.IsZero() || (fieldName(f) == "run_id" && fv.Kind() == reflect.String && fv.String() == e.RunID) {
			continue // the timeline is the run's own
		}
		row.Fields = append(row.Fields, eventField{Name: fieldName(f), Value: fieldText(fv)})
	}
	return row
}

func fieldName(f reflect.StructField) string {
	if tag, _, _ := strings.Cut(f.Tag.Get("json"), ","); tag != "" && tag != "-" {
		return tag
	}
	return f.Name
}

func fieldText(v reflect.Value) string {
	switch v.Type() {
	case unixMSType:
		return msTime(v.Int())
	case millisType:
		return (time.Duration(v.Int()) * time.Millisecond).String()
	}
	switch v.Kind() {
	case reflect.String:
		return v.String()
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return string(v.Bytes())
		}
	}
	if b, err := json.Marshal(v.Interface()); err == nil {
		return string(b)
	}
	return fmt.Sprint(v.Interface())
}

// age is how long ago ms was, rounded for reading ("-" for unset).
func (c *console) age(ms int64) string {
	if ms == 0 {
		return "-"
	}
	d := c.cfg.Now().Sub(time.UnixMilli(ms))
	switch {
	case d < 0:
		return "in " + roundDuration(-d).String()
	case d < time.Second:
		return "now"
	}
	return roundDuration(d).String() + " ago"
}

func roundDuration(d time.Duration) time.Duration {
	switch {
	case d >= time.Hour:
		return d.Round(time.Minute)
	case d >= time.Minute:
		return d.Round(time.Second)
	}
	return d.Round(100 * time.Millisecond)
}

// prettyJSON indents stored JSON for a <pre> ("" for none).
func prettyJSON(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return string(b)
	}
	return out.String()
}

// shortID shortens a 64-hex dispatch identity for tables; the full one is
// in the link and the title.
func shortID(s string) string {
	if len(s) > 16 {
		return s[:12] + "…"
	}
	return s
}
