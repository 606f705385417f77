package memstore

import (
	"maps"

	"github.com/wfstore/wfstore/backend"
)

type eventKey struct {
	RunID string
	Seq   int64
}

// state is one version of the store. A committed state is never modified; a
// writer's state shares maps with its base until it first writes one
// (owned[i] false), then writes a private copy.
type state struct {
	runs       map[string]backend.Run
	links      map[string]backend.RunLink
	acts       map[backend.ActivationKey]backend.Activation
	groups     map[backend.ActivationKey]backend.FanOutGroup
	attempts   map[backend.AttemptKey]backend.Attempt
	identities map[string]backend.AttemptKey
	leases     map[backend.LeaseKey]backend.Lease
	schedules  map[backend.ActivationKey]backend.RetrySchedule
	events     map[eventKey]backend.Event

	owned [9]bool
}

func newState() *state {
	return &state{
		runs:       map[string]backend.Run{},
		links:      map[string]backend.RunLink{},
		acts:       map[backend.ActivationKey]backend.Activation{},
		groups:     map[backend.ActivationKey]backend.FanOutGroup{},
		attempts:   map[backend.AttemptKey]backend.Attempt{},
		identities: map[string]backend.AttemptKey{},
		leases:     map[backend.LeaseKey]backend.Lease{},
		schedules:  map[backend.ActivationKey]backend.RetrySchedule{},
		events:     map[eventKey]backend.Event{},
	}
}

// clone returns a state sharing every map with s; the writer copies a map
// before writing it.
func (s *state) clone() *state {
	c := *s
	c.owned = [9]bool{}
	return &c
}

const (
	mRuns = iota
	mLinks
	mActs
	mGroups
	mAttempts
	mIdentities
	mLeases
	mSchedules
	mEvents
)

// own makes map i private to this (writer's) state.
func (s *state) own(i int) {
	if s.owned[i] {
		return
	}
	s.owned[i] = true
	switch i {
	case mRuns:
		s.runs = maps.Clone(s.runs)
	case mLinks:
		s.links = maps.Clone(s.links)
	case mActs:
		s.acts = maps.Clone(s.acts)
	case mGroups:
		s.groups = maps.Clone(s.groups)
	case mAttempts:
		s.attempts = maps.Clone(s.attempts)
	case mIdentities:
		s.identities = maps.Clone(s.identities)
	case mLeases:
		s.leases = maps.Clone(s.leases)
	case mSchedules:
		s.schedules = maps.Clone(s.schedules)
	case mEvents:
		s.events = maps.Clone(s.events)
	}
}

// Deep copies: records stored in a state share no memory with callers.

func cb(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

func copyRun(r backend.Run) backend.Run {
	if r.Authority != nil {
		a := *r.Authority
		r.Authority = &a
	}
	r.Metadata = cb(r.Metadata)
	return r
}

func copyLink(l backend.RunLink) backend.RunLink {
	l.Target = cb(l.Target)
	return l
}

func copyActivation(a backend.Activation) backend.Activation {
	a.Input = cb(a.Input)
	a.Output = cb(a.Output)
	a.RetryPolicy = cb(a.RetryPolicy)
	if a.Claims != nil {
		a.Claims = append([]backend.ResourceClaim{}, a.Claims...)
	}
	if a.Predecessors != nil {
		a.Predecessors = append([]backend.NodeRef{}, a.Predecessors...)
	}
	if a.Group != nil {
		g := *a.Group
		a.Group = &g
	}
	return a
}

func copyAttempt(a backend.Attempt) backend.Attempt {
	a.Intent = cb(a.Intent)
	a.Receipt = cb(a.Receipt)
	a.Detail = cb(a.Detail)
	return a
}

func copyEvent(e backend.Event) backend.Event {
	e.Payload = cb(e.Payload)
	return e
}
