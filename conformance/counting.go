package conformance

import (
	"context"
	"sync/atomic"

	"github.com/wfstore/wfstore/backend"
)

// counting is a backend.Backend that passes every call to the wrapped one
// and counts what the reads returned: rows is every record or row any
// ReadTx or Tx method returned (Load's records, every scan's rows, a
// CountAttempts result as the rows it counted), loaded the records Load
// returned, pages the AdmissibleActivations calls and pending the rows
// those returned. A case hands it to workflow.New to prove how much an
// operation reads.
type counting struct {
	backend.Backend
	rows, pages, pending, loaded atomic.Int64
}

var (
	_ backend.Backend = (*counting)(nil)
	_ backend.Tx      = (*countingTx)(nil)
)

func newCounting(b backend.Backend) *counting { return &counting{Backend: b} }

// reset zeroes the counters.
func (c *counting) reset() {
	c.rows.Store(0)
	c.pages.Store(0)
	c.pending.Store(0)
	c.loaded.Store(0)
}

func (c *counting) View(ctx context.Context, fn func(backend.ReadTx) error) error {
	return c.Backend.View(ctx, func(r backend.ReadTx) error { return fn(&countingReader{ReadTx: r, c: c}) })
}

func (c *counting) Update(ctx context.Context, fn func(backend.Tx) error) error {
	return c.Backend.Update(ctx, func(tx backend.Tx) error {
		return fn(&countingTx{countingReader: countingReader{ReadTx: tx, c: c}, tx: tx})
	})
}

type countingReader struct {
	backend.ReadTx
	c *counting
}

func (r *countingReader) add(n int) { r.c.rows.Add(int64(n)) }

func (r *countingReader) Load(ctx context.Context, l backend.Lookup) (backend.Found, error) {
	f, err := r.ReadTx.Load(ctx, l)
	n := len(f.Runs) + len(f.Links) + len(f.Activations) + len(f.Groups) + len(f.Attempts) +
		len(f.Identities) + len(f.Leases) + len(f.Schedules)
	for _, ls := range f.Resources {
		n += len(ls)
	}
	r.add(n)
	r.c.loaded.Add(int64(n))
	return f, err
}

func (r *countingReader) AdmissibleActivations(ctx context.Context, q backend.AdmissibleQuery) ([]backend.Activation, error) {
	out, err := r.ReadTx.AdmissibleActivations(ctx, q)
	r.add(len(out))
	r.c.pages.Add(1)
	r.c.pending.Add(int64(len(out)))
	return out, err
}

func (r *countingReader) Activations(ctx context.Context, q backend.ActivationQuery) ([]backend.Activation, error) {
	out, err := r.ReadTx.Activations(ctx, q)
	r.add(len(out))
	return out, err
}

func (r *countingReader) Attempts(ctx context.Context, q backend.AttemptQuery) ([]backend.Attempt, error) {
	out, err := r.ReadTx.Attempts(ctx, q)
	r.add(len(out))
	return out, err
}

func (r *countingReader) CountAttempts(ctx context.Context, q backend.AttemptCountQuery) (int, error) {
	n, err := r.ReadTx.CountAttempts(ctx, q)
	r.add(n)
	return n, err
}

func (r *countingReader) ChildRuns(ctx context.Context, q backend.ChildRunQuery) ([]backend.RunLink, error) {
	out, err := r.ReadTx.ChildRuns(ctx, q)
	r.add(len(out))
	return out, err
}

func (r *countingReader) DueSchedules(ctx context.Context, q backend.ScheduleQuery) ([]backend.RetrySchedule, error) {
	out, err := r.ReadTx.DueSchedules(ctx, q)
	r.add(len(out))
	return out, err
}

func (r *countingReader) Events(ctx context.Context, q backend.EventQuery) ([]backend.Event, error) {
	out, err := r.ReadTx.Events(ctx, q)
	r.add(len(out))
	return out, err
}

func (r *countingReader) Leases(ctx context.Context, q backend.LeaseQuery) ([]backend.Lease, error) {
	out, err := r.ReadTx.Leases(ctx, q)
	r.add(len(out))
	return out, err
}

func (r *countingReader) Runs(ctx context.Context, q backend.RunQuery) ([]backend.Run, error) {
	out, err := r.ReadTx.Runs(ctx, q)
	r.add(len(out))
	return out, err
}

// countingTx counts reads like countingReader and passes writes through.
type countingTx struct {
	countingReader
	tx backend.Tx
}

func (t *countingTx) Apply(ctx context.Context, c backend.Changes) error {
	return t.tx.Apply(ctx, c)
}
