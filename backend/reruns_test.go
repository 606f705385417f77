package backend

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRerunsSinceAndAddWorkCauseByCause(t *testing.T) {
	before := Reruns{Busy: 1, Conflict: 2, Deadlock: 3, Transient: 4, OutcomeUnknown: 5, Exhausted: 6}
	after := Reruns{Busy: 2, Conflict: 4, Deadlock: 6, Transient: 8, OutcomeUnknown: 10, Exhausted: 12}
	assert.Equal(t, before, after.Since(before))
	assert.Equal(t, Reruns{}, after.Since(after))
	assert.Equal(t, after, before.Add(before))
	assert.Equal(t, after, before.Add(after.Since(before)))
}
