package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wfstore/wfstore/sqlite"
	"github.com/wfstore/wfstore/workflow"
)

// Every item of order-1 ships once, C after one retry; its invoice comes
// after every shipment; order-2 is cancelled and never invoiced.
func TestOrdersShipOnceAndOnlyTheLiveOneIsInvoiced(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	path := filepath.Join(t.TempDir(), "store.db")
	var out bytes.Buffer
	require.NoError(t, run(ctx, path, &out))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	t.Logf("output:\n%s", out.String())

	shipped := map[string]int{}
	invoiceAt, lastShip := -1, -1
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "order-1: ship "):
			shipped[strings.TrimPrefix(l, "order-1: ship ")]++
			lastShip = i
		case strings.HasPrefix(l, "order-1: invoice"):
			invoiceAt = i
		}
		assert.NotContains(t, l, "order-2: invoice", "the cancelled order is not invoiced")
	}
	assert.Equal(t, map[string]int{`"A"`: 1, `"B"`: 1, `"C"`: 1, `"D"`: 1, `"E"`: 1}, shipped, "each item ships once")
	require.GreaterOrEqual(t, invoiceAt, 0, "order-1 is invoiced")
	assert.Greater(t, invoiceAt, lastShip, "the invoice comes after every shipment")

	b, err := sqlite.Open(ctx, path)
	require.NoError(t, err)
	defer b.Close()
	s := workflow.New(b)
	for order, want := range map[string][2]workflow.ActivationStatus{
		"order-1": {workflow.ActivationCompleted, workflow.ActivationCompleted},
		"order-2": {workflow.ActivationCancelled, workflow.ActivationCancelled},
	} {
		ship, err := s.GetActivation(ctx, key(order, "ship"))
		require.NoError(t, err)
		inv, err := s.GetActivation(ctx, key(order, "invoice"))
		require.NoError(t, err)
		assert.Equal(t, want, [2]workflow.ActivationStatus{ship.Status, inv.Status}, "%s: shipments and invoice", order)
	}
	c, err := s.GetAttempt(ctx, workflow.DispatchIdentity("order-1", workflow.FanOutMemberNodeID("ship", 2), workflow.MemberKey(key("order-1", "ship"), 2).ActivationID, 2))
	require.NoError(t, err, "item C has a second attempt: its automatic retry")
	assert.Equal(t, workflow.AttemptSucceeded, c.Status)
}
