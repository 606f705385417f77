package backend

// Changes is the set of writes one Tx.Apply call makes. Its shape is the
// table of what each record kind accepts: a kind has a slice in Expect,
// Delete, Insert or Replace only where that operation is allowed, so a
// disallowed combination does not compile.
//
// Apply order is fixed: every Expect first, then every Delete, then every
// Insert, then every Replace. Within each, kinds go in the order of the
// fields below (deletes run from dependent records to the records they
// depend on, inserts the other way) and each slice in slice order. So a
// record may be deleted and inserted again, or inserted and then replaced,
// in one Changes. An adapter may write a whole slice in one statement or
// one pass; the result must equal applying its elements one by one in
// order.
type Changes struct {
	Expect  Expected
	Delete  Deletes
	Insert  Inserts
	Replace Replaces
}

// Expected are records that must be stored exactly as given. Expect writes
// nothing: it fails with ErrChanged unless a record with the key of the
// given one is stored (as of this point of the transaction) and equals it
// in every field, byte slices and lists compared exactly (nil differs from
// empty). A transaction can so decide on records an earlier transaction
// read or wrote, without reading them again: if they are unchanged when it
// commits, its decision is the one it would have made reading them, and the
// serializability of Update covers the check.
type Expected struct {
	Runs        []Run
	Activations []Activation
	Attempts    []Attempt
}

// Deletes name records to remove by key. Each fails with ErrNotFound when
// its key does not exist. A deleted record is gone from Load, from every
// scan and from every index: a deleted attempt's Identity is free for a
// later Insert. Applied in field order: events, schedules, leases, then
// attempts.
type Deletes struct {
	Events    []EventKey
	Schedules []ActivationKey
	Leases    []LeaseKey
	Attempts  []AttemptKey
}

// Inserts are new records. Each fails with ErrConflict when its primary key
// (or, for an Attempt, its Identity) exists. Applied in field order.
type Inserts struct {
	Runs        []Run
	Links       []RunLink
	Activations []Activation
	Groups      []FanOutGroup
	Attempts    []Attempt
	Leases      []Lease
	Schedules   []RetrySchedule
	Events      []Event
}

// Add appends rec, a record value of one of the kinds Inserts holds, to
// its slice, and reports whether rec was such a record (false leaves in
// unchanged).
func (in *Inserts) Add(rec any) bool {
	switch r := rec.(type) {
	case Run:
		in.Runs = append(in.Runs, r)
	case RunLink:
		in.Links = append(in.Links, r)
	case Activation:
		in.Activations = append(in.Activations, r)
	case FanOutGroup:
		in.Groups = append(in.Groups, r)
	case Attempt:
		in.Attempts = append(in.Attempts, r)
	case Lease:
		in.Leases = append(in.Leases, r)
	case RetrySchedule:
		in.Schedules = append(in.Schedules, r)
	case Event:
		in.Events = append(in.Events, r)
	default:
		return false
	}
	return true
}

// Replaces overwrite every field of existing records, identified by their
// key fields. Each fails with ErrNotFound when its key does not exist, and
// an Attempt with ErrConflict when it would take the Identity of another
// attempt. Applied in field order.
type Replaces struct {
	Runs        []Run
	Activations []Activation
	Groups      []FanOutGroup
	Attempts    []Attempt
	Leases      []Lease
	Schedules   []RetrySchedule
}

// Len returns the number of operations in c.
func (c *Changes) Len() int {
	e, d, i, r := &c.Expect, &c.Delete, &c.Insert, &c.Replace
	return len(e.Runs) + len(e.Activations) + len(e.Attempts) +
		len(d.Events) + len(d.Schedules) + len(d.Leases) + len(d.Attempts) +
		len(i.Runs) + len(i.Links) + len(i.Activations) + len(i.Groups) +
		len(i.Attempts) + len(i.Leases) + len(i.Schedules) + len(i.Events) +
		len(r.Runs) + len(r.Activations) + len(r.Groups) + len(r.Attempts) +
		len(r.Leases) + len(r.Schedules)
}

// Empty reports whether c holds no operation.
func (c *Changes) Empty() bool { return c.Len() == 0 }
