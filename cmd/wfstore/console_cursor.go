package main

import (
	"encoding/json"
	"fmt"

	"github.com/wfstore/wfstore/backend"
)

// The console's page links carry a listing's position as a JSON array
// (wrapped by encCursor), so that ids holding any character round-trip:
// ["NODE","ACTIVATION"] for activations and [PREPARED_MS,"IDENTITY"] for
// attempts. The CLI prints opaque cursors instead (see pageCursor).

func activationPos(n backend.NodeRef) string {
	b, _ := json.Marshal([]any{n.NodeID, n.ActivationID})
	return string(b)
}

func parseActivationCursor(s string) (backend.NodeRef, error) {
	var parts []string
	if err := json.Unmarshal([]byte(s), &parts); err != nil || len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		return backend.NodeRef{}, fmt.Errorf(`an activation cursor is ["NODE","ACTIVATION"], got %q`, s)
	}
	return backend.NodeRef{NodeID: parts[0], ActivationID: parts[1]}, nil
}

func attemptPos(a backend.Attempt) string {
	b, _ := json.Marshal([]any{a.PreparedMS, a.Identity})
	return string(b)
}

func parseAttemptCursor(s string) (backend.AttemptCursor, error) {
	var parts []json.RawMessage
	var c backend.AttemptCursor
	err := json.Unmarshal([]byte(s), &parts)
	if err == nil && len(parts) == 2 {
		if err = json.Unmarshal(parts[0], &c.PreparedMS); err == nil {
			err = json.Unmarshal(parts[1], &c.Identity)
		}
	}
	if err != nil || len(parts) != 2 || c.PreparedMS <= 0 || c.Identity == "" {
		return backend.AttemptCursor{}, fmt.Errorf(`an attempt cursor is [PREPARED_MS,"IDENTITY"], got %q`, s)
	}
	return c, nil
}
