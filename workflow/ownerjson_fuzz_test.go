package workflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/event"
	"github.com/wfstore/wfstore/internal/canonical"
	"github.com/wfstore/wfstore/internal/testkit/pgtest"
	"github.com/wfstore/wfstore/postgres"
	"github.com/wfstore/wfstore/sqlite"
	"github.com/wfstore/wfstore/workflow"
)

// Where FuzzOwnerJSONNearLimits hands the document to the Store.
const (
	viaPlanIntent    = iota // PreparePending's intent
	viaOwnerReceipt         // the owner's Dispatch receipt
	viaPersist              // PersistReceipt, called directly
	viaObservation          // ApplyObservation's output, called directly
	viaObserver             // the receipt-backed pass's Observer output
	viaChildTarget          // CreateChildRun's target
	viaLookupReceipt        // ReconcilePrepared's ReceiptLookup receipt
	viaCount
)

// Document shapes: raw bytes as given, or a document built at a limit
// plus delta.
const (
	shapeRaw       = iota
	shapeString    // a string of canonical length MaxOwnerJSONBytes+delta
	shapeDepth     // arrays nested MaxOwnerJSONDepth+delta deep
	shapeEscapes   // \u0001 escapes, kept escaped: about MaxOwnerJSONBytes+delta canonical bytes
	shapeShrinking // \u00e9 escapes that shrink to two bytes: raw over the limit, canonical under it
	shapeDocument  // MaxJSONBytes+delta, the document limit
	shapeDeepDoc   // MaxJSONDepth+delta deep
	shapeCount
)

func ownerDoc(shape uint8, delta int16, raw []byte) []byte {
	d := int(delta)
	str := func(n int) []byte {
		if n < 2 {
			n = 2
		}
		return []byte(`"` + strings.Repeat("x", n-2) + `"`)
	}
	nest := func(n int) []byte {
		n = max(n, 0)
		return []byte(strings.Repeat("[", n) + "1" + strings.Repeat("]", n))
	}
	switch shape % shapeCount {
	case shapeString:
		return str(workflow.MaxOwnerJSONBytes + d)
	case shapeDepth:
		return nest(workflow.MaxOwnerJSONDepth + d)
	case shapeEscapes:
		n := max((workflow.MaxOwnerJSONBytes+d-2)/6, 0)
		return []byte(`"` + strings.Repeat(`\u0001`, n) + strings.Repeat("y", max((workflow.MaxOwnerJSONBytes+d-2)%6, 0)) + `"`)
	case shapeShrinking:
		return []byte(`"` + strings.Repeat(`\u00e9`, max((workflow.MaxOwnerJSONBytes+d-2)/2, 0)) + `"`)
	case shapeDocument:
		return str(workflow.MaxJSONBytes + d)
	case shapeDeepDoc:
		return nest(workflow.MaxJSONDepth + d)
	}
	return raw
}

// FuzzOwnerJSONNearLimits hands owner JSON near every limit to every place
// the Store takes it, through the Store on SQLite (and PostgreSQL when
// WFSTORE_POSTGRES_DSN is set): nothing panics; a document within the
// owner limits is stored as its canonical form; one outside them is a
// typed refusal with the run's history unchanged when a caller passed it,
// and settles its attempt as repair_required with one event when the owner
// returned it; and the same Store admits other work afterwards.
func FuzzOwnerJSONNearLimits(f *testing.F) {
	for via := range uint8(viaCount) {
		for _, d := range []int16{-1, 0, 1} {
			for _, shape := range []uint8{shapeString, shapeDepth, shapeEscapes} {
				f.Add(via, shape, d, []byte(nil))
			}
		}
		f.Add(via, uint8(shapeShrinking), int16(0), []byte(nil))
		f.Add(via, uint8(shapeDocument), int16(0), []byte(nil))
		f.Add(via, uint8(shapeDeepDoc), int16(0), []byte(nil))
		f.Add(via, uint8(shapeDeepDoc), int16(-1), []byte(nil))
		f.Add(via, uint8(shapeRaw), int16(0), []byte(`{"a":1,"a":2}`))
		f.Add(via, uint8(shapeRaw), int16(0), []byte(``))
	}
	ctx := context.Background()
	lite, err := sqlite.Open(ctx, filepath.Join(f.TempDir(), "fuzz.db"), sqlite.WithRelaxedDurability())
	require.NoError(f, err)
	f.Cleanup(func() { _ = lite.Close() })
	stores := []*workflow.Store{workflow.New(lite)}
	if os.Getenv(pgtest.EnvDSN) != "" {
		dsn, schema := pgtest.Schema(f)
		pg, err := postgres.Open(ctx, dsn, postgres.WithSchema(schema))
		require.NoError(f, err)
		f.Cleanup(func() { _ = pg.Close() })
		stores = append(stores, workflow.New(pg))
	}
	var seq atomic.Int64
	f.Fuzz(func(t *testing.T, via, shape uint8, delta int16, raw []byte) {
		doc := ownerDoc(shape, delta, raw)
		for _, s := range stores {
			n := seq.Add(1)
			fuzzOwnerJSON(t, s, via%viaCount, doc, n)
			other := fmt.Sprintf("other-%d", n)
			_, err := s.CreateRun(ctx, workflow.NewRun{ID: other}, fuzzNow)
			require.NoError(t, err)
			k := workflow.ActivationKey{RunID: other, NodeID: "n", ActivationID: "a"}
			_, err = s.AddActivation(ctx, workflow.NewActivation{Key: k, Input: json.RawMessage(`{}`)}, fuzzNow)
			require.NoError(t, err)
			sum, err := s.Dispatch(ctx, fuzzOwner{}, workflow.DispatchOptions{RunID: other}, fuzzNow)
			require.NoError(t, err)
			require.Len(t, sum.Admitted, 1, "the Store still admits other work")
		}
	})
}

