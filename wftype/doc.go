// Package wftype is wfstore's shared vocabulary: the statuses, keys,
// identities, authority and limits that both the storage contract (package
// backend) and the Store (package workflow) speak, and the classes events
// record (failure, observation, refusal and repair kinds, fan-out policy,
// prune counts). It imports nothing from this module, so an adapter, an
// engine and a tool can all name the same types.
//
// Package backend and package workflow refer to every type here through a
// type alias (backend.ActivationKey and workflow.ActivationKey are both
// wftype.ActivationKey) and re-export its constants, so each concept is
// defined once and a value passes between the two layers without
// conversion.
//
// What stays two types on purpose: the records a backend stores (backend.Run,
// Activation, Attempt, Lease, RetrySchedule, Event) and the views the Store
// returns (workflow.Run and so on). Records hold times as unix milliseconds
// and JSON as bytes, the form an adapter writes; views hold time.Time,
// time.Duration and json.RawMessage, the form a user reads. The Store
// converts between them in one place.
//
// The types carry no JSON tags, except PruneCounts, which event payloads
// embed as is: they are not a wire format. Statuses and
// classes are strings whose values are stored as they are, so a constant's
// value never changes.
package wftype
