package workflow

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
)

// Every listing of the Store and the Engine (Events, Attempts,
// FanOutMembers, Retries; Engine.ActiveAttempts, ActiveLeases,
// Cancellations, StuckAttempts, TimedOutAttempts) has one shape: it takes a
// query struct whose After is a Cursor and whose Limit follows the
// page-limit rule, and returns a Page.
//
// A page is read in one snapshot and costs its limit whatever the history's
// length (keyset paging; a scan that filters the rows it reads counts the
// rows it reads, not the items it returns).

// Cursor is an opaque position in one listing: pass a page's Next as the
// next query's After. The zero value starts at the beginning. A cursor
// names the listing that produced it; one that this listing did not
// produce (another listing's, or a string that is not a cursor) is refused
// with an error matching ErrInvalidInput and nothing is read. A cursor
// carries a position only, not the query's filters: given with other
// filters it resumes after the same position in their order.
type Cursor string

// Page is one page of a listing.
type Page[T any] struct {
	// Items are the page's items in the listing's order: at most the
	// query's Limit.
	Items []T
	// Next resumes the listing after this page; it is empty when the
	// listing has been read to its end, and a caller stops there.
	//
	// A listing that returns every row it reads (Events, Attempts,
	// FanOutMembers, Retries, Engine.ActiveAttempts, Engine.ActiveLeases)
	// reads one row past its page (per status it has left, for those that
	// read several statuses in turn) so that Next is empty exactly when no
	// item follows: a non-empty Next means at least one more item, and a
	// caller never makes a round trip for an empty page.
	//
	// A scan that filters what it reads (Engine.Cancellations,
	// StuckAttempts, TimedOutAttempts) reads at most Limit rows and
	// nothing past them: Next is empty once a page read to the end of the
	// scan, and a non-empty Next may lead to pages with no item, the last
	// of which has an empty Next.
	Next Cursor
}

// cursorVersion is the first byte of every encoded cursor.
const cursorVersion = 1

// encodeCursor encodes pos as a cursor of the listing named kind.
func encodeCursor(kind string, pos any) Cursor {
	b, err := json.Marshal(pos)
	if err != nil { // positions are structs of strings and integers
		panic("workflow: cursor position: " + err.Error())
	}
	raw := append([]byte{cursorVersion}, kind...)
	raw = append(raw, 0)
	raw = append(raw, b...)
	return Cursor(base64.RawURLEncoding.EncodeToString(raw))
}

// decodeCursor decodes c, a cursor of the listing named kind, into pos. An
// empty c leaves pos as it is (the beginning) and reports false. A cursor
// that is not one of kind's is ErrInvalidInput naming the listing.
func decodeCursor(kind string, c Cursor, pos any) (bool, error) {
	if c == "" {
		return false, nil
	}
	bad := invalid(kind+" cursor", invalidCursorMessage)
	raw, err := base64.RawURLEncoding.DecodeString(string(c))
	if err != nil || len(raw) < 2 || raw[0] != cursorVersion {
		return false, bad
	}
	head, body, ok := bytes.Cut(raw[1:], []byte{0})
	if !ok || string(head) != kind {
		return false, bad
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(pos); err != nil || dec.More() {
		return false, bad
	}
	return true, nil
}

// Cursor kinds, one per listing.
const (
	eventsCursor        = "events"
	attemptsCursor      = "attempts"
	membersCursor       = "members"
	retriesCursor       = "retries"
	activeCursor        = "active attempts"
	leasesCursor        = "leases"
	cancellationsCursor = "cancellations"
	stuckCursor         = "stuck attempts"
	timedOutCursor      = "timed-out attempts"
)

// invalidCursorMessage is the reason a refused cursor gives.
const invalidCursorMessage = "is not a cursor this listing returned"

// eventPos is a position in Events: after the event with this Seq.
type eventPos struct {
	Seq int64 `json:"s"`
}

// EventCursor is the Events cursor that resumes after the event with this
// sequence number: a consumer that stored the Seq of the last event it
// handled resumes from it. EventCursor(0) is the empty cursor (the run's
// first event); a negative seq gives a cursor Events refuses.
func EventCursor(seq int64) Cursor {
	if seq == 0 {
		return ""
	}
	return encodeCursor(eventsCursor, eventPos{seq})
}

// attemptPos is a position in the (prepared time, identity) order of
// attempts.
type attemptPos struct {
	PreparedMS int64  `json:"p"`
	Identity   string `json:"i"`
}

// AttemptCursor is the Attempts cursor that resumes after a (strictly
// after it in the query's order: before it when Descending).
func AttemptCursor(a Attempt) Cursor {
	return encodeCursor(attemptsCursor, attemptPos{a.PreparedAt.UnixMilli(), a.Identity})
}

// memberPos is a position in FanOutMembers: after the member with this
// index.
type memberPos struct {
	Index int64 `json:"i"`
}

// MemberCursor is the FanOutMembers cursor that resumes after the member
// with this index (so the page starts at index+1). A negative index gives
// a cursor FanOutMembers refuses.
func MemberCursor(index int64) Cursor { return encodeCursor(membersCursor, memberPos{index}) }

// stagePos is a position in a scan that reads several statuses in turn:
// the status's position in the scan's list, and the last row read in it.
type stagePos struct {
	Stage    int    `json:"s"`
	RunID    string `json:"r,omitempty"`
	Prepared int64  `json:"p,omitempty"`
	Identity string `json:"i,omitempty"`
}

// decodeStage decodes c as a stagePos of kind with a stage below stages.
func decodeStage(kind string, c Cursor, stages int) (stagePos, error) {
	var p stagePos
	if _, err := decodeCursor(kind, c, &p); err != nil {
		return p, err
	}
	if p.Stage < 0 || p.Stage >= stages {
		return p, invalid(kind+" cursor", invalidCursorMessage)
	}
	return p, nil
}