var fuzzNow = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// fuzzOwner plans every activation with a small intent and returns
// receipt (default {"ok":1}); it holds the same receipt for lookups.
type fuzzOwner struct{ receipt []byte }

func (fuzzOwner) Plan(context.Context, workflow.Activation) (*workflow.Plan, error) {
	return &workflow.Plan{SideEffect: workflow.Mutating, Intent: json.RawMessage(`{}`)}, nil
}

func (o fuzzOwner) Dispatch(context.Context, workflow.PreparedDispatch) (json.RawMessage, error) {
	if o.receipt != nil {
		return o.receipt, nil
	}
	return json.RawMessage(`{"ok":1}`), nil
}

func (o fuzzOwner) LookupReceipt(context.Context, string) (json.RawMessage, bool, error) {
	return o.receipt, true, nil
}

type fuzzObserver struct{ output []byte }

func (o fuzzObserver) Observe(context.Context, workflow.Attempt) (workflow.Observation, error) {
	return workflow.Observation{Kind: workflow.ObservedSucceeded, Output: o.output}, nil
}

func fuzzOwnerJSON(t *testing.T, s *workflow.Store, via uint8, doc []byte, n int64) {
	ctx := context.Background()
	want, verr := canonical.Within(doc, canonical.Limits{Bytes: workflow.MaxOwnerJSONBytes, Depth: workflow.MaxOwnerJSONDepth})
	var ce *canonical.Error
	errors.As(verr, &ce)
	// The largest ids: 512 bytes, control characters escaped to six bytes.
	id := func(tag string) string { return strings.Repeat("\x01", workflow.MaxIDBytes-len(tag)) + tag }
	run := id(fmt.Sprintf("r%d", n))
	k := workflow.ActivationKey{RunID: run, NodeID: id("n"), ActivationID: id("a")}
	_, err := s.CreateRun(ctx, workflow.NewRun{ID: run}, fuzzNow)
	require.NoError(t, err)
	_, err = s.AddActivation(ctx, workflow.NewActivation{Key: k, Input: json.RawMessage(`{}`)}, fuzzNow)
	require.NoError(t, err)
	ident := workflow.DispatchIdentity(k.RunID, k.NodeID, k.ActivationID, 1)
	history := func() string {
		evsPage, err := s.Events(ctx, workflow.EventQuery{RunID: run, Limit: workflow.MaxPageLimit})
		require.NoError(t, err)
		evs := evsPage.Items
		attsPage, err := s.Attempts(ctx, workflow.AttemptQuery{RunID: run, Limit: workflow.MaxPageLimit})
		require.NoError(t, err)
		atts := attsPage.Items
		b, err := json.Marshal([]any{evs, atts})
		require.NoError(t, err)
		return string(b)
	}
	// refused requires a caller's invalid document refused, history unchanged.
	refused := func(err error, before string) {
		t.Helper()
		require.ErrorIs(t, err, workflow.ErrInvalidInput)
		require.Equal(t, ce != nil && ce.Oversized, errors.Is(err, workflow.ErrTooLarge), "ErrTooLarge exactly when too large: %v", err)
		require.Equal(t, before, history(), "history unchanged by a refusal")
	}
	// settled requires an owner's invalid document to settle the attempt once.
	settled := func() {
		t.Helper()
		a, err := s.GetAttempt(ctx, ident)
		require.NoError(t, err)
		require.Equal(t, workflow.AttemptRepairRequired, a.Status)
		evsPage, err := s.Events(ctx, workflow.EventQuery{RunID: run, Limit: workflow.MaxPageLimit})
		require.NoError(t, err)
		evs := evsPage.Items
		count := 0
		for _, ev := range evs {
			if ev.Type == event.AttemptRepairRequired {
				p, err := ev.Decode()
				require.NoError(t, err)
				require.NotNil(t, p.(event.AttemptRepairRequiredPayload).Unstorable)
				require.Equal(t, workflow.Checksum(doc), p.(event.AttemptRepairRequiredPayload).Unstorable.SHA256)
				count++
			}
		}
		require.Equal(t, 1, count, "one settlement event")
	}
	// owned prepares the attempt and records its handoff.
	owned := func() workflow.AttemptKey {
		p, err := s.Engine().PreparePending(ctx, k, workflow.Plan{SideEffect: workflow.Mutating, Intent: json.RawMessage(`{}`)}, fuzzNow)
		require.NoError(t, err)
		require.NoError(t, s.Engine().Handoff(ctx, p.Key(), nil, fuzzNow))
		return p.Key()
	}
	admitted := func() {
		sum, err := s.Dispatch(ctx, fuzzOwner{}, workflow.DispatchOptions{RunID: run}, fuzzNow)
		require.NoError(t, err)
		require.Len(t, sum.Admitted, 1)
	}
	receiptIs := func() {
		r, err := s.Engine().DispatchReceipt(ctx, ident)
		require.NoError(t, err)
		require.Equal(t, string(want), string(r))
	}
	switch via {
	case viaPlanIntent:
		before := history()
		p, err := s.Engine().PreparePending(ctx, k, workflow.Plan{SideEffect: workflow.Mutating, Intent: doc}, fuzzNow)
		if verr != nil {
			refused(err, before)
			return
		}
		require.NoError(t, err)
		require.Equal(t, string(want), string(p.Intent))
	case viaOwnerReceipt:
		_, err := s.Dispatch(ctx, fuzzOwner{receipt: doc}, workflow.DispatchOptions{RunID: run}, fuzzNow)
		if verr != nil {
			require.ErrorIs(t, err, workflow.ErrOwner)
			require.NotErrorIs(t, err, workflow.ErrInvalidInput)
			settled()
			return
		}
		require.NoError(t, err)
		receiptIs()
	case viaPersist:
		key := owned()
		before := history()
		err := s.Engine().PersistReceipt(ctx, workflow.OwnerReceipt{Key: key, Receipt: doc, Authority: nil}, fuzzNow)
		if verr != nil {
			refused(err, before)
			return
		}
		require.NoError(t, err)
		receiptIs()
	case viaObservation:
		admitted()
		before := history()
		_, err := s.ApplyObservation(ctx, ident, workflow.Observation{Kind: workflow.ObservedSucceeded, Output: doc}, fuzzNow)
		if verr != nil {
			refused(err, before)
			return
		}
		require.NoError(t, err)
		act, err := s.GetActivation(ctx, k)
		require.NoError(t, err)
		require.Equal(t, string(want), string(act.Output))
	case viaObserver:
		admitted()
		_, err := s.Engine().ReconcileReceiptBacked(ctx, fuzzObserver{output: doc}, workflow.ReceiptPassOptions{RunID: run}, fuzzNow)
		require.NoError(t, err)
		if verr != nil {
			settled()
			return
		}
		act, err := s.GetActivation(ctx, k)
		require.NoError(t, err)
		require.Equal(t, string(want), string(act.Output))
	case viaChildTarget:
		_, err := s.Engine().PreparePending(ctx, k, workflow.Plan{SideEffect: workflow.Mutating, Intent: json.RawMessage(`{}`)}, fuzzNow)
		require.NoError(t, err)
		before := history()
		_, created, err := s.CreateChildRun(ctx, workflow.NewChildRun{Parent: workflow.AttemptKey{ActivationKey: k, Attempt: 1}, Target: doc}, fuzzNow)
		if verr != nil {
			refused(err, before)
			return
		}
		require.NoError(t, err)
		require.True(t, created)
	case viaLookupReceipt:
		owned()
		sum, err := s.Engine().ReconcilePrepared(ctx, workflow.ReconcileOptions{RunID: run, Lookup: fuzzOwner{receipt: doc}}, fuzzNow)
		require.NoError(t, err)
		if verr != nil {
			require.Len(t, sum.RepairRequired, 1)
			settled()
			return
		}
		require.Len(t, sum.Recovered, 1)
		receiptIs()
	}
}
