package workflow_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/memstore"
	"github.com/wfstore/wfstore/workflow"
)

// txLog records what an OnTransaction function saw.
type txLog struct {
	mu    sync.Mutex
	infos []workflow.TransactionInfo
}

func (l *txLog) record(_ context.Context, ti workflow.TransactionInfo) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.infos = append(l.infos, ti)
}

func (l *txLog) kinds() (writes, reads, failed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ti := range l.infos {
		if ti.Write {
			writes++
		} else {
			reads++
		}
		if ti.Err != nil {
			failed++
		}
	}
	return
}

func TestOnTransactionSeesEveryTransactionUntilRemoved(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := workflow.New(memstore.New())
	now := time.UnixMilli(1000)
	var a, b txLog
	removeA := s.Engine().OnTransaction(a.record)
	removeB := s.Engine().OnTransaction(b.record)

	_, err := s.CreateRun(ctx, workflow.NewRun{ID: "r"}, now)
	require.NoError(t, err)
	na := workflow.NewActivation{Key: workflow.ActivationKey{RunID: "r", NodeID: "n", ActivationID: "a"}, Input: []byte(`{}`)}
	created, err := s.AddActivation(ctx, na, now)
	require.NoError(t, err)
	require.True(t, created)
	created, err = s.AddActivation(ctx, na, now) // already there: the Store aborts, having nothing to write
	require.NoError(t, err)
	require.False(t, created)
	_, err = s.GetRun(ctx, "r")
	require.NoError(t, err)
	_, err = s.GetRun(ctx, "missing")
	require.ErrorIs(t, err, workflow.ErrNotFound)

	w, r, failed := a.kinds()
	assert.Equal(t, 3, w, "three Updates")
	assert.Equal(t, 2, r, "two Views")
	assert.Equal(t, 1, failed, "the failed read; the write that had nothing to do is not a failure")
	assert.Equal(t, a.infos, b.infos, "every registered function sees the same")

	removeA()
	removeA() // a second call is harmless
	_, err = s.GetRun(ctx, "r")
	require.NoError(t, err)
	_, r, _ = a.kinds()
	assert.Equal(t, 2, r, "a removed function sees nothing more")
	_, r, _ = b.kinds()
	assert.Equal(t, 3, r, "the other still does")
	removeB()
}
