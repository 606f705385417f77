// Package event defines the events of a run's history: what Store.Events
// (package workflow) returns, what an export holds, and the typed payload
// of each kind. It imports only package wftype, so a tool, an adapter or
// an engine can read a history without the Store.
//
// An Event is one append-only entry: its run, its per-run sequence number
// (strictly increasing in commit order, with gaps), its Type and its
// payload as canonical JSON. Event.Decode returns the payload typed, for a
// type switch:
//
//	p, err := e.Decode()
//	switch p := p.(type) {
//	case event.AttemptAdmittedPayload:
//		fmt.Println(p.DispatchIdentity, p.AdmittedAt.Time())
//	}
//
// Naming: a Type constant is the kind's name (event.RunCreated, stored as
// "run_created"); its payload struct is that name with the suffix Payload
// (event.RunCreatedPayload), and the payload's Type method returns the
// constant. Every payload implements Payload.
//
// Times in payloads are UnixMS (unix milliseconds) and durations Millis,
// as stored; their Time and Duration methods convert. Every payload of an
// event about an attempt embeds AttemptNames (run, node, activation and
// attempt number) beside its dispatch identity.
//
// Guarantees: a Type's string and a payload's JSON field names never
// change, so every payload decodes every event stored before it, by any
// version of the library. A field added to a payload is optional: an
// older event decodes with it at its zero value (AttemptNames, for
// example, is empty in attempt events stored before it existed). A kind
// Decode does not know (written by a newer version) is an error, not a
// guess.
package event
