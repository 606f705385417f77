package workflow

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A checksum, a derived hash and a handoff token are hex encoded on the
// stack: each allocates only its string (measured 2 each with
// hex.EncodeToString's buffer).
func TestHexEncodingsAllocateOnlyTheirString(t *testing.T) {
	doc := []byte(`{"op":"bench","target":"noop"}`)
	var s string
	require.Equal(t, 1.0, testing.AllocsPerRun(50, func() { s = Checksum(doc) }), "Checksum")
	require.Equal(t, sha(string(doc)), s)
	require.Equal(t, 1.0, testing.AllocsPerRun(50, func() { s = hashHex(doc) }), "hashHex")
	require.Equal(t, sha(string(doc)), s)
	allocs := testing.AllocsPerRun(50, func() { s = newHandoffToken() })
	require.Len(t, s, 32)
	if raceBuild {
		// The race detector's instrumentation of crypto/rand.Read moves
		// the token's random bytes to the heap: one more allocation, in
		// race builds only. The plain test run checks the count.
		require.LessOrEqual(t, allocs, 2.0, "newHandoffToken under -race")
		return
	}
	require.Equal(t, 1.0, allocs, "newHandoffToken")
}
