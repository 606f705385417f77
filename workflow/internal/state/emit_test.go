package state

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/wfstore/wfstore/backend"
	"github.com/wfstore/wfstore/event"
	"github.com/wfstore/wfstore/internal/canonical"
)

// emitDirectAs emits v, one of encodeCases' payloads, through emitDirect
// with its concrete type.
func emitDirectAs(t *testing.T, b *Batch, run *backend.Run, v any, at int64) {
	t.Helper()
	switch p := v.(type) {
	case event.AttemptPreparedPayload:
		emitDirect(b, run, p, at)
	case event.DispatchHandedOffPayload:
		emitDirect(b, run, p, at)
	case event.DispatchHandoffReleasedPayload:
		emitDirect(b, run, p, at)
	case event.AttemptAdmittedPayload:
		emitDirect(b, run, p, at)
	case event.AttemptCancellationReceiptRecordedPayload:
		emitDirect(b, run, p, at)
	default:
		t.Fatalf("%T is not emitted directly", v)
	}
}

// checkEmit fails unless emitDirect appends exactly what emit appends for
// v: the same event (type, sequence, payload bytes, time) advancing the
// run alike, or the same failure with the same text.
func checkEmit(t *testing.T, v any) {
	t.Helper()
	var want, got Batch
	wantRun, gotRun := &backend.Run{ID: "r", LastEventSeq: 7}, &backend.Run{ID: "r", LastEventSeq: 7}
	want.emit(wantRun, v.(event.Payload), 42)
	emitDirectAs(t, &got, gotRun, v, 42)
	if len(got.log) != 1 || len(want.log) != 1 {
		t.Fatalf("%#v: %d entries, emit's %d", v, len(got.log), len(want.log))
	}
	g, w := got.log[0], want.log[0]
	if ge, ok := g.rec.(error); ok {
		we, ok := w.rec.(error)
		if !ok || g.op != w.op || ge.Error() != we.Error() {
			t.Fatalf("%#v: %v %v, emit's %v %v", v, g.op, g.rec, w.op, w.rec)
		}
	} else if !reflect.DeepEqual(g, w) {
		t.Fatalf("%#v:\n got %v %+v\nwant %v %+v", v, g.op, g.rec, w.op, w.rec)
	}
	if !reflect.DeepEqual(gotRun, wantRun) || !reflect.DeepEqual(got.EventAt, want.EventAt) {
		t.Fatalf("%#v: run %+v %v, emit's %+v %v", v, *gotRun, got.EventAt, *wantRun, want.EventAt)
	}
}

// emitDirect appends byte for byte the event emit appends, failures
// included, over tricky and generated strings and documents.
func TestEmitDirectIsEmit(t *testing.T) {
	strs := []string{"", "run-1", "a\"b\\c", "tab\there\nnl\r\b\f\x00\x1f\x7f", "<&>/", "é ü 中 😀",
		"\u2028\u2029", "bad\xffutf8", "\xed\xa0\x80", strings.Repeat("x", 300)}
	docs := []json.RawMessage{nil, {}, json.RawMessage(`{"op":"bench","target":"noop"}`),
		json.RawMessage(` { "b" : 1 , "a" : [ 1.0 , -0 , 1e5 , "\u00e9\/" ] } `), json.RawMessage(`{"a":1,"a":2}`),
		json.RawMessage(`{"a":`), json.RawMessage(`"bad` + "\xff" + `"`), json.RawMessage(`null`),
		json.RawMessage(`"<>&\u003c"`),
		json.RawMessage(strings.Repeat("[", canonical.MaxDepth) + strings.Repeat("]", canonical.MaxDepth)),
		json.RawMessage(`"` + strings.Repeat("y", canonical.MaxBytes-100) + `"`)}
	for i, s := range strs {
		for _, d := range docs {
			for _, v := range encodeCases(s, strs[(i+1)%len(strs)], strs[(i+2)%len(strs)], strs[(i+3)%len(strs)], uint32(i)*0x1999_9999, int64(i-3)*1_700_000_000_000, d) {
				checkEmit(t, v)
			}
		}
	}
	for _, v := range randomEncodeCases(rand.New(rand.NewPCG(3, 4)), 1000,
		"a", "Z", "0", "-", "\"", "\\", "\n", "\x01", "é", "中", "😀", "\u2028", "\xff", "<", ">", "&", " ") {
		checkEmit(t, v)
	}
}

// The events every admission appends do not box their payload: recording
// a handoff, its release or a receipt allocates the attempt record, the
// payload bytes and the event record, nothing else (measured before: one
// more, the payload boxed on its way to the encoder).
func TestAdmissionEventsDoNotBoxTheirPayload(t *testing.T) {
	var w Batch
	run := &backend.Run{ID: "run-1"}
	att := &backend.Attempt{Key: backend.AttemptKey{ActivationKey: backend.ActivationKey{RunID: "run-1", NodeID: "n", ActivationID: "a"}, Attempt: 1},
		Identity: "0123456789abcdef"}
	rc := []byte(`{"ok":true}`)
	for name, f := range map[string]func(){
		"RecordHandoff":  func() { RecordHandoff(&w, run, att, "token", 5) },
		"ReleaseHandoff": func() { ReleaseHandoff(&w, run, att, 5) },
		"RecordReceipt":  func() { RecordReceipt(&w, run, att, event.AttemptAdmitted, rc, 5) },
		"RecordReceipt/cancellation": func() {
			RecordReceipt(&w, run, att, event.AttemptCancellationReceiptRecorded, rc, 5)
		},
	} {
		f() // the log and EventAt grown once
		m := w.Mark()
		n := testing.AllocsPerRun(50, func() { f(); w.Truncate(m) })
		if raceBuild && n <= 4 {
			// The race detector's instrumentation moves a receipt's
			// payload to the heap; the plain test run checks the count.
			continue
		}
		if n != 3 {
			t.Errorf("%s: %v allocations, want 3", name, n)
		}
	}
}
