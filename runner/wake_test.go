package runner

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/internal/testkit/pgtest"
	"github.com/wfstore/wfstore/postgres"
	"github.com/wfstore/wfstore/workflow"
)

// openPostgres opens a Backend over schema, closed at cleanup.
func openPostgres(t testing.TB, dsn, schema string) *postgres.Backend {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := postgres.Open(ctx, dsn, postgres.WithSchema(schema))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	return b
}

// On PostgreSQL a runner wakes at once when another Backend (another
// process, as far as the runner can tell) adds work to its schema: its
// fake clock never moves and its poll interval is an hour, so only the
// notification can wake it.
func TestWakesOnAnotherBackendsAddOnPostgres(t *testing.T) {
	t.Parallel()
	dsn, schema := pgtest.Schema(t)
	adder := workflow.New(openPostgres(t, dsn, schema))
	s := workflow.New(openPostgres(t, dsn, schema))
	clock := newFakeClock()
	_, err := adder.CreateRun(context.Background(), workflow.NewRun{ID: "r"}, clock.Now())
	require.NoError(t, err)
	o := &testOwner{clock: clock, entered: make(chan workflow.PreparedDispatch, 1)}
	start(t, newRunner(t, s, o, clock, WithPollInterval(time.Hour, time.Hour)))
	clock.nextTimer(t) // idle for an hour

	_, err = adder.AddActivation(context.Background(), workflow.NewActivation{Key: key("r", "a"), Input: json.RawMessage(`{}`)}, clock.Now())
	require.NoError(t, err)
	wokeFor(t, o, clock, key("r", "a"), "another Backend's AddActivation")
}

// ListenWork over a backend without a listener (memstore) hears the
// Store's own arrivals, synchronously: the value is there when the call
// that made the work available returns.
func TestListenWorkHearsOwnArrivals(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	s := newStore(t, clock)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := s.ListenWork(ctx)
	require.NoError(t, err)
	ready := func() bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	assert.False(t, ready())
	_, err = s.CreateRun(context.Background(), workflow.NewRun{ID: "r"}, clock.Now())
	require.NoError(t, err)
	assert.True(t, ready(), "CreateRun")
	_, err = s.CreateRun(context.Background(), workflow.NewRun{ID: "r"}, clock.Now())
	require.NoError(t, err)
	assert.False(t, ready(), "an existing run is no arrival")
	_, err = s.AddActivation(context.Background(), workflow.NewActivation{Key: key("r", "a"), Input: json.RawMessage(`{}`)}, clock.Now())
	require.NoError(t, err)
	_, err = s.AddActivation(context.Background(), workflow.NewActivation{Key: key("r", "b"), Input: json.RawMessage(`{}`)}, clock.Now())
	require.NoError(t, err)
	assert.True(t, ready(), "AddActivation")
	assert.False(t, ready(), "arrivals coalesce")

	cancel()
	_, err = s.ListenWork(ctx)
	require.ErrorIs(t, err, context.Canceled)
}
