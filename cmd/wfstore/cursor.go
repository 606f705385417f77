package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/wfstore/wfstore/backend"
)

// A page cursor is what an inspect listing cut at --limit prints for the
// next page ("next: --cursor TOKEN", "next_cursor" in JSON) and what
// --cursor takes back. It is opaque to the user: a token to copy, never
// something to assemble. Inside, it is the URL-safe base64 (no padding)
// of a small JSON object naming the listing, the run (or the --status of
// a runs listing) and the position after which the next page starts, so
// that a cursor given to another listing, another run or another status
// is refused instead of silently starting somewhere else. Its contents
// may change between releases.

// pageCursor is the decoded content of a cursor.
type pageCursor struct {
	// Listing is the inspect verb the cursor continues: runs,
	// activations, attempts or events.
	Listing string `json:"l"`
	// Run is the run of a per-run listing; Status the --status of a runs
	// listing.
	Run    string `json:"r,omitempty"`
	Status string `json:"s,omitempty"`
	// The position: after this run id (runs), activation (node,
	// activation id), attempt (prepared time, identity) or event
	// sequence number.
	RunID        string `json:"id,omitempty"`
	NodeID       string `json:"n,omitempty"`
	ActivationID string `json:"a,omitempty"`
	PreparedMS   int64  `json:"p,omitempty"`
	Identity     string `json:"i,omitempty"`
	Seq          int64  `json:"q,omitempty"`
}

// encodeCursor renders c as a token.
func encodeCursor(c pageCursor) string {
	b, err := json.Marshal(c)
	if err != nil {
		panic(err) // strings and integers always marshal
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// errBadCursor: a --cursor that is not one a listing printed, or is one
// of another listing, run or status.
var errBadCursor = errors.New("not a cursor of this listing")

// decodeCursor parses a token and checks that it continues the listing of
// verb over run (a per-run listing) or status (runs).
func decodeCursor(token, verb, run, status string) (pageCursor, error) {
	bad := func(why string) error {
		return fmt.Errorf("--cursor %q: %w (%s); pass back the token a previous page of \"inspect %s\" printed after \"next: --cursor\"", token, errBadCursor, why, verb)
	}
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return pageCursor{}, bad("it is not a token wfstore printed")
	}
	var c pageCursor
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return pageCursor{}, bad("it is not a token wfstore printed")
	}
	switch {
	case c.Listing != verb:
		return pageCursor{}, bad(fmt.Sprintf("it continues \"inspect %s\"", c.Listing))
	case verb != "runs" && c.Run != run:
		return pageCursor{}, bad(fmt.Sprintf("it continues the listing of run %q", c.Run))
	case verb == "runs" && c.Status != status:
		return pageCursor{}, bad(fmt.Sprintf("it continues the runs of --status %q", c.Status))
	}
	valid := true
	switch verb {
	case "runs":
		valid = c.RunID != ""
	case "activations":
		valid = c.NodeID != "" && c.ActivationID != ""
	case "attempts":
		valid = c.PreparedMS > 0 && c.Identity != ""
	case "events":
		valid = c.Seq > 0
	}
	if !valid {
		return pageCursor{}, bad("it holds no position")
	}
	return c, nil
}

func runsCursor(status backend.RunStatus, r backend.Run) string {
	return encodeCursor(pageCursor{Listing: "runs", Status: string(status), RunID: r.ID})
}

func activationCursor(runID string, n backend.NodeRef) string {
	return encodeCursor(pageCursor{Listing: "activations", Run: runID, NodeID: n.NodeID, ActivationID: n.ActivationID})
}

func attemptCursor(runID string, a backend.Attempt) string {
	return encodeCursor(pageCursor{Listing: "attempts", Run: runID, PreparedMS: a.PreparedMS, Identity: a.Identity})
}

func eventCursor(runID string, seq int64) string {
	return encodeCursor(pageCursor{Listing: "events", Run: runID, Seq: seq})
}
