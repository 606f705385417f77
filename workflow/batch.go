package workflow

import (
	"github.com/wfstore/wfstore/backend"
)

// batch collects the writes of one transaction, applied in order at the end.
type batch struct {
	writes []backend.Write
}

func (b *batch) insert(r backend.Record)  { b.writes = append(b.writes, backend.Ins(r)) }
func (b *batch) replace(r backend.Record) { b.writes = append(b.writes, backend.Rep(r)) }
func (b *batch) delete(r backend.Record)  { b.writes = append(b.writes, backend.Del(r)) }

// event appends an event to run (advancing its sequence); the caller
// replaces the run record afterwards.
func (b *batch) event(run *backend.Run, typ string, payload any, atMS int64) {
	run.LastEventSeq++
	b.insert(backend.Event{
		RunID:     run.ID,
		Seq:       run.LastEventSeq,
		Type:      typ,
		Payload:   mustCanonical(payload),
		CreatedMS: atMS,
	})
}
