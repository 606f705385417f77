package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/memstore"
	"github.com/wfstore/wfstore/workflow"
)

// logBuffer collects JSON log records; safe for concurrent use.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// messages returns the msg of every record, in order.
func (b *logBuffer) messages(t *testing.T) []string {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(b.buf.String()), "\n") {
		if line == "" {
			continue
		}
		var rec struct{ Msg string }
		require.NoError(t, json.Unmarshal([]byte(line), &rec))
		out = append(out, rec.Msg)
	}
	return out
}

func count(msgs []string, msg string) int {
	n := 0
	for _, m := range msgs {
		if m == msg {
			n++
		}
	}
	return n
}

func TestDueRetriesOfManyRunsArePagedAndAllConsumed(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	var runs []string
	for i := range 10 {
		runs = append(runs, fmt.Sprintf("r%02d", i))
	}
	s := newStore(t, clock, runs...)
	t0 := clock.Now()
	for _, id := range runs {
		addRetryable(t, s, key(id, "a"), t0)
	}
	logs := &logBuffer{}
	o := retryingOwner{&testOwner{clock: clock}}
	st := start(t, newRunner(t, s, o, clock, WithRunsPerPass(3), WithRetriesPerPass(2), WithLimit(4),
		WithPollInterval(time.Minute, time.Minute), WithLogger(slog.New(slog.NewJSONHandler(logs, nil)))))

	tm := clock.nextTimer(t)
	assert.Equal(t, 10*time.Second, tm.d, "the runner sleeps until the retries are due")
	assert.Len(t, o.dispatched(), 10)
	clock.fire(tm)
	clock.nextTimer(t)
	sum, err := st.stop(t)
	require.NoError(t, err)
	assert.Equal(t, 10, sum.RetriesConsumed)
	assert.Equal(t, 20, sum.Admitted)
	for _, c := range o.dispatched()[10:] {
		assert.Equal(t, uint32(2), c.key.Attempt)
		assert.Equal(t, t0.Add(10*time.Second), c.at)
	}
	for _, id := range runs {
		run, err := s.GetRun(context.Background(), id)
		require.NoError(t, err)
		assert.Equal(t, workflow.RunCompleted, run.Status, id)
	}
	msgs := logs.messages(t)
	assert.Equal(t, 10, count(msgs, "retry scheduled"))
	assert.Equal(t, 10, count(msgs, "retry consumed"))
	assert.Equal(t, 1, count(msgs, "runner stopped"))
}

func TestFencedStopIsLogged(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	ctx := context.Background()
	s := newStore(t, clock)
	auth := fencedRun(t, s, clock)
	logs := &logBuffer{}
	_, err := Run(ctx, s, &testOwner{clock: clock}, WithClock(clock), WithRun("r1", &auth),
		WithLogger(slog.New(slog.NewJSONHandler(logs, nil))))
	require.ErrorIs(t, err, workflow.ErrStaleAuthority)
	msgs := logs.messages(t)
	assert.Contains(t, msgs, "fenced: execution authority changed")
	assert.Contains(t, msgs, "runner stopped on error")
}

func TestSilentByDefault(t *testing.T) {
	t.Parallel()
	r, err := New(workflow.New(memstore.New()), &testOwner{})
	require.NoError(t, err)
	for _, l := range []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError} {
		assert.False(t, r.log.Enabled(context.Background(), l), "the default logger discards %v", l)
	}
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
